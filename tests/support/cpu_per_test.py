"""A pytest plugin: the CPU each test costs (its own process and the processes it ran and waited for:
ansible-playbook, ansible-rulebook's JVM, sshd ...), where ``--durations`` shows only the wall time.

The suites are CPU-bound side by side on a small machine (docs/contributing.md, "What `make test` costs"), so
the CPU, not the wall time, says which test to make cheaper. With ``TEST_CPU_LOG`` set (make system, make support
and each part of make reliability set it), every process of the session (each pytest-xdist worker) appends
``nodeid<TAB>cpu<TAB>wall`` per test to that file, and the session's end prints the files and the tests that cost
most. A process started by a
session fixture and reaped at its teardown counts in the test whose teardown reaped it.

A suite's conftest imports its two hooks (as sigterm_teardown's).
"""

import os
import resource
import time

import pytest

LOG = "TEST_CPU_LOG"
SHOWN = 15


def _cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    path = os.environ.get(LOG)
    cpu, wall = _cpu(), time.monotonic()
    yield
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("%s\t%.2f\t%.2f\n" % (item.nodeid, _cpu() - cpu, time.monotonic() - wall))


def read_log(path):
    """[(nodeid, cpu, wall)] of a log, in the order written."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                rows.append((parts[0], float(parts[1]), float(parts[2])))
    return rows


def summary_lines(rows, shown=SHOWN):
    """The report: CPU-s of every test together, then the files and the tests that cost most."""
    by_file = {}
    for nodeid, cpu, wall in rows:
        name = nodeid.split("::")[0]
        total = by_file.setdefault(name, [0.0, 0.0, 0])
        total[0] += cpu
        total[1] += wall
        total[2] += 1
    lines = ["CPU-s of the tests (their own and their children's): %.0f in %d tests" % (sum(r[1] for r in rows), len(rows)),
             "files, most CPU first (CPU-s, wall s, tests):"]
    for name, (cpu, wall, count) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:shown]:
        lines.append("  %7.1f %7.1f %4d  %s" % (cpu, wall, count, name))
    lines.append("tests, most CPU first (CPU-s, wall s):")
    for nodeid, cpu, wall in sorted(rows, key=lambda r: -r[1])[:shown]:
        lines.append("  %7.1f %7.1f  %s" % (cpu, wall, nodeid))
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # pylint: disable=unused-argument
    path = os.environ.get(LOG)
    if not path or hasattr(config, "workerinput") or not os.path.exists(path):
        return
    rows = read_log(path)
    if rows:
        terminalreporter.section("CPU per test")
        for line in summary_lines(rows):
            terminalreporter.write_line(line)
