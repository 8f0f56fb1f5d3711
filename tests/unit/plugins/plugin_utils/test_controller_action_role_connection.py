# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""A task of the site_migration role (wpcloud_hosting_role_connection set) takes each connection option from its
wpcloud_* variable over the task's arguments as module_defaults made them; any other task ignores those variables
(plugins/plugin_utils/_controller_action.py). And a module task warns of a very short secret, naming its option."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ansible_collections.wpcloud.hosting.plugins.action.migration_info import ActionModule as MigrationInfoAction
from ansible_collections.wpcloud.hosting.plugins.action.migration import ActionModule as MigrationAction
from ansible_collections.wpcloud.hosting.plugins.plugin_utils import _controller_action
from ansible_collections.wpcloud.hosting.tests.unit.plugins.action_doubles import Templar


@pytest.fixture()
def run(fake_api, monkeypatch):
    monkeypatch.setattr(_controller_action.C.config, "get_config_value", lambda name, variables=None: False)
    monkeypatch.delenv("WPCLOUD_API_KEY", raising=False)

    def run(cls, args, task_vars):
        task = SimpleNamespace(args=args, check_mode=False, diff=False, async_val=0, action=cls.MODULE)
        action = cls(task, SimpleNamespace(_shell=SimpleNamespace(tmpdir="/x")), None, None, Templar(), None)
        return action.run(task_vars=dict({"inventory_hostname": "dest1"}, **task_vars))
    return run


def test_the_roles_variables_come_before_what_module_defaults_gave(fake_api, run):
    fake_api.add_site("1002", allow="true")
    variables = {"wpcloud_api_url": fake_api.url, "wpcloud_api_key": fake_api.api_key}
    # As module_defaults of the play would have given them: an address and key that do not work.
    given = {"site": "1002", "api_url": "https://elsewhere.invalid", "api_key": "a-wrong-key-12345"}
    result = run(MigrationInfoAction, given, dict(variables, wpcloud_hosting_role_connection=True))
    assert not result.get("failed"), result
    assert fake_api.api_key not in json.dumps(result)
    # Without the role's flag, a task keeps its own arguments (and fails on them here).
    result = run(MigrationInfoAction, given, variables)
    assert result.get("failed") is True


def test_unset_variables_leave_the_arguments_alone(fake_api, run):
    fake_api.add_site("1002", allow="true")
    result = run(MigrationInfoAction, {"site": "1002", "api_url": fake_api.url, "api_key": fake_api.api_key},
                 {"wpcloud_hosting_role_connection": True})
    assert not result.get("failed"), result


def test_a_very_short_secret_warns_naming_the_option_and_never_the_value(fake_api, run):
    fake_api.add_site("1002", allow="true")
    result = run(MigrationAction, {"site": "1002", "remote_host": "src.example", "remote_user": "www",
                                   "remote_pass": "x7", "api_url": fake_api.url, "api_key": fake_api.api_key}, {})
    assert [w for w in result["warnings"] if w.startswith("remote_pass is shorter than 6 characters")]
    assert "x7" not in " ".join(result["warnings"])
