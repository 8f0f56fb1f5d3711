# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""wpcloud.hosting.site_migration_record (plugins/action/site_migration_record.py): the going-live steps written into
the sites' state files, the other values kept, nothing in check mode, a value recorded already not written again."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.wpcloud.hosting.plugins.action.site_migration_record import ActionModule


def run(args, check_mode=False):
    task = SimpleNamespace(args=args, check_mode=check_mode, diff=False, async_val=0, action="site_migration_record")
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"))
    return ActionModule(task, connection, None, DataLoader(), Templar(loader=DataLoader(), variables={}), None).run(
        task_vars={})


def test_values_are_added_to_the_state_file_and_its_migration_kept(tmp_path):
    path = tmp_path / "a.example.json"
    path.write_text(json.dumps({"site": "a.example", "migration_id": 7, "key_fingerprint": "SHA256:x"}))
    record = {"path": str(path), "site": "a.example", "values": {"cutover": {"domain": "shop.example"}}}
    result = run({"records": [record]})
    assert result["changed"] is True and result["recorded"] == [str(path)]
    data = json.loads(path.read_text())
    assert data["migration_id"] == 7 and data["key_fingerprint"] == "SHA256:x"
    assert data["cutover"] == {"domain": "shop.example"}
    again = run({"records": [record]})
    assert again["changed"] is False and again["recorded"] == []
    # null clears a value
    run({"records": [dict(record, values={"cutover": None})]})
    assert json.loads(path.read_text())["cutover"] is None


def test_check_mode_writes_nothing(tmp_path):
    path = tmp_path / "a.example.json"
    result = run({"records": [{"path": str(path), "site": "a.example", "migration_id": 7,
                               "values": {"cutover": {"domain": "shop.example"}}}]}, check_mode=True)
    assert result["changed"] is True and result["recorded"] == [str(path)] and not path.exists()


def test_a_file_that_cannot_be_written_fails_naming_the_state_directory(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a directory")
    result = run({"records": [{"path": os.path.join(str(blocked), "a.json"), "site": "a.example", "migration_id": 7,
                               "values": {"cutover": {"domain": "shop.example"}}}]})
    assert result["failed"] is True and "site_migration_state_dir" in result["msg"]
