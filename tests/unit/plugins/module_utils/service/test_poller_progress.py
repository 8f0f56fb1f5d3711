# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress lines while waiting: how often, what they say, and that they can be turned off.

A fake clock and sleep drive the one poll loop; no server."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import (
    Progress,
    Ticket,
    poll_until_done,
    progress_for,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_runs import MigrationRun


class FakeTime(object):
    def __init__(self):
        self.now = 1000.0

    def clock(self):
        return self.now

    def sleep(self, seconds):
        assert seconds > 0
        self.now += seconds


def finish_after(fake, when, status="success"):
    """poll_one that ends a ticket once the fake clock passes ``when`` (seconds from the start)."""
    start = fake.now

    def poll(ticket):
        ticket.polls += 1
        if fake.now - start >= when[ticket.ticket_id]:
            ticket.status = status if not callable(status) else status(ticket)
        else:
            ticket.status = "running"
    return poll


def test_a_fleet_wait_prints_counts_at_the_interval():
    fake = FakeTime()
    lines = []
    progress = Progress("migration_ready", 15, lines.append, clock=fake.clock)
    tickets = [Ticket("t.%d" % n, fake.now) for n in range(4)]
    when = {"t.0": 10, "t.1": 20, "t.2": 35, "t.3": 50}

    def status(ticket):
        return "failure" if ticket.ticket_id == "t.1" else "success"
    timed_out = poll_until_done(tickets, finish_after(fake, when, status), 1800, 1.0, clock=fake.clock,
                                sleep=fake.sleep, progress=progress)
    assert not timed_out
    assert lines == [
        "migration_ready: 1/4 done (0 failed), 3 running, 15 s elapsed",
        "migration_ready: 2/4 done (1 failed), 2 running, 30 s elapsed",
        "migration_ready: 3/4 done (1 failed), 1 running, 45 s elapsed",
    ]


def test_a_long_poll_interval_still_gives_a_line_every_progress_interval():
    fake = FakeTime()
    lines = []
    progress = Progress("response_ticket_wait", 5, lines.append, clock=fake.clock)
    tickets = [Ticket("t.1", fake.now)]
    poll_until_done(tickets, finish_after(fake, {"t.1": 60}), 1800, 30.0, clock=fake.clock, sleep=fake.sleep,
                    progress=progress)
    # one every 5 s (5, 10, ... 60 s) although the polls are 30 s apart
    assert [int(line.split(", ")[-1].split()[0]) for line in lines] == list(range(5, 61, 5))
    assert lines[0] == "response_ticket_wait: ticket t.1 running (0 responses), 5 s elapsed"


def test_one_migration_followed_by_its_state_shows_the_state():
    fake = FakeTime()
    lines = []
    progress = Progress("response_ticket_wait", 2, lines.append, clock=fake.clock)
    run = MigrationRun(5001, fake.now)
    run.state = "migration-running"
    progress.track([run])
    fake.now += 2
    progress.tick()
    assert lines == ["response_ticket_wait: migration 5001 migration-running, 2 s elapsed"]


@pytest.mark.parametrize("interval,emit", [(0, True), (5, False)])
def test_off_when_zero_or_when_the_runner_cannot_show_it(interval, emit):
    fake = FakeTime()
    lines = []
    progress = Progress("x", interval, lines.append if emit else None, clock=fake.clock)
    tickets = [Ticket("t.1", fake.now)]
    poll_until_done(tickets, finish_after(fake, {"t.1": 30}), 1800, 1.0, clock=fake.clock, sleep=fake.sleep,
                    progress=progress)
    assert lines == [] and progress.lines == 0


def test_lines_are_masked_and_only_reach_a_runner_that_can_show_them():
    lines = []
    ctx = ModuleContext({"remote_pass": "s3cret"}, {"remote_pass": {"type": "str", "no_log": True}}, progress=lines.append)
    progress = progress_for("migration_ready", {"progress_interval": 0.0001}, ctx)
    progress.emit("ticket s3cret")
    assert lines == ["ticket ********"]
    assert progress_for("migration_ready", {"progress_interval": 15}, ModuleContext({})).interval == 0


def test_a_negative_progress_interval_is_refused():
    with pytest.raises(ModuleFailure) as caught:
        wait_options({"progress_interval": -1, "poll_interval": 1, "wait_timeout": 10})
    assert "progress_interval" in caught.value.msg and "0" in caught.value.msg
