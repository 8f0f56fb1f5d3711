# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pipe between the two processes of the event source, one line per message, and each end of it.

  rulebook -> receiver (the receiver's stdin): the config as one JSON line; then "M <seq>": every
      event up to seq was emitted and its mark recorded (the spool may rotate past it). EOF: stop.
  receiver -> rulebook (its stdout): "READY <seq> <offset>" (listening; the spool is durable up to
      there) or "E <JSON message>" (it could not start); then "D <seq> <offset>" (durable up to
      there) and "R" (spool.log was renamed to spool.log.1).

:class:`Notifier` writes the receiver's messages, :class:`ReceiverProcess` is the receiver seen from
the rulebook side, :func:`receiver_config` what the receiver is given.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import time
from typing import Any


MSG_READY = b"READY "     # the messages' prefixes (module docstring)
MSG_ERROR = b"E "
MSG_DURABLE = b"D "
MSG_ROTATED = b"R"
MSG_MARKED = b"M "


class Notifier:
    """Messages to the rulebook side over a non-blocking pipe.

    Only the latest durable position matters, so while the pipe is busy (the rulebook's event loop
    is running rules) positions are coalesced instead of blocking the receiver.
    """

    def __init__(self, transport) -> None:
        self.transport = transport
        self.pending: tuple[int, int] | None = None
        self.scheduled = False

    def _write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    def flush(self) -> None:
        self.scheduled = False
        if self.pending is None:
            return
        if self.transport.get_write_buffer_size() == 0:
            seq, offset = self.pending
            self.pending = None
            self._write(MSG_DURABLE + b"%d %d\n" % (seq, offset))
        else:
            self.scheduled = True
            asyncio.get_running_loop().call_later(0.002, self.flush)

    def durable(self, seq: int, offset: int) -> None:
        self.pending = (seq, offset)
        if not self.scheduled:
            self.flush()

    def rotated(self) -> None:
        if self.pending is not None:
            seq, offset = self.pending
            self.pending = None
            self._write(MSG_DURABLE + b"%d %d\n" % (seq, offset))
        self._write(MSG_ROTATED + b"\n")

    def ready(self, seq: int, offset: int) -> None:
        self._write(MSG_READY + b"%d %d\n" % (seq, offset))

    def failed(self, message: str) -> None:
        self._write(MSG_ERROR + json.dumps(message).encode() + b"\n")

    async def drain(self, timeout: float = 2.0) -> None:
        deadline = time.monotonic() + timeout
        while self.transport.get_write_buffer_size() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)


def die_with_parent() -> None:
    """Linux: get SIGKILL when the rulebook process dies (stdin EOF is the portable signal)."""
    try:
        import ctypes  # pylint: disable=import-outside-toplevel
        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))   # PR_SET_PDEATHSIG
    except (OSError, AttributeError, ImportError):
        pass


class ReceiverProcess:
    """The receiver process seen from the rulebook side: started with its config on the pipe, it
    reports durable positions and rotations to the emitter (``emitter.py``) and is told the marks.

    ``source_file``: the event source's file, which runs the receiver when given ``--receiver`` (the
    child process finds this package the same way the source did).
    """

    def __init__(self, emitter, source_file: str) -> None:
        self.emitter = emitter
        self.command = [sys.executable, source_file, "--receiver"]
        self.proc = None

    async def start(self, config: dict[str, Any], timeout: float = 60) -> None:
        """Start the child and wait until it listens; raise with its reason when it cannot."""
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 20)
        self.proc.stdin.write(json.dumps(config).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line.startswith(MSG_READY):
            detail = json.loads(line[len(MSG_ERROR):]) if line.startswith(MSG_ERROR) \
                else "exited %s" % await self.proc.wait()
            raise RuntimeError("wpcloud.hosting.webhook receiver did not start: %s" % detail)
        seq, offset = line[len(MSG_READY):].split()
        self.emitter.durable(int(seq), int(offset))

    def mark(self, seq: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.stdin.write(MSG_MARKED + b"%d\n" % seq)

    async def watch(self) -> None:
        """Follow the receiver's messages; raise when it exits."""
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError("wpcloud.hosting.webhook: the receiver process exited (%s)" % await self.proc.wait())
            if line.startswith(MSG_DURABLE):
                seq, offset = line[len(MSG_DURABLE):].split()
                self.emitter.durable(int(seq), int(offset))
            elif line.startswith(MSG_ROTATED):
                self.emitter.rotated()

    async def stop(self) -> None:
        """EOF on its stdin stops the receiver (in-flight requests finish); killed after 10 s."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        try:
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 10)
        except Exception:  # pylint: disable=broad-except
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


def receiver_config(args: dict[str, Any], keys: list[str], spool_dir: str, emitter,
                    ack_token: str | None = None) -> dict[str, Any]:
    """What the receiver process is given on its stdin (never argv or the environment: it holds the keys)."""
    child_args = {k: v for k, v in args.items() if k not in ("hmac_secret", "token", "ack_token")}
    if args.get("hmac_secret") is not None:
        child_args.pop("hmac_secret_file", None)  # explicit keys win; the file is not watched
    if args.get("token") is not None:
        child_args["token"] = str(args["token"])
    log_level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    if not isinstance(log_level, str) or log_level.startswith("Level"):
        log_level = "WARNING"
    return {"args": child_args, "keys": keys, "spool_dir": spool_dir, "marked_seq": emitter.marked_seq,
            "recovered": emitter.recovered, "log_level": log_level, "ack_token": ack_token}
