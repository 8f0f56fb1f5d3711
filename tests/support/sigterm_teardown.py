"""A pytest hook that makes SIGTERM end a test session the way Ctrl-C does: the running test stops and
every fixture tears down what it started. Without it SIGTERM kills pytest outright, and what the fixtures
started in sessions of their own (emulators, source hosts' sshd and database, ansible-rulebook) outlives
an interrupted `make test` (which stops its lanes with SIGTERM). Each suite's conftest imports the hook."""

import signal


def _interrupt(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)     # a second SIGTERM ends the process at once
    raise KeyboardInterrupt("SIGTERM")


def pytest_configure(config):  # pylint: disable=unused-argument
    signal.signal(signal.SIGTERM, _interrupt)
