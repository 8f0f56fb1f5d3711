"""Fixtures of the reliability suite and the summary table printed at the end of the run.

Run: .venv/bin/python -m pytest tests/reliability -q      (see docs/reliability.md)
"""

from __future__ import annotations

import json
import os
import time

import pytest

import reliability_support as rs
import sigterm_teardown
import summary_table
# tests/support is on sys.path via reliability_support
from cpu_per_test import pytest_runtest_protocol, pytest_terminal_summary as cpu_summary  # noqa: F401 pylint: disable=unused-import
from launcher import start_emulator  # tests/support/emulator is on sys.path via reliability_support

ARTIFACT_ROOTS = []   # every directory whose files the final scan reads


# ------------------------------------------------------------------------------------ make soak

def pytest_configure(config):
    sigterm_teardown.pytest_configure(config)
    config.addinivalue_line("markers", "soak: a long experiment, run by make soak (pytest --soak)")


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", default=False,
                     help="also run the long experiments marked soak (make soak; docs/reliability.md)")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``soak`` (long experiments whose contract deterministic tests pin in make test) run
    only with --soak: left out, not skipped, so the summary counts only what ran."""
    if config.getoption("--soak"):
        return
    soak = [item for item in items if item.get_closest_marker("soak")]
    if soak:
        config.hook.pytest_deselected(items=soak)
        items[:] = [item for item in items if not item.get_closest_marker("soak")]


@pytest.fixture(scope="session")
def canaries():
    return rs.Canaries.make()


@pytest.fixture(scope="session")
def rel_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("reliability")
    ARTIFACT_ROOTS.append(base / "out")
    (base / "out").mkdir()
    (base / "inputs").mkdir()       # files holding secrets on purpose (vars files, keys): never scanned
    (base / "no-ansible.cfg").write_text("")
    return base


def start_canary_emulator(workdir, canaries, accept_delay="0.3", state=True, extra=()):
    workdir.mkdir(parents=True, exist_ok=True)
    ARTIFACT_ROOTS.append(workdir)
    args = ["--api-key", canaries.api_key, "--accept-delay", accept_delay,
            "--log-file", str(workdir / "emulator.log"), "--log-level", "DEBUG"] + list(extra)
    emu = start_emulator(workdir, state_file=str(workdir / "emulator-state.json") if state else None,
                         extra_args=args)
    assert emu.api_key == canaries.api_key, "the emulator did not take --api-key"
    return emu


@pytest.fixture(scope="session")
def emulator(rel_dir, canaries):
    emu = start_canary_emulator(rel_dir / "emulator", canaries)
    yield emu
    emu.stop()


@pytest.fixture
def emu(emulator):
    emulator.reset()
    return emulator


# ------------------------------------------------------------------------------------ summary table

_started = time.monotonic()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = terminalreporter.stats
    count = {k: len([r for r in stats.get(k, []) if getattr(r, "when", "call") == "call"])
             for k in ("passed", "failed", "xfailed", "xpassed", "skipped", "error")}
    count["skipped"] = len(stats.get("skipped", []))
    count["error"] = len(stats.get("error", []))
    wall = time.monotonic() - _started
    cpu_summary(terminalreporter, exitstatus, config)
    rows = summary_table.rows(count, rs.SUMMARY, wall)
    terminalreporter.write_sep("=", "reliability summary")
    for line in summary_table.lines(rows):
        terminalreporter.write_line(line)
    out = os.environ.get("RELIABILITY_SUMMARY_JSON")
    if out:
        with open(out, "w") as handle:
            json.dump({"counts": count, "figures": rs.SUMMARY, "rows": rows, "wall": wall}, handle, indent=1)
