# -*- coding: utf-8 -*-
# Test-only action of the integration targets (the setup_emulator role's) and of the reliability suite's
# playbooks (ANSIBLE_ACTION_PLUGINS): one call of the emulator's hooks (/_emulator/...), in the controller
# process. ansible.builtin.uri started a module process for each call, about 0.4 CPU-s: a third of the
# targets' tasks are these calls (tests/integration/README.md).
#   emulator_hook: {path: requests}                                  GET /_emulator/requests; the answer in .json
#   emulator_hook: {path: sites, method: POST, body: {...}, status_code: [200, 201]}
# The URL and CA are the integration config's (wpcloud_emulator_url, wpcloud_ca_path) unless the task gives
# url and ca_path.
from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        task_vars = task_vars or {}
        base = args.get("url") or task_vars["wpcloud_emulator_url"]
        url = "%s/_emulator/%s" % (str(base).rstrip("/"), args["path"].lstrip("/"))
        method = args.get("method", "GET").upper()
        data = json.dumps(args["body"] if args.get("body") is not None else {}).encode() if method == "POST" else None
        request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        context = ssl.create_default_context(cafile=args.get("ca_path") or task_vars["wpcloud_ca_path"])
        try:
            with urllib.request.urlopen(request, context=context, timeout=60) as answer:
                status, text = answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode()
        result.update(changed=False, status=status, url=url)
        try:
            result["json"] = json.loads(text) if text else None
        except ValueError:
            result["content"] = text
        if status not in [int(code) for code in args.get("status_code", [200])]:
            result.update(failed=True, msg="%s %s answered %s: %s" % (method, url, status, text[:500]))
        return result
