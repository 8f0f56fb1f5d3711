# -*- coding: utf-8 -*-
# Test-only callback of the reliability suite (tests/reliability): dumps every task start and every
# result, exactly as the callback layer receives it, as one JSON line to $RELIABILITY_JSON_OUT.
# ansible-core ships no JSON callback and ansible.posix is not installed; this stands in for both.
from __future__ import annotations

DOCUMENTATION = r"""
name: reliability_json
type: aggregate
short_description: JSON lines of every task start and result (tests only)
description:
  - Writes one JSON object per line to the file named by the RELIABILITY_JSON_OUT environment variable.
requirements:
  - enabled in callbacks_enabled
"""

import os
import sys
import time

_SUPPORT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/support: the shared shape
if _SUPPORT not in sys.path:
    sys.path.append(_SUPPORT)

from jsonl_callback import JsonLinesCallback  # noqa: E402  pylint: disable=wrong-import-position


class CallbackModule(JsonLinesCallback):
    CALLBACK_NAME = "reliability_json"
    OUT_ENV = "RELIABILITY_JSON_OUT"

    def _write(self, record):
        record["time"] = time.time()
        self.write(record)

    def _task(self, task):
        return {"name": task.get_name(), "uuid": task._uuid, "action": task.action}

    def v2_playbook_on_play_start(self, play):
        self._write({"event": "play_start", "play": play.get_name()})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write({"event": "task_start", "task": self._task(task), "args": dict(task.args)})

    def v2_playbook_on_handler_task_start(self, task):
        self._write({"event": "task_start", "task": self._task(task), "args": dict(task.args)})

    def _result(self, event, result):
        self._write({"event": event, "host": result._host.get_name(), "task": self._task(result._task),
                     "result": result._result})

    def v2_runner_on_ok(self, result):
        self._result("ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result("failed_ignored" if ignore_errors else "failed", result)

    def v2_runner_on_skipped(self, result):
        self._result("skipped", result)

    def v2_runner_on_unreachable(self, result):
        self._result("unreachable", result)

    def v2_runner_item_on_ok(self, result):
        self._result("item_ok", result)

    def v2_runner_item_on_failed(self, result):
        self._result("item_failed", result)

    def v2_runner_item_on_skipped(self, result):
        self._result("item_skipped", result)

    def v2_runner_retry(self, result):
        self._result("retry", result)

    def v2_on_file_diff(self, result):
        self._result("diff", result)

    def v2_playbook_on_stats(self, stats):
        hosts = sorted(stats.processed.keys())
        self._write({"event": "stats", "stats": {h: stats.summarize(h) for h in hosts}})
        super().v2_playbook_on_stats(stats)
