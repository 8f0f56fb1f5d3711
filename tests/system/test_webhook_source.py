"""The wpcloud.hosting.webhook event source in-process (loaded with runpy, as ansible-rulebook does),
on a real HTTPS socket on 127.0.0.1, fed by the emulator's WebhookSender and by raw requests."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time

import pytest

import webhook_harness as wh
from playbooks import BIN, ansible_env

pytest.importorskip("aiohttp")

from webhooks import WebhookSender, build_body  # noqa: E402  (tests/support/emulator on sys.path)

KEY = "source-test-key-0123456789abcdef"
OLD_KEY = "source-test-old-key-fedcba9876543210"


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return wh.tls(tmp_path_factory.mktemp("tls"))


def base_args(tmp_path, tls, port, **extra):
    return wh.source_args(tmp_path / "spool", tls, port, "%s,%s" % (KEY, OLD_KEY), **extra)


def run_source(args, **kw):
    """Start and wait until it listens; the caller stops it."""
    return wh.Source(args, **kw).start()


def wait(predicate, timeout=10):
    return wh.wait_for(predicate, timeout, 0.02)


def test_sender_events_emitted_with_delivery_ids(tls, tmp_path):
    port = wh.free_port()
    url = "https://127.0.0.1:%d" % port
    harness = run_source(base_args(tmp_path, tls, port))
    try:
        meta = {"webhook_url": url + "/hooks/wpcloud", "webhook_hmac_key": KEY}
        sender = WebhookSender(lambda client, key: meta.get(key), ca_path=tls["ca"], retry_delay=0.1)
        sender.emit("demo", "site_provisioned", 101)
        changed = {"passed_old": "a.example", "passed_new": "b.example", "then_api_current": "b.example",
                   "then_db_siteurl": "https://b.example"}
        sender.emit("demo", "domain_name_changed", 101, changed)
        sender.emit("demo", "wp_version_changed", 101, {"version": "previous"})
        sender.emit("demo", "made_up_event", None, {"nested": {"new_field": [1, 2]}, "x": None})
        sender.emit("demo", "malware-scanner-results", 101, {"status": "clean", "results": []},
                    signature_in_data=True)
        assert sender.wait_idle(20)
        meta["webhook_hmac_key"] = OLD_KEY                       # rotation: old key still active
        sender.emit("demo", "response_ticket_updated", 101, {"response-ticket-id": "t.1", "status": "success"})
        sender.close()
        assert [d["status"] for d in sender.deliveries] == [200] * 6
        assert all(d["attempt"] == 1 for d in sender.deliveries)
        wait(lambda: len(harness.events) == 6)
    finally:
        harness.stop()
    by_event = {e["payload"]["event"]: e for e in harness.events}
    assert set(by_event) == {"site_provisioned", "domain_name_changed", "wp_version_changed",
                             "made_up_event", "malware-scanner-results", "response_ticket_updated"}
    for delivery in sender.deliveries:
        event = by_event[delivery["event"]]
        assert event["meta"]["delivery_id"] == wh.delivery_id_of(delivery["body"])
        assert event["payload"] == json.loads(delivery["body"])       # untouched, unknown fields too
        assert event["meta"]["endpoint"] == "hooks/wpcloud"
    assert by_event["response_ticket_updated"]["meta"]["signature"]["key_index"] == 1
    assert by_event["site_provisioned"]["meta"]["signature"] == {"verified": True, "key_index": 0,
                                                                 "location": "top"}
    mal = by_event["malware-scanner-results"]
    assert mal["meta"]["signature"]["location"] == "data"
    assert isinstance(mal["payload"]["data"]["signature"]["timestamp"], int)
    assert by_event["made_up_event"]["payload"]["data"] == {"nested": {"new_field": [1, 2]}, "x": None}


def test_rejections_and_duplicates(tls, tmp_path):
    port = wh.free_port()
    url = "https://127.0.0.1:%d/hook" % port
    harness = run_source(base_args(tmp_path, tls, port, max_body_size=4096))
    try:
        good = build_body("site_provisioned", 7, None, KEY).decode()
        payload = json.loads(good)
        forged = build_body("site_provisioned", 8, None, "not-the-key").decode()
        tampered = dict(payload, event="domain_name_changed")
        replayed_other_body = dict(payload, atomic_site_id=9999, data={"evil": True})
        unsigned = json.dumps({"event": "site_provisioned", "timestamp": 1, "data": []})
        upper = json.loads(build_body("wp_version_changed", 7, {"version": "latest"}, KEY))
        upper["signature"]["signature"] = upper["signature"]["signature"].upper()

        assert wh.post(url, good, tls["ca"])[0] == 200
        assert wh.post(url, good, tls["ca"])[0] == 200                    # redelivery: 200, not emitted again
        assert wh.post(url, json.dumps(replayed_other_body), tls["ca"])[0] == 409
        assert wh.post(url, forged, tls["ca"])[0] == 401
        assert wh.post(url, json.dumps(tampered), tls["ca"])[0] == 401
        assert wh.post(url, unsigned, tls["ca"])[0] == 401
        assert wh.post(url, "{not json", tls["ca"])[0] == 400
        assert wh.post(url, "[1, 2]", tls["ca"])[0] == 400
        # judged by the body, not the header: the same delivery under another type is a redelivery
        assert wh.post(url, good, tls["ca"], content_type="text/plain") == (200, "OK (duplicate)\n")
        assert wh.post(url, good, tls["ca"], content_type="application/x-www-form-urlencoded")[0] == 200
        assert wh.post(url, good, tls["ca"], content_type=None)[0] == 200
        assert wh.post(url, "{not json", tls["ca"], content_type="text/plain")[0] == 400
        big = json.dumps(dict(payload, data={"pad": "x" * 5000}))
        assert wh.post(url, big, tls["ca"])[0] == 413
        assert wh.post(url, json.dumps(upper), tls["ca"])[0] == 200
        # secret-bearing headers never reach the event
        probe = build_body("header_probe", None, {"k": 1}, KEY)
        secret_headers = {"Authorization": "Bearer abc", "Cookie": "a=b", "X-Hub-Signature-256": "sha256=00",
                          "X-Api-Key": "k", "X-Trace": "keep-me"}
        status = wh.post(url, probe, tls["ca"], headers=secret_headers)[0]
        assert status == 200
        wait(lambda: len(harness.events) == 3)
        counters = wh.healthz(url.rsplit("/", 1)[0], tls["ca"])
    finally:
        harness.stop()
    events = [e["payload"]["event"] for e in harness.events]
    assert events == ["site_provisioned", "wp_version_changed", "header_probe"]
    assert harness.events[0]["payload"]["atomic_site_id"] == 7
    headers = {k.lower() for k in harness.events[2]["meta"]["headers"]}
    assert "x-trace" in headers
    assert not headers & {"authorization", "cookie", "x-hub-signature-256", "x-api-key"}
    assert counters["duplicates"] == 4 and counters["conflicts"] == 1 and counters["stored"] == 3
    assert counters["rejected"] == 7


def test_refuses_to_start_without_key_or_tls(tls, tmp_path, monkeypatch):
    monkeypatch.delenv("WPCLOUD_WEBHOOK_HMAC_KEYS", raising=False)
    monkeypatch.delenv("WPCLOUD_WEBHOOK_HMAC_KEY", raising=False)
    args = base_args(tmp_path, tls, wh.free_port())
    args["hmac_secret"] = ""
    with pytest.raises(ValueError, match="allow_unsigned"):
        asyncio.run(wh.plugin()["main"](asyncio.Queue(), args))
    args = base_args(tmp_path, tls, wh.free_port())
    del args["certfile"]
    with pytest.raises(ValueError, match="allow_insecure_http"):
        asyncio.run(wh.plugin()["main"](asyncio.Queue(), args))


def test_env_key_fallback_and_unsigned_mode(tls, tmp_path, monkeypatch):
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEYS", "%s, %s" % (OLD_KEY, KEY))
    port = wh.free_port()
    url = "http://127.0.0.1:%d" % port
    args = {"host": "127.0.0.1", "port": port, "allow_insecure_http": True,
            "spool_dir": str(tmp_path / "s1"), "emit_confirm_delay": 0}
    harness = run_source(args)
    try:
        assert wh.post(url + "/", build_body("e", None, None, KEY))[0] == 200
        wait(lambda: len(harness.events) == 1)
        assert harness.events[0]["meta"]["signature"]["key_index"] == 1
    finally:
        harness.stop()
    assert "WPCLOUD_WEBHOOK_HMAC_KEYS" not in os.environ     # read, then taken out of the actions' environment
    port = wh.free_port()
    url = "http://127.0.0.1:%d" % port
    harness = run_source({"host": "127.0.0.1", "port": port, "allow_insecure_http": "true",
                          "allow_unsigned": True, "spool_dir": str(tmp_path / "s2")})
    try:
        body = json.dumps({"event": "x", "timestamp": 1, "data": []})
        assert wh.post(url + "/", body)[0] == 200
        assert wh.post(url + "/", body)[0] == 200                     # same body = same delivery
        wait(lambda: len(harness.events) == 1)
        assert harness.events[0]["meta"]["delivery_id"].startswith("body-")
        assert harness.events[0]["meta"]["signature"] == {"verified": False}
    finally:
        harness.stop()


def test_bearer_token_and_freshness(tls, tmp_path):
    port = wh.free_port()
    url = "http://127.0.0.1:%d" % port
    harness = run_source({"host": "127.0.0.1", "port": port, "allow_insecure_http": True,
                          "hmac_secret": [KEY], "token": "tok-123", "max_age": 1,
                          "spool_dir": str(tmp_path / "s"), "emit_confirm_delay": 0})
    try:
        def send(body, token="tok-123"):
            return wh.post(url + "/", body, headers={"Authorization": "Bearer " + token})[0]
        old = build_body("e", None, None, KEY, ts="10000000000000000", salt="aa")
        assert send(build_body("e", None, None, KEY), token="wrong") == 401
        assert send(build_body("e", None, None, KEY, ts="20000000000000000", salt="bb")) == 200
        time.sleep(1.3)
        assert send(build_body("e", None, None, KEY, ts="20000000000000001", salt="cc")) == 200
        assert send(old) == 401                                 # older than what was seen >1 s ago
        wait(lambda: len(harness.events) == 2)
    finally:
        harness.stop()


def test_restart_emits_stored_events_and_remembers_deliveries(tls, tmp_path):
    """Stored but unemitted events (consumer stalled) come out after a restart, in order, once."""
    port = wh.free_port()
    url = "https://127.0.0.1:%d" % port
    # the stalled queue holds one event: with a long confirm delay its mark is never written
    args = base_args(tmp_path, tls, port, emit_confirm_delay=60)
    harness = wh.Source(args)
    harness.pause.set()                       # the rulebook takes nothing
    harness.start()
    bodies = [build_body("ev_%02d" % i, i, {"i": i}, KEY) for i in range(30)]
    try:
        for body in bodies:
            assert wh.post(url + "/", body, tls["ca"])[0] == 200
    finally:
        harness.stop()
    # nothing consumed except possibly the one item the queue (size 1) held
    assert len(harness.events) == 0
    second = run_source(args)
    try:
        wait(lambda: len(second.events) == 30)
        counters = wh.healthz(url, tls["ca"])
        assert counters["recovered"] == 30
        # a redelivery of a stored event after the restart: 200, not emitted again. Events come out in
        # the order they were accepted, so a new event accepted after it is the point by which a wrong
        # second emission would have shown (not a sleep, which a loaded machine can outlast)
        assert wh.post(url + "/", bodies[3], tls["ca"])[0] == 200
        later = build_body("ev_30", 30, {"i": 30}, KEY)
        assert wh.post(url + "/", later, tls["ca"])[0] == 200
        wait(lambda: len(second.events) >= 31)
    finally:
        second.stop()
    assert [e["payload"]["event"] for e in second.events] == ["ev_%02d" % i for i in range(31)]
    assert [e["meta"]["delivery_id"] for e in second.events] == [wh.delivery_id_of(b) for b in bodies + [later]]
    spool = tmp_path / "spool"
    assert KEY not in (spool / "spool.log").read_text()


def test_torn_spool_tail_is_cut(tls, tmp_path):
    port = wh.free_port()
    url = "https://127.0.0.1:%d" % port
    args = base_args(tmp_path, tls, port)
    harness = run_source(args)
    body = build_body("first", 1, None, KEY)
    try:
        assert wh.post(url + "/", body, tls["ca"])[0] == 200
        wait(lambda: len(harness.events) == 1)
    finally:
        harness.stop()
    with open(tmp_path / "spool" / "spool.log", "ab") as handle:
        handle.write(b"2\tsig-x\tfp\t{\"payload\": {\"ev")       # crash in the middle of a write
    second = run_source(args)
    try:
        assert wh.post(url + "/", build_body("second", 1, None, KEY), tls["ca"])[0] == 200
        wait(lambda: any(e["payload"]["event"] == "second" for e in second.events))
    finally:
        second.stop()
    lines = (tmp_path / "spool" / "spool.log").read_bytes().splitlines()
    assert [line.split(b"\t")[0] for line in lines] == [b"1", b"2"]
    # "first" was emitted with emit_confirm_delay 0 before the stop: not emitted again
    assert [e["payload"]["event"] for e in second.events] == ["second"]


def test_spool_rotation(tls, tmp_path):
    port = wh.free_port()
    url = "https://127.0.0.1:%d" % port
    args = base_args(tmp_path, tls, port, spool_max_bytes=2000)
    harness = run_source(args)
    bodies = [build_body("rot", i, {"i": i}, KEY) for i in range(40)]
    try:
        for body in bodies:
            assert wh.post(url + "/", body, tls["ca"])[0] == 200
            # emitted and its mark known to the receiver: the next write may rotate
            wait(lambda: wh.healthz(url, tls["ca"])["backlog"] == 0)
    finally:
        harness.stop()
    spool = tmp_path / "spool"
    assert (spool / "spool.log.1").exists()
    total = sum(len(b) for b in bodies)
    assert os.path.getsize(spool / "spool.log") < total / 2     # older segments were rotated out
    assert len(harness.events) == 40
    second = run_source(args)
    try:
        assert wh.post(url + "/", bodies[-1], tls["ca"])[0] == 200      # still known after restart
        later = build_body("rot", 40, {"i": 40}, KEY)                 # emitted after it, were it emitted
        assert wh.post(url + "/", later, tls["ca"])[0] == 200
        wait(lambda: len(second.events) >= 1)
    finally:
        second.stop()
    assert [e["meta"]["delivery_id"] for e in second.events] == [wh.delivery_id_of(later)]


def test_documentation_renders_with_ansible_doc(tmp_path):
    """The galaxy-importer reads an event source's DOCUMENTATION with ansible-doc; sanity does not look
    at extensions/, so a YAML slip there (a line ending in ':') would otherwise first show at release."""
    result = subprocess.run([str(BIN / "ansible-doc"), "-M", str(wh.SOURCE_FILE.parent), "--json", "webhook"],
                            capture_output=True, text=True, check=False, env=ansible_env(tmp_path))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)["webhook"]["doc"]
    for option in ("host", "port", "hmac_secret", "hmac_secret_file", "certfile"):
        assert option in doc["options"], sorted(doc["options"])
