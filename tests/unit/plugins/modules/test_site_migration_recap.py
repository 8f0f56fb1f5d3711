# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_migration_recap, the module file: its spec and documentation, and what a module process does with it (say
that the task is its action plugin's). Each site's outcome, as the role's old assert decided it:
tests/unit/plugins/action/test_site_migration_recap.py and the integration target site_migration_recap."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.modules import site_migration_recap


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(site_migration_recap)


def test_the_spec_reads_the_roles_recap_variable_by_default():
    validator = ArgumentSpecValidator(**site_migration_recap.MODULE_SPEC)
    assert validator.validate({}).validated_parameters == {"var": "site_migration__recap"}
    assert validator.validate({"var": "my_recap"}).validated_parameters == {"var": "my_recap"}
    assert "recap. Supported parameters include: var" in " ".join(validator.validate({"recap": {}}).error_messages)


def test_a_module_process_says_the_task_runs_on_the_controller(module_process):
    result = module_process(site_migration_recap, {})
    assert result["failed"] is True
    assert result["msg"].startswith("wpcloud.hosting.site_migration_recap runs as an action plugin on the controller")
