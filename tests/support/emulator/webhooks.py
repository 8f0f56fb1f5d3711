# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Outgoing webhook deliveries of the emulator (standard library only).

What the service does (hosting platform API 2.5, 6.1, 6.3) and what we chose where it is silent:

* Each event is POSTed as JSON (``Content-Type: application/json``) to the client's ``webhook_url``
  (read at delivery time; HTTPS only, verified against ``ca_path`` when given).
* Body: ``event``, ``timestamp`` (int, Unix seconds), ``atomic_site_id`` (when given), ``data``
  (``[]`` when not given) and, when the client's ``webhook_hmac_key`` is set at delivery time, the
  ``signature`` object ``{"signature": <lowercase hex HMAC-SHA256 of "{event}:{ts}:{salt}">,
  "timestamp": <17-digit string>, "salt": <random hex>}``.
  ``signature_in_data=True`` puts that object inside ``data`` instead, with the timestamp as a JSON
  NUMBER, as in the public malware-scan example.
* The signature timestamp is ``time_ns() // 100`` (17 digits today, grows with time; its real unit
  is undocumented). The salt is 20 random bytes in hex.
* Any answer other than exactly 200 (or a connection error) schedules up to two more attempts,
  ``retry_delay`` seconds apart (the real delay is undocumented). A retry resends the SAME body
  (same signature), so receivers can recognise it (our choice; the service does not say).
* Every attempt is recorded in ``deliveries``: ``id`` (per sender), ``client``, ``event``,
  ``attempt`` (1..3), ``status`` (int or None), ``error``, ``signed``, ``signature_location``,
  ``time``, ``body`` (the exact bytes as text). Never the key.
* ``event_names``: ``as-listed`` (default) sends the names as spec 6.2 lists them
  (``site_provisioned``); ``hyphens`` sends every underscore as a hyphen (``site-provisioned``), a
  reading the owner's panel allows for (its receiver turns hyphens back into underscores). The
  signature is computed over the name as sent.
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import itertools
import json
import logging
import secrets
import ssl
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

log = logging.getLogger("emulator.webhooks")

MAX_ATTEMPTS = 3          # the first delivery plus up to two more after a non-200
EVENT_NAMES = ("as-listed", "hyphens")
_TS_PLACEHOLDER = "__wpcloud_signature_timestamp__"


def signature_timestamp() -> str:
    """17-digit signature timestamp (string)."""
    return "%017d" % (time.time_ns() // 100)


def build_body(event, atomic_site_id=None, data=None, hmac_key=None, signature_in_data=False,
               now=None, ts=None, salt=None):
    """Return the exact JSON body (bytes) the service would send."""
    payload = {"event": event, "timestamp": int(now if now is not None else time.time())}
    if atomic_site_id is not None:
        payload["atomic_site_id"] = int(atomic_site_id)
    if data is None:
        data = {} if (hmac_key and signature_in_data) else []
    payload["data"] = data
    if not hmac_key:
        return json.dumps(payload, separators=(",", ":")).encode("utf-8")
    ts = ts or signature_timestamp()
    salt = salt or secrets.token_hex(20)
    key = hmac_key.encode("utf-8") if isinstance(hmac_key, str) else hmac_key
    digest = hmac.new(key, ("%s:%s:%s" % (event, ts, salt)).encode("utf-8"), hashlib.sha256).hexdigest()
    if signature_in_data:
        if not isinstance(data, dict):
            raise ValueError("signature_in_data needs data to be an object")
        data = dict(data)
        data["signature"] = {"signature": digest, "timestamp": _TS_PLACEHOLDER, "salt": salt}
        payload["data"] = data
        text = json.dumps(payload, separators=(",", ":"))
        # the timestamp as a JSON number with all of its digits
        return text.replace('"%s"' % _TS_PLACEHOLDER, ts).encode("utf-8")
    payload["signature"] = {"signature": digest, "timestamp": ts, "salt": salt}
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


class WebhookSender:
    """Sends events for one emulator instance. Non-blocking: emit() queues and returns."""

    def __init__(self, get_client_meta, ca_path=None, retry_delay=1.0, timeout=10.0, event_names="as-listed"):
        # get_client_meta(client, key) -> str or None, read at delivery time
        if event_names not in EVENT_NAMES:
            raise ValueError("event_names must be one of %s" % ", ".join(EVENT_NAMES))
        self.get_client_meta = get_client_meta
        self.event_names = event_names
        self.ca_path = ca_path
        self.retry_delay = float(retry_delay)
        self.timeout = float(timeout)
        self.deliveries = []  # what was sent: event, attempt, status (never the key)
        self._ids = itertools.count(1)
        self._heap = []       # (due, order, job)
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._busy = 0
        self._closing = False
        self._ssl = ssl.create_default_context(cafile=ca_path) if ca_path else ssl.create_default_context()
        self._thread = threading.Thread(target=self._run, name="webhook-sender", daemon=True)
        self._thread.start()

    # -- public interface -------------------------------------------------------------------
    def emit(self, client, event, atomic_site_id=None, data=None, signature_in_data=False):
        """Queue one event for the client's webhook_url; no-op when no URL is set.

        ``signature_in_data``: put the signature object inside ``data`` with a numeric
        timestamp (the public malware-scan example). Returns the delivery id (int).
        """
        job = {"id": next(self._ids), "client": client, "event": event,
               "atomic_site_id": atomic_site_id, "data": data,
               "signature_in_data": bool(signature_in_data), "attempt": 0, "body": None, "url": None}
        with self._cond:
            if self._closing:
                raise RuntimeError("sender is closed")
            heapq.heappush(self._heap, (time.monotonic(), next(self._order), job))
            self._cond.notify()
        return job["id"]

    def wait_idle(self, timeout=30.0):
        """Block until nothing is queued, scheduled for retry or in flight. Returns True if idle."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._heap or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
        return True

    def close(self, timeout=10.0):
        """Stop the delivery thread after the queue drains (bounded)."""
        self.wait_idle(timeout)
        with self._cond:
            self._closing = True
            self._heap.clear()
            self._cond.notify_all()
        self._thread.join(timeout)

    # -- delivery thread --------------------------------------------------------------------
    def _run(self):
        while True:
            with self._cond:
                while True:
                    if self._closing:
                        return
                    if self._heap and self._heap[0][0] <= time.monotonic():
                        job = heapq.heappop(self._heap)[2]
                        self._busy += 1
                        break
                    wait = (self._heap[0][0] - time.monotonic()) if self._heap else None
                    self._cond.wait(wait)
            try:
                self._attempt(job)
            except Exception:  # pylint: disable=broad-except
                log.exception("webhook delivery crashed")
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _record(self, job, status, error=None):
        entry = {"id": job["id"], "client": job["client"], "event": job["event"],
                 "attempt": job["attempt"], "status": status, "error": error,
                 "signed": job.get("signed", False), "signature_location": job.get("location"),
                 "time": time.time(), "body": job["body"].decode("utf-8") if job["body"] else None}
        with self._cond:
            self.deliveries.append(entry)

    def _attempt(self, job):
        if job["attempt"] == 0:
            url = self.get_client_meta(job["client"], "webhook_url")
            if not url:
                log.info("no webhook_url for %s: %s not sent", job["client"], job["event"])
                return
            if urlsplit(url).scheme != "https":
                job["attempt"] = 1
                self._record(job, None, "webhook_url is not https")
                return
            key = self.get_client_meta(job["client"], "webhook_hmac_key")
            job["url"] = url
            if self.event_names == "hyphens":
                job["event"] = job["event"].replace("_", "-")     # recorded and signed as sent
            job["signed"] = bool(key)
            job["location"] = ("data" if job["signature_in_data"] else "top") if key else None
            job["body"] = build_body(job["event"], job["atomic_site_id"], job["data"], key or None,
                                     job["signature_in_data"])
            key = None
        job["attempt"] += 1
        status, error = self._post(job["url"], job["body"])
        self._record(job, status, error)
        if status != 200 and job["attempt"] < MAX_ATTEMPTS:
            with self._cond:
                heapq.heappush(self._heap, (time.monotonic() + self.retry_delay, next(self._order), job))
                self._cond.notify()

    def _post(self, url, body):
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "User-Agent": "wpcloud-emulator-webhooks/1"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._ssl) as response:
                response.read()
                return response.status, None
        except urllib.error.HTTPError as exc:
            exc.read()
            return exc.code, None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            return None, "%s: %s" % (exc.__class__.__name__, getattr(exc, "reason", exc))
