# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Logic of the modules that start or wait on response tickets: migration_preflight, migration_ready,
response_ticket_wait.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils._client import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils._common import (
    WAIT_ARGUMENT_SPEC,
    ModuleFailure,
    api_failure,
)
import time

from ansible_collections.wpcloud.hosting.plugins.module_utils._migration import (
    PREFLIGHT_OK,
    RUNNING_STATES,
    TERMINAL_RUN_STATES,
    get_migration,
    record_state,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils._poller import (
    wait_for_tickets,
    wait_options,
    wait_summary,
)

PREFLIGHT_ARGUMENT_SPEC = dict(
    migration_id=dict(type="int", required=True),
    messages=dict(type="str", default="on_failure", choices=["on_failure", "always", "never"]),
    **WAIT_ARGUMENT_SPEC
)

READY_ARGUMENT_SPEC = dict(
    migration_id=dict(type="int", required=True),
    require_preflight=dict(type="bool", default=True),
    messages=dict(type="str", default="on_failure", choices=["on_failure", "always", "never"]),
    **WAIT_ARGUMENT_SPEC
)

WAIT_MODULE_ARGUMENT_SPEC = dict(
    ticket_id=dict(type="str"),
    ticket_ids=dict(type="list", elements="str"),
    messages=dict(type="str", default="on_failure", choices=["on_failure", "always", "never"]),
    fail_on_failure=dict(type="bool", default=True),
    **WAIT_ARGUMENT_SPEC
)
WAIT_MUTUALLY_EXCLUSIVE = [("ticket_id", "ticket_ids")]
WAIT_REQUIRED_ONE_OF = [("ticket_id", "ticket_ids")]


def _ticket_id_of(data):
    if isinstance(data, dict):
        for name in ("response-ticket-id", "response_ticket_id", "ticket_id", "id"):
            if data.get(name) not in (None, ""):
                return str(data[name])
    elif isinstance(data, str) and data:
        return data
    return None


def _check_migration_id(params):
    if params["migration_id"] <= 0:
        raise ModuleFailure("migration_id must be a positive integer.")


def _start(client, operation, migration_id, what):
    try:
        resp = client.call(operation, migration_id=migration_id)
    except WPCloudAPIError as exc:
        if exc.status == 404:
            raise ModuleFailure("migration_id %s was not found (HTTP 404)." % migration_id, failure=exc.to_dict())
        if exc.status == 409:
            raise ModuleFailure("The service refused to start %s for migration %s (HTTP 409: %s). A run is "
                                "probably active: wait for it to finish." % (what, migration_id, exc.api_message),
                                failure=exc.to_dict())
        raise api_failure(exc, "Starting %s for migration %s" % (what, migration_id))
    ticket_id = _ticket_id_of(resp.data)
    if ticket_id is None:
        raise ModuleFailure("The service started %s for migration %s but returned no response ticket ID."
                            % (what, migration_id), failure={"operation": operation, "message": resp.message})
    return ticket_id


def _wait_one(client, ticket_id, params, what):
    """Wait on one ticket; return the result keys for it, or raise on failure/timeout."""
    options = wait_options(params)
    tickets, timed_out = wait_for_tickets(client, [ticket_id], options["wait_timeout"], options["poll_interval"],
                                          messages=params["messages"])
    entry = wait_summary(tickets, timed_out)["tickets"][0]
    result = {"ticket": entry, "ticket_state": entry["state"]}
    if entry["state"] == "error":
        raise ModuleFailure("Waiting for the %s ticket %s failed: %s" % (what, ticket_id, entry["error"]),
                            ticket_id=ticket_id, ticket=entry)
    if timed_out and entry["state"] not in ("success", "failure"):
        raise ModuleFailure("The %s ticket %s did not finish within wait_timeout=%ss; last state seen: %s after %s "
                            "polls. Wait again with wpcloud.hosting.response_ticket_wait."
                            % (what, ticket_id, params["wait_timeout"], entry["state"], entry["polls"]),
                            ticket_id=ticket_id, ticket=entry, timed_out=True)
    if entry["state"] == "failure":
        diagnosis = dict(entry["diagnosis"], messages=entry.get("messages", []))
        raise ModuleFailure("The %s failed (%s): %s" % (what, diagnosis["code"], diagnosis["hint"]),
                            ticket_id=ticket_id, ticket=entry, ticket_state="failure", diagnosis=diagnosis,
                            changed=True)
    return result


def _wait_for_state(client, migration_id, params, clock=time.monotonic, sleep=time.sleep):
    """Poll the migration record until the run ends; return the final state."""
    deadline = clock() + params["wait_timeout"]
    while True:
        state = record_state(get_migration(client, migration_id))
        if state in TERMINAL_RUN_STATES:
            return state
        if clock() + params["poll_interval"] > deadline:
            raise ModuleFailure("Migration %s was still %s when wait_timeout=%ss ran out."
                                % (migration_id, state, params["wait_timeout"]), migration_id=migration_id,
                                state=state, timed_out=True)
        sleep(params["poll_interval"])


def run_preflight(params, ctx):
    _check_migration_id(params)
    wait_options(params)
    client = ctx.client()
    result = dict(changed=True, migration_id=params["migration_id"], ticket_id=None)
    if ctx.check_mode:
        result["msg"] = "check mode: preflight would be started"
        return result
    ticket_id = _start(client, "migration.preflight", params["migration_id"], "preflight")
    result["ticket_id"] = ticket_id
    if params["wait"]:
        try:
            result.update(_wait_one(client, ticket_id, params, "preflight"))
        except ModuleFailure as failure:
            failure.details.setdefault("migration_id", params["migration_id"])
            raise
    return result


def run_ready(params, ctx):
    _check_migration_id(params)
    wait_options(params)
    client = ctx.client()
    migration_id = params["migration_id"]
    record = get_migration(client, migration_id)
    state = record_state(record)
    result = dict(changed=False, migration_id=migration_id, ticket_id=None, state_before=state)
    if state in RUNNING_STATES:
        # Never start a second run. Its ticket is not known here (for example after an interrupted
        # playbook), so a wait follows the migration's state instead.
        result["msg"] = "migration %s is already running; no new run was started" % migration_id
        result["already_running"] = True
        if params["wait"]:
            result["state"] = _wait_for_state(client, migration_id, params)
            if result["state"] != "migration-succeeded":
                raise ModuleFailure("The migration run that was already active ended in state %s."
                                    % result["state"], **result)
        return result
    if params["require_preflight"] and state != PREFLIGHT_OK:
        raise ModuleFailure(
            "migration %s cannot start: its latest preflight has not succeeded since the last change (state: %s). "
            "Run wpcloud.hosting.migration_preflight first; an expert can set require_preflight: false to "
            "skip this partner rule." % (migration_id, state), migration_id=migration_id, state=state)
    result["changed"] = True
    if ctx.check_mode:
        result["msg"] = "check mode: the run would be started (it overwrites the destination's files and database)"
        return result
    ticket_id = _start(client, "migration.ready", migration_id, "the migration run")
    result["ticket_id"] = ticket_id
    if params["wait"]:
        try:
            result.update(_wait_one(client, ticket_id, params, "migration run"))
        except ModuleFailure as failure:
            failure.details.setdefault("migration_id", migration_id)
            failure.details.setdefault("state_before", state)
            raise
    return result


def run_wait(params, ctx):
    options = wait_options(params)
    single = params.get("ticket_id") is not None
    ticket_ids = [params["ticket_id"]] if single else list(params["ticket_ids"] or [])
    if not ticket_ids:
        raise ModuleFailure("ticket_ids is empty: pass at least one response ticket ID.")
    client = ctx.client()
    tickets, timed_out = wait_for_tickets(client, ticket_ids, options["wait_timeout"], options["poll_interval"],
                                          wait=options["wait"], messages=params["messages"])
    summary = wait_summary(tickets, timed_out)
    result = dict(changed=False, **summary)
    if single:
        result["ticket"] = summary["tickets"][0]
    errors = [t for t in summary["tickets"] if t["state"] == "error"]
    failures = [t for t in summary["tickets"] if t["state"] == "failure"]
    if errors:
        raise ModuleFailure("; ".join(t["error"] for t in errors[:5]) + (
            " (and %d more)" % (len(errors) - 5) if len(errors) > 5 else ""), **result)
    if options["wait"] and timed_out and summary["pending_count"]:
        raise ModuleFailure("%d of %d tickets did not finish within wait_timeout=%ss; last states: %s"
                            % (summary["pending_count"], len(ticket_ids), params["wait_timeout"],
                               ", ".join("%s=%s" % (t["ticket_id"], t["state"]) for t in summary["tickets"]
                                         if t["state"] not in ("success", "failure"))[:500]), **result)
    if failures and params["fail_on_failure"]:
        named = ", ".join("%s (%s)" % (t["ticket_id"], t["diagnosis"]["code"]) for t in failures[:10])
        raise ModuleFailure("%d of %d tickets failed: %s" % (len(failures), len(ticket_ids), named), **result)
    return result
