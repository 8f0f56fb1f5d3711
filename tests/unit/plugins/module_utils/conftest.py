# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real emulator over HTTPS for the module_utils tests (no mocks of the transport)."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest

EMULATOR_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "emulator"))


_EMULATOR = {}


def pytest_sessionstart(session):
    """Start the emulator in the pytest process itself: ansible-test runs each test in a forked child,
    where a session fixture would start (and never stop) one emulator per test."""
    sys.path.insert(0, EMULATOR_DIR)
    try:
        from launcher import start_emulator  # pylint: disable=import-error
    finally:
        sys.path.remove(EMULATOR_DIR)
    workdir = tempfile.mkdtemp(prefix="wpcloud-unit-emulator-")
    _EMULATOR["emu"] = start_emulator(workdir, extra_args=["--accept-delay", "0.3"])
    _EMULATOR["workdir"] = workdir


def pytest_sessionfinish(session, exitstatus):
    emu = _EMULATOR.pop("emu", None)
    if emu is not None:
        emu.stop()
        shutil.rmtree(_EMULATOR.pop("workdir"), ignore_errors=True)


@pytest.fixture()
def emulator():
    # pytest_sessionstart of a conftest below the rootdir is not called when pytest is pointed at a
    # parent folder: start it on first use then (stopped at exit).
    if "emu" not in _EMULATOR:
        pytest_sessionstart(None)
        atexit.register(pytest_sessionfinish, None, 0)
    return _EMULATOR["emu"]


@pytest.fixture()
def emu(emulator):
    emulator.set_faults([])
    yield emulator
    emulator.set_faults([])


@pytest.fixture()
def new_site(emu):
    counter = [0]

    def make(allow=True):
        counter[0] += 1
        site_id = 700000 + (os.getpid() % 1000) * 100 + counter[0] + int.from_bytes(os.urandom(2), "big") * 1000
        emu.add_site(site_id, "unit-%d.example" % site_id, allow_migration=allow)
        return site_id
    return make
