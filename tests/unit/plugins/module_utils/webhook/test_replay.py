# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""webhook/replay.py: the duplicate rule and memory, the freshness window, the filter's replay store. No server."""

from __future__ import annotations

import hashlib
import hmac
import json
import multiprocessing

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import replay as wr
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import signature as ws

KEY = "k3y-0123456789abcdef-rotation-A"
TS = "29848839199040411"
SALT = "3cfd5d7d47e0b3f79d8890bd9b344db0"


def body(ts=TS, salt=SALT, sig=None, **extra):
    digest = sig or hmac.new(KEY.encode(), ("site_provisioned:%s:%s" % (ts, salt)).encode(),
                             hashlib.sha256).hexdigest()
    payload = {"event": "site_provisioned", "timestamp": 1751333700, "atomic_site_id": 123456789, "data": []}
    payload.update(extra)
    payload["signature"] = {"signature": digest, "timestamp": ts, "salt": salt}
    return json.dumps(payload)


# -- the one duplicate rule ---------------------------------------------------------------------

@pytest.mark.parametrize("known,new,answer", [
    ("f1", "f1", wr.DUPLICATE),
    ("f1", "f2", wr.CONFLICT),
    (None, "f2", wr.DUPLICATE),       # a parsed body has no fingerprint: cannot be told apart
    ("f1", None, wr.DUPLICATE),
    (None, None, wr.DUPLICATE),
])
def test_judge(known, new, answer):
    assert wr.judge(known, new) == answer


def test_dedupe_memory_answers_and_bound():
    memory = wr.DedupeMemory(3)
    assert memory.check("a", "f") == wr.NEW
    assert "a" not in memory                       # check() alone does not remember
    memory.remember("a", "f")
    assert memory.check("a", "f") == wr.DUPLICATE and memory.check("a", "g") == wr.CONFLICT
    memory.remember("b", None)
    assert memory.check("b", "anything") == wr.DUPLICATE
    for key in ("c", "d"):
        memory.remember(key, "f")
    assert len(memory) == 3 and "a" not in memory          # the oldest is forgotten first
    memory.remember("b", None)                              # remembering again makes it the newest
    memory.remember("e", "f")
    assert "b" in memory and "c" not in memory
    assert [key for key, _fp in memory.items()] == ["d", "b", "e"]
    with pytest.raises(ValueError):
        wr.DedupeMemory(0)


# -- freshness window -----------------------------------------------------------------------------

def test_freshness_window_uses_first_seen_time():
    window = wr.FreshnessWindow(60)
    window.observe("500", now=1000.0)
    assert not window.is_stale("400", now=1030.0)     # older, but nothing was seen 60 s ago yet
    assert window.is_stale("499", now=1061.0)         # "500" was first seen 61 s ago
    assert not window.is_stale("500", now=1061.0) and not window.is_stale("501", now=1061.0)
    assert not window.is_stale("abc", now=1061.0)     # non-numeric: not checked (documented)
    assert not window.is_stale(None, now=1061.0)      # unsigned: nothing to check
    window.observe(None, now=1062.0)


# -- the filter's replay store ----------------------------------------------------------------------

def test_replay_store_accepts_a_pair_once():
    store = wr.ReplayStore(max_entries=10)
    first = store.admit(ws.verify_signature(body(), KEY), "h1")
    assert first.valid and first.replay == wr.NEW
    again = store.admit(ws.verify_signature(body(), KEY), "h1")
    assert not again.valid and again.reason == wr.REPLAYED and again.replay == wr.DUPLICATE
    other_body = store.admit(ws.verify_signature(body(data={"x": 1}), KEY), "h2")
    assert other_body.reason == wr.REPLAYED and other_body.replay == wr.CONFLICT
    # a forged signature never enters the store
    forged = store.admit(ws.verify_signature(body(salt="cc" * 16, sig="0" * 64), KEY))
    assert forged.reason == ws.MISMATCH and forged.replay is None and (TS, "cc" * 16) not in store


def test_replay_store_is_bounded():
    store = wr.ReplayStore(max_entries=3)
    for i in range(10):
        assert store.check(str(i), "s") == wr.NEW
    assert len(store) == 3
    assert ("9", "s") in store and ("0", "s") not in store


def test_replay_store_persists(tmp_path):
    path = str(tmp_path / "replay.tsv")
    store = wr.ReplayStore(max_entries=100, path=path)
    assert store.check(TS, SALT, "h") == wr.NEW
    with open(path, "a") as handle:
        handle.write("123.0\ttorn")          # a torn last line is ignored
    again = wr.ReplayStore(max_entries=100, path=path)
    assert again.check(TS, SALT, "h") == wr.DUPLICATE
    assert again.check(TS, SALT, "other") == wr.CONFLICT
    text = open(path).read()
    assert KEY not in text


def test_replay_store_file_format(tmp_path):
    """The file format is kept across versions: users' replay files must still be read."""
    path = tmp_path / "replay.tsv"
    path.write_text("1700000000.000\t%s\t%s\tfp1\n1700000001.500\t12\tsalt2\t\n" % (TS, SALT))
    store = wr.ReplayStore(max_entries=10, path=str(path))
    assert store.check(TS, SALT, "fp1") == wr.DUPLICATE and store.check(TS, SALT, "fp2") == wr.CONFLICT
    assert store.check("12", "salt2", "any") == wr.DUPLICATE
    assert store.check("13", "s3", "fp3") == wr.NEW
    last = path.read_text().splitlines()[-1].split("\t")
    assert last[1:] == ["13", "s3", "fp3"] and float(last[0]) > 1700000001


def test_replay_store_compacts_and_keeps_first_seen_times(tmp_path):
    path = str(tmp_path / "replay.tsv")
    now = [1000.0]
    store = wr.ReplayStore(max_entries=5, path=path, clock=lambda: now[0])
    for i in range(30):
        now[0] += 1
        store.check(str(i), "s", "fp%d" % i)
    lines = [line.split("\t") for line in open(path).read().splitlines() if line]
    assert len(lines) <= 10
    assert lines[-1] == ["1030.000", "29", "s", "fp29"]
    assert wr.ReplayStore(max_entries=5, path=path).check("29", "s", "other") == wr.CONFLICT


def test_freshness_in_the_store():
    now = [1000.0]
    store = wr.ReplayStore(max_entries=100, max_age=60, clock=lambda: now[0])
    assert store.check("500", "a") == wr.NEW
    now[0] += 30
    assert store.check("400", "b") == wr.NEW
    now[0] += 31
    assert store.check("499", "c") == wr.STALE
    assert ("499", "c") not in store               # a stale pair is not remembered
    assert store.check("501", "d") == wr.NEW
    res = store.admit(ws.verify_signature(body(ts="10"), KEY))
    assert res.reason == wr.STALE and res.replay == wr.STALE and not res.valid


def test_freshness_rebuilt_from_the_file(tmp_path):
    path = str(tmp_path / "replay.tsv")
    now = [1000.0]
    wr.ReplayStore(max_entries=100, max_age=60, path=path, clock=lambda: now[0]).check("500", "a")
    now[0] += 61
    assert wr.ReplayStore(max_entries=100, max_age=60, path=path, clock=lambda: now[0]).check("499", "b") == wr.STALE


def _check_in_child(path, pair, queue):
    queue.put(wr.ReplayStore(max_entries=100, path=path).check(*pair))


def test_replay_store_is_shared_by_processes(tmp_path):
    """Two playbook runs (processes) with one replay_file: the pair is accepted once."""
    path = str(tmp_path / "replay.tsv")
    store = wr.ReplayStore(max_entries=100, path=path)
    queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=_check_in_child, args=(path, (TS, SALT, "h"), queue))
    child.start()
    child.join(30)
    assert queue.get(timeout=5) == wr.NEW
    assert store.check(TS, SALT, "h") == wr.DUPLICATE      # re-read before the check
