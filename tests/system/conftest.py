"""Fixtures of the system tests: the emulator's (tests/support/emulator/emulator_fixtures.py).

The test doubles live in tests/support; their directories go on ``sys.path`` here, so that the
tests import ``launcher``, ``webhooks``, ``source_host_fixtures``, ``playbooks`` ... by name.

`make system` runs the files in pytest-xdist workers, a file each at a time (--dist loadfile), in the
order collected: the longest files first (LONGEST_FIRST), so that the workers end together instead of
one starting a long file when the others are done.
"""

import sys
from pathlib import Path

SUPPORT_DIR = Path(__file__).resolve().parents[1] / "support"
EMULATOR_DIR = SUPPORT_DIR / "emulator"
SOURCE_HOST_DIR = SUPPORT_DIR / "source_host"
for _path in (EMULATOR_DIR, SOURCE_HOST_DIR, SUPPORT_DIR):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from emulator_fixtures import emu, emulator, new_site  # noqa: E402,F401 pylint: disable=unused-import,wrong-import-position
from cpu_per_test import pytest_runtest_protocol, pytest_terminal_summary  # noqa: E402,F401 pylint: disable=unused-import,wrong-import-position
from sigterm_teardown import pytest_configure  # noqa: E402,F401 pylint: disable=unused-import,wrong-import-position

# The files that take longest (wall time per file from the CPU per test report of `make test`, 2026-12-07),
# longest first; the others follow in their usual order. A new long file belongs here.
LONGEST_FIRST = ("test_role.py", "test_module_execution.py", "test_role_in_a_play.py", "test_first_hour.py",
                 "test_service_variants.py", "test_webhook_crash.py", "test_site_provisioned_rulebook.py",
                 "test_golive_variants.py", "test_examples.py", "test_webhook_ack.py", "test_getting_started.py",
                 "test_go_live.py", "test_client_https.py", "test_role_credentials.py", "test_webhook_rulebook.py",
                 "test_runner_slices.py", "test_webhook_disk_full.py")


def pytest_collection_modifyitems(config, items):  # pylint: disable=unused-argument
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))    # stable: a file's tests stay in order
