"""Shared fixtures for the system tests: one emulator per session, reset before each test that asks."""

import itertools
import os
import sys
from pathlib import Path

import pytest

EMULATOR_DIR = Path(__file__).resolve().parents[1] / "emulator"
SUPPORT_DIR = Path(__file__).resolve().parents[1] / "support"     # webhook_harness
for _path in (EMULATOR_DIR, SUPPORT_DIR):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from launcher import start_emulator  # noqa: E402

# Short 202 window keeps the suite fast; the lifecycle is the same as with the default 1.0 s.
ACCEPT_DELAY = os.environ.get("WPCLOUD_EMULATOR_ACCEPT_DELAY", "0.3")
_site_ids = itertools.count(20001)


@pytest.fixture(scope="session")
def emulator(tmp_path_factory):
    """One emulator process for the whole session (python: the interpreter running pytest)."""
    emu = start_emulator(tmp_path_factory.mktemp("emulator"), extra_args=["--accept-delay", ACCEPT_DELAY])
    yield emu
    emu.stop()


@pytest.fixture
def emu(emulator):
    """The session emulator after a reset: seed sites, no migrations, metadata, faults or log."""
    emulator.reset()
    return emulator


@pytest.fixture
def new_site(emu):
    """Factory for a fresh site with an ID never used before in this session."""
    def make(allow_migration=True, provisioned=False):
        site_id = next(_site_ids)
        emu.add_site(site_id, "site%d.example" % site_id, allow_migration=allow_migration,
                     provisioned=provisioned)
        return site_id
    return make
