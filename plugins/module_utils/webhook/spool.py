# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The webhook spool directory: its files, their formats, and the processing journal (standard library only).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Shared by the ``wpcloud.hosting.webhook`` event source (which loads this file by path when Ansible's
collection loader is not active; keep it free of third-party imports and of imports from other
module_utils files), its operator commands, and the ``wpcloud.hosting.webhook_ack`` module.

Files of a spool directory (one receiver per directory):

``spool.log``, ``spool.log.1``
    One record per stored delivery, appended and synced before the 200:
    ``seq<TAB>delivery_id<TAB>body fingerprint<TAB>event JSON<LF>``. ``.1`` is the previous segment.
``emitted.log``
    The mark: one number per line, every record up to it is done (handed to the rulebook when
    acknowledgements are off; acknowledged, or given up, when they are on).
``processing.log``
    The processing journal, in order, one line per fact: ``VERB DELIVERY_ID SEQ ATTEMPT TIME VIA``
    (``-`` where a field does not apply). Verbs: ``emit`` (handed to the rulebook, attempt N),
    ``ack`` (processed: an action acknowledged it), ``dead`` (given up after the last attempt),
    ``redo`` (the operator asked for it to be processed again). The last ``ack``/``dead``/``redo``
    of a delivery is its state. Written by the rulebook side (emit, dead), the receiver (ack over
    HTTPS), the ``webhook_ack`` module (ack into the file) and the operator command (redo, ack),
    always appended under an ``flock`` of the file.
``dead.log``
    A copy of the record of each delivery given up, so that it outlives the spool's rotation.
``lock``
    Held by the one receiver of the directory.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timedelta, timezone

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None

SPOOL_FILE = "spool.log"
OLD_SPOOL_FILE = SPOOL_FILE + ".1"
EMITTED_FILE = "emitted.log"
JOURNAL_FILE = "processing.log"
DEAD_FILE = "dead.log"
LOCK_FILE = "lock"

EMIT = "emit"
ACK = "ack"
DEAD = "dead"
REDO = "redo"
VERBS = (EMIT, ACK, DEAD, REDO)
STATE_VERBS = (ACK, DEAD, REDO)

# States of a stored delivery, as the operator command lists them.
STORED = "stored"          # not handed to the rulebook yet
EMITTED = "emitted"        # handed over, waiting for its acknowledgement
DONE = "done"              # acknowledged (or, with acknowledgements off, handed over)
DEAD_STATE = "dead"        # given up after the last attempt; the operator decides
REPLAY = "replay"          # the operator asked for it again; not processed yet
STATES = (STORED, EMITTED, DONE, DEAD_STATE, REPLAY)
PENDING_STATES = (STORED, EMITTED, REPLAY)

# A token of the journal: what a delivery id may hold so that a line splits into its fields.
_TOKEN = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


# ------------------------------------------------------------------------------------ records
def record(seq: int, delivery_id: str, fingerprint: str, event: dict) -> bytes:
    """One spool record (the JSON never holds a raw newline or tab: json.dumps escapes them)."""
    return b"%d\t%s\t%s\t%s\n" % (seq, delivery_id.encode(), fingerprint.encode(),
                                  json.dumps(event, separators=(",", ":")).encode("utf-8"))


def read_records(path: str, start: int = 0, end: int | None = None, limit: int | None = None,
                 window: int | None = None):
    """Complete records of a spool file: (seq, delivery_id, fingerprint, end_offset, event bytes).

    ``window`` bounds the bytes read (a record larger than it is read whole on its own). A record
    without its newline (a write cut by a crash) ends the list; the offset returned is where the
    complete records end.
    """
    size = -1 if end is None else max(0, end - start)
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            data = handle.read(size if window is None or 0 <= size <= window else window)
            if window is not None and b"\n" not in data and len(data) == window:
                data += handle.readline()
    except FileNotFoundError:
        return [], start
    records = []
    pos = 0
    while limit is None or len(records) < limit:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        parts = data[pos:nl].split(b"\t", 3)
        if len(parts) != 4 or not parts[0].isdigit():
            break
        records.append((int(parts[0]), parts[1].decode(), parts[2].decode(), start + nl + 1, parts[3]))
        pos = nl + 1
    return records, start + pos


def find_records(directory: str, delivery_ids) -> dict:
    """{delivery_id: (seq, event bytes)} for the ids found in the spool segments or dead.log."""
    wanted = set(delivery_ids)
    found = {}
    for name in (DEAD_FILE, OLD_SPOOL_FILE, SPOOL_FILE):     # the newest copy wins
        if not wanted:
            break
        for seq, delivery_id, _fp, _end, event in read_records(os.path.join(directory, name))[0]:
            if delivery_id in wanted:
                found[delivery_id] = (seq, event)
    return found


def sync(fd: int) -> None:
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # pragma: no cover
        os.fsync(fd)


def sync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_mark(directory: str) -> int:
    """The mark in emitted.log (the part after the last newline may be torn and is ignored)."""
    try:
        with open(os.path.join(directory, EMITTED_FILE), "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return 0
    value = 0
    for line in data.split(b"\n")[:-1]:
        if line.isdigit():
            value = max(value, int(line))
    return value


def append_mark(fd: int, seq: int) -> None:
    """Append the mark ``seq`` to emitted.log (``fd`` open for reading and appending) and sync it:
    a line of its own, whole or not at all. A write a full disk cut short (it stores what fits in
    the file's last block) is taken back; left there, its digits would run into the next mark's
    ("12" without its newline, then "13": 1213, a mark past events never processed, skipped at the
    next start).
    A torn tail that could not be taken back, or that a crash left, is ended first."""
    size = os.fstat(fd).st_size
    line = b"%d\n" % seq
    try:
        _write_all(fd, line if _ends_a_line(fd) else b"\n" + line)
        sync(fd)
    except OSError:
        try:
            os.ftruncate(fd, size)
        except OSError:
            pass
        raise


# ------------------------------------------------------------------------------------ the journal
def journal_line(verb: str, delivery_id: str, seq=None, attempt=None, when=None, via=None) -> bytes:
    if verb not in VERBS or not _TOKEN.fullmatch(delivery_id or ""):
        raise ValueError("not a journal entry: %r %r" % (verb, delivery_id))
    if via is not None and not _TOKEN.fullmatch(via):
        raise ValueError("not a journal field: %r" % via)
    return b"%s %s %s %s %.3f %s\n" % (
        verb.encode(), delivery_id.encode(), b"-" if seq is None else b"%d" % int(seq),
        b"-" if attempt is None else b"%d" % int(attempt), time.time() if when is None else when,
        b"-" if via is None else via.encode())


def parse_journal(data: bytes):
    """Entries of complete lines: (verb, delivery_id, seq or None, attempt or None, time, via or None).
    Lines that do not parse (a write torn by a power loss) are skipped."""
    entries = []
    for line in data.split(b"\n"):
        parts = line.split(b" ")
        if len(parts) != 6:
            continue
        try:
            verb, delivery_id, via = parts[0].decode(), parts[1].decode(), parts[5].decode()
            seq = None if parts[2] == b"-" else int(parts[2])
            attempt = None if parts[3] == b"-" else int(parts[3])
            when = float(parts[4])
        except (UnicodeDecodeError, ValueError):
            continue
        if verb in VERBS and _TOKEN.fullmatch(delivery_id):
            entries.append((verb, delivery_id, seq, attempt, when, None if via == "-" else via))
    return entries


def read_journal(path: str, offset: int = 0):
    """(entries of the complete lines from ``offset``, offset after the last complete line).
    A file shorter than ``offset`` (rewritten) is read from its start."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < offset:
                offset = 0
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], 0
    end = data.rfind(b"\n") + 1
    return parse_journal(data[:end]), offset + end


class _Locked:
    """The journal opened for appending under an exclusive flock, on the file the path names now
    (a compaction replaces the file: an appender that locked the old one opens it again)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> int:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                now = os.stat(self.path)
            except FileNotFoundError:
                now = None
            held = os.fstat(fd)
            if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
                self.fd = fd
                return fd
            os.close(fd)

    def __exit__(self, *exc) -> None:
        os.close(self.fd)         # releases the lock
        self.fd = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _ends_a_line(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


def append_journal(path: str, lines: bytes, durable: bool = True) -> None:
    """Append whole lines under the file's lock (after a torn tail, on a line of their own)."""
    with _Locked(path) as fd:
        _write_all(fd, lines if _ends_a_line(fd) else b"\n" + lines)
        if durable:
            sync(fd)


def _last_state(fd: int, delivery_id: str, block: int = 1 << 16):
    """The state verb of the latest ack/dead/redo line of ``delivery_id``, read backwards from the
    end; None when an ``emit`` of it comes first (handed over again since) or there is none."""
    needle = (" %s " % delivery_id).encode()
    end = os.fstat(fd).st_size
    carry = b""                   # the start of the block after this one: a line cut by the block boundary
    while end > 0:
        start = max(0, end - block)
        data = os.pread(fd, end - start, start) + carry
        carry = b""
        if start > 0:
            first = data.find(b"\n")
            if first < 0:         # all of it is part of one line: read on
                carry, end = data, start
                continue
            carry, data = data[:first + 1], data[first + 1:]
        for line in reversed(data.split(b"\n")):
            if needle in line:
                entry = parse_journal(line)
                if entry:
                    verb = entry[0][0]
                    return None if verb == EMIT else verb
        end = start
    return None


def acknowledge(directory: str, delivery_id: str, via: str, check_mode: bool = False) -> bool:
    """Record that ``delivery_id`` was processed; False when its latest state already is ``ack``."""
    path = os.path.join(directory, JOURNAL_FILE)
    if check_mode:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return True
        try:
            return _last_state(fd, delivery_id) != ACK
        finally:
            os.close(fd)
    line = journal_line(ACK, delivery_id, via=via)
    with _Locked(path) as fd:
        if _last_state(fd, delivery_id) == ACK:
            return False
        _write_all(fd, line if _ends_a_line(fd) else b"\n" + line)
        sync(fd)
    return True


def rewrite_journal(path: str, rewrite) -> int:
    """Replace the journal under its lock, so that no appender's line is lost: ``rewrite(data)``
    gets the whole file and returns ``(head, tail)``; the new file is head + tail. Returns
    ``len(head)``, where the tail (for example the lines the caller has not read yet) starts."""
    with _Locked(path) as fd:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0) if size else b""
        head, tail = rewrite(data)
        if tail and not tail.endswith(b"\n"):
            tail = tail[:tail.rfind(b"\n") + 1]
        tmp = path + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(head + tail)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        sync_dir(os.path.dirname(path) or ".")
        return len(head)


class DeliveryState:
    """What the journal says about one delivery: its state verb (``ack``, ``dead``, ``redo`` or
    None), the number of the last attempt and when it was handed over."""

    __slots__ = ("verb", "attempt", "emitted_at", "seq")

    def __init__(self) -> None:
        self.verb = None
        self.attempt = 0
        self.emitted_at = None
        self.seq = None


def fold_journal(entries, states: dict | None = None) -> dict:
    """{delivery_id: DeliveryState} after ``entries`` (a ``redo`` starts the attempts again)."""
    states = {} if states is None else states
    for verb, delivery_id, seq, attempt, when, _via in entries:
        state = states.get(delivery_id)
        if state is None:
            state = states[delivery_id] = DeliveryState()
        if seq is not None:
            state.seq = seq
        if verb == EMIT:
            state.attempt = attempt or state.attempt + 1
            state.emitted_at = when
        else:
            state.verb = verb
            if verb == REDO:
                state.attempt = 0
    return states


# ------------------------------------------------------------------------------------ listing
def parse_time(text: str, now: float | None = None) -> float:
    """An operator's time: ISO 8601 (``2026-11-23``, ``2026-11-23T10:00``, ``...Z``, ``...+02:00``;
    UTC when no offset is given) or an age (``90s``, ``30m``, ``2h``, ``7d``: that long ago)."""
    text = (text or "").strip()
    match = re.match(r"^(\d+(?:\.\d+)?)([smhd])$", text)
    if match:
        seconds = float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
        return (time.time() if now is None else now) - seconds
    try:
        value = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise ValueError("%r is neither an ISO 8601 time (2026-11-23T10:00:00Z) nor an age (30m, 2h, 7d)"
                         % text) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def _received_epoch(meta: dict):
    text = meta.get("received_at")
    if not isinstance(text, str):
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None


def list_deliveries(directory: str) -> list:
    """Every delivery the directory holds (both spool segments and dead.log), oldest first, each a
    dict: seq, delivery_id, state (see STATES), attempts, received_at, last_emitted_at, event,
    atomic_site_id, raw (the event bytes)."""
    mark = read_mark(directory)
    states = fold_journal(read_journal(os.path.join(directory, JOURNAL_FILE))[0])
    seen = {}
    for name in (DEAD_FILE, OLD_SPOOL_FILE, SPOOL_FILE):
        for seq, delivery_id, _fp, _end, raw in read_records(os.path.join(directory, name))[0]:
            seen[delivery_id] = (seq, raw)
    out = []
    for delivery_id, (seq, raw) in sorted(seen.items(), key=lambda item: item[1][0]):
        try:
            event = json.loads(raw)
        except ValueError:
            event = {}
        meta = event.get("meta") or {}
        payload = event.get("payload") or {}
        state = states.get(delivery_id) or DeliveryState()
        if state.verb == ACK:
            name = DONE
        elif state.verb == DEAD:
            name = DEAD_STATE
        elif state.verb == REDO:
            name = REPLAY
        elif seq <= mark:
            name = DONE
        else:
            name = EMITTED if state.attempt else STORED
        out.append({
            "seq": seq, "delivery_id": delivery_id, "state": name, "attempts": state.attempt,
            "received_at": meta.get("received_at"), "received_epoch": _received_epoch(meta),
            "last_emitted_at": (datetime.fromtimestamp(state.emitted_at, timezone.utc).isoformat()
                                .replace("+00:00", "Z") if state.emitted_at else None),
            "event": payload.get("event") if isinstance(payload, dict) else None,
            "atomic_site_id": payload.get("atomic_site_id") if isinstance(payload, dict) else None,
            "raw": raw,
        })
    return out


def select(deliveries: list, delivery_ids=None, since=None, until=None, states=None, events=None) -> list:
    """The deliveries that match every selector given (times are epoch seconds, ``until`` exclusive)."""
    ids = set(delivery_ids or ())
    out = []
    for item in deliveries:
        if ids and item["delivery_id"] not in ids:
            continue
        if states and item["state"] not in states:
            continue
        if events and item["event"] not in events:
            continue
        when = item["received_epoch"]
        if since is not None and (when is None or when < since):
            continue
        if until is not None and (when is None or when >= until):
            continue
        out.append(item)
    return out


def request_redo(directory: str, delivery_ids, via: str = "operator") -> None:
    """Ask the rulebook side to hand these deliveries over again (picked up while it runs, or at
    its next start); their attempts start again."""
    now = time.time()
    lines = b"".join(journal_line(REDO, d, when=now, via=via) for d in delivery_ids)
    if lines:
        append_journal(os.path.join(directory, JOURNAL_FILE), lines)


def record_acks(directory: str, delivery_ids, via: str = "operator") -> None:
    now = time.time()
    lines = b"".join(journal_line(ACK, d, when=now, via=via) for d in delivery_ids)
    if lines:
        append_journal(os.path.join(directory, JOURNAL_FILE), lines)


def age_text(seconds: float) -> str:
    return str(timedelta(seconds=int(seconds)))
