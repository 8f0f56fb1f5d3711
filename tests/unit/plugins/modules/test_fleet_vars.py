# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""fleet_vars, the module file: its spec and documentation, and what a module process does with it (say that the
task is its action plugin's). The task itself: tests/unit/plugins/action/test_fleet_vars.py, the integration target
fleet_vars, and tests/system/test_fleet_vars.py (Ansible's variable manager, ansible-core 2.21 and 2.16)."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.modules import fleet_vars


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    doc, examples, returned = module_docs(fleet_vars)
    assert set(returned) == {"hosts", "host_vars"}
    assert all(task.get("run_once") for task in examples)


def test_the_spec_takes_names_and_hosts_and_needs_names():
    validator = ArgumentSpecValidator(**fleet_vars.MODULE_SPEC)
    given = validator.validate({"names": ["destination", "source_host"]})
    assert not given.error_messages
    assert given.validated_parameters == {"names": ["destination", "source_host"], "hosts": None}
    assert validator.validate({"names": "destination"}).validated_parameters["names"] == ["destination"]
    assert "missing required arguments: names" in " ".join(validator.validate({"hosts": ["a"]}).error_messages)


def test_a_module_process_says_the_task_runs_on_the_controller(module_process):
    result = module_process(fleet_vars, {"names": ["destination"]})
    assert result["failed"] is True
    assert result["msg"] == ("wpcloud.hosting.fleet_vars runs as an action plugin on the controller; call it as a "
                             "task of a play (it has no module process).")


def test_a_module_process_checks_the_spec_first(module_process):
    result = module_process(fleet_vars, {"hosts": ["a"]})
    assert result["failed"] is True and "missing required arguments: names" in result["msg"]
