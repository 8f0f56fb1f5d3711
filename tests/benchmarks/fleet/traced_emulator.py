#!/usr/bin/env python
"""The emulator (tests/support/emulator/server.py, unchanged) plus a record of when each ticket completes.

Benchmark-only. The emulator keeps a ticket's creation time (in its ID) but not the moment its work
ended, which is what the "completion -> return" delay of the fleet benchmark is measured from. This
wrapper wraps ``Service._work`` (the worker thread that runs a preflight or a run and then sets the
ticket's final status under the service lock) and appends one JSON line per finished ticket to
``WORKDIR/ticket-completions.jsonl``: ``{"ticket_id", "operation", "status", "completed"}`` with
``completed`` in Unix seconds (time.time(), taken right after the status was set; the only work in
between is the no-op webhook emit). It also wraps ``Service.ticket_get`` and appends one line per summary
poll to ``WORKDIR/ticket-polls.jsonl``: ``{"ticket_id", "t", "status"}`` (``t`` in Unix seconds when the
answer was made, ``status`` the ticket's status in it, or 202), from which run.py --durations counts the
polls per ticket and the moment the controller saw each end. Same arguments as server.py; started by
run.py through tests/support/emulator/launcher.py with its SERVER path pointed here.
"""

import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EMULATOR = os.path.normpath(os.path.join(HERE, "..", "..", "support", "emulator"))
sys.path.insert(0, EMULATOR)

import service  # noqa: E402  (tests/support/emulator/service.py)

_lock = threading.Lock()
_path = None


def _workdir(argv):
    for i, arg in enumerate(argv):
        if arg == "--workdir" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--workdir="):
            return arg.split("=", 1)[1]
    return os.getcwd()


_original_work = service.Service._work


def _traced_work(self, epoch, mid, generation, tid, operation, *rest):
    _original_work(self, epoch, mid, generation, tid, operation, *rest)
    done = time.time()
    ticket = self.tickets.get(tid) or {}
    line = json.dumps({"ticket_id": tid, "operation": operation, "status": ticket.get("status"),
                       "completed": done, "created": ticket.get("created")})
    with _lock, open(_path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


service.Service._work = _traced_work

_original_ticket_get = service.Service.ticket_get
_polls = None


def _traced_ticket_get(self, params, full):
    answer = _original_ticket_get(self, params, full)
    if not full:
        data = answer[2] if isinstance(answer[2], dict) else {}
        line = json.dumps({"ticket_id": self.ticket_id_of(params), "t": time.time(),
                           "status": data.get("status") if answer[0] == 200 else answer[0]})
        with _lock:
            _polls.write(line + "\n")
    return answer


service.Service.ticket_get = _traced_ticket_get

if __name__ == "__main__":
    _path = os.path.join(os.path.abspath(_workdir(sys.argv[1:])), "ticket-completions.jsonl")
    _polls = open(os.path.join(os.path.abspath(_workdir(sys.argv[1:])), "ticket-polls.jsonl"), "a",
                  encoding="utf-8", buffering=1)
    import server  # noqa: E402  (tests/support/emulator/server.py; its own "import service" gets the patched module)
    sys.exit(server.main(sys.argv[1:]))
