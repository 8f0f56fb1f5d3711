# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""migration_preflight on the fake service: a preflight started after a read and waited for, its failure
and diagnosis, its deadline, a running migration refused; the migration_ids list form and its progress
lines; a null ID in check mode.
Its logic: run_preflight in module_utils/service/migration_runs.py."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_preflight

AUTH_FAILED = ["Connecting to www@src.example:22", "Permission denied (publickey,password)."]


def test_a_preflight_is_started_after_a_read_and_waited_for(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration()
    fake_api.script("preflight", steps=["pending", "running", "success"])
    result, warnings = run_logic(migration_preflight, {"migration_id": mid})
    assert (result["changed"], result["state_before"], result["ticket_state"]) == (True, "new", "success")
    assert result["ticket"]["polls"] == 3 and fake_time.naps == [1.0, 1.0]
    assert fake_api.operations() == ["migration.get", "migration.preflight"] + ["ticket.summary"] * 3


def test_a_failed_preflight_fails_with_its_diagnosis(fake_api, run_logic):
    mid = fake_api.add_migration()
    fake_api.script("preflight", steps=["failure"], messages=AUTH_FAILED)
    result, warnings = run_logic(migration_preflight, {"migration_id": mid})
    assert isinstance(result, ModuleFailure)
    assert result.msg.startswith("The preflight failed (auth_failed): The service could not log in")
    assert result.details["diagnosis"]["messages"] == AUTH_FAILED and result.details["changed"] is True


def test_a_preflight_that_outlasts_wait_timeout_says_how_to_wait_again(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration()
    fake_api.script("preflight", steps=["pending", "running"])
    result, warnings = run_logic(migration_preflight, {"migration_id": mid, "wait_timeout": 2})
    assert isinstance(result, ModuleFailure) and result.details["timed_out"] is True
    assert "did not finish within wait_timeout=2s" in result.msg and "response_ticket_wait" in result.msg


def test_a_preflight_of_a_running_migration_is_refused_without_a_write(fake_api, run_logic):
    mid = fake_api.add_migration(state="migration-running")
    result, warnings = run_logic(migration_preflight, {"migration_id": mid})
    assert isinstance(result, ModuleFailure) and "is running" in result.msg and fake_api.writes == []


def test_the_list_form_reads_every_migration_before_it_starts_any(fake_api, run_logic, fake_time):
    """The starts follow one another without the reads between them, so the tickets begin close together."""
    ids = [fake_api.add_migration(site=str(1300 + n)) for n in range(20)]
    gone = 9999
    fake_api.script("preflight", steps=["success"])
    result, warnings = run_logic(migration_preflight, {"migration_ids": ids + [gone], "messages": "never"})
    operations = [op for op in fake_api.operations() if op != "ticket.summary"]
    assert operations == ["migration.get"] * 21 + ["migration.preflight"] * 20
    assert isinstance(result, ModuleFailure) and result.details["failed_count"] == 1
    failed = [r for r in result.details["results"] if r["failed"]]
    assert [r["migration_id"] for r in failed] == [gone] and "not found" in failed[0]["msg"]


def test_the_list_form_refuses_a_migration_twice(fake_api, run_logic):
    result, warnings = run_logic(migration_preflight, {"migration_ids": [5001, 5001]})
    assert isinstance(result, ModuleFailure) and "twice" in result.msg and fake_api.calls == []


def test_progress_lines_while_a_fleet_waits(fake_api, run_logic, fake_time):
    ids = [fake_api.add_migration(site=str(1100 + n)) for n in range(3)]
    fake_api.script("preflight", steps=["pending"] + ["running"] * 20 + ["success"])
    fake_api.script("preflight", steps=["pending", "failure"], migration_id=ids[0])
    lines = []
    result, warnings = run_logic(migration_preflight, {"migration_ids": ids, "progress_interval": 10, "messages": "never"},
                                 progress=lines.append)
    assert isinstance(result, ModuleFailure) and result.details["failed_count"] == 1
    # 22 polls: every second for 12 s, then further apart (the last at 36 s): a line every 10 s throughout.
    assert lines == ["migration_preflight: 1/3 done (1 failed), 2 running, %d s elapsed" % s for s in (10, 20, 30)]


# -- check mode across a workflow: what an earlier check-mode task gave (a null ID) ---------------------------

def test_a_null_migration_id_in_check_mode(fake_api, run_logic):
    result, warnings = run_logic(migration_preflight, {"migration_id": None}, check_mode=True)
    assert not isinstance(result, ModuleFailure), result
    assert result["changed"] is True and result["ticket_id"] is None
    assert result["msg"].startswith("check mode: migration_id is null") and "preflight would be started" in result["msg"]
    assert fake_api.calls == []


def test_a_null_migration_id_outside_check_mode_names_the_option(fake_api, run_logic):
    result, warnings = run_logic(migration_preflight, {"migration_id": None})
    assert isinstance(result, ModuleFailure) and result.msg.startswith("migration_id is null")
    assert fake_api.calls == []


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(migration_preflight)
