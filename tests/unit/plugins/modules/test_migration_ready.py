# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""migration_ready on the fake service: a run started only after a successful preflight, never a second
one (an active run is followed by its state), the migration_ids list form; check mode after earlier
check-mode tasks (a null ID, a preflight that did not run).
Its logic: run_ready in module_utils/service/migration_runs.py."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_ready


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


def test_a_start_that_fails_is_its_sites_result_and_the_others_go_on(fake_api, run_logic, fake_time):
    ids = [fake_api.add_migration(site=str(1400 + n), state="preflight-succeeded") for n in range(3)]
    fake_api.fault("migration.ready", status=409)
    fake_api.script("ready", steps=["success"])
    result, warnings = run_logic(migration_ready, {"migration_ids": ids, "messages": "never"})
    assert isinstance(result, ModuleFailure) and result.details["failed_count"] == 1
    failed = [r for r in result.details["results"] if r["failed"]]
    assert failed[0]["migration_id"] in ids and "HTTP 409" in failed[0]["msg"] and "ticket_id" not in failed[0]
    assert sorted(r.get("ticket_state") or "-" for r in result.details["results"]) == ["-", "success", "success"]


# -- check mode across a workflow: what an earlier check-mode task gave (a null ID, a preflight not run) -------

def test_a_null_migration_id_in_check_mode(fake_api, run_logic):
    result, warnings = run_logic(migration_ready, {"migration_id": None}, check_mode=True)
    assert not isinstance(result, ModuleFailure), result
    assert result["changed"] is True and result["ticket_id"] is None
    assert result["msg"].startswith("check mode: migration_id is null") and "run would be started" in result["msg"]
    assert fake_api.calls == []


def test_a_null_migration_id_outside_check_mode_names_the_option(fake_api, run_logic):
    result, warnings = run_logic(migration_ready, {"migration_id": None})
    assert isinstance(result, ModuleFailure) and result.msg.startswith("migration_id is null")
    assert fake_api.calls == []


def test_ready_after_a_preflight_that_only_ran_in_check_mode(fake_api, run_logic):
    mid = fake_api.add_migration(state="new")
    result, warnings = run_logic(migration_ready, {"migration_id": mid}, check_mode=True)
    assert result["changed"] is True and "once a preflight succeeds" in result["msg"]
    assert fake_api.writes == []
    refused, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert isinstance(refused, ModuleFailure) and "require_preflight" in refused.msg


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(migration_ready)
