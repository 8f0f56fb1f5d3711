# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""webhook_ack, the module file: its spec and documentation, and its main() as a module process (an event's
acknowledgement recorded into the spool on this machine, once; check mode; a refusal that names the option and
never shows the token). Where an acknowledgement goes, its messages and retries (webhook/ack.py, the module's
logic): tests/unit/plugins/module_utils/webhook/test_ack.py; real acknowledgements to a real receiver:
tests/system/test_webhook_ack.py."""

from __future__ import annotations

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool as ws
from ansible_collections.wpcloud.hosting.plugins.modules import webhook_ack
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.webhook.test_ack import ID, TOKEN, acks


@pytest.fixture
def spool(tmp_path):
    (tmp_path / ws.SPOOL_FILE).write_bytes(b"")
    return tmp_path


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    doc, examples, returned = module_docs(webhook_ack)
    assert set(returned) >= {"delivery_id", "via", "recorded"}


def test_the_spec_needs_the_event_or_its_delivery_id_and_hides_the_token(monkeypatch):
    monkeypatch.delenv(webhook_ack.ack.ENV_TOKEN, raising=False)
    validator = ArgumentSpecValidator(**webhook_ack.MODULE_SPEC)
    assert "one of the following is required: event, delivery_id" in " ".join(validator.validate({}).error_messages)
    both = validator.validate({"event": {"meta": {}}, "delivery_id": ID}).error_messages
    assert "mutually exclusive: event|delivery_id" in " ".join(both)
    given = validator.validate({"delivery_id": ID, "token": TOKEN})
    assert not given.error_messages and given.validated_parameters["via"] == "auto"
    assert given.validated_parameters["timeout"] == 30.0 and given.validated_parameters["validate_certs"] is True
    assert TOKEN in given._no_log_values
    assert validator.validate({"delivery_id": ID, "via": "pigeon"}).error_messages


def test_a_module_process_records_the_event_into_the_spool_once(module_process, spool):
    event = {"payload": {"event": "site_provisioned"}, "meta": {"delivery_id": ID, "attempt": 1,
                                                                "ack": {"spool_dir": str(spool), "url": None}}}
    result = module_process(webhook_ack, {"event": event})
    assert (result["changed"], result["recorded"], result["via"], result["delivery_id"]) == (True, True, "file", ID)
    again = module_process(webhook_ack, {"event": dict(event, meta=dict(event["meta"], attempt=2))})
    assert (again["changed"], again["recorded"], again["attempt"]) == (False, False, 2)
    assert [(e[1], e[5]) for e in acks(spool)] == [(ID, "file")]


def test_a_module_process_in_check_mode_writes_nothing(module_process, spool):
    result = module_process(webhook_ack, {"delivery_id": ID, "spool_dir": str(spool)}, check_mode=True)
    assert result["changed"] is True and result["via"] == "file"
    assert not (spool / ws.JOURNAL_FILE).exists() or not acks(spool)


def test_a_module_process_refuses_by_the_options_name_without_the_token(module_process, monkeypatch):
    monkeypatch.delenv(webhook_ack.ack.ENV_URL, raising=False)
    result = module_process(webhook_ack, {"delivery_id": ID, "token": TOKEN, "via": "http"})
    assert result["failed"] is True and "via: http needs url" in result["msg"]
    assert TOKEN not in str(result)
