# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The arguments of each step, and the recap (plugins/plugin_utils/site_migration/steps.py), without a server."""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    PASSWORD,
    created_result,
    line_up,
    module_arguments,
    results,
)


def test_each_step_gives_its_module_arguments():
    fleet, given = line_up({"site_migration_refresh": False, "site_migration_poll_interval": 2.0,
                            "site_migration_preflight_timeout": 60, "site_migration_poll_max_interval": 30},
                           {"site_migration_auth": "password", "site_migration_remote_pass": PASSWORD})
    assert module_arguments(step_arguments(fleet, "info", {})) == {"count": 1, "sites": ["1001"]}
    todo = step_arguments(fleet, "check", {"info": results({"site": "1001", "exists": False, "migration_id": None})}, given)
    assert todo["count"] == 2
    # Each migration field under the service's name, straight from the role's variable (one name per value).
    assert todo["migrations"][0] == {"site": "1001", "remote-host": "10.0.0.5", "remote-port": 2222,
                                     "remote-user": "www", "state_file": "/inv/wpcloud-state/1001.json",
                                     "update_secret": "when_changed"}
    assert todo["migrations"][1] == {"site": "1002", "remote-host": "10.0.0.5", "remote-port": 2222,
                                     "remote-user": "www", "state_file": "/inv/wpcloud-state/1002.json",
                                     "update_secret": "when_changed", "remote-pass": PASSWORD}
    done = {"info": results({"site": "1001", "migration_id": None}),
            "check": results({"site": "1001"}, {"site": "1002"}), "allow": results({"site": "1001"}, {"site": "1002"}),
            "create": results(created_result("1001", 7), created_result("1002", 8))}
    assert step_arguments(fleet, "allow", done)["sites"] == ["1001", "1002"]
    todo = step_arguments(fleet, "preflight", done)
    # One wait for both: the shortest interval and the shortest cap of the two sites.
    assert module_arguments(todo) == {"count": 2, "migration_ids": [7, 8], "wait_timeout": 900, "poll_interval": 1.0,
                                      "poll_max_interval": 12.0}


def test_the_check_and_create_steps_need_the_inputs():
    fleet, dummy = line_up({})
    with pytest.raises(AnsibleFilterError):
        step_arguments(fleet, "create", {"check": results({"site": "1001"}), "allow": results({"site": "1001"})})


def test_an_unknown_step_is_refused():
    with pytest.raises(AnsibleFilterError):
        step_arguments([], "reboot")


def test_each_step_takes_in_only_the_result_of_the_step_before():
    """The role keeps the fleet between the steps (site_migration__todo.fleet): a step is given the
    fleet of the step before and takes in that step's result only; an earlier one is never read again."""
    fleet, given = line_up({}, {"site_migration_auth": "password", "site_migration_remote_pass": PASSWORD})
    done = {"check": results({"site": "1001"}, {"site": "1002"}), "allow": results({"site": "1001"}, {"site": "1002"}),
            "create": results(created_result("1001", 7), created_result("1002", 8))}
    todo = step_arguments(fleet, "check", {}, given)
    assert todo["holds_secrets"] is True and todo["migrations"][1]["remote-pass"] == PASSWORD
    todo = step_arguments(todo["fleet"], "allow", {"check": done["check"]})
    assert todo["sites"] == ["1001", "1002"] and "holds_secrets" not in todo
    todo = step_arguments(todo["fleet"], "create", {"allow": done["allow"]}, given)
    # Given again, the check's result (here: a failure) would stop both sites; it is not read again.
    refused = results({"site": "1001", "failed": True, "msg": "bad"}, {"site": "1002", "failed": True, "msg": "bad"})
    todo = step_arguments(todo["fleet"], "preflight", {"check": refused, "create": done["create"]})
    assert module_arguments(todo)["migration_ids"] == [7, 8]
    assert todo["fleet"] == step_arguments(fleet, "preflight", done, given)["fleet"]
    # No credential in the fleet, nor in the arguments of a step whose sites use a generated key.
    assert PASSWORD not in json.dumps(todo)
    fleet, given = line_up({})
    assert step_arguments(fleet, "check", {}, given)["holds_secrets"] is False
