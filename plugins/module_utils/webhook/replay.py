# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Whether a WP Cloud webhook delivery was seen before: duplicates, replays, freshness (standard library only).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Shared by the ``wpcloud.hosting.webhook_verify`` filter and the ``wpcloud.hosting.webhook`` event
source (which loads this file by path when Ansible's collection loader is not active). Keep it free
of third-party imports and of imports from other module_utils files; the ids and fingerprints it
compares come from ``signature``.

- :func:`judge` is the one duplicate rule and :class:`DedupeMemory` the one bounded memory of
  accepted deliveries (the source keys it by delivery id, the filter's store by the signed
  ``(timestamp, salt)`` pair).
- :class:`FreshnessWindow` refuses signature timestamps older than what was seen ``max_age``
  seconds ago.
- :class:`ReplayStore` is both, persisted in a file shared by processes (the filter's
  ``replay_file``); :meth:`ReplayStore.admit` folds its answer into a signature result.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict, deque

try:
    import fcntl
    HAS_FCNTL = True
except ImportError:  # pragma: no cover - non-POSIX controller
    fcntl = None
    HAS_FCNTL = False

# Answers of DedupeMemory.check() / ReplayStore.check()
NEW = "new"
DUPLICATE = "duplicate"
CONFLICT = "conflict"
STALE = "stale"           # also the result reason of a stale signature
# Result reason of a signature accepted before (the answer says duplicate or conflict)
REPLAYED = "replayed"

_DIGITS = re.compile(r"^[0-9]{1,40}$")
_UNSEEN = object()


def judge(known_fingerprint, fingerprint):
    """The one duplicate rule, for a delivery id (or signed pair) seen before: ``conflict`` when both
    body fingerprints are known and differ (a reused signature with another body), else
    ``duplicate`` (the service's retry of the same body)."""
    if known_fingerprint is not None and fingerprint is not None and known_fingerprint != fingerprint:
        return CONFLICT
    return DUPLICATE


class DedupeMemory:
    """The accepted deliveries: key -> body fingerprint (or None), at most ``max_entries``, the
    oldest forgotten first. A forgotten key would be accepted again: size it above peak rate x
    ``max_age`` and use a :class:`FreshnessWindow` for what is older."""

    __slots__ = ("max_entries", "_entries")

    def __init__(self, max_entries):
        if int(max_entries) < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = int(max_entries)
        self._entries = OrderedDict()

    def __len__(self):
        return len(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def items(self):
        """(key, fingerprint), oldest first."""
        return self._entries.items()

    def check(self, key, fingerprint=None):
        """``new`` for a key never remembered (or forgotten), else :func:`judge`'s answer."""
        known = self._entries.get(key, _UNSEEN)
        if known is _UNSEEN:
            return NEW
        return judge(known, fingerprint)

    def remember(self, key, fingerprint=None):
        entries = self._entries
        entries[key] = fingerprint
        entries.move_to_end(key)
        if len(entries) > self.max_entries:
            entries.popitem(last=False)

    def clear(self):
        self._entries.clear()


class FreshnessWindow:
    """Reject signature timestamps older than what the receiver saw ``max_age`` seconds ago.

    The unit of ``signature.timestamp`` is not documented (17 digits in the examples: neither Unix
    seconds nor milliseconds), so it is never compared with the receiver's clock. Instead the
    window works on the time the receiver FIRST SAW timestamps: a new timestamp is stale when it is
    lower than the highest timestamp already seen at least ``max_age`` seconds ago. This holds for
    any unit as long as the service's timestamps grow with time. Non-numeric timestamps are not
    checked (documented: freshness applies to digit strings only).
    """

    def __init__(self, max_age, clock=time.time):
        self.max_age = float(max_age)
        self.clock = clock
        self._granularity = max(1.0, self.max_age / 256.0)
        self._checkpoints = deque()  # (seen_time, highest timestamp seen up to then)
        self._highest = None
        self._threshold = None       # highest timestamp seen >= max_age seconds ago

    def _advance(self, now):
        limit = now - self.max_age
        while self._checkpoints and self._checkpoints[0][0] <= limit:
            self._threshold = self._checkpoints.popleft()[1]

    def is_stale(self, timestamp, now=None):
        if not isinstance(timestamp, str) or not _DIGITS.match(timestamp):
            return False
        now = self.clock() if now is None else now
        self._advance(now)
        return self._threshold is not None and int(timestamp) < self._threshold

    def observe(self, timestamp, now=None):
        if not isinstance(timestamp, str) or not _DIGITS.match(timestamp):
            return
        now = self.clock() if now is None else now
        value = int(timestamp)
        if self._highest is None or value > self._highest:
            self._highest = value
        if self._checkpoints and now - self._checkpoints[-1][0] < self._granularity:
            last_time, last_value = self._checkpoints[-1]
            self._checkpoints[-1] = (last_time, max(last_value, self._highest))
        else:
            self._checkpoints.append((now, self._highest))
        self._advance(now)


class ReplayStore:
    """Accept each signed ``(timestamp, salt)`` pair once; bounded memory, optional file.

    ``max_entries`` bounds the :class:`DedupeMemory` (oldest pairs are forgotten first).
    ``max_age`` (seconds, optional) enables the :class:`FreshnessWindow`.
    ``path`` (optional) persists pairs in an append-only file (one tab-separated line per pair:
    first-seen time, timestamp, salt, body fingerprint; never a key), reloaded before every check,
    compacted when it grows past twice ``max_entries``; access is serialised with ``flock`` so
    several processes may share it.

    :meth:`check` answers ``new`` (and remembers the pair), ``duplicate`` (seen before with the same
    or no fingerprint), ``conflict`` (seen before with another body fingerprint) or ``stale``.
    """

    def __init__(self, max_entries=100000, max_age=None, path=None, clock=time.time):
        self.memory = DedupeMemory(max_entries)
        self.max_entries = self.memory.max_entries
        self.max_age = max_age
        self.clock = clock
        self.path = path
        self.freshness = FreshnessWindow(max_age, clock) if max_age else None
        self._seen = {}      # pair -> first-seen time, for the file's compaction
        self._lock = threading.Lock()
        self._lines = 0
        if path:
            self._load()

    def __len__(self):
        return len(self.memory)

    def __contains__(self, pair):
        return tuple(pair) in self.memory

    # -- persistence -------------------------------------------------------------------------
    @staticmethod
    def _line(seen, timestamp, salt, fingerprint):
        for text in (timestamp, salt, fingerprint or ""):
            if "\t" in text or "\n" in text:
                raise ValueError("tab or newline in a replay-store field")
        return "%.3f\t%s\t%s\t%s\n" % (seen, timestamp, salt, fingerprint or "")

    def _read_file(self):
        try:
            with open(self.path, "r", encoding="utf-8", errors="replace") as handle:
                content = handle.read()
        except FileNotFoundError:
            return
        # the file holds every remembered pair: rebuild the memory from it
        self.memory.clear()
        self._seen = {}
        if self.freshness is not None:
            self.freshness = FreshnessWindow(self.max_age, self.clock)
        self._lines = 0
        for line in content.split("\n"):
            parts = line.split("\t")
            if len(parts) != 4:
                continue  # torn last line after a crash, or garbage
            try:
                seen = float(parts[0])
            except ValueError:
                continue
            self._lines += 1
            self._remember((parts[1], parts[2]), parts[3] or None, seen)

    def _load(self):
        with self._file_lock():
            self._read_file()

    def _file_lock(self):
        return _FileLock(self.path + ".lock") if (self.path and HAS_FCNTL) else _NullLock()

    def _append(self, line):
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        fd = os.open(self.path, flags, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        self._lines += 1
        if self._lines > 2 * self.max_entries:
            self._compact()

    def _compact(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            for pair, fingerprint in self.memory.items():
                handle.write(self._line(self._seen[pair], pair[0], pair[1], fingerprint))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self._seen = {pair: self._seen[pair] for pair, _fingerprint in self.memory.items()}
        self._lines = len(self.memory)

    # -- memory ------------------------------------------------------------------------------
    def _remember(self, pair, fingerprint, seen):
        self.memory.remember(pair, fingerprint)
        self._seen[pair] = seen
        if self.freshness is not None:
            self.freshness.observe(pair[0], seen)

    def add(self, timestamp, salt, fingerprint=None, seen=None):
        """Remember a pair without checking it (e.g. when rebuilding from another log)."""
        seen = self.clock() if seen is None else seen
        self._remember((timestamp, salt), fingerprint, seen)

    def check(self, timestamp, salt, fingerprint=None):
        """Classify a verified pair and remember it when new (see the class docstring)."""
        pair = (timestamp, salt)
        with self._lock, self._file_lock():
            if self.path:
                self._read_file()  # another process may have added pairs
            answer = self.memory.check(pair, fingerprint)
            if answer != NEW:
                return answer
            now = self.clock()
            if self.freshness is not None and self.freshness.is_stale(timestamp, now):
                return STALE
            self._remember(pair, fingerprint, now)
            if self.path:
                self._append(self._line(now, timestamp, salt, fingerprint))
            return NEW

    def admit(self, result, fingerprint=None):
        """Check a valid signature result (``signature.SignatureResult``) against the store.

        Sets ``result.replay`` to the answer; a replayed (duplicate or conflict) or stale delivery
        becomes invalid with reason ``replayed`` or ``stale``. An invalid result is left alone and
        never enters the store. Returns the result.
        """
        if not result.valid:
            return result
        answer = self.check(result.timestamp, result.salt, fingerprint)
        result.replay = answer
        if answer == STALE:
            result.valid = False
            result.reason = STALE
            result.detail = "signature timestamp is older than the freshness window"
        elif answer != NEW:
            result.valid = False
            result.reason = REPLAYED
            result.detail = "this signature (timestamp, salt) was accepted before"
        return result


class _NullLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _FileLock:
    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        try:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
        return False
