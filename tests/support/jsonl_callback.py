"""The shape of the suites' callback plugins (``callback_plugins/``): an aggregate callback, enabled by
name, that writes one JSON object a line to the file an environment variable names, flushed as it goes
(a killed run keeps what it wrote) and closed at the play's stats.

Each plugin names its variable (``OUT_ENV``) and says what it records; this file is not a plugin
itself (ansible loads every file of a callback directory), so it lives one level up.
"""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase


class JsonLinesCallback(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NEEDS_ENABLED = True
    OUT_ENV = None          # the environment variable naming the output file (unset: nothing is written)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        path = os.environ.get(self.OUT_ENV or "")
        self._out = open(path, "a", encoding="utf-8") if path else None

    def write(self, record):
        if self._out is None:
            return
        self._out.write(json.dumps(record, default=str, sort_keys=True) + "\n")
        self._out.flush()

    def close(self):
        if self._out is not None:
            self._out.close()
            self._out = None

    def v2_playbook_on_stats(self, stats):
        self.close()
