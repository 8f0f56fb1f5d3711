# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The receiver's side of the spool: spool.log appended with group commit (requests that arrive together
share one write and one fsync), the directory lock, rotation, and the memory of the deliveries it holds.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None

from . import replay, spool

logger = logging.getLogger(__name__)


class SpoolWriter:
    """Append-only spool.log with group commit, and the memory of the deliveries it holds.

    Requests that arrive together share one write and one fsync. The duplicate memory (delivery id
    -> body fingerprint) is rebuilt from the two spool segments when the receiver starts.
    """

    def __init__(self, directory: str, max_bytes: int, dedupe_size: int, notify) -> None:
        self.dir = directory
        self.path = os.path.join(directory, spool.SPOOL_FILE)
        self.old_path = os.path.join(directory, spool.OLD_SPOOL_FILE)
        self.max_bytes = max_bytes
        self.notify = notify                      # Notifier: progress messages to the rulebook side
        self.memory = replay.DedupeMemory(dedupe_size)
        self.inflight: dict[str, tuple[str, asyncio.Future]] = {}
        self.next_seq = 1
        self.durable_seq = 0
        self.durable_offset = 0
        self.marked_seq = 0                       # told by the rulebook side: emitted and confirmed
        self.stats = {"stored": 0, "duplicates": 0, "conflicts": 0, "rejected": 0, "fsyncs": 0, "acks": 0}
        self._fd = -1
        self._lock_fd = -1
        self._pending: list = []
        self._writer: asyncio.Task | None = None

    def open(self, lock_timeout: float = 15.0) -> None:
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self._lock_fd = os.open(os.path.join(self.dir, spool.LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
        if fcntl is not None:
            deadline = time.monotonic() + lock_timeout   # a previous receiver may still be exiting
            while True:
                try:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("spool directory %s is used by another receiver" % self.dir) from None
                    time.sleep(0.1)
        max_seq = 0
        for seq, delivery_id, fingerprint, _end, _event in spool.read_records(self.old_path)[0]:
            self.memory.remember(delivery_id, fingerprint)
            max_seq = max(max_seq, seq)
        records, good = spool.read_records(self.path)
        for seq, delivery_id, fingerprint, _end, _event in records:
            self.memory.remember(delivery_id, fingerprint)
            max_seq = max(max_seq, seq)
        size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
        if good < size:
            logger.warning("wpcloud.hosting.webhook: cutting %d byte(s) of an unfinished record", size - good)
            with open(self.path, "r+b") as handle:
                handle.truncate(good)
                handle.flush()
                os.fsync(handle.fileno())
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        spool.sync_dir(self.dir)
        # never reuse a position the rulebook side has already recorded as emitted
        max_seq = max(max_seq, self.marked_seq)
        self.next_seq = max_seq + 1
        self.durable_seq = max_seq
        self.durable_offset = good

    def check(self, delivery_id: str, fingerprint: str):
        """(answer, pending): ``new``, or ``duplicate``/``conflict`` by the one duplicate rule;
        ``pending`` is the future of a store of that delivery still in flight (else None)."""
        inflight = self.inflight.get(delivery_id)
        if inflight is not None:
            return replay.judge(inflight[0], fingerprint), inflight[1]
        return self.memory.check(delivery_id, fingerprint), None

    async def store(self, delivery_id: str, fingerprint: str, event: dict) -> None:
        """Return once the event is on disk (fsync); raise on a storage error."""
        loop = asyncio.get_running_loop()
        seq = self.next_seq
        self.next_seq += 1
        future = loop.create_future()
        self.inflight[delivery_id] = (fingerprint, future)
        self._pending.append((seq, spool.record(seq, delivery_id, fingerprint, event), delivery_id, fingerprint, future))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_loop())
        try:
            await asyncio.shield(future)
        finally:
            self.inflight.pop(delivery_id, None)

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            batch, self._pending = self._pending, []
            data = b"".join(item[1] for item in batch)
            try:
                if self.durable_offset > self.max_bytes and self.marked_seq >= self.durable_seq:
                    await loop.run_in_executor(None, self._rotate)
                    self.notify.rotated()
                await loop.run_in_executor(None, self._append, data)
            except Exception as exc:  # pylint: disable=broad-except
                logger.error("wpcloud.hosting.webhook: spool write failed: %s", exc)
                for item in batch:
                    if not item[4].done():
                        item[4].set_exception(exc)
                continue
            self.stats["fsyncs"] += 1
            for _seq, _line, delivery_id, fingerprint, _future in batch:
                self.memory.remember(delivery_id, fingerprint)
            self.durable_seq = batch[-1][0]
            self.durable_offset += len(data)
            self.stats["stored"] += len(batch)
            self.notify.durable(self.durable_seq, self.durable_offset)
            for item in batch:
                if not item[4].done():
                    item[4].set_result(None)

    def _append(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            spool.sync(self._fd)
        except OSError:
            try:       # never leave half a record in front of the next batch
                os.ftruncate(self._fd, self.durable_offset)
            except OSError:
                pass
            raise

    def _rotate(self) -> None:
        os.close(self._fd)
        os.replace(self.path, self.old_path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        spool.sync_dir(self.dir)
        self.durable_offset = 0

    async def close(self, timeout: float = 5.0) -> None:
        """After the listener stopped: let a write in flight finish its fsync, then close the files."""
        if self._writer is not None:
            try:
                await asyncio.wait_for(self._writer, timeout)
            except Exception:  # pylint: disable=broad-except
                pass
        self.close_files()

    def close_files(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = self._lock_fd = -1
