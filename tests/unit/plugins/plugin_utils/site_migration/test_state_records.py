# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a state file records of the going-live steps (plugins/plugin_utils/site_migration/state_records.py)."""

from __future__ import annotations

import json

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.state_records import (
    backup_records,
    final_records,
    read_state_record,
    recorded_going_live,
)

RECORD = {"backup_ids": ["3001", "3002"], "recorded_at": "2027-01-15T07:00:00Z", "refresh": "pending"}


def test_only_the_going_live_keys_are_read_never_the_credentials_record(tmp_path):
    path = tmp_path / "a.example.json"
    path.write_text(json.dumps({"site": "a.example", "migration_id": 7, "password_digest": "pbkdf2-sha256$...",
                                "pre_refresh_backup": RECORD, "cutover": None}))
    assert recorded_going_live(read_state_record(str(path))) == {"migration_id": 7, "pre_refresh_backup": RECORD}
    assert read_state_record(str(tmp_path / "none.json")) == {}
    (tmp_path / "bad.json").write_text("{")
    assert read_state_record(str(tmp_path / "bad.json")) == {}


def entry(**more):
    return dict({"site": "a.example", "state_file": "/s/a.example.json", "migration_id": 7, "stage": "done"}, **more)


def test_backups_are_recorded_before_the_run_and_nothing_in_check_mode():
    fleet = [entry(stage="run", backup={"record": RECORD}), entry(site="b", stage="run", backup={"backup_ids": []})]
    assert backup_records(fleet) == [{"path": "/s/a.example.json", "site": "a.example", "migration_id": 7,
                                      "values": {"pre_refresh_backup": RECORD}}]
    assert backup_records(fleet, check_mode=True) == []


def test_the_end_of_the_run_records_how_the_refresh_ended_and_the_cutover():
    run = {"ticket_id": "r7", "state": "success"}
    cutover = {"state": "switched", "domain": "shop.example", "previous_domain": "a.example", "old_domain_kept": True}
    (record,) = final_records([entry(result="succeeded", run=run, backup={"record": RECORD}, cutover=cutover)])
    assert record["values"]["pre_refresh_backup"]["refresh"] == "succeeded"
    assert record["values"]["cutover"]["domain"] == "shop.example" and record["values"]["cutover"]["at"]
    (record,) = final_records([entry(result="run_failed", run=run, recorded={"pre_refresh_backup": RECORD})])
    assert record["values"] == {"pre_refresh_backup": dict(RECORD, refresh="failed")}
    # an unfinished run keeps its backup pending; a cutover that was there already records nothing new
    assert final_records([entry(result="run_unfinished", run=run, backup={"record": RECORD})]) == []
    assert final_records([entry(result="left_alone", cutover=dict(cutover, state="already"))]) == []
    assert final_records([entry(result="succeeded", run=run, backup={"record": RECORD})], check_mode=True) == []
