# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The migration module's entries (module_utils/service/migration_module.py): a module user's options mapped to
the service's fields once, what an element of the migrations list takes of the task's options, and the module's
spec under the field names for a caller that holds the fields. (The module on the fake service:
tests/unit/plugins/modules/test_migration.py.)"""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import no_log_values
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_module import _element_params, fields_of
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import FIELD_NAMES, ROLE_FIELDS
from ansible_collections.wpcloud.hosting.plugins.modules import migration

PASSWORD = "p@ss-Canary-1"


def test_the_options_go_on_under_their_fields_once():
    fields = fields_of({"site": "1001", "remote_pass": PASSWORD, "update_secret": "always",
                        "migrations": [{"site": "1002", "ssh_id": "KEY", "ssh_id_pass": "pp"}]})
    assert fields == {"site": "1001", "remote-pass": PASSWORD, "update_secret": "always",
                      "migrations": [{"site": "1002", "ssh-id": "KEY", "ssh-id-pass": "pp"}]}


def task_params(**args):
    result = ArgumentSpecValidator(**migration.MODULE_SPEC).validate(dict(args, api_key="k"))
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


def test_an_element_takes_the_tasks_options_it_leaves_out():
    params = task_params(remote_host="src.example", remote_user="www", remote_port=2222, update_secret="always",
                         migrations=[{"site": "1001"}, {"site": "1002", "remote_host": "other.example",
                                                        "remote_port": 22}])
    params = fields_of(params)
    first, second = [_element_params(params, e) for e in params["migrations"]]
    assert (first["site"], first["remote-host"], first["remote-user"], first["remote-port"]) == \
        ("1001", "src.example", "www", 2222)
    assert first["update_secret"] == "always"
    assert (second["remote-host"], second["remote-port"]) == ("other.example", 22)
    assert first["migrations"] is None and second["migrations"] is None


def test_an_element_that_gives_a_credential_takes_none_of_the_tasks():
    params = task_params(remote_host="h.example", remote_user="www", ssh_id="TASK KEY", ssh_id_pass="task pass",
                         migrations=[{"site": "1001"}, {"site": "1002", "remote_pass": "element pass"},
                                     {"site": "1003", "ssh_id": "ELEMENT KEY"}])
    params = fields_of(params)
    inherited, password, key = [_element_params(params, e) for e in params["migrations"]]
    assert (inherited["ssh-id"], inherited["ssh-id-pass"], inherited["remote-pass"]) == \
        ("TASK KEY", "task pass", None)
    assert (password["ssh-id"], password["ssh-id-pass"], password["remote-pass"]) == (None, None, "element pass")
    # Not the task's passphrase with the element's key: a passphrase belongs to one key.
    assert (key["ssh-id"], key["ssh-id-pass"], key["remote-pass"]) == ("ELEMENT KEY", None, None)
    assert not [name for single in (inherited, password, key) for name in single if "_" in name and "-" not in name
                and name.startswith(("remote", "ssh"))]


def test_the_field_spec_is_the_module_spec_under_the_field_names():
    options = migration.MODULE_SPEC["argument_spec"]
    by_field = migration.FIELD_SPEC["argument_spec"]
    assert sorted(by_field) == sorted(FIELD_NAMES.get(name, name) for name in options)
    assert by_field["migrations"]["options"]["remote-pass"] == options["migrations"]["options"]["remote_pass"]
    assert not set(FIELD_NAMES) & set(by_field["migrations"]["options"])
    # The role's table and the module's reach the same fields.
    assert set(ROLE_FIELDS.values()) == set(FIELD_NAMES.values())


def test_the_field_spec_keeps_the_checks_and_the_secrets():
    validator = ArgumentSpecValidator(**migration.FIELD_SPEC)
    both = validator.validate({"api_key": "k", "migrations": [{"site": "1001", "remote-pass": PASSWORD, "ssh-id": "KEY"}]})
    assert "mutually exclusive: remote-pass|ssh-id" in " ".join(both.error_messages)
    alone = validator.validate({"api_key": "k", "migrations": [{"site": "1001", "ssh-id-pass": "pp"}]})
    assert alone.error_messages
    fine = validator.validate({"api_key": "k", "migrations": [{"site": "1001", "remote-pass": PASSWORD}]})
    assert not fine.error_messages
    assert PASSWORD in no_log_values(migration.FIELD_SPEC["argument_spec"], fine.validated_parameters)
    # The module's own spec refuses the field names: its public options stay the options.
    assert ArgumentSpecValidator(**migration.MODULE_SPEC).validate(
        {"api_key": "k", "migrations": [{"site": "1001", "remote-pass": PASSWORD}]}).error_messages
