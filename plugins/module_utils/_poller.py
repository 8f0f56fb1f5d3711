# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one poller: waits on response tickets (and migration states) under one wait contract.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Contract (options ``wait``, ``wait_timeout``, ``poll_interval``, ``progress_interval``): a 202 means
"no response yet", ``running`` keeps the wait going, ``success`` and ``failure`` end it; a list of
tickets is polled concurrently in rounds, one poll per pending ticket per interval, so waiting on 100
tickets takes about as long as the slowest one. Past the deadline the wait ends with the last state
seen. At least every ``progress_interval`` seconds a progress line (counts, states, elapsed time; never
a secret) goes to the runner's progress channel: Ansible's display when the module runs in the
controller; the classic module process has no channel and stays silent until it returns.
"""

from __future__ import annotations

import re
import threading
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

    @property
    def failed(self):
        return self.status == "failure" or self.error is not None

    def progress(self):
        if self.error is not None:
            return "ticket %s could not be read" % self.ticket_id
        plural = "" if self.response_count == 1 else "s"
        return "ticket %s %s (%d response%s)" % (self.ticket_id, self.status, self.response_count, plural)

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


class Progress(object):
    """Progress lines of one task's waits, at most one per ``interval`` seconds (0: none).

    Every wait of the task (tickets and migrations followed by their state, which migration_ready runs
    side by side) tracks its items here; ``tick`` after each poll round or nap prints a line when one is
    due: ``migration_ready: 37/100 done (2 failed), 61 running, 124 s elapsed``, or for one item its
    state: ``response_ticket_wait: ticket T running (3 responses), 20 s elapsed``.
    """

    def __init__(self, label, interval, emit, clock=time.monotonic):
        self.label = label
        self.interval = interval if emit is not None else 0
        self.emit = emit
        self.clock = clock
        self.started = clock()
        self.last = self.started
        self.groups = []
        self.lines = 0
        self._lock = threading.Lock()

    def track(self, items):
        with self._lock:
            self.groups.append(items)

    def next_due(self):
        return self.last + self.interval if self.interval else None

    def tick(self):
        if not self.interval:
            return
        with self._lock:
            now = self.clock()
            if now < self.last + self.interval:
                return
            self.last = now
            line = self.line(now)
        self.emit(line)
        self.lines += 1

    def line(self, now):
        items = [item for group in self.groups for item in group]
        elapsed = "%d s elapsed" % (now - self.started)
        if len(items) == 1:
            return "%s: %s, %s" % (self.label, items[0].progress(), elapsed)
        done = [item for item in items if item.done]
        failed = sum(1 for item in done if item.failed)
        counts = (len(done), len(items), failed, len(items) - len(done))
        return "%s: %d/%d done (%d failed), %d running, %s" % ((self.label,) + counts + (elapsed,))


def poll_until_done(items, poll_one, wait_timeout, poll_interval, wait=True, clock=time.monotonic,
                    sleep=time.sleep, pool=None, progress=None):
    """Poll every unfinished item once per round (concurrently) until all are done or the deadline
    passes. Returns True when the deadline ended the wait. Between rounds, ``progress`` (a Progress)
    gets its ticks, also within a long poll_interval."""
    deadline = clock() + wait_timeout
    if progress is not None:
        progress.track(items)
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
        # Nap until the next round, waking for a progress line that falls due before it.
        while True:
            if progress is not None:
                progress.tick()
            now = clock()
            if now >= next_round:
                break
            wake = next_round
            due = progress.next_due() if progress is not None else None
            if due is not None and now < due < wake:
                wake = due
            sleep(wake - now)


def wait_for_tickets(client, ticket_ids, wait_timeout, poll_interval, wait=True, messages="on_failure",
                     clock=time.monotonic, sleep=time.sleep, progress=None):
    """Poll every ticket until all are done or the deadline passes. Returns (tickets, timed_out)."""
    start = clock()
    tickets = [Ticket(ticket_id, start) for ticket_id in ticket_ids]
    workers = min(MAX_CONCURRENT_POLLS, max(1, len(tickets)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        timed_out = poll_until_done(tickets, lambda t: poll_ticket(client, t, clock), wait_timeout, poll_interval,
                                    wait=wait, clock=clock, sleep=sleep, pool=pool, progress=progress)
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

    @property
    def failed(self):
        return self.error is not None or (self.state or "").endswith("-failed")

    def progress(self):
        if self.error is not None:
            return "migration %s could not be read" % self.migration_id
        return "migration %s %s" % (self.migration_id, self.state or "not read yet")

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
                        sleep=time.sleep, progress=None):
    """Follow migrations by their state until none is running. Returns (runs, timed_out)."""
    start = clock()
    runs = [MigrationRun(migration_id, start) for migration_id in migration_ids]
    workers = min(MAX_CONCURRENT_POLLS, max(1, len(runs)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        timed_out = poll_until_done(runs, lambda r: poll_migration(client, r, clock), wait_timeout, poll_interval,
                                    wait=wait, clock=clock, sleep=sleep, pool=pool, progress=progress)
    return runs, timed_out


def wait_options(params):
    """The shared wait options, checked once for every module that waits."""
    validate_poll(params)
    return dict(wait=params.get("wait", True), wait_timeout=params["wait_timeout"],
                poll_interval=params["poll_interval"], progress_interval=params.get("progress_interval", 0))


def progress_for(label, params, ctx, client=None):
    """The Progress of a task's waits: lines to the runner's channel (ctx.progress), redacted."""
    emit = None
    if getattr(ctx, "progress", None) is not None:
        emit = (lambda line: ctx.progress(client.redact(line))) if client is not None else ctx.progress
    return Progress(label, params.get("progress_interval") or 0, emit)


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
