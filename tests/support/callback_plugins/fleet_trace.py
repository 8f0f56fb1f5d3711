# Benchmark-only callback (tests/benchmarks/fleet): one JSON line per host result, with the time the
# controller processed it and the response tickets it started or saw finish. Enabled by run.py with
# ANSIBLE_CALLBACK_PLUGINS and ANSIBLE_CALLBACKS_ENABLED=fleet_trace; output file from FLEET_TRACE_FILE.
from __future__ import annotations

DOCUMENTATION = """
name: fleet_trace
type: aggregate
short_description: records task end times and response ticket IDs (fleet benchmark only)
description: One JSON line per host result in the file named by FLEET_TRACE_FILE.
"""

import os
import sys
import time

_SUPPORT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/support: the shared shape
if _SUPPORT not in sys.path:
    sys.path.append(_SUPPORT)

from jsonl_callback import JsonLinesCallback  # noqa: E402  pylint: disable=wrong-import-position

TERMINAL = ("success", "failure")


def _tickets(res):
    """(started, done) ticket IDs found in one result (collection modules or ansible.builtin.uri)."""
    started, done = [], []
    for item in res.get("results") or []:                         # a loop: every item's result
        if isinstance(item, dict):
            more = _tickets(item)
            started += more[0]
            done += more[1]
    if isinstance(res.get("ticket_id"), str) and res.get("ticket_id"):
        started.append(res["ticket_id"])                          # migration_preflight / migration_ready
    waited = list(res.get("tickets") or [])                        # response_ticket_wait
    if isinstance(res.get("ticket"), dict):                        # migration_preflight / migration_ready, waited
        waited.append(res["ticket"])
    for ticket in waited:
        if isinstance(ticket, dict) and ticket.get("state") in TERMINAL:
            done.append(ticket["ticket_id"])
    data = (res.get("json") or {}).get("data") if isinstance(res.get("json"), dict) else None
    if isinstance(data, dict) and data.get("response-ticket-id"):  # uri: start answer or summary poll
        if data.get("status") in TERMINAL:
            done.append(data["response-ticket-id"])
        elif "status" not in data:
            started.append(data["response-ticket-id"])
    return started, done


class CallbackModule(JsonLinesCallback):
    CALLBACK_NAME = "fleet_trace"
    OUT_ENV = "FLEET_TRACE_FILE"

    def _record(self, result, status):
        now = time.time()
        res = result.result if not callable(getattr(result, "result", None)) else result.result()
        started, done = _tickets(res if isinstance(res, dict) else {})
        self.write({"t": now, "host": result.host.get_name(), "task": result.task.get_name(),
                    "status": status, "started": started, "done": done})

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")
