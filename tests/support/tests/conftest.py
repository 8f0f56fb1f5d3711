"""Fixtures of the test doubles' own tests: the emulator's (tests/support/emulator/emulator_fixtures.py).

Puts the doubles' directories on ``sys.path``, so that the tests import ``launcher``, ``server``,
``source_host`` ... by name, as the suites that use the doubles do.
"""

import sys
from pathlib import Path

SUPPORT_DIR = Path(__file__).resolve().parents[1]
EMULATOR_DIR = SUPPORT_DIR / "emulator"
SOURCE_HOST_DIR = SUPPORT_DIR / "source_host"
for _path in (EMULATOR_DIR, SOURCE_HOST_DIR, SUPPORT_DIR):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from emulator_fixtures import emu, emulator, new_site  # noqa: E402,F401 pylint: disable=unused-import,wrong-import-position
from cpu_per_test import pytest_runtest_protocol, pytest_terminal_summary  # noqa: E402,F401 pylint: disable=unused-import,wrong-import-position
from sigterm_teardown import pytest_configure  # noqa: E402,F401 pylint: disable=unused-import,wrong-import-position
