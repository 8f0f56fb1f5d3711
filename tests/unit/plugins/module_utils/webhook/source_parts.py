# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the unit tests of the event source's parts share: signed bodies, the documented delivery id, a
receiver driven with aiohttp's mocked requests, spools written by hand and a stand-in rule engine."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import time
from unittest import mock

from aiohttp import streams
from aiohttp.test_utils import make_mocked_request

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.acking_emitter import AckingEmitter
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.receiver import Receiver
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.spool_writer import SpoolWriter


KEY = "unit-source-key-0123456789abcdef0123"
OLD_KEY = "unit-source-old-key-fedcba9876543210"
TS = "29848839199040411"


def signed(event="site_provisioned", key=KEY, ts=TS, salt="5a1t" * 8, site=7, data=None):
    digest = hmac.new(key.encode(), ("%s:%s:%s" % (event, ts, salt)).encode(), hashlib.sha256).hexdigest()
    return json.dumps({"event": event, "timestamp": 1751333700, "atomic_site_id": site,
                       "data": [] if data is None else data,
                       "signature": {"signature": digest, "timestamp": ts, "salt": salt}}).encode()


def documented_id(ts, salt):
    return "sig-" + hashlib.sha256(("%s:%s" % (ts, salt)).encode()).hexdigest()[:32]


class Notify:
    """Stands in for the pipe to the rulebook side."""

    def __init__(self):
        self.durable_at = None
        self.rotations = 0

    def durable(self, seq, offset):
        self.durable_at = (seq, offset)

    def rotated(self):
        self.rotations += 1


def make_receiver(tmp_path, keys=(KEY, OLD_KEY), **args):
    spool = SpoolWriter(str(tmp_path / "spool"), 1 << 20, 1000, Notify())
    spool.open()
    receiver = Receiver(dict({"port": 1}, **args), spool, list(keys))
    receiver.app()
    return receiver


def request(body=b"", content_type="application/json", headers=None, path="/hooks/wpcloud"):
    hdrs = {"Content-Length": str(len(body))}
    if content_type is not None:
        hdrs["Content-Type"] = content_type
    hdrs.update(headers or {})
    payload = streams.StreamReader(mock.Mock(), 2 ** 16, loop=asyncio.get_running_loop())
    payload.feed_data(body)
    payload.feed_eof()
    return make_mocked_request("POST", path, headers=hdrs, payload=payload,
                               match_info={"endpoint": path.lstrip("/")}, client_max_size=1 << 20)


async def deliver(receiver, *args, **kwargs):
    response = await receiver.deliver(request(*args, **kwargs))
    return response.status, response.text.strip()


def run(coro):
    return asyncio.run(coro)


def ids(count):
    return ["sig-%032x" % n for n in range(1, count + 1)]


def write_spool(directory, delivery_ids, start=1):
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "spool.log", "ab") as handle:
        for offset, delivery_id in enumerate(delivery_ids):
            event = {"payload": {"n": start + offset}, "meta": {"delivery_id": delivery_id}}
            handle.write(spool.record(start + offset, delivery_id, "fp", event))
    return os.path.getsize(directory / "spool.log")


def acking(directory, timeout=60.0, window=32, attempts=5, url=None):
    emitter = AckingEmitter(str(directory), timeout, window, attempts, url)
    emitter.journal_interval = 0.01
    emitter.read_mark()
    emitter.recover()
    return emitter


class ManualClock:
    """The emitter's clock in tests whose point is a deadline: it moves only when the test says, so
    whether an acknowledgement beats ack_timeout does not depend on how loaded the machine is."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds
        return False                     # so that ``until(lambda: clock.advance(dt) or ...)`` reads well


def manual_clock(emitter):
    emitter.clock = ManualClock()
    return emitter.clock


def stored_and_acking(directory, count, **options):
    """``count`` events stored in ``directory`` and an AckingEmitter (``acking`` options) told they are
    durable: (their delivery ids, the emitter)."""
    names = ids(count)
    size = write_spool(directory, names)
    emitter = acking(directory, **options)
    emitter.durable(count, size)
    return names, emitter


class Rulebook:
    """The rule engine's side of the queue, for the emitter tests: takes events as they come."""

    def __init__(self, emitter):
        self.emitter = emitter
        self.queue = asyncio.Queue()
        self.events = []
        self.task = None

    async def __aenter__(self):
        self.task = asyncio.ensure_future(self.emitter.run(self.queue))
        return self

    async def __aexit__(self, *exc):
        self.task.cancel()
        await self.emitter.stop()

    async def take(self, count, timeout=5):
        for dummy in range(count):
            self.events.append(await asyncio.wait_for(self.queue.get(), timeout))
        return self.events[-count:]

    async def nothing_more(self, wait=0.15):
        await asyncio.sleep(wait)
        assert self.queue.empty(), [e["meta"]["delivery_id"] for e in self.queue._queue]  # pylint: disable=protected-access

    async def ack(self, *delivery_ids):
        """Acknowledge (as the webhook_ack module does) and wait until the emitter has read it."""
        for delivery_id in delivery_ids:
            spool.acknowledge(self.emitter.dir, delivery_id, "file")
        path = os.path.join(self.emitter.dir, "processing.log")
        await until(lambda: self.emitter.journal_offset >= os.path.getsize(path))
        await asyncio.sleep(0.05)


async def until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


ACK_TOKEN = "unit-ack-token-0123456789abcdef0123456789"


async def post_ack(receiver, body, token=ACK_TOKEN, length=None):
    payload = streams.StreamReader(mock.Mock(), 2 ** 16, loop=asyncio.get_running_loop())
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    payload.feed_data(data)
    payload.feed_eof()
    headers = {"Content-Length": str(len(data) if length is None else length), "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    response = await receiver.acknowledge(make_mocked_request("POST", "/_wpcloud/ack", headers=headers,
                                                              payload=payload))
    return response.status, response.text.strip()


def write_named_spool(directory, names):
    """A spool of one event per name; returns (delivery ids, size)."""
    directory.mkdir(parents=True, exist_ok=True)
    delivery_ids = ids(len(names))
    with open(directory / "spool.log", "ab") as handle:
        for seq, (delivery_id, name) in enumerate(zip(delivery_ids, names), 1):
            event = {"payload": {"event": name, "data": []}, "meta": {"delivery_id": delivery_id}}
            handle.write(spool.record(seq, delivery_id, "fp", event))
    return delivery_ids, os.path.getsize(directory / "spool.log")
