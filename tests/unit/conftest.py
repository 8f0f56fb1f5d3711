# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests need no server: a test fails that opens a network connection or leaves a process running.

The client's HTTP layer is faked (tests/unit/plugins/fake_service.py); real HTTPS against the emulator
is a system test (tests/system/test_client_https.py).
"""

from __future__ import annotations

import os
import socket
import time

import pytest


def _running_children():
    """The processes this one started that still run (a server a test left behind)."""
    children = set()
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            with open("/proc/%s/stat" % pid) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[1]) == os.getpid():
            children.add(int(pid))
    return children


@pytest.fixture(autouse=True)
def no_server(monkeypatch):
    """Refuse any socket connection while a unit test runs, and fail one that leaves a process running."""
    opened = []

    def connect(sock, address, *args):
        opened.append(address)
        raise AssertionError("a unit test opened a connection to %r: unit tests need no server; fake the HTTP "
                             "layer (tests/unit/plugins/fake_service.py)" % (address,))

    before = _running_children()
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    yield opened
    assert not opened, "a unit test tried to reach a server: %r" % opened
    left = _running_children() - before
    assert not left, "a unit test left processes running (a server?): %s" % sorted(left)


class FakeTime(object):
    """time.monotonic and time.sleep of a test: a nap only moves the clock."""

    def __init__(self):
        self.now = 1000.0
        self.naps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.naps.append(seconds)
        self.now += seconds


@pytest.fixture()
def fake_time(monkeypatch):
    """Waits and retries without waiting: the collection looks its clock up at each call."""
    fake = FakeTime()
    monkeypatch.setattr(time, "monotonic", fake.monotonic)
    monkeypatch.setattr(time, "sleep", fake.sleep)
    return fake
