# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""report_file, the module file: its spec and documentation, and what a module process does with it (say that the
task is its action plugin's). What the task writes (the JSON, modes, atomic write, check mode):
tests/unit/plugins/action/test_report_file.py and the integration target report_file."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.modules import report_file


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(report_file)


def test_the_spec_needs_path_and_content_and_defaults_the_modes():
    validator = ArgumentSpecValidator(**report_file.MODULE_SPEC)
    given = validator.validate({"path": "/tmp/reports/r.json", "content": {"sites": []}})
    assert not given.error_messages
    assert given.validated_parameters == {"path": "/tmp/reports/r.json", "content": {"sites": []}, "mode": "0640",
                                          "directory_mode": "0750"}
    # raw: a mode YAML read as a number stays the number (the action takes it as the permissions themselves).
    assert validator.validate({"path": "/r.json", "content": "x", "mode": 0o600}).validated_parameters["mode"] == 0o600
    missing = " ".join(validator.validate({"content": "x"}).error_messages)
    assert "missing required arguments: path" in missing


def test_a_module_process_says_the_task_runs_on_the_controller(module_process, tmp_path):
    result = module_process(report_file, {"path": str(tmp_path / "r.json"), "content": {"sites": []}})
    assert result["failed"] is True and result["msg"].startswith("wpcloud.hosting.report_file runs as an action plugin")
    assert list(tmp_path.iterdir()) == []
