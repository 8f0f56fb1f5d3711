"""The emulator's pytest fixtures, shared by the suites that start it (tests/system, tests/support/tests).

A conftest puts this directory on ``sys.path`` and imports the fixtures by name; pytest then sees
them as that conftest's own::

    from emulator_fixtures import emu, emulator, new_site  # noqa: F401

``emulator`` is one process per pytest session (started by the interpreter running pytest);
``emu`` is that emulator reset to its seed before the test; ``new_site`` adds sites with IDs never
used before in the session.
"""

import itertools
import os

import pytest

from launcher import start_emulator

# Short 202 window keeps the suites fast; the lifecycle is the same as with the default 1.0 s.
ACCEPT_DELAY = os.environ.get("WPCLOUD_EMULATOR_ACCEPT_DELAY", "0.3")
_site_ids = itertools.count(20001)


@pytest.fixture(scope="session")
def emulator(tmp_path_factory):
    """One emulator process for the whole session (python: the interpreter running pytest)."""
    emu = start_emulator(tmp_path_factory.mktemp("emulator"), extra_args=["--accept-delay", ACCEPT_DELAY])
    yield emu
    emu.stop()


@pytest.fixture
def emu(emulator):  # pylint: disable=redefined-outer-name
    """The session emulator after a reset: seed sites, no migrations, metadata, faults or log."""
    emulator.reset()
    return emulator


@pytest.fixture
def new_site(emu):  # pylint: disable=redefined-outer-name
    """Factory for a fresh site with an ID never used before in this session."""
    def make(allow_migration=True, provisioned=False):
        site_id = next(_site_ids)
        emu.add_site(site_id, "site%d.example" % site_id, allow_migration=allow_migration,
                     provisioned=provisioned)
        return site_id
    return make
