# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The receiver's request checks (aiohttp middlewares driven with aiohttp's mocked requests through the
same chain, no server), its store, health counters, key reload and acknowledgement endpoint. Real
HTTPS, the receiver process and ansible-rulebook: tests/system/test_webhook_*.py."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import uuid

import pytest

pytest.importorskip("aiohttp")

from aiohttp.test_utils import make_mocked_request  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.receiver import event_uuid  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.webhook.source_parts import (  # noqa: E402  pylint: disable=wrong-import-position
    ACK_TOKEN, KEY, OLD_KEY, TS, deliver, documented_id, make_receiver, post_ack, run, signed,
)


def test_event_uuid_is_uuid5_of_the_delivery_id():
    for index in range(500):
        delivery_id = documented_id(str(index), "s")
        expected = str(uuid.uuid5(uuid.NAMESPACE_URL, "wpcloud-webhook:" + delivery_id))
        assert event_uuid(delivery_id) == expected


def test_checks_in_order_for_the_options_set(tmp_path):
    names = [c.__name__ for c in make_receiver(tmp_path).checks()]
    assert names == ["check_size", "read_json", "verify_signature", "drop_duplicates"]
    names = [c.__name__ for c in make_receiver(tmp_path / "b", token="t", max_age=60,
                                               content_types=["application/json"]).checks()]
    assert names == ["check_size", "check_token", "check_content_type", "read_json", "verify_signature",
                     "drop_duplicates", "check_freshness"]


def test_a_valid_delivery_is_stored_once(tmp_path):
    receiver = make_receiver(tmp_path)

    async def scenario():
        body = signed()
        first = await deliver(receiver, body, headers={"Authorization": "Bearer x", "X-Trace": "t"})
        again = await deliver(receiver, body)
        other = await deliver(receiver, signed(site=8))          # same signature, another body
        return first, again, other
    first, again, other = run(scenario())
    assert first == (200, "OK") and again == (200, "OK (duplicate)")
    assert other == (409, "signature already used for another body")
    assert receiver.spool.stats == {"stored": 1, "duplicates": 1, "conflicts": 1, "rejected": 0, "fsyncs": 1, "acks": 0}
    records = spool.read_records(str(tmp_path / "spool" / "spool.log"))[0]
    assert len(records) == 1
    seq, delivery_id, fingerprint, _end, raw = records[0]
    event = json.loads(raw)
    assert delivery_id == documented_id(TS, "5a1t" * 8) == event["meta"]["delivery_id"]
    assert fingerprint == hashlib.sha256(signed()).hexdigest()[:32]
    assert event["payload"] == json.loads(signed())
    assert event["meta"]["endpoint"] == "hooks/wpcloud"
    assert event["meta"]["signature"] == {"verified": True, "key_index": 0, "location": "top"}
    assert "X-Trace" in event["meta"]["headers"] and "Authorization" not in event["meta"]["headers"]
    assert event["meta"]["uuid"] == str(uuid.uuid5(uuid.NAMESPACE_URL, "wpcloud-webhook:" + delivery_id))
    assert receiver.verified_by_key == [1, 0] and seq == 1
    assert KEY not in raw.decode()


REFUSALS = [
    ("too-large", {"body": b"{}", "headers": {"Content-Length": "2000000"}}, (413, "body too large")),
    ("malformed-json", {"body": b"{not json"}, (400, "body is not valid JSON")),
    ("malformed-json-as-text", {"body": b"{not json", "content_type": "text/plain"}, (400, "body is not valid JSON")),
    ("form-fields", {"body": b"event=site_provisioned&atomic_site_id=7",
                     "content_type": "application/x-www-form-urlencoded"}, (400, "body is not valid JSON")),
    ("invalid-utf8", {"body": b"\xff\xfe"}, (400, "body is not valid JSON")),
    ("json-array", {"body": b"[1, 2]"}, (400, "body is not a JSON object")),
    ("nested-too-deeply", {"body": b'{"a":' * 100000 + b"1" + b"}" * 100000}, (400, "body is not valid JSON")),   # was a 500
    ("forged", {"body": signed(key="forged-" + KEY)}, (401, "signature mismatch")),
    ("unsigned", {"body": b'{"event": "e", "data": []}'}, (401, "signature missing_signature")),
    ("tampered-event", {"body": signed().replace(b'"site_provisioned"', b'"other_event"')}, (401, "signature mismatch")),
]


@pytest.mark.parametrize("kwargs,expected", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refusals(tmp_path, kwargs, expected):
    receiver = make_receiver(tmp_path)
    kwargs = dict(kwargs)
    body = kwargs.pop("body")
    assert run(deliver(receiver, body, **kwargs)) == expected
    assert receiver.spool.stats["rejected"] == 1 and receiver.spool.stats["stored"] == 0


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "application/json", "application/vnd.wpcloud+json; charset=utf-8",
                                          "multipart/form-data; boundary=x", "image/png"])
def test_any_content_type_is_judged_by_its_body(tmp_path, content_type):
    """The spec promises only "a JSON body": a signed JSON object is stored whatever the header says
    (a 415 would make the service retry twice and then drop the event)."""
    receiver = make_receiver(tmp_path)
    assert run(deliver(receiver, signed(), content_type=content_type)) == (200, "OK")
    assert receiver.spool.stats["stored"] == 1


def test_content_types_option_restricts_and_json_suffix(tmp_path):
    receiver = make_receiver(tmp_path, content_types=["application/json"])
    assert run(deliver(receiver, signed(), content_type="application/vnd.wpcloud+json; charset=utf-8"))[0] == 200
    assert run(deliver(receiver, signed(salt="b" * 32), content_type="text/plain")) == (
        415, "content type must be one of application/json")
    receiver = make_receiver(tmp_path / "b", content_types="text/plain, application/json")
    assert run(deliver(receiver, signed(), content_type="Text/Plain"))[0] == 200


def test_bearer_token(tmp_path):
    receiver = make_receiver(tmp_path, token="tok-123")

    async def scenario():
        return [await deliver(receiver, signed(salt=salt), headers=headers) for salt, headers in (
            ("a" * 32, {}),
            ("b" * 32, {"Authorization": "Bearer wrong"}),
            ("c" * 32, {"Authorization": "Basic tok-123"}),
            ("d" * 32, {"Authorization": "Bearer tok-123"}))]
    assert [s for s, _t in run(scenario())] == [401, 401, 401, 200]


def test_freshness_window(tmp_path):
    receiver = make_receiver(tmp_path, max_age=60)
    now = [1000.0]
    receiver.freshness.clock = lambda: now[0]

    async def scenario():
        out = [await deliver(receiver, signed(ts="500", salt="a" * 32))]
        now[0] += 61
        out.append(await deliver(receiver, signed(ts="499", salt="b" * 32)))
        out.append(await deliver(receiver, signed(ts="501", salt="c" * 32)))
        out.append(await deliver(receiver, signed(ts="500", salt="a" * 32)))     # known: a duplicate, not stale
        return out
    assert run(scenario()) == [(200, "OK"), (401, "signature stale"), (200, "OK"), (200, "OK (duplicate)")]


def test_a_refused_delivery_teaches_the_window_nothing(tmp_path):
    receiver = make_receiver(tmp_path, max_age=60)
    now = [1000.0]
    receiver.freshness.clock = lambda: now[0]

    async def scenario():
        await deliver(receiver, signed(ts="900", salt="a" * 32, key="forged-" + KEY))
        now[0] += 61
        return await deliver(receiver, signed(ts="500", salt="b" * 32))
    assert run(scenario()) == (200, "OK")


def test_unsigned_mode(tmp_path):
    receiver = make_receiver(tmp_path, keys=())
    body = json.dumps({"event": "x", "timestamp": 1, "data": []}).encode()

    async def scenario():
        return await deliver(receiver, body), await deliver(receiver, body)
    assert run(scenario()) == ((200, "OK"), (200, "OK (duplicate)"))
    event = json.loads(spool.read_records(str(tmp_path / "spool" / "spool.log"))[0][0][4])
    assert event["meta"]["delivery_id"] == "body-" + hashlib.sha256(body).hexdigest()[:32]
    assert event["meta"]["signature"] == {"verified": False}


def test_a_numeric_signature_timestamp_inside_data(tmp_path):
    """The malware-scan example: the 17-digit timestamp is a JSON number; its exact text was signed."""
    receiver = make_receiver(tmp_path)
    ts = "14981791994327545"
    digest = hmac.new(KEY.encode(), ("malware-scanner-results:%s:salt" % ts).encode(), hashlib.sha256).hexdigest()
    body = ('{"event":"malware-scanner-results","atomic_site_id":7,"data":{"status":"clean","signature":'
            '{"signature":"%s","timestamp":%s,"salt":"salt"}}}' % (digest, ts)).encode()
    assert run(deliver(receiver, body)) == (200, "OK")
    event = json.loads(spool.read_records(str(tmp_path / "spool" / "spool.log"))[0][0][4])
    assert event["meta"]["delivery_id"] == documented_id(ts, "salt")
    assert event["meta"]["signature"]["location"] == "data"


def test_a_store_that_fails_answers_503_and_remembers_nothing(tmp_path):
    receiver = make_receiver(tmp_path)

    def full(_data):
        raise OSError(28, "No space left on device")
    receiver.spool._append = full      # pylint: disable=protected-access
    assert run(deliver(receiver, signed())) == (503, "could not store the event")
    assert receiver.spool.stats["stored"] == 0 and receiver.verified_by_key == [0, 0]
    assert receiver.spool.check(documented_id(TS, "5a1t" * 8), "fp")[0] == "new"


def test_a_redelivery_while_the_first_is_being_stored_waits_for_it(tmp_path):
    receiver = make_receiver(tmp_path)

    async def scenario():
        first = asyncio.ensure_future(deliver(receiver, signed()))
        await asyncio.sleep(0)
        second = await deliver(receiver, signed())
        return await first, second
    assert run(scenario()) == ((200, "OK"), (200, "OK (duplicate)"))


def test_healthz_and_key_reload(tmp_path):
    keys_file = tmp_path / "keys"
    keys_file.write_text(OLD_KEY + "\n")
    receiver = make_receiver(tmp_path, keys=[OLD_KEY], hmac_secret_file=str(keys_file))

    async def health():
        response = await receiver.healthz(make_mocked_request("GET", "/healthz"))
        return json.loads(response.text)
    body = run(health())
    assert body["key_count"] == 1 and body["status"] == "ok" and body["backlog"] == 0
    keys_file.write_text("%s\n%s\n" % (KEY, OLD_KEY))
    os.utime(keys_file, ns=(1, 1))
    receiver._keys_checked -= 2        # pylint: disable=protected-access
    assert run(health())["key_count"] == 2
    keys_file.write_text("too-short\n")
    os.utime(keys_file, ns=(2, 2))
    receiver._keys_checked -= 2        # pylint: disable=protected-access
    assert run(health())["key_count"] == 2           # a weak key is ignored, the current keys stay
    assert KEY not in json.dumps(run(health()))


def test_a_key_reload_during_a_store_is_not_counted_against_the_new_keys(tmp_path):
    """verified_by_key counts per key position; a reload while a delivery is being stored (here: two
    keys -> one) used to index the new, shorter list (an internal error instead of the 200)."""
    receiver = make_receiver(tmp_path)
    append = receiver.spool._append          # pylint: disable=protected-access

    def slow_append(data):
        receiver.keys, receiver.verified_by_key = [KEY], [0]     # what _reload_keys does meanwhile
        append(data)
    receiver.spool._append = slow_append     # pylint: disable=protected-access
    assert run(deliver(receiver, signed(key=OLD_KEY))) == (200, "OK")
    assert receiver.verified_by_key == [0]


def test_ack_endpoint(tmp_path):
    receiver = make_receiver(tmp_path)
    receiver.ack_token = ACK_TOKEN.encode()
    stored = documented_id(TS, "5a1t" * 8)

    async def scenario():
        assert (await deliver(receiver, signed()))[0] == 200
        return [
            await post_ack(receiver, {"delivery_id": stored}, token=None),
            await post_ack(receiver, {"delivery_id": stored}, token="wrong-token"),
            await post_ack(receiver, {"delivery_id": "sig-12"}),
            await post_ack(receiver, b"{not json"),
            await post_ack(receiver, {"delivery_id": stored}, length=5000),
            await post_ack(receiver, {"delivery_id": "sig-" + "f" * 32}),
            await post_ack(receiver, {"delivery_id": stored}),
            await post_ack(receiver, {"delivery_id": stored}),
        ]
    answers = run(scenario())
    assert [a[0] for a in answers] == [401, 401, 400, 400, 413, 404, 200, 200]
    assert json.loads(answers[6][1]) == {"delivery_id": stored, "recorded": True}
    assert json.loads(answers[7][1]) == {"delivery_id": stored, "recorded": False}
    entries = spool.parse_journal((tmp_path / "spool" / "processing.log").read_bytes())
    assert [(e[0], e[1], e[5]) for e in entries] == [("ack", stored, "http")]
    assert receiver.spool.stats["acks"] == 2 and ACK_TOKEN not in json.dumps(receiver.spool.stats)


def test_ack_endpoint_is_off_without_a_token(tmp_path):
    receiver = make_receiver(tmp_path)
    assert run(post_ack(receiver, {"delivery_id": "sig-" + "f" * 32}))[0] == 404


def test_ack_route_comes_before_the_delivery_route(tmp_path):
    receiver = make_receiver(tmp_path)
    routes = [(r.method, r.resource.canonical) for r in receiver.app().router.routes()]
    assert routes.index(("POST", "/_wpcloud/ack")) < routes.index(("POST", "/{endpoint}"))


def test_a_hyphenated_name_is_verified_as_sent(tmp_path):
    """The signature covers the name as sent: site-provisioned verifies, and is stored untouched."""
    receiver = make_receiver(tmp_path)
    assert run(deliver(receiver, signed(event="site-provisioned"))) == (200, "OK")
    stored = spool.read_records(str(tmp_path / "spool" / "spool.log"))[0]
    assert json.loads(stored[0][4])["payload"]["event"] == "site-provisioned"
    # the same signature over the normalised name is another message: refused
    forged = signed(event="site-provisioned", salt="6b2u" * 8).replace(b'"site-provisioned"', b'"site_provisioned"')
    assert run(deliver(receiver, forged)) == (401, "signature mismatch")
