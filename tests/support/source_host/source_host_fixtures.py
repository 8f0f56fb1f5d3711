"""One source host shared by every test module of a pytest session.

Each test module imports ``source_host`` from here; pytest then sees one session-scoped fixture per
module, so the host itself is reference-counted: started by the first module that asks, stopped
(user removed, work directory purged) when the last one is torn down.

Skips when not root (the host creates a unix user); fails when root but a program is missing.
"""

import os
import tempfile
import threading

import pytest

from source_host import SourceHostError, check_prerequisites, start_source_host

_lock = threading.Lock()
_shared = {"host": None, "users": 0}


def acquire():
    with _lock:
        if _shared["host"] is None:
            if os.geteuid() != 0:
                pytest.skip("the SSH source host needs root (it creates a unix user)")
            try:
                check_prerequisites()
            except SourceHostError as exc:
                pytest.fail(str(exc))
            workdir = tempfile.mkdtemp(prefix="wpsrc-")
            _shared["host"] = start_source_host(workdir)
        _shared["users"] += 1
        return _shared["host"]


def release():
    with _lock:
        _shared["users"] -= 1
        if _shared["users"] <= 0 and _shared["host"] is not None:
            host, _shared["host"] = _shared["host"], None
            host.stop(purge=True)


@pytest.fixture(scope="session")
def source_host():
    host = acquire()
    try:
        yield host
    finally:
        release()
