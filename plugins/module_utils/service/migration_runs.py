# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Runs of a migration: the logic of migration_preflight and migration_ready (start a preflight or a run,
and wait for its response ticket) and of response_ticket_wait (wait on tickets, or follow migrations by
their state when a run's ticket is not known).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import NULL_ID_MSG, wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import PARALLEL_WAITS
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import list_result, run_for_each, with_api_load
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration import (
    get_migration,
    read_migration,
    record_state,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import (
    Polled,
    follow,
    progress_for,
    wait_for_tickets,
    wait_summary,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.uncertain_writes import write_once
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    ACTIVE_STATES,
    FAILED_STATES,
    MIGRATION_SUCCEEDED,
    PREFLIGHT_STARTED_STATES,
    PREFLIGHT_SUCCEEDED,
    RUN_STARTED_STATES,
    RUN_TERMINAL_STATES,
    RUNNING_STATES,
    TICKET_FAILURE,
    TICKET_ID_PARAM,
    TICKET_TERMINAL,
    UNREADABLE,
    diagnose,
)

MAX_TICKET_ID = 256


# -- a run followed by its migration's state (its ticket is not known) -----------------------------------

class MigrationRun(Polled):
    """What a wait knows of a migration followed by its state."""

    def __init__(self, migration_id, started):
        super(MigrationRun, self).__init__(started)
        self.migration_id = migration_id
        self.state = None

    @property
    def done(self):
        return self.error is not None or (self.state is not None and self.state not in ACTIVE_STATES)

    @property
    def failed(self):
        return self.error is not None or self.state in FAILED_STATES

    def progress(self):
        if self.error is not None:
            return "migration %s could not be read" % self.migration_id
        return "migration %s %s" % (self.migration_id, self.state or "not read yet")

    def as_result(self, now):
        end = self.completed_at if self.completed_at is not None else now
        result = {"migration_id": self.migration_id, "state": self.state if self.error is None else UNREADABLE,
                  "elapsed": round(end - self.started, 3)}
        if self.error is not None:
            result["error"] = self.error
        return self.poll_counts(result)


def poll_migration(client, run, clock=None):
    run.polls += 1
    try:
        record = read_migration(client, run.migration_id)
    except WPCloudAPIError as exc:
        run.poll_failed(exc)
        return
    if record is None:
        run.error = "Migration %s was not found (HTTP 404)." % run.migration_id
        return
    run.state = str(record.get("state")) if record.get("state") is not None else "unknown"
    if run.done:
        run.completed_at = (clock or time.monotonic)()


def wait_for_migrations(client, migration_ids, wait_timeout, poll_interval, wait=True, clock=None, sleep=None,
                        progress=None, poll_max_interval=None):
    """Follow migrations by their state until none is active. Returns (runs, timed_out)."""
    start = (clock or time.monotonic)()
    runs = [MigrationRun(migration_id, start) for migration_id in migration_ids]
    timed_out = follow(runs, lambda r: poll_migration(client, r, clock), wait_timeout, poll_interval, wait=wait,
                       clock=clock, sleep=sleep, progress=progress, poll_max_interval=poll_max_interval)
    return runs, timed_out


def ticket_summary(tickets, timed_out):
    """The wait_summary of tickets, with the diagnosis of each failed one."""
    summary = wait_summary(tickets, timed_out)
    for entry in summary["results"]:
        if entry["state"] == TICKET_FAILURE:
            entry["diagnosis"] = diagnose(entry.get("messages") or [])
    return summary


# -- starting a preflight or a run ---------------------------------------------------------------------------

def _ticket_id_of(data):
    if isinstance(data, dict):
        for name in (TICKET_ID_PARAM, "response_ticket_id", "ticket_id", "id"):
            if data.get(name) not in (None, ""):
                return str(data[name])
    elif isinstance(data, str) and data:
        return data
    return None


def _check_migration_id(params, ctx, would):
    """None when migration_id is fine; in check mode, the result for a null one (the spec counts a null
    option as given, so null here is ``migration_id: null``, typically from a migration task in check mode)."""
    if params.get("migration_id") is None:
        if not ctx.check_mode:
            raise ModuleFailure(NULL_ID_MSG % "migration_id" + " For many migrations at once, use migration_ids.")
        return dict(changed=True, migration_id=None, ticket_id=None, state_before=None,
                    msg="check mode: migration_id is null, as an earlier task in check mode only pretended to "
                        "create the migration; %s" % would)
    if params["migration_id"] <= 0:
        raise ModuleFailure("migration_id must be a positive integer.")
    return None


# A start that took effect although its answer was lost: no ticket, the migration's state is followed.
FOLLOW = object()
# How the service may refuse a repeated start whose first send took effect after all (409: a run is
# active; 400: a service that enforces the partner rule itself). Read, then decide.
REFUSED_REPEAT = (400, 409)


def _start_ticket(client, operation, migration_id, what, before, started_states, result):
    """Start a preflight or a run; its ticket ID. When the start's answer was lost and a read of the
    migration shows that it took effect, there is no ticket to wait on: None, and ``result`` says to
    follow the migration's state (``already_running``)."""
    uncertain, sends = [], []

    def send():
        # A repeat (a read proved the send before it had not taken effect) that the service refuses, as a
        # run already active (409) or the partner rule (400, the state is no longer preflight-succeeded):
        # the earlier send took effect after all when the migration shows it; read again.
        repeat = bool(sends)
        sends.append(operation)
        resp = client.call(operation, accept_status=REFUSED_REPEAT if repeat else (), migration_id=migration_id)
        if resp.status in REFUSED_REPEAT:
            if happened() is not None:
                return FOLLOW
            message = client.secrets.mask(resp.message)
            raise WPCloudAPIError("HTTP %d from %s: %s" % (resp.status, operation, message), status=resp.status,
                                  operation=operation, api_message=message, effect="none")
        ticket_id = _ticket_id_of(resp.data)
        if ticket_id is None:
            raise ModuleFailure("The service started %s for migration %s but returned no response ticket ID."
                                % (what, migration_id), failure={"operation": operation, "message": resp.message})
        return ticket_id

    def happened():
        record = read_migration(client, migration_id) or {}
        state = record_state(record)
        moved = state != record_state(before) or record.get("updated") != before.get("updated")
        return FOLLOW if state in started_states and (moved or state in ACTIVE_STATES) else None

    try:
        outcome = write_once(operation, send, happened, uncertain, "%s of migration %s" % (what, migration_id))
    except WPCloudAPIError as exc:
        if exc.status == 404:
            raise ModuleFailure("migration_id %s was not found (HTTP 404)." % migration_id, failure=exc.to_dict())
        if exc.status == 409:
            raise ModuleFailure("The service refused to start %s for migration %s (HTTP 409: %s). A run is "
                                "probably active: wait for it to finish." % (what, migration_id, exc.api_message),
                                failure=exc.to_dict(), uncertain=uncertain)
        failure = api_failure(exc, "Starting %s for migration %s" % (what, migration_id))
        failure.details["uncertain"] = uncertain
        raise failure
    if uncertain:
        result["uncertain"] = uncertain
    if outcome is FOLLOW:
        result.update(already_running=True, msg="the start of %s was uncertain and a read showed it took effect; "
                                                "followed by the migration's state" % what)
        return None
    return outcome


def _judge_ticket(entry, timed_out, params, what):
    """The result keys for a waited ticket, or a ModuleFailure for failure, error or timeout."""
    ticket_id = entry["ticket_id"]
    result = {"ticket": entry, "ticket_state": entry["state"]}
    if entry["state"] == UNREADABLE:
        raise ModuleFailure("Waiting for the %s ticket %s failed: %s" % (what, ticket_id, entry["error"]),
                            ticket_id=ticket_id, ticket=entry)
    if timed_out and entry["state"] not in TICKET_TERMINAL:
        raise ModuleFailure("The %s ticket %s did not finish within wait_timeout=%ss; last state seen: %s after %s "
                            "polls. Wait again with wpcloud.hosting.response_ticket_wait."
                            % (what, ticket_id, params["wait_timeout"], entry["state"], entry["polls"]),
                            ticket_id=ticket_id, ticket=entry, timed_out=True)
    if entry["state"] == TICKET_FAILURE:
        diagnosis = dict(entry["diagnosis"], messages=entry.get("messages", []))
        raise ModuleFailure("The %s failed (%s): %s" % (what, diagnosis["code"], diagnosis["hint"]),
                            ticket_id=ticket_id, ticket=entry, ticket_state=TICKET_FAILURE, diagnosis=diagnosis,
                            changed=True)
    return result


def _judge_run(run, timed_out, params):
    """The final state of a run followed by its migration's state, or a ModuleFailure."""
    if run.error is not None:
        raise ModuleFailure(run.error, migration_id=run.migration_id)
    if timed_out and not run.done:
        raise ModuleFailure("Migration %s was still %s when wait_timeout=%ss ran out."
                            % (run.migration_id, run.state, params["wait_timeout"]), migration_id=run.migration_id,
                            state=run.state, timed_out=True)
    return run.state


def _wait_for_tickets_and_runs(client, results, params, what, progress):
    """Wait for the tickets started and the runs found running, all at once; fold the outcome into
    each result (as the single form would have returned or raised it)."""
    started = [r for r in results if not r.get("failed") and r.get("ticket_id")]
    running = [r for r in results if not r.get("failed") and r.get("already_running")]
    options = wait_options(params)
    with ThreadPoolExecutor(max_workers=PARALLEL_WAITS) as pool:
        tickets = pool.submit(wait_for_tickets, client, [r["ticket_id"] for r in started], options["wait_timeout"],
                              options["poll_interval"], messages=params["messages"], progress=progress,
                              poll_max_interval=options["poll_max_interval"]) if started else None
        runs = pool.submit(wait_for_migrations, client, [r["migration_id"] for r in running],
                           options["wait_timeout"], options["poll_interval"], progress=progress,
                           poll_max_interval=options["poll_max_interval"]) if running else None
        if tickets is not None:
            waited, timed_out = tickets.result()
            for result, entry in zip(started, ticket_summary(waited, timed_out)["results"]):
                _record_outcome(result, lambda e=entry, t=timed_out: _judge_ticket(e, t, params, what))
        if runs is not None:
            followed, timed_out = runs.result()
            for result, run in zip(running, followed):
                _record_outcome(result, lambda r=run, t=timed_out, res=result: _outcome_from_state(res, _judge_run(r, t, params), what))


def _outcome_from_state(result, state, what):
    """A start followed by the migration's state: a run that was already active, or a start whose
    answer was lost but took effect."""
    succeeded = PREFLIGHT_SUCCEEDED if what == "preflight" else MIGRATION_SUCCEEDED
    if state != succeeded:
        details = dict((k, v) for k, v in result.items() if k not in ("msg", "failed"))
        raise ModuleFailure("The %s followed by its migration's state ended in state %s." % (what, state),
                            **dict(details, state=state))
    return {"state": state}


def _record_outcome(result, judge):
    try:
        result.update(judge())
    except ModuleFailure as failure:
        result.update(failure.details)
        result.update(failed=True, msg=failure.msg)


def _check_preflight(params, ctx):
    """The read and the checks before a preflight starts: (result, the migration's record, or None when
    nothing is to be sent)."""
    pretended = _check_migration_id(params, ctx, "its preflight would be started")
    if pretended:
        return pretended, None
    # Read first: an unknown migration or an active run is refused here, without a write call.
    record = get_migration(ctx.client(), params["migration_id"])
    state = record_state(record)
    if state in RUNNING_STATES:
        raise ModuleFailure("migration %s is running (state %s): a preflight cannot start until the run ends. Wait "
                            "for it with wpcloud.hosting.response_ticket_wait (migration_ids)."
                            % (params["migration_id"], state), migration_id=params["migration_id"], state=state)
    result = dict(changed=True, migration_id=params["migration_id"], ticket_id=None, state_before=state)
    if ctx.check_mode:
        result["msg"] = "check mode: preflight would be started"
        return result, None
    return result, record


def _check_ready(params, ctx):
    """The read and the checks before a run starts (the partner rule among them): (result, the
    migration's record, or None when nothing is to be sent)."""
    pretended = _check_migration_id(params, ctx, "its run would be started once its preflight succeeds")
    if pretended:
        return pretended, None
    migration_id = params["migration_id"]
    record = get_migration(ctx.client(), migration_id)
    state = record_state(record)
    result = dict(changed=False, migration_id=migration_id, ticket_id=None, state_before=state)
    if state in RUNNING_STATES:
        # Never start a second run. Its ticket is not known here (for example after an interrupted
        # playbook), so a wait follows the migration's state instead.
        result["msg"] = "migration %s is already running; no new run was started" % migration_id
        result["already_running"] = True
        return result, None
    if params["require_preflight"] and state != PREFLIGHT_SUCCEEDED and ctx.check_mode:
        # The play's own preflight may have run in check mode only: say what would happen, do not fail.
        result.update(changed=True, msg="check mode: the run would be started once a preflight succeeds (state "
                                        "now: %s; outside check mode this task refuses to start it before a "
                                        "successful preflight)" % state)
        return result, None
    if params["require_preflight"] and state != PREFLIGHT_SUCCEEDED:
        raise ModuleFailure(
            "migration %s cannot start: its latest preflight has not succeeded since the last change (state: %s). "
            "Run wpcloud.hosting.migration_preflight first; an expert can set require_preflight: false to "
            "skip this partner rule." % (migration_id, state), migration_id=migration_id, state=state)
    result["changed"] = True
    if ctx.check_mode:
        result["msg"] = "check mode: the run would be started (it overwrites the destination's files and database)"
        return result, None
    return result, record


# The two starts: (checks, the write that starts it, what it is called, the states that show it took effect).
PREFLIGHT_START = (_check_preflight, "migration.preflight", "preflight", PREFLIGHT_STARTED_STATES)
READY_START = (_check_ready, "migration.ready", "the migration run", RUN_STARTED_STATES)


def _send_start(client, start, result, record):
    """The start's write, after its checks; the ticket ID goes into ``result``."""
    dummy, operation, noun, started_states = start
    result["ticket_id"] = _start_ticket(client, operation, result["migration_id"], noun, record, started_states, result)
    return result


def _run_started(params, ctx, start, what, label):
    """Start (and with wait, wait for) one migration or every migration of migration_ids."""
    wait_options(params)
    check = start[0]
    if params.get("migration_ids") is None:
        result, record = check(params, ctx)
        if record is not None:
            _send_start(ctx.client(), start, result, record)
        if params["wait"] and (result.get("ticket_id") or result.get("already_running")):
            client = ctx.client()
            _wait_for_tickets_and_runs(client, [result], params, what,
                                       progress_for("%s: migration %s" % (label, result["migration_id"]), params, ctx))
            if result.get("failed"):
                result.pop("failed")
                raise ModuleFailure(result.pop("msg"), **result)
        return result
    ids = list(params["migration_ids"])
    if any(i <= 0 for i in ids):
        raise ModuleFailure("migration_ids must hold positive integers.")
    if len(set(ids)) != len(ids):
        raise ModuleFailure("migration_ids lists a migration twice: give each migration once.")
    client = ctx.client()
    records = {}

    def read(migration_id):
        try:
            result, records[migration_id] = check(dict(params, migration_id=migration_id, migration_ids=None), ctx)
        except ModuleFailure as failure:
            failure.details.setdefault("migration_id", migration_id)
            raise
        return result

    def send(result):
        try:
            return _send_start(client, start, result, records[result["migration_id"]])
        except ModuleFailure as failure:
            failure.details.setdefault("migration_id", result["migration_id"])
            raise

    # Every read and check first, then every start: the tickets begin within the time of the writes
    # alone, so a fleet's preflights (or runs) end close together and the wait returns soon after each.
    results = run_for_each(ids, read)
    sending = [r for r in results if not r["failed"] and records.get(r["migration_id"]) is not None]
    for result, outcome in zip(sending, run_for_each(sending, send)):
        if outcome is not result:      # the start failed: its failure is the site's result
            result.clear()
            result.update(outcome)
    if params["wait"]:
        _wait_for_tickets_and_runs(client, results, params, what, progress_for(label, params, ctx))
    return list_result(results, "migrations", lambda r: "migration %s" % r["migration_id"])


def run_preflight(params, ctx):
    return with_api_load(ctx, lambda: _run_started(params, ctx, PREFLIGHT_START, "preflight", "migration_preflight"))


def run_ready(params, ctx):
    return with_api_load(ctx, lambda: _run_started(params, ctx, READY_START, "migration run", "migration_ready"))


def run_wait(params, ctx):
    return with_api_load(ctx, lambda: _run_wait(params, ctx))


def _run_wait(params, ctx):
    options = wait_options(params)
    if params.get("migration_ids") is not None:
        return _wait_migrations(params, options, ctx)
    single = params.get("ticket_id") is not None
    if not single and params.get("ticket_ids") is None:
        # ticket_id: null (the spec counts a null option as given), typically from a check-mode start.
        if ctx.check_mode:
            return dict(changed=False, tickets=[], msg="check mode: ticket_id is null, as an earlier task in check "
                                                       "mode only pretended to start it; nothing to wait for yet")
        raise ModuleFailure("ticket_id is null: pass a response ticket ID as returned by preflight or ready "
                            "(with wait: false). A null ID usually comes from an earlier task that ran in check "
                            "mode; outside check mode it is an error.")
    ticket_ids = [params["ticket_id"]] if single else list(params["ticket_ids"] or [])
    option = "ticket_id" if single else "ticket_ids"
    if not ticket_ids:
        raise ModuleFailure("ticket_ids is empty: pass at least one response ticket ID.")
    for ticket_id in ticket_ids:
        if not ticket_id or not ticket_id.strip() or ticket_id != ticket_id.strip():
            raise ModuleFailure("%s must hold response ticket IDs as returned by preflight or ready; got an empty "
                                "or blank-padded value." % option)
        if len(ticket_id) > MAX_TICKET_ID or any(ord(c) < 33 or ord(c) > 126 for c in ticket_id):
            raise ModuleFailure("%s must hold response ticket IDs as returned by preflight or ready (printable "
                                "ASCII without spaces, at most %d characters)." % (option, MAX_TICKET_ID))
    client = ctx.client()
    tickets, timed_out = wait_for_tickets(client, ticket_ids, options["wait_timeout"], options["poll_interval"],
                                          wait=options["wait"], messages=params["messages"],
                                          progress=progress_for("response_ticket_wait", params, ctx),
                                          poll_max_interval=options["poll_max_interval"])
    summary = ticket_summary(tickets, timed_out)
    result = dict(changed=False, tickets=summary.pop("results"), **summary)
    if single:
        result["ticket"] = result["tickets"][0]
    failures = [t for t in result["tickets"] if t["state"] == TICKET_FAILURE]
    named = ", ".join("%s (%s)" % (t["ticket_id"], t["diagnosis"]["code"]) for t in failures[:10])
    _fail_list_on_errors_or_timeout(result, "ticket_id", "tickets", len(ticket_ids), failures, named, params, options)
    return result


def _wait_migrations(params, options, ctx):
    ids = list(params["migration_ids"])
    if not ids:
        raise ModuleFailure("migration_ids is empty: pass at least one migration ID.")
    if any(i <= 0 for i in ids):
        raise ModuleFailure("migration_ids must hold positive integers.")
    client = ctx.client()
    runs, timed_out = wait_for_migrations(client, ids, options["wait_timeout"], options["poll_interval"],
                                          wait=options["wait"],
                                          progress=progress_for("response_ticket_wait", params, ctx),
                                          poll_max_interval=options["poll_max_interval"])
    summary = wait_summary(runs, timed_out, succeeded=(MIGRATION_SUCCEEDED,), failed=FAILED_STATES | {UNREADABLE})
    result = dict(changed=False, migrations=summary.pop("results"), **summary)
    failures = [m for m in result["migrations"] if m["state"] in FAILED_STATES]
    named = ", ".join("%s (%s)" % (m["migration_id"], m["state"]) for m in failures[:10])
    _fail_list_on_errors_or_timeout(result, "migration_id", "migrations", len(ids), failures, named, params, options)
    return result


def _fail_list_on_errors_or_timeout(result, id_key, kind, total, failures, named, params, options):
    """Fail the task for unreadable items, a deadline with work left, or failures (when asked)."""
    errors = [item for item in result[kind] if item["state"] == UNREADABLE]
    if errors:
        raise ModuleFailure("; ".join(item["error"] for item in errors[:5]) + (
            " (and %d more)" % (len(errors) - 5) if len(errors) > 5 else ""), **result)
    if options["wait"] and result["timed_out"] and result["pending_count"]:
        left = ", ".join("%s=%s" % (item[id_key], item["state"]) for item in result[kind]
                         if item["state"] not in TICKET_TERMINAL | RUN_TERMINAL_STATES)
        raise ModuleFailure("%d of %d %s did not finish within wait_timeout=%ss; last states: %s"
                            % (result["pending_count"], total, kind, params["wait_timeout"], left[:500]), **result)
    if failures and params["fail_on_failure"]:
        raise ModuleFailure("%d of %d %s failed: %s" % (len(failures), total, kind, named), **result)
