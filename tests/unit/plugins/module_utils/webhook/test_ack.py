# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""webhook/ack.py, the logic of the webhook_ack module: where an acknowledgement goes (the spool on this
machine, or the receiver over HTTPS), its messages, retries and check mode. The transport is a
stand-in here; tests/system/test_webhook_ack.py sends real acknowledgements to a real receiver."""

from __future__ import annotations

import io
import json

import pytest

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import ack as wa
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool as ws

ID = "sig-" + "0123456789abcdef" * 2
TOKEN = "ack-token-0123456789abcdef-0123456789"
URL = "https://eda.example.com:8443/_wpcloud/ack"


@pytest.fixture
def spool(tmp_path):
    (tmp_path / ws.SPOOL_FILE).write_bytes(b"")
    return tmp_path


def params(**kw):
    base = {"event": None, "delivery_id": None, "spool_dir": None, "url": None, "token": None, "ca_path": None,
            "validate_certs": True, "timeout": 5.0, "via": "auto"}
    base.update(kw)
    return base


def an_event(spool_dir=None, url=None, ack=True, attempt=1):
    meta = {"delivery_id": ID, "attempt": attempt}
    if ack:
        meta["ack"] = {"spool_dir": spool_dir, "url": url}
    return {"payload": {"event": "site_provisioned"}, "meta": meta}


def acks(directory):
    return [e for e in ws.parse_journal((directory / ws.JOURNAL_FILE).read_bytes()) if e[0] == "ack"]


def test_into_the_spool_named_by_the_event(spool):
    result = wa.run(params(event=an_event(str(spool))))
    assert result == {"changed": True, "delivery_id": ID, "via": "file", "recorded": True, "attempt": 1,
                      "spool_dir": str(spool)}
    again = wa.run(params(event=an_event(str(spool), attempt=2)))
    assert (again["changed"], again["recorded"], again["attempt"]) == (False, False, 2)
    assert [(e[1], e[5]) for e in acks(spool)] == [(ID, "file")]


def test_check_mode_writes_nothing(spool):
    assert wa.run(params(event=an_event(str(spool))), check_mode=True)["changed"] is True
    assert not (spool / ws.JOURNAL_FILE).exists() or not acks(spool)
    assert wa.run(params(event=an_event(url=URL), token=TOKEN), check_mode=True)["changed"] is True


def test_a_source_with_acknowledgements_off_needs_nothing():
    result = wa.run(params(event=an_event(ack=False)))
    assert result["via"] is None and result["changed"] is False and "ack_timeout: 0" in result["msg"]


@pytest.mark.parametrize("kw,message", [
    ({"delivery_id": "sig-123"}, "delivery_id must be a delivery id"),
    ({"event": {"meta": {"delivery_id": "x", "ack": {"spool_dir": "/d"}}}}, "event.meta.delivery_id must be"),
    ({"event": {"payload": {}}}, "event has no meta"),
    ({"delivery_id": ID}, "no spool_dir, and no url is known"),
    ({"delivery_id": ID, "spool_dir": "/nonexistent"}, "/nonexistent is not a spool directory on this machine"),
    ({"delivery_id": ID, "spool_dir": "/nonexistent", "via": "file"}, "spool_dir /nonexistent is not the spool"),
    ({"delivery_id": ID, "via": "http"}, "via: http needs url"),
    ({"delivery_id": ID, "url": "ftp://x/ack"}, "url must be an https:// URL"),
    ({"delivery_id": ID, "url": URL}, "token is required to acknowledge over HTTPS"),
])
def test_errors_name_the_option(kw, message):
    with pytest.raises(wa.AckError) as exc:
        wa.run(params(**kw), environ={})
    assert message in str(exc.value)


def test_the_spool_on_this_machine_wins_over_the_url(spool):
    assert wa.where(params(event=an_event(str(spool), URL)), environ={})[1] == "file"
    assert wa.where(params(event=an_event("/elsewhere/spool", URL)), environ={})[1] == "http"
    assert wa.where(params(event=an_event(str(spool), URL), via="http"), environ={})[1] == "http"
    assert wa.where(params(delivery_id=ID), environ={wa.ENV_URL: URL})[3] == URL


class FakeReceiver:
    """Stands in for open_url: answers from a script, records what was sent."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.sent = []

    def __call__(self, url, data=None, method=None, headers=None, **kwargs):
        self.sent.append({"url": url, "data": json.loads(data), "method": method, "headers": headers, **kwargs})
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return io.BytesIO(json.dumps(answer).encode())


def http_error(code, text=b""):
    return HTTPError(URL, code, "status", {}, io.BytesIO(text))


def test_over_https_with_the_bearer_token_and_retries(monkeypatch):
    fake = FakeReceiver([URLError("connection refused"), http_error(503, b"could not record"),
                         {"delivery_id": ID, "recorded": True}])
    monkeypatch.setattr(wa, "open_url", fake)
    waits = []
    result = wa.run(params(event=an_event("/elsewhere", URL), token=TOKEN), sleep=waits.append)
    assert result == {"changed": True, "delivery_id": ID, "via": "http", "recorded": True, "attempt": 1, "url": URL}
    assert len(fake.sent) == 3 and waits == [1, 2]
    assert fake.sent[0]["data"] == {"delivery_id": ID} and fake.sent[0]["method"] == "POST"
    assert fake.sent[0]["headers"]["Authorization"] == "Bearer " + TOKEN
    assert fake.sent[0]["follow_redirects"] == "none"


def test_over_https_already_recorded_is_unchanged(monkeypatch):
    monkeypatch.setattr(wa, "open_url", FakeReceiver([{"delivery_id": ID, "recorded": False}]))
    assert wa.run(params(delivery_id=ID, url=URL, token=TOKEN), environ={})["changed"] is False


@pytest.mark.parametrize("answers,message", [
    ([http_error(401)], "refused the token (HTTP 401): token (or WPCLOUD_WEBHOOK_ACK_TOKEN)"),
    ([http_error(404, b"unknown delivery id")], "answered 404 (unknown delivery id): url must be the ack_url"),
    ([http_error(400)], "refused the acknowledgement of %s (HTTP 400)" % ID),
    ([URLError("refused")] * 3, "could not reach the receiver at %s to acknowledge %s" % (URL, ID)),
])
def test_over_https_failures(monkeypatch, answers, message):
    monkeypatch.setattr(wa, "open_url", FakeReceiver(answers))
    with pytest.raises(wa.AckError) as exc:
        wa.run(params(delivery_id=ID, url=URL, token=TOKEN), environ={}, sleep=lambda s: None)
    assert message in str(exc.value) and TOKEN not in str(exc.value)


def test_the_token_and_ca_from_the_environment(monkeypatch):
    fake = FakeReceiver([{"recorded": True}])
    monkeypatch.setattr(wa, "open_url", fake)
    wa.run(params(delivery_id=ID, token=TOKEN), environ={wa.ENV_URL: URL, wa.ENV_CA_PATH: "/etc/ca.pem"})
    assert fake.sent[0]["url"] == URL and fake.sent[0]["ca_path"] == "/etc/ca.pem"
