# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The adaptive wait's schedule (poll_gap, poll_until_done), pinned with a fake clock: the first polls at
poll_interval, the gap growing with the item's age up to poll_max_interval, progress lines on time however
sparse the polls, a 202 late in a wait retried within the cap, and poll_max_interval == poll_interval as
the old fixed rhythm. No server: the poll functions are fakes, or the client on the faked HTTP layer."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import (
    Progress,
    Ticket,
    poll_gap,
    poll_until_done,
    wait_for_tickets,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import DEFAULT_POLL_MAX_INTERVAL
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.service.test_poller_progress import FakeTime


def follow_one(fake, ends_at, wait_timeout=1800, poll_interval=1.0, poll_max_interval=DEFAULT_POLL_MAX_INTERVAL,
               progress=None):
    """Wait on one ticket that ends ``ends_at`` seconds in; the moments (from the start) of its polls."""
    start = fake.now
    ticket = Ticket("t.1", start)
    polls = []

    def poll(item):
        polls.append(round(fake.now - start, 6))
        item.polls += 1
        item.status = "success" if fake.now - start >= ends_at else "running"
    timed_out = poll_until_done([ticket], poll, wait_timeout, poll_interval, clock=fake.clock, sleep=fake.sleep,
                                progress=progress, poll_max_interval=poll_max_interval)
    return polls, timed_out


def gaps(moments):
    return [round(b - a, 6) for a, b in zip(moments, moments[1:])]


def test_the_first_twelve_seconds_are_polled_every_poll_interval():
    polls, dummy = follow_one(FakeTime(), ends_at=12)
    assert polls == [float(s) for s in range(13)]        # at 0, 1, ... 12 s: a 10 s run (+ 202s) is seen as today


def test_the_gap_grows_with_age_and_never_passes_the_cap():
    polls, timed_out = follow_one(FakeTime(), ends_at=600)
    steps = gaps(polls)
    assert not timed_out
    assert all(b >= a for a, b in zip(steps, steps[1:]))                 # never shorter again
    assert max(steps) == DEFAULT_POLL_MAX_INTERVAL and steps[-1] == DEFAULT_POLL_MAX_INTERVAL
    assert steps[12:14] == [1.0, pytest.approx(1.65)]                   # after the polls at 12 s and 13 s
    # The targets of issue 26: a 1-minute item in at most 30 polls, a 5-minute one in at most 60; each
    # seen at most the gap of its age late (6 s at one minute, the cap later).
    for ends_at, most, late in ((61, 30, 6.0), (301, 60, 12.0)):
        polls, dummy = follow_one(FakeTime(), ends_at=ends_at)
        assert len(polls) <= most and polls[-1] - ends_at <= late


def test_poll_gap_is_the_documented_formula():
    assert [poll_gap(age, 1.0, 12.0) for age in (0, 12, 13, 21, 37)] == [1.0, 1.0, 1.65, 2.95, 4.25]
    assert poll_gap(10000, 1.0, 12.0) == 12.0
    assert poll_gap(10000, 1.0, None) == 1.0 and poll_gap(10000, 5.0, 5.0) == 5.0
    assert poll_gap(13, 2.0, 30.0) == pytest.approx(2.65)           # the stretch starts from poll_interval


def test_poll_max_interval_equal_to_poll_interval_is_the_fixed_rhythm():
    polls, dummy = follow_one(FakeTime(), ends_at=100, poll_max_interval=1.0)
    assert polls == [float(s) for s in range(101)]
    polls, dummy = follow_one(FakeTime(), ends_at=100, poll_interval=5.0, poll_max_interval=5.0)
    assert polls == [float(s) for s in range(0, 101, 5)]


def test_progress_lines_keep_their_rhythm_however_sparse_the_polls():
    fake = FakeTime()
    lines = []
    progress = Progress("response_ticket_wait", 5, lines.append, clock=fake.clock)
    polls, dummy = follow_one(fake, ends_at=400, progress=progress)
    assert max(gaps(polls)) == DEFAULT_POLL_MAX_INTERVAL
    assert [int(line.split(", ")[-1].split()[0]) for line in lines] == list(range(5, int(polls[-1]) + 1, 5))


def test_a_stretched_gap_still_polls_at_the_deadline():
    polls, timed_out = follow_one(FakeTime(), ends_at=10000, wait_timeout=100)
    assert timed_out and polls[-1] == 100.0 and max(gaps(polls)) <= DEFAULT_POLL_MAX_INTERVAL


def test_items_of_one_wait_stay_in_one_round():
    fake = FakeTime()
    tickets = [Ticket("t.%d" % n, fake.now) for n in range(3)]
    rounds = []

    def poll(item):
        if not rounds or rounds[-1][0] != fake.now:
            rounds.append((fake.now, []))
        rounds[-1][1].append(item.ticket_id)
        item.status = "success" if fake.now - 1000.0 >= 120 else "running"
    poll_until_done(tickets, poll, 1800, 1.0, clock=fake.clock, sleep=fake.sleep, poll_max_interval=12.0)
    assert all(ids == ["t.0", "t.1", "t.2"] for dummy, ids in rounds) and len(rounds) < 40


@pytest.fixture()
def client(fake_api):
    client = WPCloudClient(api_url=fake_api.url, api_key=fake_api.api_key)
    yield client
    client.close()


def test_a_202_after_the_cap_is_polled_again_within_the_cap(fake_api, client, fake_time):
    """The service asks for a retry after one second on a 202; late in a wait, a 202 (a ticket the service
    has lost track of for a moment, say) is asked again at most poll_max_interval later, never given up."""
    mid = fake_api.add_migration(site=str(fake_api.next_id))
    steps = ["running"] * 40 + ["pending"] * 3 + ["success"]
    fake_api.script("ready", steps=steps, migration_id=mid)
    ticket_id = client.call("migration.ready", migration_id=mid).data["response-ticket-id"]
    tickets, timed_out = wait_for_tickets(client, [ticket_id], 1800, 1.0, poll_max_interval=8.0)
    assert not timed_out and tickets[0].status == "success" and tickets[0].polls == len(steps)
    naps = fake_time.naps
    assert naps[:10] == [1.0] * 10 and max(naps) == 8.0
    assert naps[-4:] == [8.0] * 4           # the three 202s, and the poll that saw the end, at the cap


def test_wait_options_refuse_a_cap_below_the_interval_by_its_name():
    with pytest.raises(ModuleFailure) as caught:
        wait_options({"poll_interval": 5, "poll_max_interval": 2, "wait_timeout": 10})
    assert "poll_max_interval" in caught.value.msg and "poll_interval" in caught.value.msg
    unset = wait_options({"poll_interval": 1, "poll_max_interval": None, "wait_timeout": 10})
    assert unset["poll_max_interval"] == DEFAULT_POLL_MAX_INTERVAL
    # An interval longer than the default cap is not an error when the cap was not set: the cap follows it.
    assert wait_options({"poll_interval": 30, "wait_timeout": 10})["poll_max_interval"] == 30
