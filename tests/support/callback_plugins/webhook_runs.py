# Test-only callback of the webhook crash tests (tests/support/webhook_harness.py, runs_callback): loaded
# into every playbook the rulebook runs, it slows each task (WEBHOOK_RUNS_SLOW seconds: "slow actions")
# and logs, per playbook run, its start and the ok of its webhook_ack task, with the delivery id and
# attempt, as a text line to WEBHOOK_RUNS_LOG (webhook_harness.read_runs reads them).
from __future__ import annotations

DOCUMENTATION = """
name: webhook_runs
type: aggregate
short_description: each playbook run's start and acknowledgement, slowed tasks (webhook crash tests only)
description: A line per run start and per webhook_ack ok in the file named by WEBHOOK_RUNS_LOG.
"""

import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "webhook_runs"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.delivery = "?"
        self.attempt = "?"

    def _log(self, what):
        with open(os.environ["WEBHOOK_RUNS_LOG"], "a") as handle:
            handle.write("%.3f %s %s %s %d\n" % (time.time(), what, self.delivery, self.attempt, os.getpid()))

    def v2_playbook_on_play_start(self, play):
        if self.delivery != "?":
            return          # the next play of the same playbook: one run, logged once
        event = (play.get_variable_manager().extra_vars.get("ansible_eda") or {}).get("event") or {}
        meta = event.get("meta") or {}
        self.delivery, self.attempt = meta.get("delivery_id", "?"), meta.get("attempt", "?")
        self._log("start")

    def v2_playbook_on_task_start(self, task, is_conditional):
        time.sleep(float(os.environ.get("WEBHOOK_RUNS_SLOW", "0")))

    def v2_runner_on_ok(self, result):
        if result._task.action in ("wpcloud.hosting.webhook_ack", "webhook_ack"):
            # WEBHOOK_RUNS_ACK_PAUSE holds the line back after the acknowledgement is written: the window a
            # kill can land in, made wide enough for a test to land one there on purpose
            time.sleep(float(os.environ.get("WEBHOOK_RUNS_ACK_PAUSE", "0")))
            self._log("acked")
