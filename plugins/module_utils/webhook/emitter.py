# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The rulebook side of the event source: reads the events the receiver stored, hands them to the
rulebook queue in order, hands over again what is not acknowledged (processing.log) and records
what is done (emitted.log). :class:`Emitter` with acknowledgements off; ``acking_emitter.py`` adds
them. Both follow processing.log in one loop (:meth:`Emitter.follow_journal`).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import deque

from . import signature, spool

logger = logging.getLogger(__name__)


def for_rulebook(raw: bytes) -> dict:
    """A stored event as the rulebook gets it: ``meta.event`` holds the normalised event name that
    rules match on (``site-provisioned`` arrives as ``site_provisioned``); ``payload.event`` stays as
    sent, which is what the signature covers. Set at hand-over, so events stored before an upgrade
    get it too."""
    event = json.loads(raw)
    payload = event.get("payload")
    if isinstance(payload, dict):
        meta = event.get("meta")
        if not isinstance(meta, dict):
            meta = event["meta"] = {}
        meta["event"] = signature.event_name(payload.get("event"))
    return event


class Emitter:
    """Reads durable records from the spool and hands them to the rulebook queue, in seq order.

    This is the emitter with acknowledgements off (``ack_timeout: 0``): an event is done once it
    was handed over. ``emitted.log``: one line per mark, the highest seq handed over at least
    ``confirm_delay`` seconds ago (so an event taken by the rulebook but not acted on before a crash
    comes again). An operator's replay (a ``redo`` line in processing.log) is handed over once more
    and then recorded as done (``ack ... handover``).
    """

    journal_interval = 0.5        # seconds between two looks at processing.log for operator requests

    def __init__(self, directory: str, confirm_delay: float) -> None:
        self.dir = directory
        self.path = os.path.join(directory, spool.SPOOL_FILE)
        self.old_path = os.path.join(directory, spool.OLD_SPOOL_FILE)
        self.emitted_path = os.path.join(directory, spool.EMITTED_FILE)
        self.journal_path = os.path.join(directory, spool.JOURNAL_FILE)
        self.dead_path = os.path.join(directory, spool.DEAD_FILE)
        self.confirm_delay = max(0.0, float(confirm_delay))
        self.durable_seq = 0
        self.durable_offset = 0
        self.emitted_seq = 0
        self.marked_seq = 0
        self.read_offset = 0
        self.recovered = 0
        self.carry: deque = deque()           # (seq, delivery_id, None, event bytes) to read before spool.log
        self.replays: deque = deque()         # (seq, delivery_id, event bytes) the operator asked for again
        self.wake = asyncio.Event()
        self.on_mark = None
        self.journal_offset = 0
        self._batch: deque = deque()
        self._put_times: deque = deque()
        self._mark_task: asyncio.Task | None = None
        self._emitted_fd = -1
        self._stopping = False

    # -- start ---------------------------------------------------------------------------------
    def read_mark(self) -> int:
        value = spool.read_mark(self.dir)
        self.emitted_seq = self.marked_seq = value
        return value

    def recover(self) -> None:
        """Before the receiver starts: find what is stored but not done yet (a torn tail ends the scan)."""
        hw = self.marked_seq
        entries, self.journal_offset = spool.read_journal(self.journal_path)
        states = spool.fold_journal(entries)
        self._recovered_states(states)
        redo = {d for d, state in states.items() if state.verb == spool.REDO}
        ahead = []
        durable_offset = spool.read_records(self.path)[1]
        durable_seq = 0
        pending = 0

        def not_emitted(seq, delivery_id, event) -> bool:
            """Sort one stored record, the same way in the rotated and the current file: past the
            mark it is still to be emitted (a replay asked for it is settled as it goes); before
            the mark only a replay asked for brings it back."""
            nonlocal pending
            if seq > hw:
                pending += self._counts_as_pending(delivery_id)
                if delivery_id in redo:
                    ahead.append(delivery_id)
                    redo.discard(delivery_id)
                return True
            if delivery_id in redo:
                self.replays.append((seq, delivery_id, event))
                redo.discard(delivery_id)
            return False

        for seq, delivery_id, _fp, _end, event in spool.read_records(self.old_path)[0]:
            if not_emitted(seq, delivery_id, event):
                self.carry.append((seq, delivery_id, None, event))
        self.read_offset = durable_offset
        start = 0
        first = True
        for seq, delivery_id, _fp, end, event in spool.read_records(self.path, 0, durable_offset)[0]:
            durable_seq = seq
            if not_emitted(seq, delivery_id, event) and first:
                self.read_offset = start
                first = False
            start = end
        if redo:                  # given up and rotated out of the spool: the copy in dead.log
            for seq, delivery_id, _fp, _end, event in spool.read_records(self.dead_path)[0]:
                if delivery_id in redo:
                    self.replays.append((seq, delivery_id, event))
                    redo.discard(delivery_id)
        for delivery_id in redo:
            logger.error("wpcloud.hosting.webhook: a replay of %s was asked for, but its record is no longer "
                         "in the spool or dead.log", delivery_id)
        self.durable_seq = max(durable_seq, hw)
        self.durable_offset = durable_offset
        self.recovered = pending + len(self.replays)
        self._emitted_fd = os.open(self.emitted_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        self._redo_ahead(ahead)

    def _recovered_states(self, states: dict) -> None:
        """What the journal says, for a subclass that keeps it."""

    def _redo_ahead(self, delivery_ids: list) -> None:
        """Replays asked for of records not emitted yet: they are handed over as they come, so the
        request is settled (with acknowledgements off, handed over is done)."""
        if delivery_ids:
            spool.record_acks(self.dir, delivery_ids, "handover")

    def _counts_as_pending(self, delivery_id: str) -> int:  # pylint: disable=unused-argument
        return 1

    # -- the receiver's news -------------------------------------------------------------------
    def durable(self, seq: int, offset: int) -> None:
        self.durable_seq = max(self.durable_seq, seq)
        self.durable_offset = offset
        self.wake.set()

    def rotated(self) -> None:
        """The receiver renamed spool.log (only when everything was done and marked)."""
        self.read_offset = 0
        self.durable_offset = 0
        self._batch.clear()
        tmp = self.emitted_path + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(b"%d\n" % self.marked_seq)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.emitted_path)
        os.close(self._emitted_fd)
        self._emitted_fd = os.open(self.emitted_path, os.O_RDWR | os.O_APPEND, 0o600)

    # -- reading the spool -----------------------------------------------------------------------
    def _next_record(self):
        """The next stored record in seq order, (seq, delivery_id, end offset or None, event bytes), or None."""
        if self.carry:
            return self.carry.popleft()
        if not self._batch and self.durable_offset > self.read_offset:
            records, _pos = spool.read_records(self.path, self.read_offset, self.durable_offset, 512, 1 << 18)
            self._batch.extend((seq, delivery_id, end, event) for seq, delivery_id, _fp, end, event in records)
        if self._batch:
            item = self._batch.popleft()
            self.read_offset = item[2]
            return item
        return None

    async def run(self, queue: asyncio.Queue) -> None:
        """Hand events to the rulebook queue while following processing.log, until cancelled."""
        watcher = asyncio.get_running_loop().create_task(self.follow_journal())
        try:
            await self._hand_over_all(queue)
        finally:
            watcher.cancel()

    async def _hand_over_all(self, queue: asyncio.Queue) -> None:
        """Acknowledgements off: every stored record in order, the operator's replays first."""
        while True:
            if self.replays:
                seq, delivery_id, raw = self.replays.popleft()
                await queue.put(for_rulebook(raw))
                await asyncio.get_running_loop().run_in_executor(
                    None, spool.record_acks, self.dir, [delivery_id], "handover")
                continue
            item = self._next_record()
            if item is None:
                self.wake.clear()
                await self.wake.wait()
                continue
            seq, _delivery_id, _end, raw = item
            if seq <= self.emitted_seq:
                continue
            await queue.put(for_rulebook(raw))
            self.emitted_seq = seq
            self._put_times.append((seq, time.monotonic()))
            if self._mark_task is None or self._mark_task.done():
                self._mark_task = asyncio.get_running_loop().create_task(self._mark_loop())

    # -- processing.log: acknowledgements, the operator's requests -----------------------------------
    async def follow_journal(self) -> None:
        """The one loop over processing.log: every journal_interval, the lines appended since the
        last look (acknowledgements, the operator's requests, dead letters) go to :meth:`_take_entries`,
        then :meth:`_tick` does the periodic work."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.journal_interval)
            try:
                entries, self.journal_offset = await loop.run_in_executor(
                    None, spool.read_journal, self.journal_path, self.journal_offset)
            except OSError as exc:
                logger.error("wpcloud.hosting.webhook: cannot read %s: %s", spool.JOURNAL_FILE, exc)
                entries = []
            await self._take_entries(entries)
            await self._tick()

    async def _take_entries(self, entries: list) -> None:
        """Acknowledgements off: only the operator's replays matter."""
        wanted = [d for verb, d, _s, _a, _t, _v in entries if verb == spool.REDO]
        if not wanted:
            return
        try:
            found = await asyncio.get_running_loop().run_in_executor(None, spool.find_records, self.dir, wanted)
        except OSError as exc:
            logger.error("wpcloud.hosting.webhook: cannot look the replays up: %s", exc)
            return
        self._queue_replays(wanted, found)

    async def _tick(self) -> None:
        """Periodic work after each look at the journal (acknowledgements off: none; marks have their loop)."""

    def _queue_replays(self, wanted: list, found: dict) -> None:
        for delivery_id in dict.fromkeys(wanted):
            if delivery_id not in found:
                logger.error("wpcloud.hosting.webhook: a replay of %s was asked for, but its record is not "
                             "in the spool or dead.log", delivery_id)
                continue
            seq, raw = found[delivery_id]
            self.replays.append((seq, delivery_id, raw))
            logger.info("wpcloud.hosting.webhook: %s will be handed over again (operator)", delivery_id)
        self.wake.set()

    # -- marks -------------------------------------------------------------------------------------
    async def _mark_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._put_times and not self._stopping:
            await asyncio.sleep(min(0.05, self.confirm_delay) if self.confirm_delay else 0.005)
            limit = time.monotonic() - self.confirm_delay
            seq = None
            while self._put_times and self._put_times[0][1] <= limit:
                seq = self._put_times.popleft()[0]
            if seq is None or seq <= self.marked_seq:
                continue
            try:
                await loop.run_in_executor(None, self._write_mark, seq)
            except Exception as exc:  # pylint: disable=broad-except
                logger.error("wpcloud.hosting.webhook: cannot record emitted position: %s", exc)
                return
            self.marked_seq = max(self.marked_seq, seq)
            if self.on_mark is not None:
                self.on_mark(self.marked_seq)

    def _write_mark(self, seq: int) -> None:
        spool.append_mark(self._emitted_fd, seq)       # raises OSError when not recorded (a full disk)

    async def stop(self) -> None:
        """Stop recording marks (recent, unconfirmed events are emitted again next start)."""
        self._stopping = True
        if self._mark_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._mark_task), 2)
            except Exception:  # pylint: disable=broad-except
                pass
        if self._emitted_fd >= 0:
            os.close(self._emitted_fd)
            self._emitted_fd = -1
