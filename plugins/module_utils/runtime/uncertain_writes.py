# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Writes whose effect is unknown, resolved by reading: never a blind repeat.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

A write whose answer was lost (a reset or a timeout after sending) or was a 5xx may or may not have
been applied (the client raises it with ``effect: unknown`` and does not repeat it). ``write_once``
then reads the state that write would have changed: when the read shows it happened, that is the
outcome; only when the read proves it did not happen is the write sent again. Each such write is
recorded for the task's result (``uncertain``), so the user sees what was in doubt and how it ended.

A read can only prove that a write did not happen once the original can no longer arrive: a request
whose answer was lost may still be applied after the client gave up on it. So a read that does not
show the write is repeated until the client's request timeout (the error's ``in_flight``: set for a
lost answer and for a gateway's 502/504) plus IN_FLIGHT_MARGIN has passed since the doubt began; only
a read made after that may lead to a repeat. A read that shows the write happened ends the doubt at
once. A 500 or 503 that the service answered itself ended its request: one read after SETTLE_SECONDS.
"""

from __future__ import annotations

import time

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import api_failure

# How many times one write may be sent in all, each repeat only after a read proved that the send
# before it did not take effect. Under 20 % faults on every request, 8 sends leave about one write
# in 400,000 unresolved.
MAX_SENDS = 8
# A pause before the first resolving read: a write whose answer timed out may still be in the service's
# hands; the read should see its outcome, not the moment before it.
SETTLE_SECONDS = 1.0
# After the client's request timeout, how much longer a lost request may still be applied (the
# service's own queueing); a repeat is sent only after a read made once both have passed.
IN_FLIGHT_MARGIN = 2.0
# The pauses between reads while the original may still arrive double from SETTLE_SECONDS up to this.
READ_PAUSE_CAP = 5.0

HAPPENED = "happened"
REPEATED = "repeated"
UNRESOLVED = "unresolved"


def write_once(operation, send, happened, uncertain, what, sleep=None, settle=SETTLE_SECONDS):
    """The outcome of one write.

    ``send()`` makes the call and returns its outcome; ``happened()`` reads the state and returns the
    same kind of outcome when the write took effect, else None. Reads raise as usual (the client
    retries them). ``uncertain`` (a list) gets one entry per write whose effect was unknown:
    ``{"write", "what", "errors", "resolved_by": "read", "outcome": happened|repeated|refused|unresolved,
    "sends"}``.
    Other errors, and an unknown effect after MAX_SENDS sends, are raised.
    """
    entry = None
    sends = 0
    while True:
        sends += 1
        try:
            outcome = send()
        except WPCloudAPIError as exc:
            if exc.effect != "unknown":
                if entry is not None:
                    entry.update(sends=sends, outcome="refused")    # a repeat the service refused
                raise
            if entry is None:
                entry = {"write": operation, "what": what, "errors": [], "resolved_by": "read"}
                uncertain.append(entry)
            entry["errors"].append(exc.message)
            entry["sends"] = sends
            # A lost answer may still be applied; a service's own 5xx answer ended its request.
            late = exc.in_flight + IN_FLIGHT_MARGIN if exc.in_flight else 0
            try:
                outcome = read_until_sure(happened, time.monotonic() + late, sleep or time.sleep, settle)
            except Exception:
                entry["outcome"] = UNRESOLVED                       # the read failed: still in doubt
                raise
            if outcome is not None:
                entry["outcome"] = HAPPENED
                return outcome
            if sends >= MAX_SENDS:
                entry["outcome"] = UNRESOLVED
                raise
            entry["outcome"] = REPEATED
            continue
        if entry is not None:
            entry["sends"] = sends
        return outcome


def read_until_sure(happened, until, sleep, settle=SETTLE_SECONDS):
    """``happened()``'s outcome as soon as a read shows the write; None only from a read made at or
    after ``until`` (time.monotonic()), when the original can no longer arrive. A read that fails after
    the client's own retries (connection, 5xx, 429) is read again while there is time left, like a
    failed poll in a wait; after ``until`` it is raised."""
    pause = settle
    while True:
        sleep(pause)
        try:
            outcome = happened()
        except WPCloudAPIError as exc:
            if not exc.retry_safe or time.monotonic() >= until:
                raise
            outcome = None
        if outcome is not None:
            return outcome
        left = until - time.monotonic()
        if left <= 0:
            return None
        pause = min(left, pause * 2, READ_PAUSE_CAP)


def module_write(operation, send, happened, what, failing, result):
    """write_once as a module makes it: its entries go into ``result["uncertain"]``, and an error that
    remains becomes the task's failure (``failing``: what was being done), entries included."""
    uncertain = []
    try:
        outcome = write_once(operation, send, happened, uncertain, what)
    except WPCloudAPIError as exc:
        failure = api_failure(exc, failing)
        failure.details["uncertain"] = uncertain
        raise failure
    if uncertain:
        result["uncertain"] = uncertain
    return outcome
