# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_migration_record, the module file: its spec and documentation, and what a module process does with it (say
that the task is its action plugin's). What it writes: tests/unit/plugins/action/test_site_migration_record.py and the
integration target site_migration_record."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.modules import site_migration_record


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(site_migration_record)


def test_the_spec_needs_each_record_whole():
    validator = ArgumentSpecValidator(**site_migration_record.MODULE_SPEC)
    assert validator.validate({"records": []}).error_messages == []
    errors = validator.validate({"records": [{"path": "/s/a.json", "values": {}}]}).error_messages
    assert errors and "site" in errors[0]


def test_a_module_process_says_the_task_runs_on_the_controller(module_process):
    result = module_process(site_migration_record, {"records": []})
    assert result["failed"] is True
    assert result["msg"].startswith("wpcloud.hosting.site_migration_record runs as an action plugin on the controller")
