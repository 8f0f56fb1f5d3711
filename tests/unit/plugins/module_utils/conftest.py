# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real emulator over HTTPS for the module_utils tests (no mocks of the transport)."""

from __future__ import annotations

import os
import sys

import pytest

EMULATOR_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "emulator"))


@pytest.fixture(scope="session")
def emulator(tmp_path_factory):
    sys.path.insert(0, EMULATOR_DIR)
    try:
        from launcher import start_emulator  # pylint: disable=import-error
    finally:
        sys.path.remove(EMULATOR_DIR)
    emu = start_emulator(tmp_path_factory.mktemp("emulator"), extra_args=["--accept-delay", "0.3"])
    yield emu
    emu.stop()


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
