# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ModuleContext: one client per task, made once under a lock, sharing the task's secrets."""

from __future__ import annotations

import threading

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime import context
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext, run_for_each
from ansible_collections.wpcloud.hosting.plugins.modules import migration_info

SPEC = migration_info.MODULE_SPEC["argument_spec"]


def params(fake_api, **extra):
    return dict({"api_url": fake_api.url, "api_key": fake_api.api_key, "validate_certs": True, "ca_path": None,
                 "timeout": 30, "retries": 5, "retry_timeout": 120}, **extra)


def test_threads_asking_at_once_get_one_client(fake_api, monkeypatch):
    made = []
    real = context.WPCloudClient
    started = threading.Barrier(8)

    def slow_client(**options):
        made.append(options)
        return real(**options)

    monkeypatch.setattr(context, "WPCloudClient", slow_client)
    ctx = ModuleContext(params(fake_api), SPEC)

    def ask(item):
        started.wait(5)
        return {"client": ctx.client()}
    clients = [r["client"] for r in run_for_each(list(range(8)), ask)]
    assert len(made) == 1 and all(c is clients[0] for c in clients)
    ctx.close()


def test_the_client_shares_the_tasks_secrets(fake_api):
    ctx = ModuleContext(params(fake_api), SPEC)
    ctx.add_no_log("found-later")
    client = ctx.client()
    assert client.secrets is ctx.secrets
    assert ctx.secrets.mask("%s found-later" % fake_api.api_key) == "******** ********"
    ctx.close()


def test_warnings_are_masked(fake_api):
    ctx = ModuleContext(params(fake_api), SPEC)
    ctx.warn("key %s" % fake_api.api_key)
    assert ctx.warnings == ["key ********"]
