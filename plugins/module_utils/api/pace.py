# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The client-wide gate every request of a task passes: an optional ceiling on requests per second
(``rate_limit``), the pause after a 429 that holds every worker of the client, and the load the task put on
the service (its result's ``api_load``).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import collections
import threading
import time


class Pace(object):
    """The client-wide gate every request passes: at most ``rate`` requests a second, spaced evenly
    (0: no ceiling), and no request while a 429's pause lasts. Thread-safe; one per client."""

    def __init__(self, rate=0, clock=None, sleep=None):
        self.rate = float(rate or 0)
        self.clock, self.sleep = clock or time.monotonic, sleep or time.sleep
        if sleep is not None and clock is None:
            # A sleep that does not really sleep (tests): the gate's clock moves only with it.
            self._skipped = 0.0
            self.clock = lambda: self._skipped
            self.sleep = self._skip_and(sleep)
        self._next = 0.0              # the earliest moment the next request may go
        self._paused_until = 0.0
        self._lock = threading.Lock()
        self.waited = 0.0             # seconds requests spent at the gate (ceiling and pauses)
        self.pauses = 0               # 429s that paused the whole client
        # The load the task put on the service (its result's api_load): every request sent, retries too,
        # and the most sent within any 1 s.
        self.sent = 0
        self.peak = 0
        self._window = collections.deque()

    def _skip_and(self, sleep):
        def skip(seconds):
            self._skipped += seconds
            sleep(seconds)
        return skip

    def pause(self, seconds):
        """A 429: every worker of the client waits ``seconds`` from now."""
        with self._lock:
            self.pauses += 1
            self._paused_until = max(self._paused_until, self.clock() + max(0.0, seconds))

    def _count(self, when):
        """One request goes at ``when`` (under the lock; ``when`` never decreases)."""
        self.sent += 1
        self._window.append(when)
        while self._window[0] <= when - 1.0:
            self._window.popleft()
        self.peak = max(self.peak, len(self._window))

    def admit(self):
        """Block until this request may go (its slot under the ceiling, after any pause)."""
        while True:
            with self._lock:
                now = self.clock()
                paused = self._paused_until - now
                if paused > 0:
                    self.waited += paused
                else:
                    start = max(now, self._next) if self.rate > 0 else now
                    if self.rate > 0:
                        self._next = start + 1.0 / self.rate
                    wait = start - now
                    self.waited += wait
                    self._count(start)
            if paused > 0:
                # Wait the pause out, then take a slot like everyone else (another 429 may extend it).
                self.sleep(paused)
                continue
            if wait > 0:
                self.sleep(wait)
            return
