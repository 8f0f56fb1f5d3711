# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one masking path: one placeholder, one function, the no_log values of a module's own spec."""

from __future__ import annotations

import threading

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import MASK, Secrets, mask, no_log_values
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration import redact_record
from ansible_collections.wpcloud.hosting.plugins.modules import (
    client_meta,
    migration,
    migration_info,
    migration_preflight,
    migration_ready,
    response_ticket_wait,
    site,
    site_allow_migration,
    webhook_ack,
)

MODULES = [client_meta, migration, migration_info, migration_preflight, migration_ready, response_ticket_wait,
           site, site_allow_migration]


def test_the_placeholder_is_the_one_ansible_shows_inside_a_text():
    assert MASK == "********"


def test_secrets_in_texts_at_any_depth_and_their_url_encoded_form():
    value = {"msg": "login as www with p@ss/1 failed", "results": [{"msg": "sent p%40ss%2F1"}, ("p@ss/1",)],
             "changed": True, "failed": None, "count": 3}
    assert mask(value, ["p@ss/1"]) == {"msg": "login as www with ******** failed",
                                       "results": [{"msg": "sent ********"}, ["********"]],
                                       "changed": True, "failed": None, "count": 3}


def test_the_longest_secret_first_and_a_number_written_like_one():
    assert mask("key abc123 and abc", ["abc", "abc123"]) == "key ******** and ********"
    assert mask({"port": 2022, "id": 20221}, ["2022"]) == {"port": MASK, "id": 20221}


def test_nothing_to_mask_returns_the_same_object():
    value = {"a": ["b"]}
    assert mask(value, []) is value and mask(value, [None, ""]) is value


def test_fields_are_masked_whole_whatever_they_hold():
    record = {"state": "new", "args": {"remote-host": "h", "remote-pass": "[redacted]", "ssh-id": None},
              "generated-ssh-id": "-----BEGIN OPENSSH PRIVATE KEY-----"}
    assert redact_record(record) == {"state": "new", "args": {"remote-host": "h", "remote-pass": MASK, "ssh-id": MASK},
                                     "generated-ssh-id": MASK}


def test_a_tasks_secrets_can_grow_while_threads_mask():
    secrets = Secrets(["first"])
    added = threading.Event()

    def add():
        for n in range(300):
            secrets.add("later-%d" % n)
        added.set()
    worker = threading.Thread(target=add)
    worker.start()
    while not added.is_set():
        assert secrets.mask("first") == MASK
    worker.join()
    assert secrets.mask("later-0 first later-299") == "******** ******** ********"


ARGS = {
    client_meta: {"client": "demo", "key": "webhook_hmac_key", "secret_value": "hmac-secret-1234567890abcdef01234"},
    migration: {"migrations": [{"site": "1", "remote_pass": "element-pass"},
                               {"site": "2", "ssh_id": "KEY", "ssh_id_pass": "phrase"}],
                "remote_pass": "task-pass"},
    migration_info: {"site": "1"},
    migration_preflight: {"migration_id": 4},
    migration_ready: {"migration_id": 4},
    response_ticket_wait: {"ticket_id": "t.1"},
    site_allow_migration: {"site": "1"},
    site: {"client": "demo", "sites": [{"domain": "a.example", "admin_pass": "element-admin-pass"}],
           "admin_pass": "task-admin-pass"},
}


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_no_log_values_are_the_ones_ansible_core_collects(module, monkeypatch):
    monkeypatch.setenv("WPCLOUD_API_KEY", "env-api-key")
    validation = ArgumentSpecValidator(**module.MODULE_SPEC).validate(dict(ARGS[module]))
    assert not validation.error_messages
    ours = no_log_values(module.MODULE_SPEC["argument_spec"], validation.validated_parameters)
    # ansible-core's own list (a private attribute, read here only to prove that ours is the same).
    assert ours == set(validation._no_log_values)
    assert "env-api-key" in ours


def test_no_log_values_of_a_controller_only_module_are_the_ones_ansible_core_collects(monkeypatch):
    # webhook_ack's token from the environment (ControllerOnlyAction masks its results and errors with these).
    monkeypatch.setenv(webhook_ack.ack.ENV_TOKEN, "env-ack-token")
    validation = ArgumentSpecValidator(**webhook_ack.MODULE_SPEC).validate({"delivery_id": "d-1"})
    ours = no_log_values(webhook_ack.MODULE_SPEC["argument_spec"], validation.validated_parameters)
    assert ours == set(validation._no_log_values) == {"env-ack-token"}
