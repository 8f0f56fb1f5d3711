# Benchmark-only callback (tests/benchmarks/fleet): per task, its wall time (task start to the next task's
# start, or the play's end) and the controller's CPU in that time (ansible-playbook and its reaped workers
# and modules: RUSAGE_SELF + RUSAGE_CHILDREN). Enabled by run.py beside fleet_trace; output (JSON lines)
# in the file named by FLEET_TASKS_FILE. run.py --tasks sums it per task name over a run's repeats.
from __future__ import annotations

DOCUMENTATION = """
name: fleet_tasks
type: aggregate
short_description: per task wall and controller CPU (fleet benchmark only)
description: One JSON line per task in the file named by FLEET_TASKS_FILE.
"""

import resource
import os
import sys
import time

_SUPPORT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/support: the shared shape
if _SUPPORT not in sys.path:
    sys.path.append(_SUPPORT)

from jsonl_callback import JsonLinesCallback  # noqa: E402  pylint: disable=wrong-import-position


def _cpu():
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


class CallbackModule(JsonLinesCallback):
    CALLBACK_NAME = "fleet_tasks"
    OUT_ENV = "FLEET_TASKS_FILE"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._current = None

    def _close(self):
        if self._current is not None:
            name, t0, cpu0 = self._current
            self.write({"task": name, "wall": round(time.monotonic() - t0, 4), "cpu": round(_cpu() - cpu0, 4)})
        self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self._current = (task.get_name(), time.monotonic(), _cpu())

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self._close()
        super().v2_playbook_on_stats(stats)
