# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter tests; reference digests come from hmac/hashlib here, not from the code under test."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.filter.webhook_verify import FilterModule, webhook_verify

KEY = "filter-key-0123456789abcdef"
OLD = "filter-old-key-fedcba987654"
TS = "17953191453733424"
SALT = "d8f6521f88da8e18186accf557f598dc874617b4"


def raw(event="wp_version_changed", key=KEY, salt=SALT, data=None):
    digest = hmac.new(key.encode(), ("%s:%s:%s" % (event, TS, salt)).encode(), hashlib.sha256).hexdigest()
    return json.dumps({"event": event, "timestamp": 1751333700, "atomic_site_id": 9,
                       "data": data if data is not None else {"version": "previous"},
                       "signature": {"signature": digest, "timestamp": TS, "salt": salt}})


def test_registered():
    assert FilterModule().filters()["webhook_verify"] is webhook_verify


def test_valid_and_rotation():
    res = webhook_verify(raw(key=OLD), [KEY, OLD])
    assert res["valid"] is True and res["key_index"] == 1 and res["reason"] is None
    assert res["timestamp"] == TS and res["event"] == "wp_version_changed"
    assert KEY not in json.dumps(res) and OLD not in json.dumps(res)


def test_single_key_string_and_dict_input():
    assert webhook_verify(raw(), KEY)["valid"]
    assert webhook_verify(json.loads(raw()), KEY)["valid"]


def test_mismatch_and_missing():
    assert webhook_verify(raw(), "other")["reason"] == "mismatch"
    assert webhook_verify('{"event":"x","data":[]}', KEY)["reason"] == "missing_signature"
    assert webhook_verify("{oops", KEY)["reason"] == "malformed"


def test_errors():
    with pytest.raises(AnsibleFilterError):
        webhook_verify(raw(), [])
    with pytest.raises(AnsibleFilterError):
        webhook_verify(raw(), "")
    with pytest.raises(AnsibleFilterError):
        webhook_verify(12, KEY)


def test_replay_file(tmp_path):
    path = str(tmp_path / "seen.tsv")
    assert webhook_verify(raw(), KEY, replay_file=path)["replay"] == "new"
    again = webhook_verify(raw(), KEY, replay_file=path)
    assert again["valid"] is False and again["reason"] == "replayed" and again["replay"] == "duplicate"
    other = webhook_verify(raw(data={"version": "latest"}), KEY, replay_file=path)
    assert other["reason"] == "replayed" and other["replay"] == "conflict"
    assert KEY not in open(path).read()


def test_keys_read_by_the_one_parser():
    """Blanks around a key are not part of it (a valid key has none); a single string is one key."""
    assert webhook_verify(raw(key=OLD), [" ", "%s\n" % OLD])["key_index"] == 0
    assert webhook_verify(raw(), " %s " % KEY)["valid"]
    assert webhook_verify(raw(), "%s,%s" % (OLD, KEY))["reason"] == "mismatch"     # never comma-split
    with pytest.raises(AnsibleFilterError):
        webhook_verify(raw(), ["", "  ", None])


def test_delivery_id_and_replay_conflict_by_body_fingerprint(tmp_path):
    res = webhook_verify(raw(), KEY)
    assert res["delivery_id"] == "sig-" + hashlib.sha256(("%s:%s" % (TS, SALT)).encode()).hexdigest()[:32]
    path = str(tmp_path / "seen.tsv")
    assert webhook_verify(raw(), KEY, replay_file=path)["valid"]
    # a parsed body has no fingerprint: the same pair again is a duplicate, never a conflict
    assert webhook_verify(json.loads(raw(data={"version": "x"})), KEY, replay_file=path)["replay"] == "duplicate"
    line = open(path).read().splitlines()[0].split("\t")
    assert line[1:] == [TS, SALT, hashlib.sha256(raw().encode()).hexdigest()[:32]]


def test_a_hyphenated_event_is_verified_as_sent_and_named_normalised():
    """Spec 6.3: the signature covers the name as sent; event_name is what rules match on."""
    res = webhook_verify(raw(event="site-provisioned", data=[]), KEY)
    assert res["valid"] is True and res["event"] == "site-provisioned" and res["event_name"] == "site_provisioned"
    signed_normalised = raw(event="site_provisioned", data=[]).replace('"site_provisioned"', '"site-provisioned"')
    res = webhook_verify(signed_normalised, KEY)
    assert res["valid"] is False and res["reason"] == "mismatch" and res["event_name"] == "site_provisioned"
