# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one poller: waits on response tickets (and migration states) under one wait contract.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Contract (options ``wait``, ``wait_timeout``, ``poll_interval``): a 202 means "no response yet",
``running`` keeps the wait going, ``success`` and ``failure`` end it; a list of tickets is polled
concurrently in rounds, one poll per pending ticket per interval, so waiting on 100 tickets takes
about as long as the slowest one. Past the deadline the wait ends with the last state seen.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.wpcloud.hosting.plugins.module_utils._client import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils._common import validate_poll

TERMINAL = frozenset(["success", "failure"])
PENDING = "pending"  # our name for a 202: the ticket exists but has no response yet
MAX_CONCURRENT_POLLS = 16

# Matching of failure messages to causes. The real service's wording is not published, so this is
# the one place to adjust. Messages are read from the last to the first (the cause of a failure is
# reported last; earlier lines are progress such as "Found WordPress installation in public_html"),
# and within one message the first code whose pattern matches wins.
DIAGNOSES = [
    ("auth_failed",
     [r"permission denied", r"authentication (?:failed|failure)", r"could not authenticate",
      r"too many authentication failures", r"bad passphrase", r"incorrect passphrase",
      r"host key verification failed", r"load key .*(?:invalid format|passphrase)"],
     "The service could not log in to the source over SSH. If the migration uses the identity the service "
     "generated, add the returned ssh_id_pub to ~/.ssh/authorized_keys of remote_user on remote_host; "
     "otherwise check remote_user, remote_pass or ssh_id/ssh_id_pass and that remote_port reaches sshd. "
     "Then update the migration and run preflight again."),
    ("wp_cli_missing",
     [r"(?:^|[\s:])wp: (?:command )?not found", r"wp-cli (?:is )?(?:not|un)available", r"wp-cli.*not (?:found|installed)",
      r"wp-cli.*missing"],
     "WP-CLI (the wp command) is not available to remote_user on the source. Install WP-CLI on the source "
     "host, in a directory on the user's PATH for non-interactive SSH sessions, and run preflight again."),
    ("rsync_missing",
     [r"rsync: (?:command )?not found", r"rsync (?:is )?(?:not|un)available", r"rsync.*not installed"],
     "rsync is not available to remote_user on the source. Install rsync on the source host (for example "
     "apt-get install rsync) and run preflight again."),
    ("docroot_missing",
     [r"could not (?:locate|find) (?:a |the )?wordpress", r"no wordpress installation", r"wp-config\.php.*not found",
      r"(?:document root|docroot).*(?:not found|does not exist|missing|no such)", r"set remote[-_]docroot"],
     "No WordPress document root was found on the source. Set remote_docroot to the directory that "
     "holds wp-config.php (for example /home/USER/public_html), update the migration and run preflight again."),
]
UNKNOWN_HINT = ("The failure did not match a known cause; read the ticket messages. Correct the problem "
                "with an update of the migration, then run preflight again.")


def diagnose(messages):
    """Return {code, hint, matched} for a failed ticket's messages."""
    for message in reversed(list(messages or [])):
        for code, patterns, hint in DIAGNOSES:
            for pattern in patterns:
                match = re.search(pattern, message, re.IGNORECASE)
                if match:
                    return {"code": code, "hint": hint, "matched": match.group(0).strip()}
    return {"code": "unknown", "hint": UNKNOWN_HINT, "matched": None}


def _first(data, *names):
    for name in names:
        if isinstance(data, dict) and data.get(name) is not None:
            return data[name]
    return None


def parse_messages(data):
    """Messages from the full form; tolerant of the unknown shape (strings or objects)."""
    raw = _first(data, "responses", "messages", "response", "message_list")
    if raw is None:
        return []
    if isinstance(raw, dict):
        raw = list(raw.values())
    if not isinstance(raw, list):
        raw = [raw]
    messages = []
    for item in raw:
        if isinstance(item, dict):
            item = _first(item, "message", "text", "msg", "response")
        if item is not None:
            messages.append(str(item))
    return messages


def parse_status(data):
    status = _first(data, "status", "state")
    return str(status).lower() if status is not None else "running"


def parse_count(data, fallback=None):
    count = _first(data, "response_count", "response-count", "responses_count", "count")
    try:
        return int(count)
    except (TypeError, ValueError):
        return fallback


class Ticket(object):
    """What the wait knows of one ticket."""

    def __init__(self, ticket_id, started):
        self.ticket_id = ticket_id
        self.started = started
        self.status = PENDING
        self.response_count = 0
        self.polls = 0
        self.completed_at = None
        self.messages = None
        self.error = None
        self.error_status = None

    @property
    def done(self):
        return self.status in TERMINAL or self.error is not None

    def as_result(self, now):
        end = self.completed_at if self.completed_at is not None else now
        result = {
            "ticket_id": self.ticket_id,
            "state": self.status if self.error is None else "error",
            "response_count": self.response_count,
            "elapsed": round(end - self.started, 3),
            "polls": self.polls,
        }
        if self.messages is not None:
            result["messages"] = self.messages
        if self.error is not None:
            result["error"] = self.error
        if self.status == "failure":
            result["diagnosis"] = diagnose(self.messages or [])
        return result


def _ticket_error(exc, ticket_id):
    if exc.status == 400:
        return "The service says the response ticket ID is missing (HTTP 400): pass a non-empty ticket ID."
    if exc.status == 404:
        return "Response ticket %r was not found (HTTP 404): check the ticket ID." % ticket_id
    return exc.message


def poll_ticket(client, ticket, clock=time.monotonic):
    """One summary poll; updates ticket in place."""
    ticket.polls += 1
    try:
        resp = client.call("ticket.summary", params={"response-ticket-id": ticket.ticket_id})
    except WPCloudAPIError as exc:
        ticket.error = _ticket_error(exc, ticket.ticket_id)
        ticket.error_status = exc.status
        return
    if resp.pending:
        ticket.status = PENDING
        return
    ticket.status = parse_status(resp.data)
    ticket.response_count = parse_count(resp.data, ticket.response_count)
    if ticket.status in TERMINAL:
        ticket.completed_at = clock()


def fetch_messages(client, ticket):
    try:
        resp = client.call("ticket.full", params={"response-ticket-id": ticket.ticket_id})
    except WPCloudAPIError as exc:
        ticket.messages = ["(messages could not be read: %s)" % exc.message]
        return
    ticket.messages = [] if resp.pending else parse_messages(resp.data)


def poll_until_done(items, poll_one, wait_timeout, poll_interval, wait=True, clock=time.monotonic,
                    sleep=time.sleep, pool=None):
    """Poll every unfinished item once per round (concurrently) until all are done or the deadline
    passes. Returns True when the deadline ended the wait."""
    deadline = clock() + wait_timeout
    while True:
        round_start = clock()
        pending = [item for item in items if not item.done]
        if pool is not None:
            list(pool.map(poll_one, pending))
        else:
            for item in pending:
                poll_one(item)
        if all(item.done for item in items) or not wait:
            return False
        next_round = round_start + poll_interval
        if next_round > deadline:
            return True
        sleep(max(0.0, next_round - clock()))


def wait_for_tickets(client, ticket_ids, wait_timeout, poll_interval, wait=True, messages="on_failure",
                     clock=time.monotonic, sleep=time.sleep):
    """Poll every ticket until all are done or the deadline passes. Returns (tickets, timed_out)."""
    start = clock()
    tickets = [Ticket(ticket_id, start) for ticket_id in ticket_ids]
    workers = min(MAX_CONCURRENT_POLLS, max(1, len(tickets)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        timed_out = poll_until_done(tickets, lambda t: poll_ticket(client, t, clock), wait_timeout, poll_interval,
                                    wait=wait, clock=clock, sleep=sleep, pool=pool)
        wanted = [t for t in tickets if t.error is None and (
            messages == "always" or (messages == "on_failure" and t.status == "failure"))]
        list(pool.map(lambda t: fetch_messages(client, t), wanted))
    return tickets, timed_out


class MigrationRun(object):
    """What a wait knows of a migration followed by its state (when its run's ticket is unknown)."""

    ACTIVE = frozenset(["migration-running", "preflight-running"])

    def __init__(self, migration_id, started):
        self.migration_id = migration_id
        self.started = started
        self.state = None
        self.polls = 0
        self.completed_at = None
        self.error = None

    @property
    def done(self):
        return self.error is not None or (self.state is not None and self.state not in self.ACTIVE)

    def as_result(self, now):
        end = self.completed_at if self.completed_at is not None else now
        result = {"migration_id": self.migration_id, "state": self.state if self.error is None else "error",
                  "elapsed": round(end - self.started, 3), "polls": self.polls}
        if self.error is not None:
            result["error"] = self.error
        return result


def poll_migration(client, run, clock=time.monotonic):
    run.polls += 1
    try:
        resp = client.call("migration.get", migration_id=run.migration_id)
    except WPCloudAPIError as exc:
        run.error = ("Migration %s was not found (HTTP 404)." % run.migration_id if exc.status == 404
                     else exc.message)
        return
    data = resp.data if isinstance(resp.data, dict) else {}
    run.state = str(data.get("state")) if data.get("state") is not None else "unknown"
    if run.done:
        run.completed_at = clock()


def wait_for_migrations(client, migration_ids, wait_timeout, poll_interval, wait=True, clock=time.monotonic,
                        sleep=time.sleep):
    """Follow migrations by their state until none is running. Returns (runs, timed_out)."""
    start = clock()
    runs = [MigrationRun(migration_id, start) for migration_id in migration_ids]
    workers = min(MAX_CONCURRENT_POLLS, max(1, len(runs)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        timed_out = poll_until_done(runs, lambda r: poll_migration(client, r, clock), wait_timeout, poll_interval,
                                    wait=wait, clock=clock, sleep=sleep, pool=pool)
    return runs, timed_out


def wait_options(params):
    """The shared wait options, checked once for every module that waits."""
    validate_poll(params)
    return dict(wait=params.get("wait", True), wait_timeout=params["wait_timeout"],
                poll_interval=params["poll_interval"])


def wait_summary(items, timed_out, clock=time.monotonic, succeeded=("success",),
                 failed=("failure", "error")):
    """Results of a wait: one entry per ticket (or migration) and the counts the modules report."""
    now = clock()
    results = [item.as_result(now) for item in items]
    return {
        "results": results,
        "succeeded_count": sum(1 for r in results if r["state"] in succeeded),
        "failed_count": sum(1 for r in results if r["state"] in failed),
        "pending_count": sum(1 for item in items if not item.done),
        "timed_out": timed_out,
    }
