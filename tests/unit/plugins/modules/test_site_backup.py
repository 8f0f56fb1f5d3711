# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_backup on the fake service: backups created and waited for until listed, never piled up (max_age, the
quota, replace_older), deleted and waited for, listed, a restore only when confirmed (allow_restore, the 503
suspension set and lifted, the job followed), lost answers read back, the list form, check mode and diff, bad input
refused by the option's name before any call."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import site_backup


def backup(run_logic, check_mode=False, diff=False, **args):
    return run_logic(site_backup, dict({"client": "acme", "site": "1002"}, **args), check_mode=check_mode, diff=diff)


@pytest.fixture()
def live(fake_api, fake_time):
    fake_api.add_live_site(1002, "dest2.example")
    fake_api.job_steps = ["queued", "success"]
    return fake_api


def ops(service):
    return [c["operation"] for c in service.writes]


def test_both_backups_are_created_and_waited_for_until_listed(live, run_logic):
    live.backup_lag = 2          # listed only from the third read on (the created event's lag)
    result, warnings = backup(run_logic)
    assert ops(live) == ["backup.create", "backup.create"]
    assert result["backup_ids"] == result["created"] == ["3001", "3002"]
    assert [r["request_id"] for r in result["requests"]] == [12001, 12002]
    assert [(b["backup_id"], b["content"], b["on_demand"]) for b in result["backups"]] == [
        ("3002", "database", True), ("3001", "files", True)]
    assert len([c for c in live.calls if c["operation"] == "backup.list"]) == 1 + 3     # the listing, three polls


def test_a_rerun_finds_them_and_writes_nothing(live, run_logic):
    backup(run_logic)
    again, warnings = backup(run_logic)
    assert ops(live) == ["backup.create", "backup.create"] and again["changed"] is False
    assert again["backup_ids"] == ["3001", "3002"] and again["created"] == []


def test_an_old_backup_counts_unless_max_age_says_otherwise(live, run_logic):
    live.add_backup("1002", "ondemand-fs", taken="2020-01-01 00:00:00")
    files, warnings = backup(run_logic, type="files")
    assert files["backup_ids"] == ["3001"] and live.writes == []
    refused, warnings = backup(run_logic, type="files", max_age="2h")
    assert isinstance(refused, ModuleFailure) and "quota of on-demand files backups of site 1002 is reached" in refused.msg
    assert "Backup 3001, taken 2020-01-01 00:00:00" in refused.msg and "replace_older: true" in refused.msg
    replaced, warnings = backup(run_logic, type="files", max_age="2h", replace_older=True)
    assert ops(live) == ["backup.create", "backup.create", "backup.delete", "backup.create"]
    assert replaced["actions"] == ["delete backup 3001", "create a files backup"]
    assert replaced["backup_ids"] == ["3002"] and [b["backup_id"] for b in replaced["backups"]] == ["3002"]


def test_check_mode_and_diff_write_nothing(live, run_logic):
    live.add_backup("1002", "ondemand-db", taken="2026-01-01 00:00:00")
    result, warnings = backup(run_logic, check_mode=True, diff=True)
    assert live.writes == [] and result["changed"] and result["actions"] == ["create a files backup"]
    assert result["diff"] == {"before": {"files": None, "database": "3001"},
                              "after": {"files": "(a new backup)", "database": "3001"}}


def test_a_create_whose_answer_was_lost_is_read_back(live, run_logic):
    live.fault("backup.create", error="reset", after=True)
    result, warnings = backup(run_logic, type="database")
    assert ops(live) == ["backup.create"] and result["uncertain"][0]["outcome"] == "happened"
    assert result["backup_ids"] == ["3001"]


def test_a_lost_create_repeated_into_the_quota_waits_for_the_first(live, run_logic):
    live.backup_lag = 12             # the first create happened; its backup is not listed while the reads last
    live.fault("backup.create", error="reset", after=True)
    result, warnings = backup(run_logic, type="database", wait_timeout=120)
    assert [c["status"] for c in live.writes] == ["reset", 403], result
    assert not isinstance(result, ModuleFailure), (result.msg, result.details)
    assert result["uncertain"][0]["outcome"] == "repeated" and result["backup_ids"] == ["3001"] and result["changed"]
    assert len(live.backups["1002"]) == 1


def test_a_backup_that_never_appears_ends_at_the_deadline(live, run_logic):
    live.backup_lag = 1000
    result, warnings = backup(run_logic, type="files", wait_timeout=5)
    assert isinstance(result, ModuleFailure) and result.details["timed_out"]
    assert "was not listed when wait_timeout=5s ran out" in result.msg and "on-demand-backup event" in result.msg


def test_without_wait_the_requests_are_returned(live, run_logic):
    live.backup_lag = 5
    result, warnings = backup(run_logic, wait=False)
    assert result["created"] == [] and [r["content"] for r in result["requests"]] == ["files", "database"]


def test_absent_deletes_and_waits_until_they_are_gone(live, run_logic):
    kept = live.add_backup("1002", "fs")
    old = live.add_backup("1002", "ondemand-fs")
    result, warnings = backup(run_logic, state="absent", backup_ids=[old, "4040"], diff=True)
    assert ops(live) == ["backup.delete"] and result["absent"] == ["4040"]
    assert [b["backup_id"] for b in result["backups"]] == [kept]
    assert result["diff"] == {"before": {"backups": [old, kept]}, "after": {"backups": [kept]}}
    again, warnings = backup(run_logic, state="absent", backup_ids=[old])
    assert again["changed"] is False and ops(live) == ["backup.delete"]


def test_an_automatic_backup_is_never_deleted(live, run_logic):
    automatic = live.add_backup("1002", "db")
    result, warnings = backup(run_logic, state="absent", backup_ids=[automatic])
    assert isinstance(result, ModuleFailure) and "an automatic database backup" in result.msg and live.writes == []
    every, warnings = backup(run_logic, state="absent")
    assert every["changed"] is False and live.writes == []


def test_a_restore_is_allowed_suspended_followed_and_lifted(live, run_logic):
    files, database = live.add_backup("1002", "ondemand-fs"), live.add_backup("1002", "db")
    result, warnings = backup(run_logic, state="restored", backup_ids=[database, files], confirm_overwrite=True)
    assert ops(live) == ["site_meta.update", "site_meta.update", "site.restore", "site_meta.remove"]
    update = [c["sent"] for c in live.writes if c["operation"] == "site_meta.update"]
    assert update[0]["value"].isdigit() and update[1] == {"value": "503"}
    assert live.restores == [("1002", [files, database])]           # files first, whatever the order given
    assert (result["restored_from"], result["suspended"], result["suspended_before"]) == ([files, database], False,
                                                                                          False)
    assert result["job"]["outcome"] == "success" and live.site_meta == {}


def test_keep_suspended_leaves_the_503(live, run_logic):
    files, database = live.add_backup("1002", "fs"), live.add_backup("1002", "db")
    result, warnings = backup(run_logic, state="restored", backup_ids=[files, database], confirm_overwrite=True,
                              keep_suspended=True)
    assert result["suspended"] is True and live.site_meta == {("1002", "suspended"): "503"}


def test_a_failed_restore_lifts_what_the_task_set(live, run_logic):
    live.job_steps = ["running", "failure"]
    files, database = live.add_backup("1002", "fs"), live.add_backup("1002", "db")
    result, warnings = backup(run_logic, state="restored", backup_ids=[files, database], confirm_overwrite=True,
                              keep_suspended=True)
    assert isinstance(result, ModuleFailure) and "site is unchanged" in result.msg
    assert live.site_meta == {} and ops(live)[-2:] == ["site_meta.remove", "site_meta.remove"]


def test_a_backup_not_ready_yet_is_restored_once_it_is(live, run_logic, fake_time):
    live.restore_not_ready = 2
    files, database = live.add_backup("1002", "fs"), live.add_backup("1002", "db")
    result, warnings = backup(run_logic, state="restored", backup_ids=[files, database], confirm_overwrite=True)
    assert [c["status"] for c in live.writes if c["operation"] == "site.restore"] == [400, 400, 200]
    assert result["job"]["outcome"] == "success" and fake_time.naps[:2] == [1.0, 1.0]


@pytest.mark.parametrize("ids,expected", [
    (["3001", "9999"], "backup_ids names 9999, which site 1002 does not list (its backups: 3001, 3002)"),
    (["3001", "3001"], "backup_ids lists 3001 twice"),
    (["3001"], "backup_ids must hold two IDs with state=restored"),
])
def test_a_restore_from_the_wrong_backups_is_refused_before_any_write(live, run_logic, ids, expected):
    live.add_backup("1002", "fs")
    live.add_backup("1002", "db")
    result, warnings = backup(run_logic, state="restored", backup_ids=ids, confirm_overwrite=True)
    assert isinstance(result, ModuleFailure) and expected in result.msg and live.writes == []


def test_two_backups_of_one_kind_are_refused(live, run_logic):
    first, second = live.add_backup("1002", "fs"), live.add_backup("1002", "ondemand-fs")
    result, warnings = backup(run_logic, state="restored", backup_ids=[first, second], confirm_overwrite=True)
    assert isinstance(result, ModuleFailure) and "two files backups" in result.msg and live.writes == []


def test_a_restore_in_check_mode_says_what_it_would_do(live, run_logic):
    files, database = live.add_backup("1002", "fs"), live.add_backup("1002", "db")
    result, warnings = backup(run_logic, check_mode=True, diff=True, state="restored", backup_ids=[files, database],
                              confirm_overwrite=True)
    assert live.writes == [] and result["actions"] == [
        "allow a restore (site meta allow_restore)", "suspend the site (503)",
        "restore files from backup 3001 and the database from backup 3002", "lift the suspension"]
    assert "backup 3001" in result["diff"]["after"]["site"]


def test_listed_only_reads(live, run_logic):
    live.add_backup("1002", "fs", taken="2026-01-02 03:04:05")
    live.add_backup("1002", "ondemand-db")
    result, warnings = backup(run_logic, state="listed", type="files")
    assert live.writes == [] and [b["taken"] for b in result["backups"]] == ["2026-01-02 03:04:05"]


def test_the_list_form_backs_up_every_site_and_names_the_failed_ones(fake_api, run_logic, fake_time):
    for n in range(3):
        fake_api.add_live_site(1001 + n, "s%d.example" % n)
    fake_api.backup_lag = 1
    result, warnings = run_logic(site_backup, {"client": "acme", "type": "database", "sites": [
        {"site": "1001"}, {"site": "1002", "type": "files"}, {"site": "4242"}]})
    assert isinstance(result, ModuleFailure) and result.msg.startswith("1 of 3 sites failed: site 4242")
    results = result.details["results"]
    assert [(r["site"], len(r.get("backup_ids") or []), r["failed"]) for r in results] == [
        ("1001", 1, False), ("1002", 1, False), ("4242", 0, True)]
    assert [b["content"] for r in results[:2] for b in r["backups"]] == ["database", "files"]


@pytest.mark.parametrize("args,expected", [
    ({"state": "restored", "backup_ids": ["1", "2"]}, "confirm_overwrite must be true with state=restored"),
    ({"state": "restored", "confirm_overwrite": True}, "backup_ids is required with state=restored"),
    ({"max_age": "soon"}, "max_age must be a positive age such as 3600, 30m, 2h or 1d"),
    ({"max_age": "0"}, "max_age must be a positive age"),
    ({"state": "absent", "max_age": "1h"}, "max_age applies to state=present"),
    ({"backup_ids": ["1"]}, "backup_ids applies to state=absent and state=restored"),
    ({"state": "absent", "backup_ids": [" "]}, "backup_ids holds an empty ID"),
    ({"site": ""}, "site must be a numeric site ID or a domain name; it is empty"),
    ({"client": ""}, "client is empty"),
    ({"sites": [{"site": "1002"}, {"site": "1002"}]}, "sites lists site 1002 twice"),
])
def test_bad_input_is_refused_before_any_call(live, run_logic, args, expected):
    given = dict({"client": "acme"} if "sites" in args else {"client": "acme", "site": "1002"}, **args)
    result, warnings = run_logic(site_backup, given)
    assert isinstance(result, ModuleFailure) and expected in result.msg, result
    assert live.calls == []
