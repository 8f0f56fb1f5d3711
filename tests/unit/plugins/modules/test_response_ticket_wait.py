# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""response_ticket_wait on the fake service: tickets waited on (started by migration_preflight), migrations
followed by their state, what is left at the deadline, a malformed ticket ID refused before any call;
a null ticket ID in check mode.
Its logic: run_wait in module_utils/service/migration_runs.py."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_preflight, response_ticket_wait

AUTH_FAILED = ["Connecting to www@src.example:22", "Permission denied (publickey,password)."]


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


@pytest.mark.parametrize("check_mode", [True, False])
def test_a_null_ticket_id(fake_api, run_logic, check_mode):
    result, warnings = run_logic(response_ticket_wait, {"ticket_id": None}, check_mode=check_mode)
    if check_mode:
        assert result["changed"] is False and "nothing to wait for" in result["msg"]
    else:
        assert isinstance(result, ModuleFailure) and result.msg.startswith("ticket_id is null")
    assert fake_api.calls == []


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(response_ticket_wait)
