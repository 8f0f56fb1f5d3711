# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""client_meta's logic on the fake service: values, the write-only secret (sent once by default, a secret not
sent is said), removal, check and diff mode, and the checks before any call."""

from __future__ import annotations

import json

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import client_meta

KEY_1 = "0f1e2d3c4b5a6978" * 3
KEY_2 = "a1b2c3d4e5f60718" * 3


def hmac_args(secret, **extra):
    return dict({"client": "demo", "key": "webhook_hmac_key", "secret_value": secret}, **extra)


def test_update_secret_defaults_to_on_create_in_the_spec_and_the_docs():
    import yaml
    spec = client_meta.MODULE_SPEC["argument_spec"]["update_secret"]
    documented = yaml.safe_load(client_meta.DOCUMENTATION)["options"]["update_secret"]
    assert spec["default"] == documented["default"] == "on_create"


def test_a_set_key_is_not_sent_again_and_the_warning_says_how(fake_api, run_logic):
    first, warnings = run_logic(client_meta, hmac_args(KEY_1))
    assert first["changed"] is True and warnings == []
    again, warnings = run_logic(client_meta, hmac_args(KEY_2))
    assert again["changed"] is False
    assert [c["operation"] for c in fake_api.writes] == ["client_meta.add"]
    assert len(warnings) == 1
    assert "secret_value was given but not sent" in warnings[0] and "update_secret: always" in warnings[0]
    assert KEY_1 not in json.dumps([again, warnings]) and KEY_2 not in json.dumps([again, warnings])


def test_always_sends_it_and_says_nothing(fake_api, run_logic):
    run_logic(client_meta, hmac_args(KEY_1))
    result, warnings = run_logic(client_meta, hmac_args(KEY_2, update_secret="always"))
    assert result["changed"] is True and result["operation"] == "update" and warnings == []
    assert fake_api.meta["webhook_hmac_key"] == KEY_2


# -- values, removal, diff ------------------------------------------------------------------------------------

def url_args(value, **extra):
    return dict({"client": "demo", "key": "webhook_url", "value": value}, **extra)


def test_a_value_is_added_compared_and_updated(fake_api, run_logic):
    first, warnings = run_logic(client_meta, url_args("https://hooks.example.com/a"), diff=True)
    assert (first["changed"], first["operation"], first["value"]) == (True, "add", "https://hooks.example.com/a")
    assert first["diff"]["before"] == {"state": "absent"}
    same, warnings = run_logic(client_meta, url_args("https://hooks.example.com/a"))
    assert same["changed"] is False and same["operation"] == "none"
    other, warnings = run_logic(client_meta, url_args("https://hooks.example.com/b"), diff=True)
    assert other["operation"] == "update" and fake_api.meta["webhook_url"] == "https://hooks.example.com/b"
    assert other["diff"]["before"] == {"state": "present", "value": "https://hooks.example.com/a"}
    assert [c["operation"] for c in fake_api.writes] == ["client_meta.add", "client_meta.update"]


def test_a_wrong_guess_of_add_or_update_takes_the_other_verb(fake_api, run_logic):
    # Read as absent (404), yet present when written (409): update follows.
    fake_api.fault("client_meta.get", status=404)
    fake_api.meta["webhook_url"] = "https://hooks.example.com/old"
    result, warnings = run_logic(client_meta, url_args("https://hooks.example.com/new"))
    assert result["operation"] == "update"
    assert [c["operation"] for c in fake_api.writes] == ["client_meta.add", "client_meta.update"]


def test_state_absent_removes_once_and_check_mode_writes_nothing(fake_api, run_logic):
    fake_api.meta["rel_key"] = "v"
    checked, warnings = run_logic(client_meta, {"client": "demo", "key": "rel_key", "state": "absent"}, check_mode=True)
    assert checked["changed"] is True and checked["operation"] == "remove" and fake_api.writes == []
    removed, warnings = run_logic(client_meta, {"client": "demo", "key": "rel_key", "state": "absent"})
    assert removed["changed"] is True and "rel_key" not in fake_api.meta
    again, warnings = run_logic(client_meta, {"client": "demo", "key": "rel_key", "state": "absent"})
    assert again["changed"] is False


def test_a_secret_in_value_is_refused_and_masked(fake_api, run_logic):
    result, warnings = run_logic(client_meta, {"client": "demo", "key": "webhook_hmac_key", "value": KEY_1})
    assert isinstance(result, ModuleFailure) and "secret_value" in result.msg
    assert KEY_1 not in json.dumps([result.msg, result.details]) and fake_api.calls == []


@pytest.mark.parametrize("value,reason", [
    ("http://hooks.example.com/a", "got scheme 'http'"),
    ("https://user:pw@hooks.example.com/a", "must not carry credentials"),
    ("https:///a", "it has no host"),
    ("https://hooks.example.com/" + "a" * 2048, "longer than 2048 characters"),
    ("https://hooks.example.com/a b", "white space"),
])
def test_a_bad_webhook_url_is_refused_before_any_call(fake_api, run_logic, value, reason):
    result, warnings = run_logic(client_meta, url_args(value))
    assert isinstance(result, ModuleFailure) and reason in result.msg and fake_api.calls == []


def test_a_weak_signing_key_is_refused(fake_api, run_logic):
    result, warnings = run_logic(client_meta, hmac_args("short"))
    assert isinstance(result, ModuleFailure) and "too weak" in result.msg and "short" not in result.msg
    assert fake_api.calls == []


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(client_meta)
