# -*- coding: utf-8 -*-
# Test-only action of the reliability suite: replace the emulator's fault rules from inside a play,
# in the controller process (ansible.builtin.uri would start a module process for each change).
from __future__ import annotations

import json
import ssl
import urllib.request

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        body = json.dumps({"rules": list(args.get("rules") or [])}).encode()
        req = urllib.request.Request(args["url"].rstrip("/") + "/_emulator/faults", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        ctx = ssl.create_default_context(cafile=args["ca_path"])
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            result["rules"] = json.loads(resp.read())["rules"]
        result["changed"] = False
        return result
