# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rulebook side: stored events handed to the rulebook in order, with acknowledgements off and on
(the window, timeouts, attempts, dead letters, restarts, the operator's replays, rotation), and the
event as the rulebook gets it (the normalised name)."""

from __future__ import annotations

import asyncio
import errno
import json
import os

import pytest

pytest.importorskip("aiohttp")

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.acking_emitter import make_emitter  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.emitter import Emitter  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.webhook.source_parts import (  # noqa: E402  pylint: disable=wrong-import-position
    Rulebook, acking, ids, manual_clock, run, stored_and_acking, until, write_named_spool, write_spool,
)


def test_emitter_recovers_what_was_stored_but_not_emitted(tmp_path):
    rec = spool.record
    (tmp_path / "spool.log.1").write_bytes(rec(1, "a", "f", {"n": 1}) + rec(2, "b", "f", {"n": 2}))
    (tmp_path / "spool.log").write_bytes(rec(3, "c", "f", {"n": 3}) + rec(4, "d", "f", {"n": 4}) + b"5\tx")
    (tmp_path / "emitted.log").write_bytes(b"1\n3")          # "3" was torn: the mark is 1
    emitter = Emitter(str(tmp_path), 0)
    assert emitter.read_mark() == 1
    emitter.recover()

    async def emitted():
        queue = asyncio.Queue()
        task = asyncio.ensure_future(emitter.run(queue))
        items = [await asyncio.wait_for(queue.get(), 5) for dummy in range(3)]
        task.cancel()
        await emitter.stop()
        return items
    assert emitter.recovered == 3
    assert run(emitted()) == [{"n": 2}, {"n": 3}, {"n": 4}]


def test_a_mark_after_a_torn_one_is_a_line_of_its_own(tmp_path):
    """A crash cut the mark being written ("13" to "1"); the next mark goes on a line of its own
    ("2\n1\n4\n": 4), never after the torn digits ("2\n14\n" reads 14: events 5 to 14, stored
    later, would be skipped at the next start as if done)."""
    size = write_spool(tmp_path, ids(4))
    (tmp_path / "emitted.log").write_bytes(b"2\n1")
    emitter = Emitter(str(tmp_path), 0)
    assert emitter.read_mark() == 2
    emitter.recover()
    emitter.durable(4, size)

    async def scenario():
        queue = asyncio.Queue()
        task = asyncio.ensure_future(emitter.run(queue))
        await asyncio.wait_for(queue.get(), 5)
        await asyncio.wait_for(queue.get(), 5)
        await until(lambda: emitter.marked_seq == 4)
        task.cancel()
        await emitter.stop()
    run(scenario())
    assert spool.read_mark(str(tmp_path)) == 4


def test_a_mark_the_full_disk_cut_short_is_taken_back_and_written_again(tmp_path, monkeypatch, caplog):
    """ENOSPC, as a tmpfs or a disk gives it: a write into emitted.log stores what fits in the file's
    last block and returns short, the next one fails. The cut mark is taken back and written again
    once there is room; left there, "1" of "12" and the next mark "13" would read 113, a mark past
    events never processed."""
    names = ids(13)
    size12 = write_spool(tmp_path, names[:12])
    size13 = write_spool(tmp_path, names[12:], start=13)
    emitter = acking(tmp_path)
    emitter.durable(12, size12)
    room = [1]                 # bytes emitted.log can still take
    real_write = os.write

    def write(fd, data):
        if fd != emitter._emitted_fd:  # pylint: disable=protected-access
            return real_write(fd, data)
        if not room[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = real_write(fd, bytes(data[:room[0]]))
        room[0] -= written
        return written
    monkeypatch.setattr(os, "write", write)

    async def scenario():
        async with Rulebook(emitter) as rb:
            await rb.take(12)
            await rb.ack(*names[:12])
            await until(lambda: not room[0])                            # the mark's write met the full disk
            await asyncio.sleep(0.1)                                    # more ticks, the disk still full
            assert (tmp_path / "emitted.log").read_bytes() == b""       # nothing torn left behind
            assert "cannot record the done position" in caplog.text
            room[0] = 1 << 20                                           # room again
            await until(lambda: spool.read_mark(str(tmp_path)) == 12)
            emitter.durable(13, size13)
            await rb.take(1)
            await rb.ack(names[12])
            await until(lambda: (tmp_path / "emitted.log").read_bytes().endswith(b"13\n"))
    run(scenario())
    assert spool.read_mark(str(tmp_path)) == 13
    assert acking(tmp_path).recovered == 0


def test_acking_emitter_holds_at_most_max_unacked_and_marks_only_what_is_done(tmp_path):
    names, emitter = stored_and_acking(tmp_path, 5, window=2, url="https://eda.example:8443/_wpcloud/ack")

    async def scenario():
        async with Rulebook(emitter) as rb:
            first = await rb.take(2)
            await rb.nothing_more()                      # two out, none acknowledged: the window is full
            await rb.ack(names[1])                       # the second is done, the first not: no mark yet
            third = await rb.take(1)
            assert emitter.marked_seq == 0
            await rb.ack(names[0])
            await until(lambda: spool.read_mark(str(tmp_path)) == 2)
            assert emitter.marked_seq == 2
            await rb.take(1)
            return first, third
    first, third = run(scenario())
    assert [e["meta"]["delivery_id"] for e in first + third] == names[:3]
    assert first[0]["meta"]["attempt"] == 1
    assert first[0]["meta"]["ack"] == {"spool_dir": str(tmp_path), "url": "https://eda.example:8443/_wpcloud/ack"}
    emits = [e for e in spool.parse_journal((tmp_path / "processing.log").read_bytes()) if e[0] == "emit"]
    assert [(e[1], e[2], e[3]) for e in emits] == [(names[n], n + 1, 1) for n in range(4)]


def test_an_event_not_acknowledged_in_time_comes_again_then_is_given_up(tmp_path, caplog):
    names, emitter = stored_and_acking(tmp_path, 2, timeout=0.2, attempts=2)
    clock = manual_clock(emitter)

    async def scenario():
        async with Rulebook(emitter) as rb:
            await rb.take(2)
            await rb.ack(names[1])
            clock.advance(0.3)
            again = await rb.take(1, timeout=3)          # the first, after ack_timeout
            clock.advance(0.3)
            await until(lambda: emitter.counts["given_up"] == 1)   # not acknowledged again: given up after 2
            await until(lambda: spool.read_mark(str(tmp_path)) == 2)
            await rb.nothing_more()
            return again
    again = run(scenario())
    assert again[0]["meta"]["delivery_id"] == names[0] and again[0]["meta"]["attempt"] == 2
    assert emitter.counts["given_up"] == 1 and emitter.marked_seq == 2
    dead = spool.read_records(str(tmp_path / "dead.log"))[0]
    assert [(r[0], r[1]) for r in dead] == [(1, names[0])]
    assert json.loads(dead[0][4])["payload"] == {"n": 1}
    assert "given up (dead letter)" in caplog.text
    listed = spool.list_deliveries(str(tmp_path))
    assert [(i["delivery_id"], i["state"], i["attempts"]) for i in listed] == [
        (names[0], "dead", 2), (names[1], "done", 1)]


def test_a_restart_hands_over_what_was_not_acknowledged_and_counts_attempts(tmp_path):
    names = ids(4)
    size = write_spool(tmp_path, names)
    emitter = acking(tmp_path)
    emitter.durable(4, size)

    async def first_life():
        async with Rulebook(emitter) as rb:
            await rb.take(4)
            await rb.ack(names[0], names[2])
            await until(lambda: spool.read_mark(str(tmp_path)) == 1)
    run(first_life())
    assert spool.read_mark(str(tmp_path)) == 1

    emitter = acking(tmp_path)                           # the restart: same directory, fresh process state
    emitter.durable(4, size)
    assert emitter.recovered == 2

    async def second_life():
        async with Rulebook(emitter) as rb:
            again = await rb.take(2)
            await rb.nothing_more()
            await rb.ack(names[1], names[3])
            await until(lambda: spool.read_mark(str(tmp_path)) == 4)
            return again
    again = run(second_life())
    assert [(e["meta"]["delivery_id"], e["meta"]["attempt"]) for e in again] == [(names[1], 2), (names[3], 2)]
    assert spool.read_mark(str(tmp_path)) == 4


def one_dead_letter(tmp_path):
    """Three stored events with one attempt each: (names, emitter, start), where ``await start(rb)``
    takes the three, acknowledges the first and the third, and waits until the second, not
    acknowledged in time, is given up (a dead letter) and the mark is past all three."""
    names, emitter = stored_and_acking(tmp_path, 3, attempts=1, timeout=0.1)
    clock = manual_clock(emitter)

    async def start(rb):
        await rb.take(3)
        await rb.ack(names[0], names[2])
        clock.advance(0.2)
        await until(lambda: emitter.counts["given_up"] == 1 and emitter.marked_seq == 3)
        await until(lambda: spool.read_mark(str(tmp_path)) == 3)
    return names, emitter, start


def test_the_operator_replays_a_done_and_a_dead_event(tmp_path):
    names, emitter, start = one_dead_letter(tmp_path)

    async def scenario():
        async with Rulebook(emitter) as rb:
            await start(rb)
            spool.request_redo(str(tmp_path), [names[0], names[1]])
            replayed = await rb.take(2)
            await rb.ack(names[0], names[1])
            return replayed
    replayed = run(scenario())
    assert sorted((e["meta"]["delivery_id"], e["meta"]["attempt"]) for e in replayed) == [
        (names[0], 1), (names[1], 1)]
    assert {i["state"] for i in spool.list_deliveries(str(tmp_path))} == {"done"}


def test_a_replay_asked_while_stopped_is_handed_over_at_the_start(tmp_path):
    names = ids(2)
    size = write_spool(tmp_path, names)
    (tmp_path / "emitted.log").write_bytes(b"2\n")        # both done before
    spool.request_redo(str(tmp_path), [names[0]])
    emitter = acking(tmp_path)
    emitter.durable(2, size)
    assert emitter.recovered == 1

    async def scenario():
        async with Rulebook(emitter) as rb:
            event = await rb.take(1)
            await rb.nothing_more()
            return event
    assert run(scenario())[0]["meta"]["delivery_id"] == names[0]


def test_rotation_compacts_the_journal_but_keeps_dead_letters(tmp_path):
    names, emitter, start = one_dead_letter(tmp_path)

    async def scenario():
        async with Rulebook(emitter) as rb:
            await start(rb)
            os.replace(tmp_path / "spool.log", tmp_path / "spool.log.1")
            emitter.rotated()
            await rb.ack(names[0])                       # a late duplicate acknowledgement
    run(scenario())
    entries = spool.parse_journal((tmp_path / "processing.log").read_bytes())
    # the acknowledgements of done events went, the dead letter stayed; the late one is new
    assert [(e[0], e[1]) for e in entries] == [("dead", names[1]), ("ack", names[0])]
    assert [i["state"] for i in spool.list_deliveries(str(tmp_path))] == ["done", "dead", "done"]


def test_with_acknowledgements_off_a_replay_is_handed_over_once(tmp_path):
    names = ids(2)
    size = write_spool(tmp_path, names)
    emitter = Emitter(str(tmp_path), 0)
    emitter.journal_interval = 0.01
    emitter.read_mark()
    emitter.recover()
    emitter.durable(2, size)

    async def scenario():
        queue = asyncio.Queue()
        task = asyncio.ensure_future(emitter.run(queue))
        first = [await asyncio.wait_for(queue.get(), 5) for dummy in range(2)]
        spool.request_redo(str(tmp_path), [names[1]])
        again = await asyncio.wait_for(queue.get(), 5)
        await asyncio.sleep(0.1)
        task.cancel()
        await emitter.stop()
        return first, again
    first, again = run(scenario())
    assert "attempt" not in first[0]["meta"] and again["meta"]["delivery_id"] == names[1]
    assert spool.list_deliveries(str(tmp_path))[1]["state"] == "done"          # ack ... handover


def test_the_emitter_follows_ack_timeout(tmp_path):
    assert type(make_emitter({"ack_timeout": 0}, str(tmp_path))).__name__ == "Emitter"
    emitter = make_emitter({"ack_timeout": "30", "max_unacked": "4", "max_attempts": 2}, str(tmp_path))
    assert (type(emitter).__name__, emitter.ack_timeout, emitter.max_unacked, emitter.max_attempts) == (
        "AckingEmitter", 30.0, 4, 2)
    assert make_emitter({}, str(tmp_path)).ack_timeout == 600


@pytest.mark.parametrize("acknowledgements", [True, False])
def test_the_rulebook_gets_the_normalised_name_and_the_payload_as_sent(tmp_path, acknowledgements):
    names = ["site-provisioned", "site_provisioned", "on-demand-backup", 42]
    delivery_ids, size = write_named_spool(tmp_path, names)
    if acknowledgements:
        emitter = acking(tmp_path)
    else:
        emitter = Emitter(str(tmp_path), 0)
        emitter.read_mark()
        emitter.recover()
    emitter.durable(len(names), size)

    async def scenario():
        async with Rulebook(emitter) as rb:
            return await rb.take(len(names))
    events = run(scenario())
    assert [e["meta"]["event"] for e in events] == ["site_provisioned", "site_provisioned", "on_demand_backup", None]
    assert [e["payload"]["event"] for e in events] == names
    assert [e["meta"]["delivery_id"] for e in events] == delivery_ids


STALL_WARNING = "none acknowledged"


def test_a_full_window_that_nothing_acknowledges_is_warned_about_once(tmp_path, caplog):
    """Actions that never acknowledge (a debug rule, a job template without the ack token): the
    rulebook gets max_unacked events, then nothing until ack_timeout. Said once, with the cause and
    the way out (webhook_ack, or ack_timeout: 0), also when the events come again and fill it again."""
    names = ids(3)
    size = write_spool(tmp_path, names)
    emitter = acking(tmp_path, timeout=0.6, window=2, attempts=5)      # warned after a quarter of ack_timeout
    emitter.durable(3, size)
    clock = manual_clock(emitter)

    async def scenario():
        async with Rulebook(emitter) as rb:
            await rb.take(2)
            await until(lambda: clock.advance(0.01) or STALL_WARNING in caplog.text, timeout=3)
            await rb.nothing_more(0.1)                   # the third waits for room in the window
            clock.advance(0.6)
            again = await rb.take(2, timeout=3)          # after ack_timeout: the same two again
            clock.advance(0.3)                           # the window full again, past the warning's 0.15 s
            await asyncio.sleep(0.3)
            return again
    again = run(scenario())
    assert [e["meta"]["attempt"] for e in again] == [2, 2]
    warnings = [r.getMessage() for r in caplog.records if STALL_WARNING in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "2 event(s) handed to the rulebook and none acknowledged for" in warnings[0]
    assert "wpcloud.hosting.webhook_ack" in warnings[0] and "ack_timeout: 0" in warnings[0]
    assert "ack_timeout (0.6s)" in warnings[0]


def test_a_full_window_whose_events_are_acknowledged_is_not_warned_about(tmp_path, caplog):
    names, emitter = stored_and_acking(tmp_path, 6, timeout=0.8, window=2)
    clock = manual_clock(emitter)

    async def scenario():
        async with Rulebook(emitter) as rb:
            for dummy in range(3):
                taken = await rb.take(2)
                await asyncio.sleep(0.05)                # the emitter sees the window full ...
                clock.advance(0.1)                       # ... for 0.1 s, under the warning's 0.2 s (0.3 s in all)
                await rb.ack(*[e["meta"]["delivery_id"] for e in taken])
            clock.advance(0.5)                           # empty window: nothing to say either
            await asyncio.sleep(0.1)
    run(scenario())
    assert STALL_WARNING not in caplog.text
