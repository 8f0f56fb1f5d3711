# -*- coding: utf-8 -*-
# Test-only action of the integration targets (the setup_emulator role's) and of the reliability suite's
# playbooks (ANSIBLE_ACTION_PLUGINS): one call of the emulator's hooks (/_emulator/...), in the controller
# process. ansible.builtin.uri started a module process for each call, about 0.4 CPU-s: a third of the
# targets' tasks are these calls (tests/integration/README.md).
#   emulator_hook: {path: requests}                                  GET /_emulator/requests; the answer in .json
#   emulator_hook: {path: sites, method: POST, body: {...}, status_code: [200, 201]}
#   emulator_hook: {mark: true}         sets request_mark (where the request log ends now) and request_mark_clock
#                                       (the emulator's clock then: what arrives after it is the tasks' own)
#   emulator_hook: {since_mark: true}   sets requests_since (every request after request_mark) and writes_since
#                                       (their write endpoints), to prove what a task sent or did not send
# mark and since_mark are one task each where an include of two tasks (the read, then a set_fact whose
# template filtered the whole log) used to be: 119 of them in the targets (tests/integration/README.md).
# The URL and CA are the integration config's (wpcloud_emulator_url, wpcloud_ca_path) unless the task gives
# url and ca_path.
from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from ansible.plugins.action import ActionBase, VariableLayer


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        task_vars = task_vars or {}
        mark, since = args.pop("mark", False), args.pop("since_mark", False)
        if mark or since:
            return self._mark(result, args, task_vars, since=bool(since))
        return dict(result, **self._call(args, task_vars))

    def _call(self, args, task_vars):
        """One call of the hooks: {status, url, json or content}, failed with msg on an unexpected status."""
        result = {}
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

    def _mark(self, result, args, task_vars, since):
        # the emulator keeps only the requests after the mark itself (GET requests?since=N)
        mark = int(self._templar.template(task_vars["request_mark"])) if since else 0
        answer = self._call(dict(args, path="requests?since=%d" % mark), task_vars)
        if answer.get("failed"):
            return dict(result, **answer)
        requests = answer["json"]["requests"]
        if since:
            # a request of the tasks before the mark, answered then but logged after it, is not theirs
            clock = int(self._templar.template(task_vars["request_mark_clock"]))
            requests = [r for r in requests if r["received"] > clock]
            facts = {"requests_since": requests, "writes_since": [r["endpoint"] for r in requests if r["write"]]}
        else:
            facts = {"request_mark": max([r["seq"] for r in requests] or [0]),
                     "request_mark_clock": answer["json"]["clock"]}
        # as ansible.builtin.set_fact sets them (plain variables of the host, not cached facts)
        self.register_host_variables({}, VariableLayer.CACHEABLE_FACT)
        self.register_host_variables(facts, VariableLayer.EPHEMERAL_FACT)
        result.update(changed=False, ansible_facts=facts)
        return result
