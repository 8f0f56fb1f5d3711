# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What module logic gets from its runner: the ModuleContext (options, check and diff mode, warnings,
progress, the task's secrets and its one API client), and the list forms' fan-out over it.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import validate_connection_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import CONCURRENT_CALLS, WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import Secrets, no_log_values


class ModuleContext(object):
    """What module logic may use from its runner (AnsibleModule or the controller action).

    ``secrets`` holds the no_log values of ``params`` by ``argument_spec`` (the module's), and any the logic
    adds: the runner masks the result with it, and the client, warnings and progress lines use it too.
    """

    def __init__(self, params, argument_spec=None, check_mode=False, diff=False, warn=None, progress=None):
        self.params = params
        self.check_mode = check_mode
        self.diff = diff
        # progress(line): shows a line while the task runs (None: the runner cannot, e.g. a module process)
        self.progress = progress
        self.secrets = Secrets(no_log_values(argument_spec or {}, params))
        self.warnings = []
        self._warn = warn
        self._client = None
        self._client_lock = threading.Lock()

    def add_no_log(self, value):
        """Mask a value in everything the task shows, as if it came from a no_log option."""
        self.secrets.add(value)

    def warn(self, message):
        message = self.secrets.mask(message)
        if self._warn is not None:
            self._warn(message)
        else:
            self.warnings.append(message)

    def retrying(self, message):
        """A retry: shown when it starts (a wrong port would otherwise wait in silence), and a warning."""
        if self.progress is not None:
            self.progress(self.secrets.mask("retrying %s" % message))
        self.warn(message)

    def client(self):
        """The task's one client, made on first use (list forms ask from many threads at once)."""
        with self._client_lock:
            if self._client is None:
                p = self.params
                validate_connection_options(p)
                try:
                    self._client = WPCloudClient(
                        api_url=p["api_url"], api_key=p["api_key"], validate_certs=p["validate_certs"],
                        ca_path=p.get("ca_path"), timeout=p["timeout"], retries=p["retries"],
                        retry_timeout=p["retry_timeout"], on_retry=self.retrying, secrets=self.secrets,
                        rate_limit=p.get("rate_limit") or 0)
                except WPCloudAPIError as exc:
                    raise ModuleFailure(exc.message)
            return self._client

    def api_load(self):
        """The load the task's client put on the service (WPCloudClient.load), None when it made no call."""
        with self._client_lock:
            return self._client.load() if self._client is not None else None

    def close(self):
        with self._client_lock:
            if self._client is not None:
                self._client.close()


def with_api_load(ctx, logic):
    """``logic()``'s result, or its ModuleFailure, with ``api_load``: the calls the task made and its peak
    rate, so a partner sees the load a wave puts on the service (the waiting modules' results)."""
    try:
        result = logic()
    except ModuleFailure as failure:
        if ctx.api_load() is not None:
            failure.details["api_load"] = ctx.api_load()
        raise
    if ctx.api_load() is not None:
        result["api_load"] = ctx.api_load()
    return result


# -- list forms: one task for a whole fleet ---------------------------------------------------------------

def run_for_each(items, logic):
    """Run ``logic(item)`` for every item, CONCURRENT_CALLS at a time; results in input order.

    Each result is the item's own result dict with ``failed`` added; a ModuleFailure becomes that
    item's result (its details, ``failed: true`` and ``msg``), so one bad item never stops the others.
    """
    def one(item):
        try:
            result = logic(item)
            result["failed"] = False
        except ModuleFailure as failure:
            result = dict(failure.details)
            result.update(failed=True, msg=failure.msg)
        return result

    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(CONCURRENT_CALLS, len(items))) as pool:
        return list(pool.map(one, items))


def list_result(results, noun, label):
    """The result of a list form: ``results``, ``changed`` when any item changed, ``failed_count``.

    Item diffs are gathered into one ``diff`` list (one entry per item, headed by ``label(result)``).
    Raises ModuleFailure naming the first failed items when any item failed.
    """
    diffs = []
    for result in results:
        diff = result.pop("diff", None)
        if diff:
            name = label(result)
            diffs.append(dict(diff, before_header=name, after_header=name))
    failed = [r for r in results if r.get("failed")]
    outcome = dict(changed=any(r.get("changed") for r in results), results=results, failed_count=len(failed))
    if diffs:
        outcome["diff"] = diffs
    if failed:
        named = "; ".join("%s: %s" % (label(r), r.get("msg")) for r in failed[:5])
        if len(failed) > 5:
            named += " (and %d more)" % (len(failed) - 5)
        raise ModuleFailure("%d of %d %s failed: %s" % (len(failed), len(results), noun, named), **outcome)
    return outcome
