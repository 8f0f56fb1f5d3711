# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""wpcloud.hosting.webhook_ack (plugins/action/webhook_ack.py): the acknowledgement recorded on the controller,
where ansible-rulebook keeps the spool, for any host of the play; its refusals as failed results whose text never
holds the token (webhook/ack.py, its logic: tests/unit/plugins/module_utils/webhook/test_ack.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.wpcloud.hosting.plugins.action.webhook_ack import ActionModule
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool as ws
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.webhook.test_ack import ID, TOKEN, acks


@pytest.fixture
def spool(tmp_path):
    (tmp_path / ws.SPOOL_FILE).write_bytes(b"")
    return tmp_path


def run(args, check_mode=False):
    task = SimpleNamespace(args=args, check_mode=check_mode, diff=False, async_val=0, action="wpcloud.hosting.webhook_ack")
    action = ActionModule(task, SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent")), None, None, None, None)
    return action.run(task_vars={"inventory_hostname": "a-managed-node"})


def event(spool_dir, attempt=1):
    return {"payload": {"event": "site_provisioned"},
            "meta": {"delivery_id": ID, "attempt": attempt, "ack": {"spool_dir": str(spool_dir), "url": None}}}


def test_the_event_is_acknowledged_into_the_controllers_spool_once(spool):
    result = run({"event": event(spool)})
    assert (result["changed"], result["recorded"], result["via"], result["spool_dir"]) == (True, True, "file", str(spool))
    again = run({"event": event(spool, attempt=2)})
    assert (again["changed"], again["recorded"], again["attempt"]) == (False, False, 2)
    assert [(e[1], e[5]) for e in acks(spool)] == [(ID, "file")]


def test_check_mode_records_nothing(spool):
    assert run({"event": event(spool)}, check_mode=True)["changed"] is True
    assert not (spool / ws.JOURNAL_FILE).exists() or not acks(spool)


def test_a_refusal_is_a_failed_result_without_the_token(monkeypatch):
    monkeypatch.delenv("WPCLOUD_WEBHOOK_ACK_URL", raising=False)
    result = run({"delivery_id": ID, "token": TOKEN, "via": "http"})
    assert result["failed"] is True and "via: http needs url" in result["msg"] and TOKEN not in str(result)
    bad = run({"delivery_id": ID, "token": TOKEN, "via": "pigeon"})
    assert bad["failed"] is True and "via" in bad["msg"] and TOKEN not in str(bad)
