# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""wpcloud.hosting.report_file (plugins/action/report_file.py): the role's JSON report written in the
controller process, as ansible.builtin.file + copy wrote it (same JSON, modes, atomic), check mode."""

from __future__ import annotations

import json
import os
import stat
from types import SimpleNamespace

from ansible.plugins.filter.core import to_nice_json

from ansible_collections.wpcloud.hosting.plugins.action.report_file import ActionModule

REPORT = {"sites": [{"host": "dest1", "result": "migrated", "note": "caf\u00e9"}], "counts": {"migrated": 1}}


def run(args, check_mode=False):
    task = SimpleNamespace(args=args, check_mode=check_mode, diff=False, async_val=0, action="report_file")
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"))
    return ActionModule(task, connection, None, None, None, None).run(task_vars={})


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_report_is_the_json_the_copy_task_wrote_with_its_modes(tmp_path):
    path = tmp_path / "reports" / "nested" / "site-migration-1.json"
    result = run({"path": str(path), "content": REPORT})
    assert result["changed"] is True and result["path"] == str(path) and not result.get("failed")
    assert path.read_text(encoding="utf-8") == to_nice_json(REPORT, indent=2) + "\n"
    assert json.loads(path.read_text(encoding="utf-8")) == REPORT
    assert mode(path) == 0o640 and mode(path.parent) == 0o750
    assert [p.name for p in path.parent.iterdir()] == [path.name]        # no temporary file left


def test_an_existing_directory_gets_the_directory_mode_and_the_same_file_is_unchanged(tmp_path):
    directory = tmp_path / "reports"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    args = {"path": str(directory / "r.json"), "content": REPORT}
    assert run(args)["changed"] is True and mode(directory) == 0o750
    assert run(args)["changed"] is False
    assert run(dict(args, content={"other": 1}))["changed"] is True


def test_check_mode_writes_nothing(tmp_path):
    path = tmp_path / "reports" / "r.json"
    result = run({"path": str(path), "content": REPORT}, check_mode=True)
    assert result["changed"] is True and not path.exists() and not path.parent.exists()


def test_an_unwritable_place_and_a_bad_mode_fail_with_the_path_or_option(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run({"path": str(blocker / "r.json"), "content": REPORT})
    assert result["failed"] is True and str(blocker / "r.json") in result["msg"]
    result = run({"path": str(tmp_path / "r.json"), "content": REPORT, "mode": "rw-r"})
    assert result["failed"] is True and "mode must be octal" in result["msg"] and not (tmp_path / "r.json").exists()


def test_unknown_options_are_refused(tmp_path):
    result = run({"path": str(tmp_path / "r.json"), "content": REPORT, "dest": "x"})
    assert result["failed"] is True and "dest" in result["msg"]


def test_a_mode_that_yaml_read_as_a_number_is_the_permissions_themselves(tmp_path):
    path = tmp_path / "reports" / "r.json"
    assert run({"path": str(path), "content": REPORT, "mode": 0o600, "directory_mode": 0o700})["changed"] is True
    assert mode(path) == 0o600 and mode(path.parent) == 0o700


def test_an_empty_path_is_an_error_that_names_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)         # an empty path must not become the working directory
    result = run({"path": "", "content": REPORT})
    assert result["failed"] is True and "path is empty" in result["msg"]
    assert os.listdir(tmp_path) == []
