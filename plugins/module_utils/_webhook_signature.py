# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one verification of WP Cloud webhook signatures (standard library only).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Used by the ``wpcloud.hosting.webhook_verify`` filter and by the ``wpcloud.hosting.webhook``
Event-Driven Ansible source (which loads this file by path when Ansible's collection loader is not
active). Keep it free of third-party imports.

What the service signs (hosting platform API, section 6.3): the string
``{event}:{signature.timestamp}:{signature.salt}``, HMAC-SHA256 keyed with the client account's
``webhook_hmac_key``; the digest travels in ``signature.signature`` (lowercase hex in the public
examples; uppercase is accepted too).

What the signature does NOT cover: ``data``, ``atomic_site_id``, the top-level ``timestamp`` and
any other member of the body. A valid signature proves that the service produced *an* event of that
name with that signature timestamp and salt, not that the rest of the body is the one it sent. A
captured signature can be replayed with another body; :class:`ReplayStore` accepts each signed
``(timestamp, salt)`` pair once and can tell an identical redelivery (``duplicate``) from a reused
signature with another body (``conflict``).

Precision: the three signature members are strings. When ``signature.timestamp`` arrives as a JSON
number (the public malware-scan example puts a 17-digit number inside ``data.signature``) its exact
text is what was signed. Pass the RAW body (bytes or str): it is parsed with ``parse_int=str`` and
``parse_float=str`` so no digit is lost. An already-parsed mapping works when its numbers are
Python ``int`` (exact); a ``float`` timestamp has already lost digits and is reported as
``malformed``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
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

# Result reasons (``reason`` is None when the signature is valid)
MISSING_SIGNATURE = "missing_signature"
MALFORMED = "malformed"
MISMATCH = "mismatch"
REPLAYED = "replayed"
STALE = "stale"

# ReplayStore.check() answers
NEW = "new"
DUPLICATE = "duplicate"
CONFLICT = "conflict"

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_DIGITS = re.compile(r"^[0-9]{1,40}$")


class SignatureResult:
    """Outcome of :func:`verify_signature`. Never holds a key.

    ``valid`` (bool); ``reason`` (None when valid, else one of missing_signature, malformed,
    mismatch, replayed, stale); ``key_index`` (position of the matching key, else None);
    ``event``; ``timestamp`` and ``salt`` (the signature members as signed strings);
    ``location`` (``top`` or ``data``: where the signature object was found); ``delivery_id``
    (stable id of the signed delivery, see :func:`delivery_id_for`); ``replay`` (the
    :class:`ReplayStore` answer when a store was used); ``detail`` (human text).
    """

    __slots__ = ("valid", "reason", "key_index", "event", "timestamp", "salt", "location",
                 "delivery_id", "replay", "detail")

    def __init__(self, valid=False, reason=None, key_index=None, event=None, timestamp=None,
                 salt=None, location=None, delivery_id=None, replay=None, detail=None):
        self.valid = valid
        self.reason = reason
        self.key_index = key_index
        self.event = event
        self.timestamp = timestamp
        self.salt = salt
        self.location = location
        self.delivery_id = delivery_id
        self.replay = replay
        self.detail = detail

    def __bool__(self):
        return bool(self.valid)

    def to_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return "SignatureResult(valid=%r, reason=%r, key_index=%r, event=%r, location=%r)" % (
            self.valid, self.reason, self.key_index, self.event, self.location)


def loads_exact(raw):
    """Parse a JSON body keeping every number as its exact source text (a str)."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        raw = bytes(raw).decode("utf-8")
    return json.loads(raw, parse_int=str, parse_float=str, parse_constant=str)


def delivery_id_for(timestamp, salt):
    """Stable delivery id of a signed delivery: derived from the signed (timestamp, salt) pair."""
    text = "%s:%s" % (timestamp, salt)
    return "sig-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# What makes a webhook_hmac_key strong enough: client_meta refuses to set a weaker one, and the event
# source refuses to verify with one (a short key can be guessed offline from one signed delivery).
MIN_KEY_LENGTH = 32
MIN_KEY_DISTINCT = 10


def key_is_strong(key):
    """True for a key of at least MIN_KEY_LENGTH characters, MIN_KEY_DISTINCT distinct ones, no
    surrounding spaces."""
    return len(key) >= MIN_KEY_LENGTH and len(set(key)) >= MIN_KEY_DISTINCT and key == key.strip()


def normalize_keys(hmac_keys):
    """Return the active keys as a list of bytes (order kept: index 0 is the first key).

    Accepts one key (str or bytes) or a list/tuple of keys. Empty entries are dropped. A single
    string is NOT split on commas here (a key may contain one); callers that offer a
    comma-separated form split it themselves.
    """
    if hmac_keys is None:
        return []
    if isinstance(hmac_keys, (str, bytes, bytearray)):
        hmac_keys = [hmac_keys]
    out = []
    for item in hmac_keys:
        if item is None:
            continue
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif isinstance(item, (bytes, bytearray)):
            item = bytes(item)
        else:
            raise TypeError("webhook HMAC keys must be strings (got %s)" % type(item).__name__)
        if item:
            out.append(item)
    return out


def compute_signature(hmac_key, event, timestamp, salt):
    """Lowercase hex HMAC-SHA256 of ``{event}:{timestamp}:{salt}`` (what the service sends)."""
    if isinstance(hmac_key, str):
        hmac_key = hmac_key.encode("utf-8")
    message = ("%s:%s:%s" % (event, timestamp, salt)).encode("utf-8")
    return hmac.new(hmac_key, message, hashlib.sha256).hexdigest()


def _member_text(value, name):
    """Signature member as the exact signed text, or raise ValueError."""
    if isinstance(value, bool) or value is None:
        raise ValueError("signature.%s is not a string" % name)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        raise ValueError("signature.%s was parsed as a float and has lost digits; "
                         "verify the raw body instead" % name)
    raise ValueError("signature.%s is not a string" % name)


def find_signature(payload):
    """Return ``(signature_object, location)``: top level first, then inside ``data``."""
    sig = payload.get("signature")
    if isinstance(sig, dict):
        return sig, "top"
    data = payload.get("data")
    if isinstance(data, dict) and isinstance(data.get("signature"), dict):
        return data["signature"], "data"
    return None, None


def verify_signature(payload, hmac_keys, replay_store=None, fingerprint=None):
    """Verify one webhook delivery.

    ``payload``: the raw body (bytes or str; preferred, exact) or an already-parsed dict.
    ``hmac_keys``: one key or a list of active keys (rotation window).
    ``replay_store``: optional :class:`ReplayStore`; a valid pair seen before gives
    ``reason=replayed`` (``replay`` says duplicate or conflict), a stale one ``reason=stale``.
    ``fingerprint``: optional text identifying the body (e.g. its SHA-256) for the store.

    Returns a :class:`SignatureResult`; raises ValueError only when no key is given.
    """
    keys = normalize_keys(hmac_keys)
    if not keys:
        raise ValueError("no webhook HMAC key given")

    result = SignatureResult()
    if isinstance(payload, (bytes, bytearray, memoryview, str)):
        try:
            payload = loads_exact(payload)
        except (ValueError, UnicodeDecodeError) as exc:
            result.reason = MALFORMED
            result.detail = "body is not JSON: %s" % exc.__class__.__name__
            return result
    if not isinstance(payload, dict):
        result.reason = MALFORMED
        result.detail = "body is not a JSON object"
        return result

    event = payload.get("event")
    if isinstance(event, str):
        result.event = event

    sig, location = find_signature(payload)
    if sig is None:
        result.reason = MISSING_SIGNATURE
        result.detail = "no signature object at the top level or inside data"
        return result
    result.location = location

    if not isinstance(event, str) or not event:
        result.reason = MALFORMED
        result.detail = "event is missing or not a string"
        return result
    try:
        timestamp = _member_text(sig.get("timestamp"), "timestamp")
        salt = _member_text(sig.get("salt"), "salt")
        digest = _member_text(sig.get("signature"), "signature")
    except ValueError as exc:
        result.reason = MALFORMED
        result.detail = str(exc)
        return result
    result.timestamp = timestamp
    result.salt = salt
    result.delivery_id = delivery_id_for(timestamp, salt)

    digest = digest.strip().lower()
    if not _HEX64.match(digest):
        result.reason = MALFORMED
        result.detail = "signature.signature is not 64 hex characters"
        return result

    message = ("%s:%s:%s" % (event, timestamp, salt)).encode("utf-8")
    matched = None
    # Compare with every key, without an early exit, so timing does not tell which one matched.
    for index, key in enumerate(keys):
        expected = hmac.new(key, message, hashlib.sha256).hexdigest()
        if hmac.compare_digest(expected, digest) and matched is None:
            matched = index
    if matched is None:
        result.reason = MISMATCH
        result.detail = "signature does not match any of the %d active key(s)" % len(keys)
        return result
    result.key_index = matched

    if replay_store is not None:
        answer = replay_store.check(timestamp, salt, fingerprint)
        result.replay = answer
        if answer == STALE:
            result.reason = STALE
            result.detail = "signature timestamp is older than the freshness window"
            return result
        if answer in (DUPLICATE, CONFLICT):
            result.reason = REPLAYED
            result.detail = "this signature (timestamp, salt) was accepted before"
            return result

    result.valid = True
    return result


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

    ``max_entries`` bounds memory (oldest pairs are forgotten first; a forgotten pair would be
    accepted again, so pair it with ``max_age`` and size it above peak rate x ``max_age``).
    ``max_age`` (seconds, optional) enables the :class:`FreshnessWindow`.
    ``path`` (optional) persists pairs in an append-only file (one tab-separated line per pair,
    never a key), reloaded on start, compacted when it grows past twice ``max_entries``; access
    is serialised with ``flock`` so several processes may share it.

    :meth:`check` answers ``new`` (and remembers the pair), ``duplicate`` (seen before with the same
    or no fingerprint), ``conflict`` (seen before with another body fingerprint) or ``stale``.
    """

    def __init__(self, max_entries=100000, max_age=None, path=None, clock=time.time):
        if int(max_entries) < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = int(max_entries)
        self.clock = clock
        self.path = path
        self.freshness = FreshnessWindow(max_age, clock) if max_age else None
        self._pairs = OrderedDict()
        self._lock = threading.Lock()
        self._lines = 0
        if path:
            self._load()

    def __len__(self):
        return len(self._pairs)

    def __contains__(self, pair):
        return tuple(pair) in self._pairs

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
        self._pairs = OrderedDict()
        if self.freshness is not None:
            self.freshness = FreshnessWindow(self.freshness.max_age, self.clock)
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
            for (timestamp, salt), (fingerprint, seen) in self._pairs.items():
                handle.write(self._line(seen, timestamp, salt, fingerprint))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self._lines = len(self._pairs)

    # -- memory ------------------------------------------------------------------------------
    def _remember(self, pair, fingerprint, seen):
        self._pairs[pair] = (fingerprint, seen)
        self._pairs.move_to_end(pair)
        while len(self._pairs) > self.max_entries:
            self._pairs.popitem(last=False)
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
            known = self._pairs.get(pair)
            if known is not None:
                if fingerprint is not None and known[0] is not None and known[0] != fingerprint:
                    return CONFLICT
                return DUPLICATE
            now = self.clock()
            if self.freshness is not None and self.freshness.is_stale(timestamp, now):
                return STALE
            self._remember(pair, fingerprint, now)
            if self.path:
                self._append(self._line(now, timestamp, salt, fingerprint))
            return NEW


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
