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
import time
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


# -- acknowledgements: the emitter that waits for them ----------------------------------------------

SP = W["spoolfmt"]


def ids(count):
    return ["sig-%032x" % n for n in range(1, count + 1)]


def write_spool(directory, delivery_ids, start=1):
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "spool.log", "ab") as handle:
        for offset, delivery_id in enumerate(delivery_ids):
            event = {"payload": {"n": start + offset}, "meta": {"delivery_id": delivery_id}}
            handle.write(W["_record"](start + offset, delivery_id, "fp", event))
    return os.path.getsize(directory / "spool.log")


def acking(directory, timeout=60.0, window=32, attempts=5, url=None):
    emitter = W["AckingEmitter"](str(directory), timeout, window, attempts, url)
    emitter.journal_interval = 0.01
    emitter.read_mark()
    emitter.recover()
    return emitter


class Rulebook:
    """The rule engine's side of the queue, for the emitter tests: takes events as they come."""

    def __init__(self, emitter):
        self.emitter = emitter
        self.queue = asyncio.Queue()
        self.events = []
        self.task = None

    async def __aenter__(self):
        self.task = asyncio.ensure_future(self.emitter.run(self.queue))
        return self

    async def __aexit__(self, *exc):
        self.task.cancel()
        await self.emitter.stop()

    async def take(self, count, timeout=5):
        for dummy in range(count):
            self.events.append(await asyncio.wait_for(self.queue.get(), timeout))
        return self.events[-count:]

    async def nothing_more(self, wait=0.15):
        await asyncio.sleep(wait)
        assert self.queue.empty(), [e["meta"]["delivery_id"] for e in self.queue._queue]  # pylint: disable=protected-access

    async def ack(self, *delivery_ids):
        """Acknowledge (as the webhook_ack module does) and wait until the emitter has read it."""
        for delivery_id in delivery_ids:
            SP.acknowledge(self.emitter.dir, delivery_id, "file")
        path = os.path.join(self.emitter.dir, "processing.log")
        await until(lambda: self.emitter.journal_offset >= os.path.getsize(path))
        await asyncio.sleep(0.05)


async def until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_acking_emitter_holds_at_most_max_unacked_and_marks_only_what_is_done(tmp_path):
    names = ids(5)
    size = write_spool(tmp_path, names)
    emitter = acking(tmp_path, window=2, url="https://eda.example:8443/_wpcloud/ack")
    emitter.durable(5, size)

    async def scenario():
        async with Rulebook(emitter) as rb:
            first = await rb.take(2)
            await rb.nothing_more()                      # two out, none acknowledged: the window is full
            await rb.ack(names[1])                       # the second is done, the first not: no mark yet
            third = await rb.take(1)
            assert emitter.marked_seq == 0
            await rb.ack(names[0])
            await until(lambda: SP.read_mark(str(tmp_path)) == 2)
            assert emitter.marked_seq == 2
            await rb.take(1)
            return first, third
    first, third = run(scenario())
    assert [e["meta"]["delivery_id"] for e in first + third] == names[:3]
    assert first[0]["meta"]["attempt"] == 1
    assert first[0]["meta"]["ack"] == {"spool_dir": str(tmp_path), "url": "https://eda.example:8443/_wpcloud/ack"}
    emits = [e for e in SP.parse_journal((tmp_path / "processing.log").read_bytes()) if e[0] == "emit"]
    assert [(e[1], e[2], e[3]) for e in emits] == [(names[n], n + 1, 1) for n in range(4)]


def test_an_event_not_acknowledged_in_time_comes_again_then_is_given_up(tmp_path, caplog):
    names = ids(2)
    size = write_spool(tmp_path, names)
    emitter = acking(tmp_path, timeout=0.2, attempts=2)
    emitter.durable(2, size)

    async def scenario():
        async with Rulebook(emitter) as rb:
            await rb.take(2)
            await rb.ack(names[1])
            again = await rb.take(1, timeout=3)          # the first, after ack_timeout
            await until(lambda: emitter.counts["given_up"] == 1)   # not acknowledged again: given up after 2
            await until(lambda: SP.read_mark(str(tmp_path)) == 2)
            await rb.nothing_more()
            return again
    again = run(scenario())
    assert again[0]["meta"]["delivery_id"] == names[0] and again[0]["meta"]["attempt"] == 2
    assert emitter.counts["given_up"] == 1 and emitter.marked_seq == 2
    dead = W["_read_records"](str(tmp_path / "dead.log"))[0]
    assert [(r[0], r[1]) for r in dead] == [(1, names[0])]
    assert json.loads(dead[0][4])["payload"] == {"n": 1}
    assert "given up (dead letter)" in caplog.text
    listed = SP.list_deliveries(str(tmp_path))
    assert [(i["delivery_id"], i["state"], i["attempts"]) for i in listed] == [
        (names[0], "dead", 2), (names[1], "done", 1)]


def test_a_restart_hands_over_what_was_not_acknowledged_and_counts_attempts(tmp_path):
    names = ids(4)
    size = write_spool(tmp_path, names)
    emitter = acking(tmp_path)
    emitter.durable(4, size)

    async def first_life():
        async with Rulebook(emitter) as rb:
            await rb.take(4)
            await rb.ack(names[0], names[2])
            await until(lambda: SP.read_mark(str(tmp_path)) == 1)
    run(first_life())
    assert SP.read_mark(str(tmp_path)) == 1

    emitter = acking(tmp_path)                           # the restart: same directory, fresh process state
    emitter.durable(4, size)
    assert emitter.recovered == 2

    async def second_life():
        async with Rulebook(emitter) as rb:
            again = await rb.take(2)
            await rb.nothing_more()
            await rb.ack(names[1], names[3])
            await until(lambda: SP.read_mark(str(tmp_path)) == 4)
            return again
    again = run(second_life())
    assert [(e["meta"]["delivery_id"], e["meta"]["attempt"]) for e in again] == [(names[1], 2), (names[3], 2)]
    assert SP.read_mark(str(tmp_path)) == 4


def test_the_operator_replays_a_done_and_a_dead_event(tmp_path):
    names = ids(3)
    size = write_spool(tmp_path, names)
    emitter = acking(tmp_path, attempts=1, timeout=0.1)
    emitter.durable(3, size)

    async def scenario():
        async with Rulebook(emitter) as rb:
            await rb.take(3)
            await rb.ack(names[0], names[2])
            await until(lambda: emitter.counts["given_up"] == 1)   # names[1] times out with 1 attempt: dead
            SP.request_redo(str(tmp_path), [names[0], names[1]])
            replayed = await rb.take(2)
            await rb.ack(names[0], names[1])
            return replayed
    replayed = run(scenario())
    assert sorted((e["meta"]["delivery_id"], e["meta"]["attempt"]) for e in replayed) == [
        (names[0], 1), (names[1], 1)]
    assert {i["state"] for i in SP.list_deliveries(str(tmp_path))} == {"done"}


def test_a_replay_asked_while_stopped_is_handed_over_at_the_start(tmp_path):
    names = ids(2)
    size = write_spool(tmp_path, names)
    (tmp_path / "emitted.log").write_bytes(b"2\n")        # both done before
    SP.request_redo(str(tmp_path), [names[0]])
    emitter = acking(tmp_path)
    emitter.durable(2, size)
    assert emitter.recovered == 1

    async def scenario():
        async with Rulebook(emitter) as rb:
            event = await rb.take(1)
            await rb.nothing_more()
            return event
    assert run(scenario())[0]["meta"]["delivery_id"] == names[0]


def test_rotation_compacts_the_journal_but_keeps_dead_letters(tmp_path):
    names = ids(3)
    size = write_spool(tmp_path, names)
    emitter = acking(tmp_path, attempts=1, timeout=0.1)
    emitter.durable(3, size)

    async def scenario():
        async with Rulebook(emitter) as rb:
            await rb.take(3)
            await rb.ack(names[0], names[2])
            await until(lambda: emitter.counts["given_up"] == 1 and emitter.marked_seq == 3)   # names[1]: dead
            await until(lambda: SP.read_mark(str(tmp_path)) == 3)
            os.replace(tmp_path / "spool.log", tmp_path / "spool.log.1")
            emitter.rotated()
            await rb.ack(names[0])                       # a late duplicate acknowledgement
    run(scenario())
    entries = SP.parse_journal((tmp_path / "processing.log").read_bytes())
    # the acknowledgements of done events went, the dead letter stayed; the late one is new
    assert [(e[0], e[1]) for e in entries] == [("dead", names[1]), ("ack", names[0])]
    assert [i["state"] for i in SP.list_deliveries(str(tmp_path))] == ["done", "dead", "done"]


def test_with_acknowledgements_off_a_replay_is_handed_over_once(tmp_path):
    names = ids(2)
    size = write_spool(tmp_path, names)
    emitter = W["Emitter"](str(tmp_path), 0)
    emitter.journal_interval = 0.01
    emitter.read_mark()
    emitter.recover()
    emitter.durable(2, size)

    async def scenario():
        queue = asyncio.Queue()
        task = asyncio.ensure_future(emitter.run(queue))
        first = [await asyncio.wait_for(queue.get(), 5) for dummy in range(2)]
        SP.request_redo(str(tmp_path), [names[1]])
        again = await asyncio.wait_for(queue.get(), 5)
        await asyncio.sleep(0.1)
        task.cancel()
        await emitter.stop()
        return first, again
    first, again = run(scenario())
    assert "attempt" not in first[0]["meta"] and again["meta"]["delivery_id"] == names[1]
    assert SP.list_deliveries(str(tmp_path))[1]["state"] == "done"          # ack ... handover


# -- acknowledgements over HTTPS: the receiver's endpoint ------------------------------------------

ACK_TOKEN = "unit-ack-token-0123456789abcdef0123456789"


async def post_ack(receiver, body, token=ACK_TOKEN, length=None):
    payload = streams.StreamReader(mock.Mock(), 2 ** 16, loop=asyncio.get_running_loop())
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    payload.feed_data(data)
    payload.feed_eof()
    headers = {"Content-Length": str(len(data) if length is None else length), "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    response = await receiver.acknowledge(make_mocked_request("POST", "/_wpcloud/ack", headers=headers,
                                                              payload=payload))
    return response.status, response.text.strip()


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
    entries = SP.parse_journal((tmp_path / "spool" / "processing.log").read_bytes())
    assert [(e[0], e[1], e[5]) for e in entries] == [("ack", stored, "http")]
    assert receiver.spool.stats["acks"] == 2 and ACK_TOKEN not in json.dumps(receiver.spool.stats)


def test_ack_endpoint_is_off_without_a_token(tmp_path):
    receiver = make_receiver(tmp_path)
    assert run(post_ack(receiver, {"delivery_id": "sig-" + "f" * 32}))[0] == 404


def test_ack_route_comes_before_the_delivery_route(tmp_path):
    receiver = make_receiver(tmp_path)
    routes = [(r.method, r.resource.canonical) for r in receiver.app().router.routes()]
    assert routes.index(("POST", "/_wpcloud/ack")) < routes.index(("POST", "/{endpoint}"))


# -- secrets out of the actions' environment, and the new options ---------------------------------------

def test_secrets_are_taken_out_of_the_environment(monkeypatch):
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEYS", KEY)
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEY", OLD_KEY)
    monkeypatch.setenv("WPCLOUD_WEBHOOK_ACK_TOKEN", ACK_TOKEN)
    assert W["_keys_from_args"]({}) == [KEY] and W["_ack_token_from_args"]({}) == ACK_TOKEN
    assert sorted(W["_forget_secrets_in_environment"]()) == ["WPCLOUD_WEBHOOK_ACK_TOKEN", "WPCLOUD_WEBHOOK_HMAC_KEY",
                                                             "WPCLOUD_WEBHOOK_HMAC_KEYS"]
    for name in ("WPCLOUD_WEBHOOK_HMAC_KEYS", "WPCLOUD_WEBHOOK_HMAC_KEY", "WPCLOUD_WEBHOOK_ACK_TOKEN"):
        assert name not in os.environ
    assert W["_forget_secrets_in_environment"]() == []


def test_main_takes_the_key_out_of_the_environment_even_when_it_refuses_to_start(monkeypatch):
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEYS", KEY)
    with pytest.raises(ValueError, match="port must be"):
        run(W["main"](asyncio.Queue(), {"port": 0}))
    assert "WPCLOUD_WEBHOOK_HMAC_KEYS" not in os.environ


@pytest.mark.parametrize("args,message", [
    ({"port": 1, "ack_timeout": -1}, "ack_timeout must be a number of seconds (0: acknowledgements off)"),
    ({"port": 1, "ack_timeout": "soon"}, "ack_timeout must be a number of seconds"),
    ({"port": 1, "max_unacked": 0}, "max_unacked must be a positive integer"),
    ({"port": 1, "max_attempts": "x"}, "max_attempts must be a positive integer"),
    ({"port": 1, "ack_url": "eda.example.com/ack"}, "ack_url must be the URL actions reach"),
])
def test_acknowledgement_options_are_checked(args, message):
    with pytest.raises(ValueError) as exc:
        W["_check_args"](args)
    assert message in str(exc.value)


def test_a_weak_ack_token_is_refused_without_echoing_it():
    with pytest.raises(ValueError) as exc:
        W["_ack_token_from_args"]({"ack_token": "short-token"})
    assert "ack_token (or WPCLOUD_WEBHOOK_ACK_TOKEN) is too weak" in str(exc.value)
    assert "short-token" not in str(exc.value)


def test_the_emitter_follows_ack_timeout(tmp_path):
    assert type(W["_emitter"]({"ack_timeout": 0}, str(tmp_path))).__name__ == "Emitter"
    emitter = W["_emitter"]({"ack_timeout": "30", "max_unacked": "4", "max_attempts": 2}, str(tmp_path))
    assert (type(emitter).__name__, emitter.ack_timeout, emitter.max_unacked, emitter.max_attempts) == (
        "AckingEmitter", 30.0, 4, 2)
    assert W["_emitter"]({}, str(tmp_path)).ack_timeout == 600


def test_receiver_config_carries_the_ack_token_only_in_its_own_field(tmp_path):
    emitter = W["Emitter"](str(tmp_path), 0)
    config = W["_receiver_config"]({"port": 1, "ack_token": ACK_TOKEN}, [KEY], str(tmp_path), emitter, ACK_TOKEN)
    assert config["ack_token"] == ACK_TOKEN and "ack_token" not in config["args"]


# -- the operator command ------------------------------------------------------------------------------

def operator(capsys, *argv):
    code = W["_operator_main"](list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_operator_command_lists_replays_and_dismisses(tmp_path, capsys):
    names = ids(3)
    write_spool(tmp_path, names)
    (tmp_path / "emitted.log").write_bytes(b"1\n")
    SP.append_journal(str(tmp_path / "processing.log"), SP.journal_line("dead", names[2], 3, 5))
    code, out, err = operator(capsys, "list", "--spool-dir", str(tmp_path), "--json")
    assert code == 0 and "3 deliveries listed (1 dead, 1 done, 1 stored)" in err
    assert [json.loads(line)["state"] for line in out.splitlines()] == ["done", "stored", "dead"]
    code, out, err = operator(capsys, "replay", "--spool-dir", str(tmp_path), "--state", "dead")
    assert code == 0 and names[2] in out and "1 delivery asked to be handed over again" in err
    code, out, err = operator(capsys, "list", "--spool-dir", str(tmp_path), "--id", names[2])
    assert "replay" in out
    code, out, err = operator(capsys, "ack", "--spool-dir", str(tmp_path), "--id", names[1], "--id", names[0])
    assert code == 0 and "1 delivery marked done" in err           # names[0] already was done
    assert [i["state"] for i in SP.list_deliveries(str(tmp_path))] == ["done", "done", "replay"]
    code, out, err = operator(capsys, "replay", "--spool-dir", str(tmp_path), "--id", "sig-" + "9" * 32)
    assert code == 1 and "not in the spool: sig-" in err


@pytest.mark.parametrize("argv,message", [
    (["replay"], "replay needs a selector (--id, --since, --until, --state, --event) or --all"),
    (["list", "--id", "sig-1"], "--id sig-1 is not a delivery id"),
    (["list", "--since", "yesterday"], "--since/--until: 'yesterday' is neither an ISO 8601 time"),
])
def test_operator_command_refusals(tmp_path, capsys, argv, message):
    write_spool(tmp_path, ids(1))
    with pytest.raises(SystemExit) as exc:
        W["_operator_main"]([argv[0], "--spool-dir", str(tmp_path)] + argv[1:])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_operator_command_needs_a_spool(tmp_path, capsys):
    with pytest.raises(SystemExit):
        W["_operator_main"](["list", "--spool-dir", str(tmp_path / "nothing")])
    assert "not the spool_dir of a wpcloud.hosting.webhook source" in capsys.readouterr().err


# -- event names: normalised for the rules, as sent for the signature ------------------------------

def write_named_spool(directory, names):
    """A spool of one event per name; returns (delivery ids, size)."""
    directory.mkdir(parents=True, exist_ok=True)
    delivery_ids = ids(len(names))
    with open(directory / "spool.log", "ab") as handle:
        for seq, (delivery_id, name) in enumerate(zip(delivery_ids, names), 1):
            event = {"payload": {"event": name, "data": []}, "meta": {"delivery_id": delivery_id}}
            handle.write(W["_record"](seq, delivery_id, "fp", event))
    return delivery_ids, os.path.getsize(directory / "spool.log")


@pytest.mark.parametrize("acknowledgements", [True, False])
def test_the_rulebook_gets_the_normalised_name_and_the_payload_as_sent(tmp_path, acknowledgements):
    names = ["site-provisioned", "site_provisioned", "on-demand-backup", 42]
    delivery_ids, size = write_named_spool(tmp_path, names)
    if acknowledgements:
        emitter = acking(tmp_path)
    else:
        emitter = W["Emitter"](str(tmp_path), 0)
        emitter.read_mark()
        emitter.recover()
    emitter.durable(len(names), size)

    async def scenario():
        async with Rulebook(emitter) as rb:
            return await rb.take(len(names))
    events = run(scenario())
    assert [e["meta"]["event"] for e in events] == ["site_provisioned", "site_provisioned", "on_demand_backup", None]
    assert [e["payload"]["event"] for e in events] == names
    assert [e["meta"]["delivery_id"] for e in events] == delivery_ids


def test_a_hyphenated_name_is_verified_as_sent(tmp_path):
    """The signature covers the name as sent: site-provisioned verifies, and is stored untouched."""
    receiver = make_receiver(tmp_path)
    assert run(deliver(receiver, signed(event="site-provisioned"))) == (200, "OK")
    stored = SP.read_records(str(tmp_path / "spool" / "spool.log"))[0]
    assert json.loads(stored[0][4])["payload"]["event"] == "site-provisioned"
    # the same signature over the normalised name is another message: refused
    forged = signed(event="site-provisioned", salt="6b2u" * 8).replace(b'"site-provisioned"', b'"site_provisioned"')
    assert run(deliver(receiver, forged)) == (401, "signature mismatch")


def test_operator_event_selector_matches_either_spelling(tmp_path, capsys):
    delivery_ids, dummy = write_named_spool(tmp_path, ["site-provisioned", "site_provisioned", "over_quota"])
    code, out, err = operator(capsys, "list", "--spool-dir", str(tmp_path), "--event", "site_provisioned", "--json")
    assert code == 0 and [json.loads(line)["delivery_id"] for line in out.splitlines()] == delivery_ids[:2]
    code, out, err = operator(capsys, "list", "--spool-dir", str(tmp_path), "--event", "over-quota", "--json")
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["over_quota"]
