# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What identifies and authenticates a WP Cloud webhook delivery (standard library only).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

The one home of: the signature verification, the rules of a strong key, the one parser of configured
keys, the delivery id format and the body fingerprint. Used by the ``wpcloud.hosting.webhook_verify``
filter, by ``client_meta`` (key rules) and by the ``wpcloud.hosting.webhook`` Event-Driven Ansible
source (which loads this file by path when Ansible's collection loader is not active). Keep it free
of third-party imports and of imports from other module_utils files. Whether a delivery was seen
before (replay, duplicates, freshness) is ``replay.py``.

What the service signs (hosting platform API, section 6.3): the string
``{event}:{signature.timestamp}:{signature.salt}``, HMAC-SHA256 keyed with the client account's
``webhook_hmac_key``; the digest travels in ``signature.signature`` (lowercase hex in the public
examples; uppercase is accepted too).

What the signature does NOT cover: ``data``, ``atomic_site_id``, the top-level ``timestamp`` and
any other member of the body. A valid signature proves that the service produced *an* event of that
name with that signature timestamp and salt, not that the rest of the body is the one it sent. A
captured signature can be replayed with another body; ``replay`` accepts each signed
``(timestamp, salt)`` pair once and tells an identical redelivery (``duplicate``) from a reused
signature with another body (``conflict``) by the body fingerprint.

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
import re
from collections.abc import Iterable

# Result reasons of the signature check (``reason`` is None when the signature is valid); a replay
# check adds ``replayed`` and ``stale`` (``replay.REPLAYED``, ``replay.STALE``).
MISSING_SIGNATURE = "missing_signature"
MALFORMED = "malformed"
MISMATCH = "mismatch"

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class SignatureResult:
    """Outcome of :func:`verify_signature`. Never holds a key.

    ``valid`` (bool); ``reason`` (None when valid, else one of missing_signature, malformed,
    mismatch, replayed, stale); ``key_index`` (position of the matching key, else None);
    ``event`` (the name as sent, which is what was signed); ``event_name`` (its normalised form,
    :func:`event_name`); ``timestamp`` and ``salt`` (the signature members as signed strings);
    ``location`` (``top`` or ``data``: where the signature object was found); ``delivery_id``
    (stable id of the signed delivery, see :func:`delivery_id_for`); ``replay`` (the answer of a
    ``replay.ReplayStore`` when one judged the delivery); ``detail`` (human text).
    """

    __slots__ = ("valid", "reason", "key_index", "event", "event_name", "timestamp", "salt", "location",
                 "delivery_id", "replay", "detail")

    def __init__(self, valid=False, reason=None, key_index=None, event=None, timestamp=None,
                 salt=None, location=None, delivery_id=None, replay=None, detail=None):
        self.valid = valid
        self.reason = reason
        self.key_index = key_index
        self.event = event
        self.event_name = event_name(event)
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


def event_name(event):
    """The normalised name of an event as sent (``site-provisioned`` -> ``site_provisioned``).

    The owner's reference panel turns every hyphen of an event name into an underscore before it
    dispatches the event (Automattic/wpcloud-station, ``class-wpcloud-webhook-controller.php``), and
    the service's own list names ``on-demand-backup`` beside ``site_provisioned``: rules match on the
    normalised name. The signature is always checked over the name AS SENT (spec 6.3). None for a
    name that is not a string.
    """
    return event.replace("-", "_") if isinstance(event, str) else None


def loads_exact(raw):
    """Parse a JSON body keeping every number as its exact source text (a str)."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        raw = bytes(raw).decode("utf-8")
    return json.loads(raw, parse_int=str, parse_float=str, parse_constant=str)


# The delivery id, one format for the event source (meta.delivery_id, its spool and duplicate
# memory) and the filter (delivery_id): a prefix, then the first DELIVERY_ID_HEX_DIGITS hex digits
# (128 bits) of a SHA-256. docs/webhooks.md states the same; a unit test holds the two together.
SIGNED_ID_PREFIX = "sig-"        # + SHA-256 of "{signature.timestamp}:{signature.salt}"
UNSIGNED_ID_PREFIX = "body-"     # + SHA-256 of the raw body (only with allow_unsigned)
DELIVERY_ID_HEX_DIGITS = 32


def _digest(data):
    return hashlib.sha256(data).hexdigest()[:DELIVERY_ID_HEX_DIGITS]


def delivery_id_for(timestamp, salt):
    """Stable delivery id of a signed delivery: derived from the signed (timestamp, salt) pair, so a
    redelivery of the same signed event has the same id whatever its body."""
    return SIGNED_ID_PREFIX + _digest(("%s:%s" % (timestamp, salt)).encode("utf-8"))


def body_fingerprint(body):
    """The fingerprint of a raw body (bytes or str), which tells a redelivery of the same body from
    another body under the same delivery id."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    return _digest(bytes(body))


def unsigned_delivery_id(body):
    """Delivery id of an unsigned delivery (accepted only with allow_unsigned): its body fingerprint."""
    return UNSIGNED_ID_PREFIX + body_fingerprint(body)


_DELIVERY_ID = re.compile(r"(?:%s|%s)[0-9a-f]{%d}"
                          % (re.escape(SIGNED_ID_PREFIX), re.escape(UNSIGNED_ID_PREFIX), DELIVERY_ID_HEX_DIGITS))


def is_delivery_id(value):
    """Whether ``value`` has the delivery id format (an acknowledgement or an operator names one)."""
    return isinstance(value, str) and bool(_DELIVERY_ID.fullmatch(value))


# What makes a webhook_hmac_key strong enough: client_meta refuses to set a weaker one, and the event
# source refuses to verify with one (a short key can be guessed offline from one signed delivery).
MIN_KEY_LENGTH = 32
MIN_KEY_DISTINCT = 10
KEY_RULE = ("A webhook_hmac_key must have at least %d characters, %d of them distinct, and no surrounding "
            "spaces, as wpcloud.hosting.client_meta requires when it sets one. Generate one with: "
            "openssl rand -hex 32" % (MIN_KEY_LENGTH, MIN_KEY_DISTINCT))


def key_is_strong(key):
    """True for a key of at least MIN_KEY_LENGTH characters, MIN_KEY_DISTINCT distinct ones, no
    surrounding spaces."""
    return len(key) >= MIN_KEY_LENGTH and len(set(key)) >= MIN_KEY_DISTINCT and key == key.strip()


def weak_keys(keys):
    """Names the keys that are not strong by position (never by value), or '' when all are strong:
    ``key 2 of 3 is`` / ``keys 1, 3 of 3 are`` (to be followed by ``too weak``)."""
    weak = [str(index + 1) for index, key in enumerate(keys) if not key_is_strong(key)]
    if not weak:
        return ""
    if len(weak) == 1:
        return "key %s of %d is" % (weak[0], len(keys))
    return "keys %s of %d are" % (", ".join(weak), len(keys))


def parse_keys(value, split_commas=False):
    """The one reading of configured webhook keys: a list of str, order kept (index 0 is the first key).

    ``value``: one key (str or bytes), a list/tuple of keys, or None. With ``split_commas`` a string
    holds several keys separated by commas (the event source's ``hmac_secret`` and its environment
    variable); otherwise a string is one key (a key may contain a comma). Every entry is stripped of
    surrounding blanks (a key with them is not a valid key, see :func:`key_is_strong`); empty
    entries are dropped.
    """
    if value is None:
        return []
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, (list, tuple, Iterable)):
        value = [value]
    keys = []
    for item in value:
        if item is None:
            continue
        if isinstance(item, (bytes, bytearray)):
            item = bytes(item).decode("utf-8", "surrogateescape")
        item = str(item)
        for key in item.split(",") if split_commas else (item,):
            key = key.strip()
            if key:
                keys.append(key)
    return keys


def read_key_file(path):
    """The keys of a key file: one per line; blank lines and lines starting with ``#`` are skipped."""
    with open(path, encoding="utf-8") as handle:
        lines = [line for line in handle if not line.lstrip().startswith("#")]
    return parse_keys(lines)


def compute_signature(hmac_key, event, timestamp, salt):
    """Lowercase hex HMAC-SHA256 of ``{event}:{timestamp}:{salt}`` (what the service sends)."""
    if isinstance(hmac_key, str):
        hmac_key = hmac_key.encode("utf-8")
    return hmac.new(hmac_key, _signed_message(event, timestamp, salt), hashlib.sha256).hexdigest()


def _signed_message(event, timestamp, salt):
    return ("%s:%s:%s" % (event, timestamp, salt)).encode("utf-8")


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
    signature_object = payload.get("signature")
    if isinstance(signature_object, dict):
        return signature_object, "top"
    data = payload.get("data")
    if isinstance(data, dict) and isinstance(data.get("signature"), dict):
        return data["signature"], "data"
    return None, None


def exact_payload(raw, parsed):
    """What to pass to :func:`verify_signature` for a body already parsed with ``json.loads``: the
    parsed body when it holds exactly the texts that were signed (an ASCII body whose event and
    signature members are strings, which both parsers read alike), else the raw body, which
    :func:`verify_signature` parses again keeping numbers as their exact text."""
    if isinstance(parsed, dict) and isinstance(raw, (bytes, bytearray)) and raw.isascii():
        signature_object, _location = find_signature(parsed)
        if (signature_object is not None and isinstance(parsed.get("event"), str)
                and all(isinstance(signature_object.get(name), str) for name in ("timestamp", "salt", "signature"))):
            return parsed
    return raw


def verify_signature(payload, hmac_keys):
    """Verify one webhook delivery.

    ``payload``: the raw body (bytes or str; preferred, exact) or an already-parsed dict.
    ``hmac_keys``: one key or a list of active keys (rotation window), read by :func:`parse_keys`.
    Whether the delivery was seen before is ``replay.ReplayStore.admit()``.

    Returns a :class:`SignatureResult`; raises ValueError only when no key is given.
    """
    keys = [key.encode("utf-8", "surrogateescape") for key in parse_keys(hmac_keys)]
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
        result.event_name = event_name(event)

    signature_object, location = find_signature(payload)
    if signature_object is None:
        result.reason = MISSING_SIGNATURE
        result.detail = "no signature object at the top level or inside data"
        return result
    result.location = location

    if not isinstance(event, str) or not event:
        result.reason = MALFORMED
        result.detail = "event is missing or not a string"
        return result
    try:
        timestamp = _member_text(signature_object.get("timestamp"), "timestamp")
        salt = _member_text(signature_object.get("salt"), "salt")
        digest = _member_text(signature_object.get("signature"), "signature")
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

    message = _signed_message(event, timestamp, salt)
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
    result.valid = True
    return result
