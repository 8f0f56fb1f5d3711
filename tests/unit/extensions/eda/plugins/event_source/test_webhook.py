# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The wpcloud.hosting.webhook event source's parts, without a server: options and keys, the spool's
file format, the request checks (aiohttp middlewares, driven with aiohttp's mocked requests), the
spool writer, the emitter and the pipe messages. The end-to-end behaviour (real HTTPS, the receiver
process, ansible-rulebook) is tested in tests/system/test_webhook_*.py."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import importlib.util
import json
import os
import uuid
from pathlib import Path
from unittest import mock

import pytest

pytest.importorskip("aiohttp")

from aiohttp import streams  # noqa: E402  pylint: disable=wrong-import-position
from aiohttp.test_utils import make_mocked_request  # noqa: E402  pylint: disable=wrong-import-position

SOURCE = Path(__file__).resolve().parents[6] / "extensions" / "eda" / "plugins" / "event_source" / "webhook.py"


def _load(path):
    """The plugin's namespace, loaded from its file as ansible-rulebook loads it (runpy.run_path
    cannot be used under ansible-test: the collection loader's path hook claims every path)."""
    spec = importlib.util.spec_from_file_location("wpcloud_hosting_webhook_source", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


W = _load(SOURCE)

KEY = "unit-source-key-0123456789abcdef0123"
OLD_KEY = "unit-source-old-key-fedcba9876543210"
TS = "29848839199040411"


def signed(event="site_provisioned", key=KEY, ts=TS, salt="5a1t" * 8, site=7, data=None):
    digest = hmac.new(key.encode(), ("%s:%s:%s" % (event, ts, salt)).encode(), hashlib.sha256).hexdigest()
    return json.dumps({"event": event, "timestamp": 1751333700, "atomic_site_id": site,
                       "data": [] if data is None else data,
                       "signature": {"signature": digest, "timestamp": ts, "salt": salt}}).encode()


def documented_id(ts, salt):
    return "sig-" + hashlib.sha256(("%s:%s" % (ts, salt)).encode()).hexdigest()[:32]


# -- options and keys ---------------------------------------------------------------------------

def test_clean_args_drops_what_a_rulebook_rendered_empty():
    assert W["_clean_args"]({"port": 1, "token": "", "spool_dir": "  ", "cafile": None, "max_age": 0}) == {"port": 1}
    assert W["_clean_args"]({"max_age": "60"}) == {"max_age": "60"}
    with pytest.raises(ValueError, match="max_age must be a number of seconds"):
        W["_clean_args"]({"max_age": "soon"})


@pytest.mark.parametrize("args,message", [
    ({}, "Missing required argument: port"),
    ({"port": 0}, "port must be an integer from 1 to 65535"),
    ({"port": 65536}, "port must be an integer from 1 to 65535"),
    ({"port": "https"}, "port must be an integer from 1 to 65535, got 'https'"),
    ({"port": True}, "port must be an integer"),
    ({"port": 1, "max_body_size": "big"}, "max_body_size must be a positive number of bytes"),
    ({"port": 1, "max_body_size": -1}, "max_body_size must be a positive number of bytes"),
    ({"port": 1, "dedupe_size": 0}, "dedupe_size must be a positive integer"),
    ({"port": 1, "emit_confirm_delay": -1}, "emit_confirm_delay must be a number of seconds"),
    ({"port": 1, "certfile": "/nonexistent/cert.pem"}, "certfile must be a readable file; /nonexistent/cert.pem"),
    ({"port": 1, "capath": "/nonexistent"}, "capath must be a directory"),
])
def test_check_args_names_the_option(args, message):
    with pytest.raises(ValueError) as exc:
        W["_check_args"](args)
    assert message in str(exc.value)


def test_check_args_spool_dir_that_is_a_file(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    with pytest.raises(ValueError, match="spool_dir must be a directory"):
        W["_check_args"]({"port": 1, "spool_dir": str(a_file)})
    W["_check_args"]({"port": 1, "spool_dir": str(tmp_path / "new")})     # created later


def test_keys_from_args_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEYS", "env-a, env-b")
    keys_file = tmp_path / "keys"
    keys_file.write_text("# new first\nfile-a\n\nfile-b\n")
    keys = W["_keys_from_args"]
    assert keys({"hmac_secret": ["a", " b "]}) == ["a", "b"]
    assert keys({"hmac_secret": "a, b", "hmac_secret_file": str(keys_file)}) == ["a", "b"]
    assert keys({"hmac_secret": " ", "hmac_secret_file": str(keys_file)}) == ["file-a", "file-b"]
    assert keys({}) == ["env-a", "env-b"]
    monkeypatch.delenv("WPCLOUD_WEBHOOK_HMAC_KEYS")
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEY", "single")
    assert keys({}) == ["single"]
    monkeypatch.delenv("WPCLOUD_WEBHOOK_HMAC_KEY")
    assert keys({}) == []


def test_check_keys():
    W["_check_keys"]([KEY, OLD_KEY], False)
    W["_check_keys"]([], True)
    with pytest.raises(ValueError, match="allow_unsigned"):
        W["_check_keys"]([], False)
    with pytest.raises(ValueError) as exc:
        W["_check_keys"]([KEY, "short-secret-value"], False)
    assert "key 2 of 2 is too weak" in str(exc.value) and "short-secret-value" not in str(exc.value)


def test_receiver_config_carries_keys_only_in_their_own_field(tmp_path):
    emitter = W["Emitter"](str(tmp_path), 0)
    args = {"port": 1, "hmac_secret": [KEY], "hmac_secret_file": "/k", "token": 123, "max_age": 5}
    config = W["_receiver_config"](args, [KEY], str(tmp_path), emitter)
    assert config["keys"] == [KEY]
    assert "hmac_secret" not in config["args"] and "hmac_secret_file" not in config["args"]
    assert config["args"]["token"] == "123" and config["args"]["max_age"] == 5
    assert config["log_level"] in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    # without explicit keys the file is watched by the receiver
    assert W["_receiver_config"]({"port": 1, "hmac_secret_file": "/k"}, [KEY], str(tmp_path),
                                 emitter)["args"]["hmac_secret_file"] == "/k"


def test_event_uuid_is_uuid5_of_the_delivery_id():
    for index in range(500):
        delivery_id = documented_id(str(index), "s")
        expected = str(uuid.uuid5(uuid.NAMESPACE_URL, "wpcloud-webhook:" + delivery_id))
        assert W["_event_uuid"](delivery_id) == expected


# -- the spool's file format --------------------------------------------------------------------

def test_records_round_trip_and_a_torn_tail(tmp_path):
    path = tmp_path / "spool.log"
    events = [{"payload": {"event": "e%d" % i, "data": {"t": "a\tb\nc"}}, "meta": {"delivery_id": "sig-%d" % i}}
              for i in range(3)]
    data = b"".join(W["_record"](i + 1, "sig-%d" % i, "fp%d" % i, e) for i, e in enumerate(events))
    path.write_bytes(data + b"4\tsig-3\tfp3\t{\"payl")          # cut by a crash
    records, good = W["_read_records"](str(path))
    assert good == len(data)
    assert [(r[0], r[1], r[2]) for r in records] == [(1, "sig-0", "fp0"), (2, "sig-1", "fp1"), (3, "sig-2", "fp2")]
    assert [json.loads(r[4]) for r in records] == events            # tabs and newlines stay inside the JSON
    assert records[-1][3] == good
    # a range, a count limit and a byte window
    second = W["_read_records"](str(path), records[0][3], good)[0]
    assert [r[0] for r in second] == [2, 3]
    assert [r[0] for r in W["_read_records"](str(path), 0, good, limit=1)[0]] == [1]
    assert [r[0] for r in W["_read_records"](str(path), 0, good, window=10)[0]] == [1]   # one whole record
    assert W["_read_records"](str(tmp_path / "missing"), 5) == ([], 5)


# -- the request checks (no server: aiohttp's mocked requests through the same chain) ------------

class Notify:
    """Stands in for the pipe to the rulebook side."""

    def __init__(self):
        self.durable_at = None
        self.rotations = 0

    def durable(self, seq, offset):
        self.durable_at = (seq, offset)

    def rotated(self):
        self.rotations += 1


def make_receiver(tmp_path, keys=(KEY, OLD_KEY), **args):
    spool = W["SpoolWriter"](str(tmp_path / "spool"), 1 << 20, 1000, Notify())
    spool.open()
    receiver = W["Receiver"](dict({"port": 1}, **args), spool, list(keys))
    receiver.app()
    return receiver


def request(body=b"", content_type="application/json", headers=None, path="/hooks/wpcloud"):
    hdrs = {"Content-Length": str(len(body))}
    if content_type is not None:
        hdrs["Content-Type"] = content_type
    hdrs.update(headers or {})
    payload = streams.StreamReader(mock.Mock(), 2 ** 16, loop=asyncio.get_running_loop())
    payload.feed_data(body)
    payload.feed_eof()
    return make_mocked_request("POST", path, headers=hdrs, payload=payload,
                               match_info={"endpoint": path.lstrip("/")}, client_max_size=1 << 20)


async def deliver(receiver, *args, **kwargs):
    response = await receiver.deliver(request(*args, **kwargs))
    return response.status, response.text.strip()


def run(coro):
    return asyncio.run(coro)


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
    records = W["_read_records"](str(tmp_path / "spool" / "spool.log"))[0]
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
    event = json.loads(W["_read_records"](str(tmp_path / "spool" / "spool.log"))[0][0][4])
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
    event = json.loads(W["_read_records"](str(tmp_path / "spool" / "spool.log"))[0][0][4])
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


# -- the spool writer's memory and the emitter -----------------------------------------------------

def test_spool_writer_rebuilds_its_memory_and_cuts_a_torn_tail(tmp_path):
    directory = tmp_path / "spool"
    directory.mkdir()
    old = W["_record"](1, "sig-a", "fa", {"payload": {}, "meta": {}})
    current = W["_record"](2, "sig-b", "fb", {"payload": {}, "meta": {}})
    (directory / "spool.log.1").write_bytes(old)
    (directory / "spool.log").write_bytes(current + b"3\tsig-c\tfc\t{")
    spool = W["SpoolWriter"](str(directory), 1 << 20, 1000, Notify())
    spool.marked_seq = 1
    spool.open()
    try:
        assert spool.check("sig-a", "fa") == ("duplicate", None)
        assert spool.check("sig-b", "other") == ("conflict", None)
        assert spool.check("sig-c", "fc") == ("new", None)
        assert (directory / "spool.log").read_bytes() == current
        assert spool.next_seq == 3 and spool.durable_offset == len(current)
    finally:
        spool.close_files()


def test_spool_directory_is_locked(tmp_path):
    first = W["SpoolWriter"](str(tmp_path), 1 << 20, 10, Notify())
    first.open()
    try:
        with pytest.raises(RuntimeError, match="used by another receiver"):
            W["SpoolWriter"](str(tmp_path), 1 << 20, 10, Notify()).open(lock_timeout=0.2)
    finally:
        first.close_files()


def test_emitter_recovers_what_was_stored_but_not_emitted(tmp_path):
    rec = W["_record"]
    (tmp_path / "spool.log.1").write_bytes(rec(1, "a", "f", {"n": 1}) + rec(2, "b", "f", {"n": 2}))
    (tmp_path / "spool.log").write_bytes(rec(3, "c", "f", {"n": 3}) + rec(4, "d", "f", {"n": 4}) + b"5\tx")
    (tmp_path / "emitted.log").write_bytes(b"1\n3")          # "3" was torn: the mark is 1
    emitter = W["Emitter"](str(tmp_path), 0)
    assert emitter.read_mark() == 1
    emitter.recover()

    async def emitted():
        queue = asyncio.Queue()
        task = asyncio.ensure_future(emitter.run(queue))
        items = [await asyncio.wait_for(queue.get(), 5) for dummy in range(3)]
        task.cancel()
        await emitter.stop()
        return items
    assert emitter.recovered == 3
    assert run(emitted()) == [{"n": 2}, {"n": 3}, {"n": 4}]


def test_notifier_coalesces_durable_positions_while_the_pipe_is_busy():
    written = []
    transport = mock.Mock()
    transport.is_closing.return_value = False
    transport.write.side_effect = written.append
    transport.get_write_buffer_size.return_value = 0
    notify = W["Notifier"](transport)

    async def scenario():
        notify.ready(0, 0)
        notify.durable(1, 10)
        transport.get_write_buffer_size.return_value = 100     # busy: later positions wait
        notify.durable(2, 20)
        notify.durable(3, 30)
        transport.get_write_buffer_size.return_value = 0
        await asyncio.sleep(0.05)
        notify.rotated()
        notify.failed("boom")
    run(scenario())
    assert written == [b"READY 0 0\n", b"D 1 10\n", b"D 3 30\n", b"R\n", b'E "boom"\n']


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
