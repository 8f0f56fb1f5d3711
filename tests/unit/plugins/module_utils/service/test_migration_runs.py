# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""migration_preflight, migration_ready and response_ticket_wait on the fake service: start, wait, judge,
follow a run by its state, the migration_ids list forms, progress lines. (Null IDs in check mode:
test_migration_runs_check_mode.py.)"""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_preflight, migration_ready
from ansible_collections.wpcloud.hosting.plugins.modules import response_ticket_wait

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


def test_without_wait_the_ticket_id_comes_back_at_once(fake_api, run_logic):
    mid = fake_api.add_migration(state="preflight-succeeded")
    result, warnings = run_logic(migration_ready, {"migration_id": mid, "wait": False})
    assert result["changed"] is True and result["ticket_id"] and "ticket" not in result
    assert fake_api.operations() == ["migration.get", "migration.ready"]


def test_ready_requires_a_successful_preflight(fake_api, run_logic):
    mid = fake_api.add_migration(state="preflight-failed")
    refused, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert isinstance(refused, ModuleFailure) and "require_preflight" in refused.msg and fake_api.writes == []
    expert, warnings = run_logic(migration_ready, {"migration_id": mid, "require_preflight": False})
    assert expert["ticket_state"] == "success"


def test_ready_never_starts_a_second_run_and_follows_the_active_one(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration(state="migration-running")
    fake_api.states(mid, "migration-running", "migration-running", "migration-running", "migration-succeeded")
    result, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert (result["already_running"], result["changed"], result["state"]) == (True, False, "migration-succeeded")
    assert fake_api.writes == []


def test_an_active_run_that_fails_fails_the_task(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration(state="migration-running")
    fake_api.states(mid, "migration-running", "migration-failed")
    result, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert isinstance(result, ModuleFailure) and result.details["state"] == "migration-failed"
    assert result.msg == "The migration run followed by its migration's state ended in state migration-failed."


def test_the_list_form_starts_every_run_then_waits_on_all_at_once(fake_api, run_logic, fake_time):
    ready = [fake_api.add_migration(site=str(1100 + n), state="preflight-succeeded") for n in range(3)]
    running = fake_api.add_migration(site="1200", state="migration-running")
    fake_api.states(running, "migration-running", "migration-succeeded")
    fake_api.script("ready", steps=["pending", "success"])
    fake_api.script("ready", steps=["pending", "failure"], messages=["rsync: command not found"], migration_id=ready[1])
    result, warnings = run_logic(migration_ready, {"migration_ids": ready + [running]})
    failed = "1 of 4 migrations failed: migration %d: The migration run failed (rsync_missing)" % ready[1]
    assert isinstance(result, ModuleFailure) and result.msg.startswith(failed)
    states = [(r["migration_id"], r.get("ticket_state"), r.get("state"), r["failed"]) for r in result.details["results"]]
    assert states == [(ready[0], "success", None, False), (ready[1], "failure", None, True),
                      (ready[2], "success", None, False), (running, None, "migration-succeeded", False)]
    assert fake_time.naps == [1.0]  # one wait for all: every ticket and the active run end in the second round
    assert [c["operation"] for c in fake_api.writes] == ["migration.ready"] * 3


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


def test_a_start_that_fails_is_its_sites_result_and_the_others_go_on(fake_api, run_logic, fake_time):
    ids = [fake_api.add_migration(site=str(1400 + n), state="preflight-succeeded") for n in range(3)]
    fake_api.fault("migration.ready", status=409)
    fake_api.script("ready", steps=["success"])
    result, warnings = run_logic(migration_ready, {"migration_ids": ids, "messages": "never"})
    assert isinstance(result, ModuleFailure) and result.details["failed_count"] == 1
    failed = [r for r in result.details["results"] if r["failed"]]
    assert failed[0]["migration_id"] in ids and "HTTP 409" in failed[0]["msg"] and "ticket_id" not in failed[0]
    assert sorted(r.get("ticket_state") or "-" for r in result.details["results"]) == ["-", "success", "success"]


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


def test_response_ticket_wait_on_tickets(fake_api, run_logic, fake_time):
    ids = [fake_api.add_migration(site=str(1100 + n)) for n in range(2)]
    fake_api.script("preflight", steps=["running", "failure"], messages=AUTH_FAILED, migration_id=ids[1])
    started = [run_logic(migration_preflight, {"migration_id": m, "wait": False})[0]["ticket_id"] for m in ids]
    result, warnings = run_logic(response_ticket_wait, {"ticket_ids": started})
    assert isinstance(result, ModuleFailure)
    assert result.msg == "1 of 2 tickets failed: %s (auth_failed)" % started[1]
    assert (result.details["succeeded_count"], result.details["failed_count"]) == (1, 1)
    tolerant, warnings = run_logic(response_ticket_wait, {"ticket_id": started[1], "fail_on_failure": False})
    assert tolerant["ticket"]["state"] == "failure" and tolerant["ticket"]["diagnosis"]["code"] == "auth_failed"


@pytest.mark.parametrize("ticket_id", [" t.1", "t 1", "x" * 257])
def test_response_ticket_wait_refuses_a_malformed_ticket_id_before_any_call(fake_api, run_logic, ticket_id):
    result, warnings = run_logic(response_ticket_wait, {"ticket_id": ticket_id})
    assert isinstance(result, ModuleFailure) and result.msg.startswith("ticket_id must hold") and fake_api.calls == []


def test_response_ticket_wait_follows_migrations_by_state(fake_api, run_logic, fake_time):
    ok = fake_api.add_migration(site="1100", state="migration-running")
    bad = fake_api.add_migration(site="1101", state="preflight-running")
    fake_api.states(ok, "migration-running", "migration-succeeded")
    fake_api.states(bad, "preflight-running", "preflight-running", "preflight-failed")
    result, warnings = run_logic(response_ticket_wait, {"migration_ids": [ok, bad, 9999], "fail_on_failure": False})
    assert isinstance(result, ModuleFailure) and result.msg == "Migration 9999 was not found (HTTP 404)."
    assert [(m["migration_id"], m["state"]) for m in result.details["migrations"]] == [
        (ok, "migration-succeeded"), (bad, "preflight-failed"), (9999, "error")]
    assert (result.details["succeeded_count"], result.details["failed_count"]) == (1, 2)


def test_response_ticket_wait_names_what_is_left_at_the_deadline(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration(site="1100", state="migration-running")
    result, warnings = run_logic(response_ticket_wait, {"migration_ids": [mid], "wait_timeout": 3})
    assert isinstance(result, ModuleFailure)
    assert result.msg == ("1 of 1 migrations did not finish within wait_timeout=3s; last states: %d=migration-running"
                          % mid)
