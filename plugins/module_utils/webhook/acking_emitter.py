# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The rulebook side with acknowledgements on (``ack_timeout`` > 0): :class:`AckingEmitter` hands
stored events over within a window of unacknowledged ones and again when not acknowledged in time,
gives up after the last attempt; :func:`make_emitter` picks the emitter the options ask for.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from typing import Any

from . import options, spool
from .emitter import Emitter, for_rulebook

logger = logging.getLogger(__name__)


class AwaitingAck:
    """A delivery handed to the rulebook and not acknowledged yet."""

    __slots__ = ("seq", "delivery_id", "raw", "attempt", "deadline", "entry", "due")

    def __init__(self, seq: int, delivery_id: str, raw: bytes, attempt: int, entry) -> None:
        self.seq = seq
        self.delivery_id = delivery_id
        self.raw = raw
        self.attempt = attempt        # hand-overs so far (the journal's count survives restarts)
        self.deadline = None          # monotonic time after which it is handed over again
        self.entry = entry            # its [seq, delivery_id, done] in AckingEmitter.order; None for a replay
        self.due = False


class AckingEmitter(Emitter):
    """The emitter with acknowledgements on (``ack_timeout`` > 0): an event is done only when an
    action acknowledged it (an ``ack`` line in processing.log: the webhook_ack module, directly or
    through the receiver's options.ACK_PATH) or when it was given up.

    - At most ``max_unacked`` events are handed over and not acknowledged at a time (the rule
      engine takes events while earlier actions queue; this bounds that queue, so an event's wait
      for its acknowledgement is bounded by the actions ahead of it).
    - An event not acknowledged ``ack_timeout`` seconds after it was handed over is handed over
      again; so is every event not acknowledged before a restart. Each hand-over is an attempt
      (``meta.attempt``), counted in the journal across restarts; after ``max_attempts`` the event is
      given up: a ``dead`` line, its record copied to dead.log, an error logged; the operator
      command lists and replays it.
    - The mark (emitted.log) is the highest seq below which every event is done, so a restart
      reads the spool from there and skips what the journal says is done.
    - A window that stays full with nothing acknowledged (actions that never acknowledge: a debug
      rule, a job template without the ack token) is warned about once, naming the likely cause.
    """

    journal_interval = 0.1
    clock = staticmethod(time.monotonic)   # the time deadlines and the stall warning are read by (tests set their own)
    window_stall_warning = 60.0   # seconds a full window waits without an acknowledgement before the warning

    def __init__(self, directory: str, ack_timeout: float, max_unacked: int = options.MAX_UNACKED,
                 max_attempts: int = options.MAX_ATTEMPTS, ack_url: str | None = None) -> None:
        super().__init__(directory, 0.0)
        self.ack_timeout = float(ack_timeout)
        self.max_unacked = max(1, int(max_unacked))
        self.max_attempts = max(1, int(max_attempts))
        self.ack_meta = {"spool_dir": directory, "url": ack_url}
        self.slots: dict[str, AwaitingAck] = {}     # handed over, not acknowledged; in hand-over order
        self.order: deque = deque()           # [seq, delivery_id, done] of records past the mark, in order
        self.states: dict = {}                # the journal's word on deliveries not read or not in a slot
        self.due: deque = deque()             # slots to hand over again (timed out, or the operator's redo)
        self.dead: dict = {}                  # delivery_id -> (seq, attempts) of the dead letters, kept on compaction
        self.counts = {"handed_over": 0, "acknowledged": 0, "handed_over_again": 0, "given_up": 0, "replayed": 0}
        self._journal_fd = -1
        self._window_full_since: float | None = None
        self._window_warned = False
        self._mark_due = False

    def _recovered_states(self, states: dict) -> None:
        self.states = states
        self.dead = {d: (s.seq, s.attempt) for d, s in states.items() if s.verb == spool.DEAD}

    def _redo_ahead(self, delivery_ids: list) -> None:
        """Handed over as they come (their state says redo: attempts from 0), acknowledged as any."""

    def _counts_as_pending(self, delivery_id: str) -> int:
        state = self.states.get(delivery_id)
        return 0 if state is not None and state.verb in (spool.ACK, spool.DEAD) else 1

    def recover(self) -> None:
        super().recover()
        self._open_journal()

    def _open_journal(self) -> None:
        if self._journal_fd >= 0:
            os.close(self._journal_fd)
        self._journal_fd = os.open(self.journal_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        if not spool._ends_a_line(self._journal_fd):      # a line torn by a power loss ends here
            os.write(self._journal_fd, b"\n")

    def _journal(self, line: bytes) -> None:
        """An emit line: appended without a lock and without a sync (one small write is atomic for
        O_APPEND; only this process rewrites the file, and a lost emit line only lowers a count)."""
        try:
            os.write(self._journal_fd, line)
        except OSError as exc:
            logger.error("wpcloud.hosting.webhook: cannot write %s: %s", spool.JOURNAL_FILE, exc)

    # -- handing over --------------------------------------------------------------------------------
    def _next_slot(self):
        """The next slot to hand over, or None: first the due ones, then (with room in the window)
        the operator's replays, then stored records in order."""
        while self.due:
            slot = self.due.popleft()
            slot.due = False
            if self.slots.get(slot.delivery_id) is slot:
                return slot
        while len(self.slots) < self.max_unacked:
            if self.replays:
                seq, delivery_id, raw = self.replays.popleft()
                if delivery_id in self.slots:
                    continue
                state = self.states.pop(delivery_id, None)
                self.counts["replayed"] += 1
                return AwaitingAck(seq, delivery_id, raw, state.attempt if state else 0, None)
            item = self._next_record()
            if item is None:
                return None
            seq, delivery_id, _end, raw = item
            if seq <= self.emitted_seq:
                continue
            self.emitted_seq = seq
            entry = [seq, delivery_id, False]
            self.order.append(entry)
            state = self.states.pop(delivery_id, None)
            if state is not None and state.verb in (spool.ACK, spool.DEAD):
                entry[2] = True         # acknowledged or given up before a restart
                self._advance()
                continue
            if delivery_id in self.slots:     # a replay of it is out: its acknowledgement settles both
                self.slots[delivery_id].entry = entry
                continue
            return AwaitingAck(seq, delivery_id, raw, state.attempt if state else 0, entry)
        return None

    async def _hand_over_all(self, queue: asyncio.Queue) -> None:
        while True:
            slot = self._next_slot()
            if slot is None:
                self.wake.clear()
                await self.wake.wait()
                continue
            await self._hand_over(queue, slot)

    async def _hand_over(self, queue: asyncio.Queue, slot: AwaitingAck) -> None:
        self.slots[slot.delivery_id] = slot
        slot.deadline = None
        if slot.attempt >= self.max_attempts:
            await self._give_up(slot)
            return
        slot.attempt += 1
        event = for_rulebook(slot.raw)
        meta = event.get("meta")
        if not isinstance(meta, dict):
            meta = event["meta"] = {}
        meta["attempt"] = slot.attempt
        meta["ack"] = self.ack_meta
        self._journal(spool.journal_line(spool.EMIT, slot.delivery_id, slot.seq, slot.attempt))
        self.counts["handed_over"] += 1
        if slot.attempt > 1:
            self.counts["handed_over_again"] += 1
        await queue.put(event)
        if self.slots.get(slot.delivery_id) is slot:
            slot.deadline = self.clock() + self.ack_timeout

    async def _give_up(self, slot: AwaitingAck) -> None:
        logger.error("wpcloud.hosting.webhook: %s was handed over %d time(s) without an acknowledgement; given up "
                     "(dead letter). List it with: webhook.py events list --spool-dir %s --state dead",
                     slot.delivery_id, slot.attempt, self.dir)

        def write():
            with open(self.dead_path, "ab") as handle:
                handle.write(b"%d\t%s\t-\t%s\n" % (slot.seq, slot.delivery_id.encode(), slot.raw))
                handle.flush()
                spool.sync(handle.fileno())
            spool.append_journal(self.journal_path, spool.journal_line(
                spool.DEAD, slot.delivery_id, slot.seq, slot.attempt, via="source"))
        try:
            await asyncio.get_running_loop().run_in_executor(None, write)
        except OSError as exc:
            # not recorded: it stays out, and is handed over again after the next timeout
            logger.error("wpcloud.hosting.webhook: cannot record %s as given up: %s", slot.delivery_id, exc)
            slot.deadline = self.clock() + self.ack_timeout
            return
        self.counts["given_up"] += 1
        self._settle(slot.delivery_id)

    # -- settling ------------------------------------------------------------------------------------
    def _settle(self, delivery_id: str) -> bool:
        slot = self.slots.pop(delivery_id, None)
        if slot is None:
            return False
        if slot.entry is not None:
            slot.entry[2] = True
            self._advance()
        self.wake.set()
        return True

    def _advance(self) -> None:
        seq = None
        while self.order and self.order[0][2]:
            seq = self.order.popleft()[0]
        if seq is not None and seq > self.marked_seq:
            self.marked_seq = seq
            self._mark_due = True

    async def _take_entries(self, entries: list) -> None:
        """Acknowledgements settle their slots; the operator's replays and dead letters are noted."""
        redo = []
        for verb, delivery_id, seq, attempt, _when, _via in entries:
            if verb == spool.ACK:
                self.dead.pop(delivery_id, None)
                if self._settle(delivery_id):
                    self.counts["acknowledged"] += 1
                    self._window_full_since = None
                else:                 # not handed over yet (the operator), or a late duplicate
                    state = self.states.setdefault(delivery_id, spool.DeliveryState())
                    state.verb = spool.ACK
            elif verb == spool.REDO:
                self.dead.pop(delivery_id, None)
                redo.append(delivery_id)
            elif verb == spool.DEAD:
                self.dead[delivery_id] = (seq, attempt)
        if redo:
            await self._redo(redo)

    async def _tick(self) -> None:
        """Slots past their deadline become due; the mark is recorded when it moved."""
        now = self.clock()
        self._warn_when_the_window_stalls(now)
        for slot in self.slots.values():
            if slot.deadline is not None and now >= slot.deadline and not slot.due:
                logger.warning("wpcloud.hosting.webhook: %s not acknowledged within %gs (attempt %d of %d)",
                               slot.delivery_id, self.ack_timeout, slot.attempt, self.max_attempts)
                slot.due = True
                slot.deadline = None
                self.due.append(slot)
                self.wake.set()
        if self._mark_due and not self._stopping:
            self._mark_due = False
            seq = self.marked_seq
            try:
                await asyncio.get_running_loop().run_in_executor(None, self._write_mark, seq)
            except OSError as exc:
                logger.error("wpcloud.hosting.webhook: cannot record the done position: %s", exc)
                self._mark_due = True
                return
            if self.on_mark is not None:
                self.on_mark(seq)

    def _warn_when_the_window_stalls(self, now: float) -> None:
        """Once per run: the window of unacknowledged events is full and nothing was acknowledged for
        window_stall_warning seconds (a quarter of ack_timeout when that is shorter). Without it the
        rulebook sees its first max_unacked events, then nothing until ack_timeout, and no word why."""
        if self._window_warned or len(self.slots) < self.max_unacked:
            self._window_full_since = None
            return
        if self._window_full_since is None:
            self._window_full_since = now
        if now - self._window_full_since < min(self.ack_timeout / 4, self.window_stall_warning):
            return
        self._window_warned = True
        logger.warning("wpcloud.hosting.webhook: %d event(s) handed to the rulebook and none acknowledged for %gs; "
                       "no more are handed over until one is, and each comes again after ack_timeout (%gs). "
                       "Likely cause: the rulebook's actions do not acknowledge. End each action with "
                       "wpcloud.hosting.webhook_ack (a job template on another node needs ack_url and the ack "
                       "token), or set ack_timeout: 0 to turn acknowledgements off",
                       len(self.slots), now - self._window_full_since, self.ack_timeout)

    async def _redo(self, delivery_ids: list) -> None:
        """The operator's replay: a slot out is handed over again now; anything else is looked up."""
        lookup = []
        for delivery_id in dict.fromkeys(delivery_ids):
            slot = self.slots.get(delivery_id)
            if slot is not None:
                slot.attempt = 0
                if not slot.due:
                    slot.due = True
                    slot.deadline = None
                    self.due.append(slot)
                continue
            state = self.states.setdefault(delivery_id, spool.DeliveryState())
            state.verb, state.attempt = spool.REDO, 0
            lookup.append(delivery_id)
        if lookup:
            try:
                found = await asyncio.get_running_loop().run_in_executor(None, spool.find_records, self.dir, lookup)
            except OSError as exc:
                logger.error("wpcloud.hosting.webhook: cannot look the replays up: %s", exc)
                return
            later = [d for d in lookup if d in found and found[d][0] > self.emitted_seq]
            # not read yet: handed over when the reader gets there (its state says redo)
            self._queue_replays([d for d in lookup if d not in later], found)
        self.wake.set()

    def rotated(self) -> None:
        """Besides the mark: the journal keeps only what is still open (replays out, dead letters,
        replays asked for); lines appended since the last read are kept as they are."""
        super().rotated()
        keep = []
        for delivery_id, slot in self.slots.items():
            keep.append(spool.journal_line(spool.REDO, delivery_id, slot.seq, via="compaction"))
            if slot.attempt:
                keep.append(spool.journal_line(spool.EMIT, delivery_id, slot.seq, slot.attempt))
        for delivery_id, (seq, attempts) in self.dead.items():
            if delivery_id not in self.slots:
                keep.append(spool.journal_line(spool.DEAD, delivery_id, seq, attempts, via="compaction"))
        for delivery_id, state in list(self.states.items()):
            if state.verb == spool.REDO and delivery_id not in self.slots:
                keep.append(spool.journal_line(spool.REDO, delivery_id, state.seq, via="compaction"))
            else:
                del self.states[delivery_id]        # acknowledged: nothing left to wait for
        head = b"".join(keep)
        offset = self.journal_offset

        def rewrite(data: bytes):
            return head, data[offset:] if len(data) >= offset else b""
        self.journal_offset = spool.rewrite_journal(self.journal_path, rewrite)
        self._open_journal()

    async def stop(self) -> None:
        self._stopping = True
        await super().stop()
        if self._journal_fd >= 0:
            os.close(self._journal_fd)
            self._journal_fd = -1


def make_emitter(args: dict[str, Any], spool_dir: str) -> Emitter:
    """AckingEmitter unless ack_timeout is 0 (then an event is done once it was handed over)."""
    ack_timeout = float(args.get("ack_timeout", options.ACK_TIMEOUT))
    if ack_timeout <= 0:
        return Emitter(spool_dir, float(args.get("emit_confirm_delay", 1.0)))
    return AckingEmitter(spool_dir, ack_timeout, int(args.get("max_unacked", options.MAX_UNACKED)),
                         int(args.get("max_attempts", options.MAX_ATTEMPTS)), args.get("ack_url"))
