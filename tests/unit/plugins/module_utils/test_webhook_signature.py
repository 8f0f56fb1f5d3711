# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Vectors are computed here with hmac/hashlib (and openssl), never with the code under test."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import subprocess

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils import _webhook_signature as ws

KEY = "k3y-0123456789abcdef-rotation-A"
OLD_KEY = "k3y-old-fedcba9876543210-B"
TS = "29848839199040411"            # 17 digits, as in the public example (> 2**53)
SALT = "3cfd5d7d47e0b3f79d8890bd9b344db0"


def ref_sig(key, event, ts, salt):
    return hmac.new(key.encode(), ("%s:%s:%s" % (event, ts, salt)).encode(), hashlib.sha256).hexdigest()


def body(event="site_provisioned", key=KEY, ts=TS, salt=SALT, sig=None, **extra):
    payload = {"event": event, "timestamp": 1751333700, "atomic_site_id": 123456789, "data": []}
    payload.update(extra)
    payload["signature"] = {"signature": sig or ref_sig(key, event, ts, salt), "timestamp": ts, "salt": salt}
    return json.dumps(payload)


def test_valid_raw_body_str_and_bytes():
    for raw in (body(), body().encode()):
        res = ws.verify_signature(raw, KEY)
        assert res.valid and bool(res)
        assert res.reason is None and res.key_index == 0
        assert res.timestamp == TS and res.salt == SALT and res.location == "top"
        assert res.event == "site_provisioned"


@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl not installed")
def test_vector_from_openssl():
    msg = "domain_name_changed:%s:%s" % (TS, SALT)
    out = subprocess.run(["openssl", "dgst", "-sha256", "-hmac", KEY], input=msg.encode(),
                         capture_output=True, check=True).stdout.decode()
    digest = out.strip().split()[-1]
    assert len(digest) == 64
    raw = body(event="domain_name_changed", sig=digest, data={"passed_old": "a", "passed_new": "b"})
    assert ws.verify_signature(raw, [KEY]).valid


def test_compute_signature_matches_reference():
    assert ws.compute_signature(KEY, "e", TS, SALT) == ref_sig(KEY, "e", TS, SALT)


def test_tampered_event_name():
    payload = json.loads(body(event="site_provisioned"))
    payload["event"] = "domain_name_changed"
    res = ws.verify_signature(json.dumps(payload), KEY)
    assert not res.valid and res.reason == ws.MISMATCH and res.key_index is None


def test_tampered_salt_and_timestamp():
    payload = json.loads(body())
    payload["signature"]["salt"] = SALT[:-1] + "1"
    assert ws.verify_signature(json.dumps(payload), KEY).reason == ws.MISMATCH
    payload = json.loads(body())
    payload["signature"]["timestamp"] = str(int(TS) + 1)
    assert ws.verify_signature(json.dumps(payload), KEY).reason == ws.MISMATCH


def test_data_is_not_covered():
    """Documented limitation: the signature does not cover data or atomic_site_id."""
    payload = json.loads(body())
    payload["data"] = {"anything": "else"}
    payload["atomic_site_id"] = 1
    assert ws.verify_signature(json.dumps(payload), KEY).valid


def test_wrong_key():
    res = ws.verify_signature(body(), "not-the-key")
    assert res.reason == ws.MISMATCH and not res.valid


def test_rotated_keys_report_matching_index():
    raw_old = body(key=OLD_KEY)
    raw_new = body(key=KEY, salt="aa" * 16)
    assert ws.verify_signature(raw_old, [KEY, OLD_KEY]).key_index == 1
    assert ws.verify_signature(raw_new, [KEY, OLD_KEY]).key_index == 0
    assert ws.verify_signature(raw_old, [OLD_KEY]).key_index == 0
    assert ws.verify_signature(raw_old, [KEY]).reason == ws.MISMATCH
    # bytes keys and empty entries
    assert ws.verify_signature(raw_old, ["", KEY.encode(), OLD_KEY.encode()]).key_index == 1


def test_result_never_holds_a_key():
    res = ws.verify_signature(body(key=OLD_KEY), [KEY, OLD_KEY])
    text = json.dumps(res.to_dict()) + repr(res)
    assert KEY not in text and OLD_KEY not in text


def test_uppercase_hex_accepted():
    sig = ref_sig(KEY, "site_provisioned", TS, SALT).upper()
    assert ws.verify_signature(body(sig=sig), KEY).valid


def test_numeric_17_digit_timestamp_inside_data():
    """The malware-scan example: signature inside data, timestamp a JSON number > 2**53."""
    ts = "14981791994327545"
    assert int(ts) > 2 ** 53 and float(ts) != int(ts)   # a float would lose the last digit
    sig = ref_sig(KEY, "malware-scanner-results", ts, SALT)
    raw = ('{"event":"malware-scanner-results","timestamp":1751333700,"atomic_site_id":7,'
           '"data":{"status":"clean","results":[],"signature":{"signature":"%s",'
           '"timestamp":%s,"salt":"%s"}}}' % (sig, ts, SALT))
    res = ws.verify_signature(raw, KEY)
    assert res.valid and res.location == "data" and res.timestamp == ts
    # parsed with the normal json module: Python ints are exact, still valid
    assert ws.verify_signature(json.loads(raw), KEY).valid
    # parsed as floats (what JavaScript would do): precision lost -> malformed, not a crash
    res = ws.verify_signature(json.loads(raw, parse_int=float), KEY)
    assert not res.valid and res.reason == ws.MALFORMED


def test_numeric_float_text_kept_exact_from_raw_body():
    ts = "1.4981791994327545e16"
    sig = ref_sig(KEY, "e", ts, SALT)
    raw = '{"event":"e","data":[],"signature":{"signature":"%s","timestamp":%s,"salt":"%s"}}' % (sig, ts, SALT)
    assert ws.verify_signature(raw, KEY).valid


def test_top_level_signature_wins_over_data():
    payload = json.loads(body())
    payload["data"] = {"signature": {"signature": "0" * 64, "timestamp": "1", "salt": "x"}}
    assert ws.verify_signature(json.dumps(payload), KEY).location == "top"


@pytest.mark.parametrize("raw,reason", [
    ('{"event":"site_provisioned","data":[]}', ws.MISSING_SIGNATURE),
    ('{"event":"e","data":{"x":1}}', ws.MISSING_SIGNATURE),
    ('not json', ws.MALFORMED),
    (b'\xff\xfe', ws.MALFORMED),
    ('[1,2]', ws.MALFORMED),
    ('{"data":[],"signature":{"signature":"%s","timestamp":"1","salt":"s"}}' % ("a" * 64), ws.MALFORMED),
    ('{"event":"e","signature":{"signature":"zz","timestamp":"1","salt":"s"}}', ws.MALFORMED),
    ('{"event":"e","signature":{"signature":"%s","salt":"s"}}' % ("a" * 64), ws.MALFORMED),
    ('{"event":"e","signature":{"signature":"%s","timestamp":true,"salt":"s"}}' % ("a" * 64), ws.MALFORMED),
])
def test_rejections(raw, reason):
    res = ws.verify_signature(raw, KEY)
    assert not res.valid and res.reason == reason


def test_no_key_is_an_error():
    with pytest.raises(ValueError):
        ws.verify_signature(body(), [])
    with pytest.raises(ValueError):
        ws.verify_signature(body(), None)


def test_delivery_id_stable_and_pair_based():
    a = ws.verify_signature(body(), KEY).delivery_id
    b = ws.verify_signature(body(data={"other": 1}), KEY).delivery_id
    c = ws.verify_signature(body(salt="bb" * 16), KEY).delivery_id
    assert a == b != c
    assert a == "sig-" + hashlib.sha256(("%s:%s" % (TS, SALT)).encode()).hexdigest()[:32]


def test_replay_store_accepts_a_pair_once():
    store = ws.ReplayStore(max_entries=10)
    raw = body()
    first = ws.verify_signature(raw, KEY, replay_store=store, fingerprint="h1")
    assert first.valid and first.replay == ws.NEW
    again = ws.verify_signature(raw, KEY, replay_store=store, fingerprint="h1")
    assert not again.valid and again.reason == ws.REPLAYED and again.replay == ws.DUPLICATE
    other_body = ws.verify_signature(body(data={"x": 1}), KEY, replay_store=store, fingerprint="h2")
    assert other_body.reason == ws.REPLAYED and other_body.replay == ws.CONFLICT
    # a forged signature never enters the store
    forged = ws.verify_signature(body(salt="cc" * 16, sig="0" * 64), KEY, replay_store=store)
    assert forged.reason == ws.MISMATCH and (TS, "cc" * 16) not in store


def test_replay_store_is_bounded():
    store = ws.ReplayStore(max_entries=3)
    for i in range(10):
        assert store.check(str(i), "s") == ws.NEW
    assert len(store) == 3
    assert ("9", "s") in store and ("0", "s") not in store


def test_replay_store_persists(tmp_path):
    path = str(tmp_path / "replay.tsv")
    store = ws.ReplayStore(max_entries=100, path=path)
    assert store.check(TS, SALT, "h") == ws.NEW
    with open(path, "a") as handle:
        handle.write("123.0\ttorn")          # a torn last line is ignored
    again = ws.ReplayStore(max_entries=100, path=path)
    assert again.check(TS, SALT, "h") == ws.DUPLICATE
    assert again.check(TS, SALT, "other") == ws.CONFLICT
    text = open(path).read()
    assert KEY not in text


def test_replay_store_compacts(tmp_path):
    path = str(tmp_path / "replay.tsv")
    store = ws.ReplayStore(max_entries=5, path=path)
    for i in range(30):
        store.check(str(i), "s")
    lines = [line for line in open(path).read().splitlines() if line]
    assert len(lines) <= 10
    assert ws.ReplayStore(max_entries=5, path=path).check("29", "s") == ws.DUPLICATE


def test_freshness_uses_receiver_first_seen_time():
    now = [1000.0]
    store = ws.ReplayStore(max_entries=100, max_age=60, clock=lambda: now[0])
    assert store.check("500", "a") == ws.NEW
    now[0] += 30
    assert store.check("400", "b") == ws.NEW       # older, but nothing seen 60 s ago yet
    now[0] += 31                                  # "500" was first seen 61 s ago
    assert store.check("499", "c") == ws.STALE    # created before something seen > 60 s ago
    assert store.check("501", "d") == ws.NEW
    assert store.check("abc", "e") == ws.NEW      # non-numeric: not checked (documented)
    res = ws.verify_signature(body(ts="10"), KEY, replay_store=store)
    assert res.reason == ws.STALE and not res.valid
