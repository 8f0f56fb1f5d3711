# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller action (plugins/plugin_utils/_controller_action.py) that serves every module in the
controller process, on the fake service: validation by the module's own spec, masking, invocation, warnings,
check-mode nulls, and the hand-over to the classic module."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ansible.module_utils.common.parameters import env_fallback

from ansible_collections.wpcloud.hosting.plugins.action.client_meta import ActionModule as ClientMetaAction
from ansible_collections.wpcloud.hosting.plugins.action.migration import ActionModule as MigrationAction
from ansible_collections.wpcloud.hosting.plugins.action.migration_preflight import ActionModule as PreflightAction
from ansible_collections.wpcloud.hosting.plugins.plugin_utils import _controller_action
from ansible_collections.wpcloud.hosting.tests.unit.plugins.action_doubles import Templar

PASSWORD = "p@ss-Canary-1"


def action(cls, args, check_mode=False, diff=False):
    task = SimpleNamespace(args=args, check_mode=check_mode, diff=diff, async_val=0, action=cls.MODULE)
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"))
    return cls(task, connection, None, None, Templar(), None)


@pytest.fixture()
def run(fake_api, monkeypatch):
    monkeypatch.setattr(_controller_action.C.config, "get_config_value", lambda name, variables=None: False)

    def run(cls, args, task_vars=None, **task):
        args = dict({"api_url": fake_api.url, "api_key": fake_api.api_key}, **args)
        return action(cls, args, **task).run(task_vars=dict({"inventory_hostname": "dest1"}, **(task_vars or {})))
    return run


def test_a_result_is_the_logics_and_never_holds_a_secret(fake_api, run):
    fake_api.add_site("1002", allow="true")
    fake_api.fault("migration.get", status=400, body='{"message": "echo %s", "data": []}' % PASSWORD)
    result = run(MigrationAction, {"site": "1002", "remote_host": "src.example", "remote_user": "www",
                                   "remote_pass": PASSWORD})
    assert result["failed"] is True and "echo ********" in result["msg"]
    assert PASSWORD not in json.dumps(result) and fake_api.api_key not in json.dumps(result)
    assert "invocation" not in result  # ansible-core 2.21 injects it only when asked


def test_the_invocation_is_masked_when_injected(fake_api, run, monkeypatch):
    monkeypatch.setattr(_controller_action.C.config, "get_config_value", lambda name, variables=None: True)
    fake_api.add_site("1002", allow="true")
    result = run(MigrationAction, {"site": "1002", "remote_host": "src.example", "remote_user": "www",
                                   "remote_pass": PASSWORD})
    assert result["changed"] is True and result["operation"] == "create"
    assert result["invocation"]["module_args"]["remote_pass"] == "********"
    assert result["invocation"]["module_args"]["api_key"] == "********"
    assert result["record"]["args"]["remote-pass"] == "********"


def test_a_misspelled_option_is_refused_without_echoing_its_value(fake_api, run):
    result = run(MigrationAction, {"site": "1002", "remote_password": PASSWORD})
    assert result["failed"] is True
    assert result["msg"].startswith("Unsupported parameters for (wpcloud.hosting.migration) module: remote_password")
    assert PASSWORD not in json.dumps(result) and fake_api.calls == []


def test_spec_errors_fail_before_any_call(fake_api, run):
    result = run(MigrationAction, {"site": "1002", "remote_pass": "pass-1x", "ssh_id": "key-2y"})
    assert result["failed"] is True and "mutually exclusive" in result["msg"] and fake_api.calls == []


def test_warnings_are_returned_and_masked(fake_api, run):
    key = "0f1e2d3c4b5a6978" * 3
    fake_api.meta["webhook_hmac_key"] = "set"
    result = run(ClientMetaAction, {"client": "demo", "key": "webhook_hmac_key", "secret_value": key})
    assert result["changed"] is False and len(result["warnings"]) == 1
    assert "update_secret: always" in result["warnings"][0] and key not in json.dumps(result)


def test_check_mode_nulls_say_what_would_happen_without_a_call(fake_api, run):
    result = run(PreflightAction, {"migration_ids": [None, None]}, check_mode=True)
    assert result["changed"] is True and result["msg"].startswith("check mode: 2 null IDs in migration_ids")
    assert fake_api.calls == []


def test_progress_lines_reach_the_display(fake_api, run, fake_time, monkeypatch):
    shown = []
    monkeypatch.setattr(_controller_action.display, "display", shown.append)
    mid = fake_api.add_migration()
    fake_api.script("preflight", steps=["pending"] * 3 + ["success"])
    result = run(PreflightAction, {"migration_id": mid, "progress_interval": 2})
    assert result["ticket_state"] == "success"
    assert shown == ["[dest1] migration_preflight: migration %d: ticket %s pending (0 responses), 2 s elapsed"
                     % (mid, result["ticket_id"])]


def test_the_classic_module_path_gets_the_same_arguments(fake_api, run, monkeypatch):
    handed = []

    def execute_module(self, module_name=None, module_args=None, task_vars=None):
        handed.append((module_name, module_args))
        return {"changed": False, "exists": False}
    monkeypatch.setattr(MigrationAction, "_execute_module", execute_module)
    result = run(MigrationAction, {"site": "1002"}, task_vars={"wpcloud_hosting_execution": "module"})
    assert result == {"changed": False, "exists": False}
    assert handed == [("wpcloud.hosting.migration", {"api_url": fake_api.url, "api_key": fake_api.api_key,
                                                     "site": "1002"})]
    assert fake_api.calls == []


def test_an_unknown_execution_is_refused(fake_api, run):
    result = run(MigrationAction, {"site": "1002"}, task_vars={"wpcloud_hosting_execution": "remote"})
    assert result["failed"] is True and "wpcloud_hosting_execution must be 'controller' or 'module'" in result["msg"]


# -- ControllerOnlyAction (webhook_ack, fleet_vars): the no_log values without Ansible's private API ---------

SECRET_SPEC = {"argument_spec": {
    "token": {"type": "str", "no_log": True, "choices": ["a", "b"]},
    "count": {"type": "int", "no_log": True},
    "nested": {"type": "dict", "options": {"pin": {"type": "int", "no_log": True}}},
    "from_env": {"type": "str", "no_log": True, "fallback": (env_fallback, ["UNIT_TOKEN"])},
    "plain": {"type": "str", "default": "shown"},
}}


class SecretOnly(_controller_action.ControllerOnlyAction):
    MODULE = "unit_secret_only"

    def _module_file(self):
        return SimpleNamespace(MODULE_SPEC=SECRET_SPEC)

    def run_validated(self, result, params, no_log_values, task_vars):
        result.update(params=params, no_log_values=sorted(no_log_values))
        return result


def test_a_controller_only_action_refuses_bad_values_without_showing_the_no_log_ones(monkeypatch):
    # Ansible's messages quote the bad values: a no_log one is masked, in suboptions too.
    monkeypatch.setenv("UNIT_TOKEN", "env-secret-4")
    result = action(SecretOnly, {"token": "secret-1", "count": "secret-2", "nested": {"pin": "secret-3"}}).run(
        task_vars={})
    assert result["failed"] is True and "value of token must be one of: a, b, got: ********" in result["msg"]
    assert "we were unable to convert to int" in result["msg"]
    assert not [s for s in ("secret-1", "secret-2", "secret-3", "env-secret-4") if s in result["msg"]]


def test_a_controller_only_action_gets_every_no_log_value_defaults_and_fallbacks_included(monkeypatch):
    monkeypatch.setenv("UNIT_TOKEN", "env-secret-4")
    result = action(SecretOnly, {"token": "a", "count": 42, "nested": {"pin": 7}}).run(task_vars={})
    assert result["no_log_values"] == ["42", "7", "a", "env-secret-4"]
    assert result["params"]["from_env"] == "env-secret-4" and result["params"]["plain"] == "shown"
