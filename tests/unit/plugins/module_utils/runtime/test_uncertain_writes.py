# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes whose effect is unknown are resolved by a read (module_utils/runtime/uncertain_writes.py): when the read
shows the write happened it is not sent again; when it proves it did not, it is sent once more. Failed
polls never end a wait that has time left. All on the fake service."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime import uncertain_writes
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import client_meta, migration, migration_preflight
from ansible_collections.wpcloud.hosting.plugins.modules import migration_ready, response_ticket_wait
from ansible_collections.wpcloud.hosting.plugins.modules import site_allow_migration

NEW = {"site": "1002", "remote_host": "src.example", "remote_user": "www"}
HAPPENED = [dict(error="reset", after=True), dict(status=503, after=True), dict(error="read-timeout", after=True)]
NOT_HAPPENED = [dict(status=500), dict(status=502)]


def writes(fake_api, operation):
    return [c for c in fake_api.writes if c["operation"] == operation]


@pytest.mark.parametrize("fault", HAPPENED, ids=lambda f: "%s-after" % (f.get("error") or f.get("status")))
def test_a_create_that_happened_is_read_and_not_repeated(fake_api, run_logic, fake_time, fault):
    fake_api.add_site("1002", allow="true")
    fake_api.fault("migration.create", **fault)
    result, warnings = run_logic(migration, NEW)
    assert result["operation"] == "create" and result["migration_id"] == 5001
    assert len(writes(fake_api, "migration.create")) == 1 and len(fake_api.migrations) == 1
    (entry,) = result["uncertain"]
    assert (entry["write"], entry["outcome"], entry["sends"], entry["resolved_by"]) == (
        "migration.create", "happened", 1, "read")
    assert "site_meta.get" in fake_api.operations()[fake_api.operations().index("migration.create"):]


@pytest.mark.parametrize("fault", NOT_HAPPENED, ids=lambda f: str(f["status"]))
def test_a_create_that_did_not_happen_is_sent_again_after_the_read(fake_api, run_logic, fake_time, fault):
    fake_api.add_site("1002", allow="true")
    fake_api.fault("migration.create", **fault)
    result, warnings = run_logic(migration, NEW)
    assert result["migration_id"] == 5001 and len(fake_api.migrations) == 1
    calls = [c["operation"] for c in fake_api.log if c["operation"] in ("migration.create", "site_meta.get")]
    # A 500 ended its request: one read decides. A gateway's 502 may still be in the service's hands:
    # reads until the client's timeout (30 s) and the margin have passed, then the repeat.
    reads = 1 if fault["status"] == 500 else 8     # after 1, 2, 4, 5, 5, 5, 5, 5 s
    assert calls == ["site_meta.get", "migration.create"] + ["site_meta.get"] * reads + ["migration.create"]
    assert result["uncertain"][0]["outcome"] == "repeated" and result["uncertain"][0]["sends"] == 2


def test_a_write_that_stays_unknown_is_given_up_after_max_sends(fake_api, run_logic, fake_time):
    fake_api.add_site("1002", allow="true")
    fake_api.fault("migration.create", status=500, count=99)
    result, warnings = run_logic(migration, NEW)
    assert isinstance(result, ModuleFailure) and result.details["failure"]["effect"] == "unknown"
    assert len(writes(fake_api, "migration.create")) == uncertain_writes.MAX_SENDS and not fake_api.migrations
    assert result.details["uncertain"][0]["outcome"] == "unresolved"


def test_a_refused_write_is_not_resolved_by_a_read(fake_api, run_logic, fake_time):
    fake_api.add_site("1002", allow="true")
    fake_api.fault("migration.create", status=400)
    result, warnings = run_logic(migration, NEW)
    assert isinstance(result, ModuleFailure) and "uncertain" not in result.details or \
        result.details["uncertain"] == []
    assert len(writes(fake_api, "migration.create")) == 1


@pytest.mark.parametrize("fault, outcome, sends", [(dict(error="reset", after=True), "happened", 1),
                                                   (dict(status=504), "repeated", 2)])
def test_allow(fake_api, run_logic, fake_time, fault, outcome, sends):
    fake_api.add_site("1001")
    fake_api.fault("site.allow_migration", **fault)
    result, warnings = run_logic(site_allow_migration, {"site": "1001", "confirm_overwrite": True})
    assert result["changed"] and result["ready"] and fake_api.sites["1001"] == "true"
    assert len(writes(fake_api, "site.allow_migration")) == sends
    assert (result["uncertain"][0]["outcome"], result["uncertain"][0]["sends"]) == (outcome, sends)


def test_a_preflight_whose_answer_was_lost_is_followed_by_the_migrations_state(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration()
    fake_api.fault("migration.preflight", error="reset", after=True)
    fake_api.states(mid, "new", "preflight-running", "preflight-running", "preflight-succeeded")
    result, warnings = run_logic(migration_preflight, {"migration_id": mid})
    assert result["already_running"] and result["ticket_id"] is None and result["state"] == "preflight-succeeded"
    assert len(writes(fake_api, "migration.preflight")) == 1
    assert result["uncertain"][0]["outcome"] == "happened"


def test_a_run_whose_answer_was_lost_is_never_started_twice(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration(state="preflight-succeeded")
    fake_api.fault("migration.ready", status=502, after=True)
    fake_api.states(mid, "preflight-succeeded", "migration-running", "migration-succeeded")
    result, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert result["state"] == "migration-succeeded" and result["already_running"]
    assert len(writes(fake_api, "migration.ready")) == 1
    assert result["uncertain"][0] == dict(result["uncertain"][0], write="migration.ready", outcome="happened")


def test_a_run_that_did_not_start_is_started_once_more(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration(state="preflight-succeeded")
    fake_api.fault("migration.ready", status=500)
    fake_api.script("ready", steps=["running", "success"])
    result, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert result["ticket_state"] == "success" and len(writes(fake_api, "migration.ready")) == 2
    assert result["uncertain"][0]["outcome"] == "repeated"


@pytest.mark.parametrize("refusal", [409, 400])
def test_a_repeated_start_refused_because_the_first_took_effect_late_is_followed(fake_api, run_logic, fake_time,
                                                                                 refusal):
    """The read after the first send showed nothing; the repeat is refused (409: a run is active, 400: a
    service that enforces the partner rule); a read shows the run the first send started: followed."""
    mid = fake_api.add_migration(state="preflight-succeeded")
    fake_api.fault("migration.ready", status=500)
    fake_api.fault("migration.ready", status=refusal)
    fake_api.states(mid, "preflight-succeeded", "preflight-succeeded", "migration-running", "migration-succeeded")
    result, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert result["already_running"] and result["state"] == "migration-succeeded" and result["ticket_id"] is None
    assert len(writes(fake_api, "migration.ready")) == 2


def test_a_repeated_start_refused_with_nothing_started_fails(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration(state="preflight-succeeded")
    fake_api.fault("migration.ready", status=500)
    fake_api.fault("migration.ready", status=409)
    result, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert isinstance(result, ModuleFailure) and "HTTP 409" in result.msg
    assert result.details["uncertain"][0]["sends"] == 2


@pytest.mark.parametrize("fault, sends", [(dict(error="reset", after=True), 1), (dict(status=503), 2)])
def test_client_meta_value_is_read_back(fake_api, run_logic, fake_time, fault, sends):
    fake_api.fault("client_meta.add", **fault)
    result, warnings = run_logic(client_meta, {"client": "acme", "key": "webhook_url",
                                               "value": "https://hooks.example.com/wpcloud"})
    assert result["changed"] and len(fake_api.writes) == sends
    assert result["uncertain"][0]["outcome"] == ("happened" if sends == 1 else "repeated")


def test_a_failed_poll_never_ends_a_wait_that_has_time_left(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration()
    fake_api.script("preflight", steps=["running", "running", "success"])
    fake_api.fault("ticket.summary", status=500, count=12)         # more than the client's own retries
    result, warnings = run_logic(migration_preflight, {"migration_id": mid})
    assert result["ticket_state"] == "success"
    assert result["ticket"]["failed_polls"] >= 1 and "HTTP 500" in result["ticket"]["last_poll_error"]


def test_a_ticket_wait_that_times_out_while_polls_fail_says_the_last_error(fake_api, run_logic, fake_time):
    fake_api.fault("ticket.summary", status=503, count=999)
    result, warnings = run_logic(response_ticket_wait, {"ticket_id": "T-1", "wait_timeout": 30})
    assert isinstance(result, ModuleFailure) and result.details["timed_out"]
    assert result.details["ticket"]["failed_polls"] >= 1


def test_write_once_reports_nothing_for_a_clean_write():
    uncertain = []
    assert uncertain_writes.write_once("x", lambda: "ok", lambda: None, uncertain, "x") == "ok" and uncertain == []


def test_write_once_raises_a_read_failure_as_it_is():
    def send():
        raise WPCloudAPIError("lost", effect="unknown")

    def happened():
        raise WPCloudAPIError("read failed", status=500)
    with pytest.raises(WPCloudAPIError, match="read failed"):
        uncertain_writes.write_once("x", send, happened, [], "x", sleep=lambda s: None)


class LateService(object):
    """A write applied ``applied_at`` seconds after it was sent, on the fake clock; its answer lost."""

    def __init__(self, fake_time, applied_at, in_flight=2):
        self.clock, self.applied_at, self.in_flight = fake_time, applied_at, in_flight
        self.sent, self.reads = [], []

    def send(self):
        self.sent.append(self.clock.now)
        if len(self.sent) == 1:
            self.clock.now += self.in_flight            # the client waited its timeout
            error = WPCloudAPIError("no answer", effect="unknown")
            error.in_flight = self.in_flight
            raise error
        return "sent again"

    def happened(self):
        self.reads.append(self.clock.now)
        return "it happened" if self.clock.now >= self.sent[0] + self.applied_at else None


@pytest.mark.parametrize("applied_at", [2.5, 4.0, 5.9])
def test_a_write_applied_after_the_settle_is_seen_and_not_repeated(fake_time, applied_at):
    """Issue 23 item 6: the original arrives after the old 1 s settle but within the client's timeout
    plus the margin; the reads keep going and see it, and nothing is sent again."""
    late = LateService(fake_time, applied_at)
    uncertain = []
    assert uncertain_writes.write_once("migration.ready", late.send, late.happened, uncertain, "x") == "it happened"
    assert len(late.sent) == 1 and uncertain[0]["outcome"] == "happened"
    assert late.reads[-1] - late.sent[0] >= applied_at


def test_a_write_that_never_arrives_is_repeated_only_after_the_window(fake_time):
    late = LateService(fake_time, applied_at=999)
    uncertain = []
    assert uncertain_writes.write_once("migration.ready", late.send, late.happened, uncertain, "x") == "sent again"
    gave_up = late.sent[0] + late.in_flight
    window = late.in_flight + uncertain_writes.IN_FLIGHT_MARGIN
    assert late.reads[-1] >= gave_up + window and late.sent[1] >= gave_up + window
    assert all(b - a <= uncertain_writes.READ_PAUSE_CAP for a, b in zip(late.reads, late.reads[1:]))
    assert uncertain[0]["outcome"] == "repeated"


def test_a_read_that_shows_the_write_ends_the_doubt_at_once(fake_time):
    late = LateService(fake_time, applied_at=0, in_flight=30)
    assert uncertain_writes.write_once("migration.create", late.send, late.happened, [], "x") == "it happened"
    assert len(late.reads) == 1 and fake_time.naps == [uncertain_writes.SETTLE_SECONDS]


def test_an_answered_500_is_decided_by_one_read(fake_time):
    sends = []

    def send():
        sends.append(1)
        if len(sends) == 1:
            raise WPCloudAPIError("HTTP 500", status=500, effect="unknown")
        return "ok"
    assert uncertain_writes.write_once("x", send, lambda: None, [], "x") == "ok"
    assert fake_time.naps == [uncertain_writes.SETTLE_SECONDS]


def test_a_failed_read_inside_the_window_is_read_again(fake_time):
    late = LateService(fake_time, applied_at=3.0)
    reads = []

    def happened():
        reads.append(fake_time.now)
        if len(reads) == 1:
            raise WPCloudAPIError("HTTP 503 from migration.get", status=503, retry_safe=True)
        return late.happened()
    assert uncertain_writes.write_once("migration.ready", late.send, happened, [], "x") == "it happened"
    assert len(late.sent) == 1 and len(reads) >= 2


def test_a_read_that_fails_after_the_window_leaves_the_write_unresolved(fake_time):
    late = LateService(fake_time, applied_at=999)
    uncertain = []

    def happened():
        raise WPCloudAPIError("HTTP 503 from migration.get", status=503, retry_safe=True)
    with pytest.raises(WPCloudAPIError, match="503"):
        uncertain_writes.write_once("migration.ready", late.send, happened, uncertain, "x")
    assert len(late.sent) == 1 and uncertain[0]["outcome"] == "unresolved"
    assert fake_time.now >= late.sent[0] + late.in_flight * 2 + uncertain_writes.IN_FLIGHT_MARGIN
