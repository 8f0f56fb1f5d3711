# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""webhook/signature.py: verification, key rules and the one key parser, delivery ids and fingerprints.

Vectors are computed here with hmac/hashlib (and openssl), never with the code under test. No server."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import signature as ws

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


def test_verify_signature_takes_no_replay_store():
    """Replays are replay.py's business: the signature check alone never says replayed/stale."""
    raw = body()
    assert ws.verify_signature(raw, KEY).valid and ws.verify_signature(raw, KEY).valid
    assert ws.verify_signature(raw, KEY).replay is None


# -- the one key parser -----------------------------------------------------------------------

@pytest.mark.parametrize("value,split,expected", [
    (None, False, []),
    ("", False, []),
    ("   ", True, []),
    ("k1", False, ["k1"]),
    (" k1 \n", False, ["k1"]),
    ("a,b", False, ["a,b"]),                         # one key may contain a comma
    ("a, b ,,c", True, ["a", "b", "c"]),              # the source's comma-separated form
    (["a", " b ", "", None, "c"], False, ["a", "b", "c"]),
    (("a", "b"), False, ["a", "b"]),
    (["a,b"], True, ["a", "b"]),
    ([b"bytes-key", "s"], False, ["bytes-key", "s"]),
    (b"one", False, ["one"]),
    (12345, False, ["12345"]),                       # a number from a template is text
    ([12345, "x"], False, ["12345", "x"]),
])
def test_parse_keys(value, split, expected):
    assert ws.parse_keys(value, split_commas=split) == expected


def test_verify_signature_reads_keys_with_the_same_parser():
    raw = body(key=OLD_KEY)
    assert ws.verify_signature(raw, [" ", "\t%s\n" % OLD_KEY]).key_index == 0
    assert ws.verify_signature(raw, "  %s  " % OLD_KEY).valid
    with pytest.raises(ValueError):
        ws.verify_signature(raw, ["", " ", None])


def test_read_key_file(tmp_path):
    path = tmp_path / "keys"
    path.write_text("# new key first\n\n  %s  \n#%s\n%s\n" % (KEY, "commented-out", OLD_KEY))
    assert ws.read_key_file(str(path)) == [KEY, OLD_KEY]
    path.write_text("a,b\n")
    assert ws.read_key_file(str(path)) == ["a,b"]      # lines, never comma-split
    path.write_text("# only a comment\n\n")
    assert ws.read_key_file(str(path)) == []
    with pytest.raises(OSError):
        ws.read_key_file(str(tmp_path / "missing"))


# -- key rules --------------------------------------------------------------------------------

def test_key_strength_rule():
    strong = "0123456789abcdef0123456789abcdef"
    assert ws.MIN_KEY_LENGTH == 32 and ws.MIN_KEY_DISTINCT == 10
    assert ws.key_is_strong(strong)
    assert not ws.key_is_strong(strong[:-1])                    # 31 characters
    assert not ws.key_is_strong("abcdefghi" * 4)                # 36 characters, 9 distinct
    assert not ws.key_is_strong(" " + strong)                   # surrounding space
    assert "32" in ws.KEY_RULE and "10" in ws.KEY_RULE and "openssl rand" in ws.KEY_RULE


def test_weak_keys_named_by_position_never_by_value():
    strong = "0123456789abcdef0123456789abcdef"
    assert ws.weak_keys([strong, strong + "x"]) == ""
    assert ws.weak_keys([strong, "short-secret"]) == "key 2 of 2 is"
    text = ws.weak_keys(["short-secret", strong, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"])
    assert text == "keys 1, 3 of 3 are" and "short-secret" not in text


# -- delivery ids and the body fingerprint: one format --------------------------------------------

def test_delivery_id_and_fingerprint_format():
    raw = body().encode()
    digest = hashlib.sha256(raw).hexdigest()
    assert ws.body_fingerprint(raw) == ws.body_fingerprint(raw.decode()) == digest[:32]
    assert ws.unsigned_delivery_id(raw) == "body-" + digest[:32]
    pair = hashlib.sha256(("%s:%s" % (TS, SALT)).encode()).hexdigest()
    assert ws.delivery_id_for(TS, SALT) == "sig-" + pair[:32]
    assert ws.SIGNED_ID_PREFIX == "sig-" and ws.UNSIGNED_ID_PREFIX == "body-" and ws.DELIVERY_ID_HEX_DIGITS == 32


def _repo_file(*parts):
    path = Path(__file__).resolve().parents[4].joinpath(*parts)
    if not path.is_file():
        pytest.skip("%s is not in this copy of the collection" % "/".join(parts))
    return path.read_text(encoding="utf-8")


def test_delivery_id_format_is_the_documented_one():
    """docs/webhooks.md, the event source's DOCUMENTATION and the filter's RETURN state the format
    of the code (it was "SHA-256 of ..." in the docs while the code keeps 32 hex digits)."""
    guide = " ".join(_repo_file("docs", "webhooks.md").split())
    assert ("`sig-` + the first 32 hex digits of the SHA-256 of `{signature.timestamp}:{signature.salt}`"
            in guide)
    assert "`body-` + the first 32 hex digits of the SHA-256 of the raw body" in guide
    source = " ".join(_repo_file("extensions", "eda", "plugins", "event_source", "webhook.py").split())
    assert ("C(sig-) and the first 32 hex digits of the SHA-256 of C({signature.timestamp}:{signature.salt})"
            in source)
    assert "C(body-) and the first 32 hex digits of the SHA-256 of the body" in source
    verify = _repo_file("plugins", "filter", "webhook_verify.py")
    assert ("C(sig-) and the first 32 hex digits of the SHA-256 of C({signature.timestamp}:{signature.salt})"
            in " ".join(verify.split()))
    sample = re.search(r"delivery_id:.*?sample: (\S+)", verify, re.S).group(1)
    assert re.match(r"^sig-[0-9a-f]{%d}$" % ws.DELIVERY_ID_HEX_DIGITS, sample)


# -- exact_payload: verifying an already-parsed body without losing exactness ------------------

def test_exact_payload_uses_the_parsed_body_only_when_it_is_exact():
    raw = body().encode()
    parsed = json.loads(raw)
    assert ws.exact_payload(raw, parsed) is parsed                  # ASCII, string members
    # a numeric timestamp: its text is what was signed (17 digits; "-0"; 1e16): parse the raw body again
    for ts in ("14981791994327545", "-0", "1.4981791994327545e16"):
        sig = ref_sig(KEY, "e", ts, SALT)
        numeric = ('{"event":"e","data":[],"signature":{"signature":"%s","timestamp":%s,"salt":"%s"}}'
                   % (sig, ts, SALT)).encode()
        assert ws.exact_payload(numeric, json.loads(numeric)) is numeric
        assert ws.verify_signature(ws.exact_payload(numeric, json.loads(numeric)), KEY).valid
    # not ASCII (a body json.loads reads with another decoding than the exact parser): raw
    accented = body(data={"name": "caf\u00e9"}).encode()
    accented = accented.replace(b"caf\\u00e9", "caf\u00e9".encode())
    assert ws.exact_payload(accented, json.loads(accented)) is accented
    # no signature, or the event name not a string: raw (verify_signature then says why)
    unsigned = b'{"event":"e","data":[]}'
    assert ws.exact_payload(unsigned, json.loads(unsigned)) is unsigned
    assert ws.exact_payload(b"[1]", [1]) == b"[1]"


@pytest.mark.parametrize("mutate", [
    lambda p: p,
    lambda p: dict(p, event="other"),
    lambda p: dict(p, signature=dict(p["signature"], salt="x" + SALT)),
    lambda p: dict(p, signature=dict(p["signature"], signature="0" * 64)),
    lambda p: dict(p, signature=dict(p["signature"], signature="zz")),
])
def test_exact_payload_verifies_like_the_raw_body(mutate):
    raw = json.dumps(mutate(json.loads(body(key=OLD_KEY)))).encode()
    fast = ws.verify_signature(ws.exact_payload(raw, json.loads(raw)), [KEY, OLD_KEY]).to_dict()
    assert fast == ws.verify_signature(raw, [KEY, OLD_KEY]).to_dict()


def test_is_delivery_id_takes_exactly_the_two_documented_forms():
    signed = ws.delivery_id_for("29848839199040411", "salt")
    unsigned = ws.unsigned_delivery_id(b"{}")
    assert ws.is_delivery_id(signed) and ws.is_delivery_id(unsigned)
    for bad in (None, 7, "", "sig-", signed.upper(), signed + "0", signed[:-1], "sig-" + "g" * 32,
                " " + signed, signed + "\n", "key-" + "a" * 32):
        assert not ws.is_delivery_id(bad), bad


@pytest.mark.parametrize("sent,normalised", [
    ("site-provisioned", "site_provisioned"), ("site_provisioned", "site_provisioned"),
    ("on-demand-backup", "on_demand_backup"), ("Mixed-Case", "Mixed_Case"), (None, None), (7, None)])
def test_event_name_turns_hyphens_into_underscores(sent, normalised):
    assert ws.event_name(sent) == normalised


def test_a_missing_signature_still_names_the_event():
    res = ws.verify_signature('{"event": "on-demand-backup", "data": []}', KEY)
    assert res.reason == ws.MISSING_SIGNATURE and (res.event, res.event_name) == ("on-demand-backup", "on_demand_backup")
