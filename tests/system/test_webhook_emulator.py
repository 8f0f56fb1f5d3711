"""End to end through the emulator: client metadata set over the API, events raised with
POST /_emulator/events, delivered by the emulator's WebhookSender to the event source (in-process)."""

from __future__ import annotations

import json
import time

import pytest

import webhook_harness as wh

launcher = pytest.importorskip("launcher")

KEY = "emulator-path-key-5e6f7a8b9c0d1e2f"


def test_emulator_events_reach_the_source(tmp_path):
    tls = wh.tls(tmp_path / "tls")
    port = wh.free_port()
    url = "https://127.0.0.1:%d" % port
    harness = wh.Source(wh.source_args(tmp_path / "spool", tls, port, [KEY])).start()
    emu = launcher.start_emulator(tmp_path / "emu", extra_args=["--webhook-ca", tls["ca"]])
    try:
        client = emu.client
        for meta_key, value in (("webhook_url", url + "/wpcloud"), ("webhook_hmac_key", KEY)):
            status, body = emu.api("client-meta/%s/%s/add" % (client, meta_key), method="POST", data={"value": value})
            assert status == 200, body
        emu.emit("domain_name_changed", 31, {"passed_old": "a.example", "passed_new": "b.example",
                                             "then_api_current": "b.example", "then_db_siteurl": "https://b.example"})
        emu.emit("wp_version_changed", 31, {"version": "previous"})
        emu.emit("not_in_any_list", None, {"surprise": [1, {"x": "y"}]})
        deadline = time.monotonic() + 30
        while len(harness.events) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        deliveries = emu.deliveries()
    finally:
        emu.stop()
        harness.stop()
    assert [e["payload"]["event"] for e in harness.events] == ["domain_name_changed", "wp_version_changed",
                                                               "not_in_any_list"]
    assert [(d["event"], d["status"], d["signed"]) for d in deliveries] == [
        ("domain_name_changed", 200, True), ("wp_version_changed", 200, True), ("not_in_any_list", 200, True)]
    for delivery, event in zip(deliveries, harness.events):
        assert event["meta"]["delivery_id"] == wh.delivery_id_of(delivery["body"])
        assert event["payload"] == json.loads(delivery["body"])
        assert KEY not in json.dumps(delivery)          # the delivery log never holds the key
    assert harness.events[2]["payload"]["data"] == {"surprise": [1, {"x": "y"}]}
