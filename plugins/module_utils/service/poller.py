# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one poller: follows items (response tickets, or anything with ``done``) under one wait contract.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Contract (options ``wait``, ``wait_timeout``, ``poll_interval``, ``poll_max_interval``, ``progress_interval``;
module_utils/runtime/arguments.py): a 202 means "no response yet", ``running`` keeps the wait going, ``success`` and
``failure`` end it; a list of items is polled concurrently in rounds, each unfinished item when its next
poll is due, so waiting on 100 tickets takes about as long as the slowest one. The gap between two polls
of an item grows with its age (poll_gap): every poll_interval at first, at most poll_max_interval.
Past the deadline the wait ends with the last state seen. At least every ``progress_interval`` seconds a progress line (counts, states, elapsed time;
never a secret) goes to the runner's progress channel: Ansible's display when the module runs in the
controller; the classic module process has no channel and stays silent until it returns.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import CONCURRENT_CALLS
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    TICKET_FAILURE,
    TICKET_ID_PARAM,
    TICKET_PENDING,
    TICKET_RUNNING,
    TICKET_SUCCESS,
    TICKET_TERMINAL,
    UNREADABLE,
)

# The adaptive wait (poll_gap, docs/api-choices.md): an item is polled every poll_interval for its first
# POLL_STRETCH_AFTER seconds, then the gap grows by POLL_STRETCH seconds times the square root of the seconds
# past that, up to poll_max_interval (runtime/arguments.py DEFAULT_POLL_MAX_INTERVAL when unset).
POLL_STRETCH_AFTER = 12.0
POLL_STRETCH = 0.65


def _first_present(data, *names):
    for name in names:
        if isinstance(data, dict) and data.get(name) is not None:
            return data[name]
    return None


def parse_messages(data):
    """Messages from the full form; tolerant of the unknown shape (strings or objects)."""
    raw = _first_present(data, "responses", "messages", "response", "message_list")
    if raw is None:
        return []
    if isinstance(raw, dict):
        raw = list(raw.values())
    if not isinstance(raw, list):
        raw = [raw]
    messages = []
    for item in raw:
        if isinstance(item, dict):
            item = _first_present(item, "message", "text", "msg", "response")
        if item is not None:
            messages.append(str(item))
    return messages


def parse_status(data):
    status = _first_present(data, "status", "state")
    return str(status).lower() if status is not None else TICKET_RUNNING


def parse_count(data, fallback=None):
    count = _first_present(data, "response_count", "response-count", "responses_count", "count")
    try:
        return int(count)
    except (TypeError, ValueError):
        return fallback


class Polled(object):
    """What a wait knows of any item it polls (a ticket, a migration followed by its state, a job): the
    rule for a failed poll, and the poll counts of its result."""

    def __init__(self, started):
        self.started = started
        self.polls = 0
        self.completed_at = None
        self.error = None
        self.failed_polls = 0
        self.last_error = None

    def poll_failed(self, exc, error=None):
        """A read the client could not get through (any 5xx, a reset, a timeout) is polled again next
        round: only the wait's deadline ends the item. Any other failure ends it with ``error``."""
        if exc.retry_safe:
            self.failed_polls += 1
            self.last_error = exc.message
        else:
            self.error = error or exc.message

    def poll_counts(self, result):
        """``result`` with the item's poll counts."""
        result["polls"] = self.polls
        if self.failed_polls:
            result["failed_polls"] = self.failed_polls
            result["last_poll_error"] = self.last_error
        return result


class Ticket(Polled):
    """What the wait knows of one ticket."""

    def __init__(self, ticket_id, started):
        super(Ticket, self).__init__(started)
        self.ticket_id = ticket_id
        self.status = TICKET_PENDING
        self.response_count = 0
        self.messages = None

    @property
    def done(self):
        return self.status in TICKET_TERMINAL or self.error is not None

    @property
    def failed(self):
        return self.status == TICKET_FAILURE or self.error is not None

    def progress(self):
        if self.error is not None:
            return "ticket %s could not be read" % self.ticket_id
        plural = "" if self.response_count == 1 else "s"
        return "ticket %s %s (%d response%s)" % (self.ticket_id, self.status, self.response_count, plural)

    def as_result(self, now):
        end = self.completed_at if self.completed_at is not None else now
        result = {
            "ticket_id": self.ticket_id,
            "state": self.status if self.error is None else UNREADABLE,
            "response_count": self.response_count,
            "elapsed": round(end - self.started, 3),
        }
        if self.messages is not None:
            result["messages"] = self.messages
        if self.error is not None:
            result["error"] = self.error
        return self.poll_counts(result)


def _ticket_error(exc, ticket_id):
    if exc.status == 400:
        return "The service says the response ticket ID is missing (HTTP 400): pass a non-empty ticket ID."
    if exc.status == 404:
        return "Response ticket %r was not found (HTTP 404): check the ticket ID." % ticket_id
    return exc.message


def poll_ticket(client, ticket, clock=None):
    """One summary poll; updates ticket in place."""
    ticket.polls += 1
    try:
        resp = client.call("ticket.summary", params={TICKET_ID_PARAM: ticket.ticket_id})
    except WPCloudAPIError as exc:
        ticket.poll_failed(exc, _ticket_error(exc, ticket.ticket_id))
        return
    if resp.pending:
        ticket.status = TICKET_PENDING
        return
    ticket.status = parse_status(resp.data)
    ticket.response_count = parse_count(resp.data, ticket.response_count)
    if ticket.status in TICKET_TERMINAL:
        ticket.completed_at = (clock or time.monotonic)()


def fetch_messages(client, ticket):
    try:
        resp = client.call("ticket.full", params={TICKET_ID_PARAM: ticket.ticket_id})
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

    def __init__(self, label, interval, emit, clock=None):
        self.label = label
        self.interval = interval if emit is not None else 0
        self.emit = emit
        self.clock = clock or time.monotonic
        self.started = self.clock()
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


def progress_for(label, params, ctx):
    """The Progress of a task's waits: lines to the runner's channel (ctx.progress), masked."""
    channel = getattr(ctx, "progress", None)
    emit = (lambda line: channel(ctx.secrets.mask(line))) if channel is not None else None
    return Progress(label, params.get("progress_interval") or 0, emit)


def poll_gap(age, poll_interval, poll_max_interval=None):
    """Seconds from one poll of an item to its next when the item is ``age`` seconds into its wait:
    poll_interval for the first POLL_STRETCH_AFTER seconds, then poll_interval + POLL_STRETCH x the square
    root of the seconds past that, at most poll_max_interval (None: poll_interval, a fixed rhythm). An
    end is seen at most this long after it happens. Short items keep the 1 s rhythm; long ones cost few
    polls (docs/api-choices.md)."""
    cap = poll_interval if poll_max_interval is None else max(poll_interval, poll_max_interval)
    past = age - POLL_STRETCH_AFTER
    return min(cap, poll_interval + POLL_STRETCH * math.sqrt(past)) if past > 0 else poll_interval


def poll_until_done(items, poll_one, wait_timeout, poll_interval, wait=True, clock=None, sleep=None, pool=None,
                    progress=None, poll_max_interval=None):
    """Poll every unfinished item when its next poll is due (those due together concurrently) until all
    are done or the deadline passes; an item's gap is poll_gap of its age (from ``item.started``).
    Returns True when the deadline ended the wait. Between rounds, ``progress`` (a Progress) gets its
    ticks, however long the gaps. ``clock`` and ``sleep`` default to the time module's, looked up at
    each call."""
    clock, sleep = clock or time.monotonic, sleep or time.sleep
    deadline = clock() + wait_timeout
    if progress is not None:
        progress.track(items)
    due = {}                    # id(item) -> when its next poll is due; items polled together stay together
    while True:
        round_start = clock()
        pending = [item for item in items if not item.done and due.get(id(item), round_start) <= round_start]
        if pool is not None:
            list(pool.map(poll_one, pending))
        else:
            for item in pending:
                poll_one(item)
        if all(item.done for item in items) or not wait:
            return False
        for item in pending:
            gap = poll_gap(round_start - item.started, poll_interval, poll_max_interval)
            due[id(item)] = round_start + gap
            if due[id(item)] > deadline >= round_start + poll_interval:
                due[id(item)] = deadline    # a stretched gap never skips the last poll before the deadline
        next_round = min(due[id(item)] for item in items if not item.done)
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
            due_line = progress.next_due() if progress is not None else None
            if due_line is not None and now < due_line < wake:
                wake = due_line
            sleep(wake - now)


def _pool(items):
    return ThreadPoolExecutor(max_workers=min(CONCURRENT_CALLS, max(1, len(items))))


def follow(items, poll_one, wait_timeout, poll_interval, **options):
    """poll_until_done with each round's polls on at most CONCURRENT_CALLS threads."""
    with _pool(items) as pool:
        return poll_until_done(items, poll_one, wait_timeout, poll_interval, pool=pool, **options)


def wait_for_tickets(client, ticket_ids, wait_timeout, poll_interval, wait=True, messages="on_failure",
                     clock=None, sleep=None, progress=None, poll_max_interval=None):
    """Poll every ticket until all are done or the deadline passes. Returns (tickets, timed_out)."""
    start = (clock or time.monotonic)()
    tickets = [Ticket(ticket_id, start) for ticket_id in ticket_ids]
    timed_out = follow(tickets, lambda t: poll_ticket(client, t, clock), wait_timeout, poll_interval, wait=wait,
                       clock=clock, sleep=sleep, progress=progress, poll_max_interval=poll_max_interval)
    wanted = [t for t in tickets if t.error is None and (
        messages == "always" or (messages == "on_failure" and t.status == TICKET_FAILURE))]
    if wanted:
        with _pool(wanted) as pool:
            list(pool.map(lambda t: fetch_messages(client, t), wanted))
    return tickets, timed_out


def wait_summary(items, timed_out, clock=None, succeeded=(TICKET_SUCCESS,), failed=(TICKET_FAILURE, UNREADABLE)):
    """Results of a wait: one entry per ticket (or migration) and the counts the modules report."""
    now = (clock or time.monotonic)()
    results = [item.as_result(now) for item in items]
    return {
        "results": results,
        "succeeded_count": sum(1 for r in results if r["state"] in succeeded),
        "failed_count": sum(1 for r in results if r["state"] in failed),
        "pending_count": sum(1 for item in items if not item.done),
        "timed_out": timed_out,
    }
