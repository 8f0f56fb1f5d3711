# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""webhook/spool.py: the spool directory's records, the processing journal (acknowledgements, emits,
dead letters, replays) shared by processes, and the operator's listing. No server."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from datetime import datetime, timezone

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool as ws

A = "sig-" + "a" * 32
B = "sig-" + "b" * 32
C = "body-" + "c" * 32


def journal(directory):
    return (directory / ws.JOURNAL_FILE).read_bytes()


def event(name, received_at, site=None):
    return {"payload": {"event": name, "atomic_site_id": site}, "meta": {"received_at": received_at}}


def spool_with(directory, records, mark=0):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ws.SPOOL_FILE).write_bytes(b"".join(ws.record(seq, d, "fp", e) for seq, d, e in records))
    (directory / ws.EMITTED_FILE).write_bytes(b"%d\n" % mark)


# -- the journal's format ------------------------------------------------------------------------

def test_journal_lines_round_trip():
    lines = (ws.journal_line(ws.EMIT, A, 3, 2, when=100.5) + ws.journal_line(ws.ACK, A, when=101.0, via="file")
             + ws.journal_line(ws.DEAD, B, 4, 5, when=102.0, via="source") + ws.journal_line(ws.REDO, C, when=103.0))
    assert lines.splitlines()[0] == b"emit %s 3 2 100.500 -" % A.encode()
    assert ws.parse_journal(lines) == [("emit", A, 3, 2, 100.5, None), ("ack", A, None, None, 101.0, "file"),
                                       ("dead", B, 4, 5, 102.0, "source"), ("redo", C, None, None, 103.0, None)]


@pytest.mark.parametrize("verb,delivery_id", [("done", A), ("ack", "two words"), ("ack", "x\ny"), ("ack", A + "\n"), ("ack", "")])
def test_journal_line_refuses_what_would_not_split(verb, delivery_id):
    with pytest.raises(ValueError):
        ws.journal_line(verb, delivery_id)


def test_torn_and_foreign_lines_are_skipped():
    data = (ws.journal_line(ws.ACK, A, when=1.0) + b"ack sig-bbbb\x00\x00" + b"\n" + b"garbage line\n"
            + b"ack " + B.encode() + b" - - notatime -\n" + ws.journal_line(ws.ACK, C, when=2.0))
    assert [e[1] for e in ws.parse_journal(data)] == [A, C]


def test_read_journal_reads_complete_lines_from_an_offset(tmp_path):
    path = tmp_path / ws.JOURNAL_FILE
    path.write_bytes(ws.journal_line(ws.ACK, A, when=1.0) + b"ack " + B.encode()[:10])   # a line being written
    entries, offset = ws.read_journal(str(path))
    assert [e[1] for e in entries] == [A] and offset == len(ws.journal_line(ws.ACK, A, when=1.0))
    with open(path, "ab") as handle:
        handle.write(B.encode()[10:] + b" - - 2.000 -\n")
    entries, offset2 = ws.read_journal(str(path), offset)
    assert [e[1] for e in entries] == [B] and offset2 == path.stat().st_size
    path.write_bytes(ws.journal_line(ws.ACK, C, when=3.0))           # rewritten, shorter: read from the start
    assert [e[1] for e in ws.read_journal(str(path), offset2)[0]] == [C]
    assert ws.read_journal(str(tmp_path / "missing")) == ([], 0)


def test_an_append_after_a_torn_tail_starts_a_line_of_its_own(tmp_path):
    path = tmp_path / ws.JOURNAL_FILE
    path.write_bytes(ws.journal_line(ws.ACK, A, when=1.0) + b"emit sig-dead")    # cut by a power loss
    ws.append_journal(str(path), ws.journal_line(ws.ACK, B, when=2.0))
    assert [e[1] for e in ws.parse_journal(path.read_bytes())] == [A, B]


# -- acknowledgements ----------------------------------------------------------------------------

def test_acknowledge_records_once_and_again_after_a_new_hand_over(tmp_path):
    path = tmp_path / ws.JOURNAL_FILE
    path.write_bytes(ws.journal_line(ws.EMIT, A, 1, 1))
    assert ws.acknowledge(str(tmp_path), A, "file", check_mode=True) is True
    assert path.read_bytes().count(b"\nack ") == 0                     # check mode writes nothing
    assert ws.acknowledge(str(tmp_path), A, "file") is True
    assert ws.acknowledge(str(tmp_path), A, "http") is False           # its latest state already is ack
    assert ws.acknowledge(str(tmp_path), A, "file", check_mode=True) is False
    assert [e[0] for e in ws.parse_journal(path.read_bytes())] == ["emit", "ack"]
    # the operator asked for it again and it was handed over again: a new acknowledgement counts
    ws.request_redo(str(tmp_path), [A])
    ws.append_journal(str(path), ws.journal_line(ws.EMIT, A, 1, 1))
    assert ws.acknowledge(str(tmp_path), A, "file") is True
    assert ws.acknowledge(str(tmp_path), B, "file") is True            # unknown ids are recorded too


def test_latest_state_is_found_across_read_blocks(tmp_path):
    path = tmp_path / ws.JOURNAL_FILE
    filler = b"".join(ws.journal_line(ws.EMIT, "sig-%032x" % n, n, 1, when=1.0) for n in range(400))
    path.write_bytes(ws.journal_line(ws.ACK, A, when=1.0) + filler + ws.journal_line(ws.DEAD, B, 9, 5, when=2.0)
                     + filler)
    fd = os.open(str(path), os.O_RDONLY)
    try:
        for block in (1, 7, 64, 100, 1 << 16):
            assert ws._last_state(fd, A, block) == ws.ACK
            assert ws._last_state(fd, B, block) == ws.DEAD
            assert ws._last_state(fd, C, block) is None
    finally:
        os.close(fd)


def _ack_many(directory, prefix, count):
    for n in range(count):
        ws.acknowledge(directory, "sig-%s%028x" % (prefix, n), "file")


def test_concurrent_appenders_lose_no_line(tmp_path):
    """Acknowledgements from four processes at once (playbooks in parallel, the receiver): every line whole."""
    procs = [multiprocessing.Process(target=_ack_many, args=(str(tmp_path), "%04d" % p, 150)) for p in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    entries = ws.parse_journal(journal(tmp_path))
    assert len(entries) == 600 == len({e[1] for e in entries})
    assert journal(tmp_path).count(b"\n") == 600


def test_rewrite_keeps_the_unread_tail_and_appenders_follow_the_new_file(tmp_path):
    path = tmp_path / ws.JOURNAL_FILE
    read_part = ws.journal_line(ws.ACK, A, when=1.0)
    path.write_bytes(read_part + ws.journal_line(ws.ACK, B, when=2.0))
    head = ws.journal_line(ws.DEAD, C, 3, 5, when=3.0)
    offset = ws.rewrite_journal(str(path), lambda data: (head, data[len(read_part):]))
    assert offset == len(head)
    ws.append_journal(str(path), ws.journal_line(ws.ACK, C, when=4.0))
    assert [(e[0], e[1]) for e in ws.parse_journal(path.read_bytes())] == [("dead", C), ("ack", B), ("ack", C)]


def test_fold_journal():
    entries = ws.parse_journal(
        ws.journal_line(ws.EMIT, A, 1, 1, when=10.0) + ws.journal_line(ws.EMIT, A, 1, 2, when=20.0)
        + ws.journal_line(ws.DEAD, A, 1, 2) + ws.journal_line(ws.REDO, A) + ws.journal_line(ws.EMIT, B, 2, 1)
        + ws.journal_line(ws.ACK, B))
    states = ws.fold_journal(entries)
    assert (states[A].verb, states[A].attempt, states[A].emitted_at, states[A].seq) == ("redo", 0, 20.0, 1)
    assert (states[B].verb, states[B].attempt) == ("ack", 1)


# -- records and the mark ------------------------------------------------------------------------

def test_read_mark_ignores_a_torn_line(tmp_path):
    (tmp_path / ws.EMITTED_FILE).write_bytes(b"4\n9\n12")
    assert ws.read_mark(str(tmp_path)) == 9
    assert ws.read_mark(str(tmp_path / "none")) == 0


def test_find_records_looks_in_both_segments_and_dead_letters(tmp_path):
    (tmp_path / ws.OLD_SPOOL_FILE).write_bytes(ws.record(1, A, "f", {"n": 1}))
    (tmp_path / ws.SPOOL_FILE).write_bytes(ws.record(2, B, "f", {"n": 2}))
    (tmp_path / ws.DEAD_FILE).write_bytes(b"0\t%s\t-\t{\"n\": 0}\n" % C.encode())
    found = ws.find_records(str(tmp_path), [A, B, C, "sig-" + "d" * 32])
    assert {d: (seq, json.loads(raw)) for d, (seq, raw) in found.items()} == {A: (1, {"n": 1}), B: (2, {"n": 2}),
                                                                              C: (0, {"n": 0})}


# -- the operator's listing ----------------------------------------------------------------------

def test_list_deliveries_states_and_selection(tmp_path):
    ids = ["sig-%032x" % n for n in range(1, 7)]
    records = [(n + 1, ids[n], event("site_provisioned" if n % 2 else "over_quota",
                                     "2026-11-23T10:0%d:00.000001Z" % n, 100 + n)) for n in range(6)]
    spool_with(tmp_path, records, mark=2)
    ws.append_journal(str(tmp_path / ws.JOURNAL_FILE), b"".join([
        ws.journal_line(ws.EMIT, ids[2], 3, 1), ws.journal_line(ws.ACK, ids[2]),          # done
        ws.journal_line(ws.EMIT, ids[3], 4, 5), ws.journal_line(ws.DEAD, ids[3], 4, 5),    # dead
        ws.journal_line(ws.EMIT, ids[4], 5, 1, when=1795471834.0),                         # emitted
        ws.journal_line(ws.REDO, ids[0]),                                                   # replay
    ]))
    listed = ws.list_deliveries(str(tmp_path))
    assert [(i["seq"], i["state"], i["attempts"]) for i in listed] == [
        (1, "replay", 0), (2, "done", 0), (3, "done", 1), (4, "dead", 5), (5, "emitted", 1), (6, "stored", 0)]
    assert listed[4]["last_emitted_at"] == datetime.fromtimestamp(1795471834.0, timezone.utc).isoformat().replace(
        "+00:00", "Z")
    assert (listed[3]["event"], listed[3]["atomic_site_id"]) == ("site_provisioned", 103)
    since = ws.parse_time("2026-11-23T10:02:00Z")
    until = ws.parse_time("2026-11-23T10:04:00Z")
    assert [i["seq"] for i in ws.select(listed, since=since, until=until)] == [3, 4]      # until is exclusive
    assert [i["seq"] for i in ws.select(listed, states=["dead", "replay"])] == [1, 4]
    assert [i["seq"] for i in ws.select(listed, events=["over_quota"], delivery_ids=[ids[0], ids[1]])] == [1]


@pytest.mark.parametrize("text,expected", [
    ("2026-11-23T10:00:00Z", datetime(2026, 11, 23, 10, tzinfo=timezone.utc).timestamp()),
    ("2026-11-23T10:00", datetime(2026, 11, 23, 10, tzinfo=timezone.utc).timestamp()),
    ("2026-11-23", datetime(2026, 11, 23, tzinfo=timezone.utc).timestamp()),
    ("2026-11-23T12:00:00+02:00", datetime(2026, 11, 23, 10, tzinfo=timezone.utc).timestamp()),
    ("90s", 1000.0 - 90), ("30m", 1000.0 - 1800), ("2h", 1000.0 - 7200), ("1.5d", 1000.0 - 129600),
])
def test_parse_time(text, expected):
    assert ws.parse_time(text, now=1000.0) == expected


@pytest.mark.parametrize("text", ["yesterday", "2h ago", "", "26-11-23"])
def test_parse_time_refuses_with_the_forms_it_takes(text):
    with pytest.raises(ValueError, match="neither an ISO 8601 time"):
        ws.parse_time(text)


def test_record_acks_and_redo_requests(tmp_path):
    ws.request_redo(str(tmp_path), [A, B])
    ws.record_acks(str(tmp_path), [A], via="operator")
    ws.request_redo(str(tmp_path), [])
    entries = ws.parse_journal(journal(tmp_path))
    assert [(e[0], e[1], e[5]) for e in entries] == [("redo", A, "operator"), ("redo", B, "operator"),
                                                     ("ack", A, "operator")]
    assert all(abs(e[4] - time.time()) < 60 for e in entries)


def test_records_round_trip_and_a_torn_tail(tmp_path):
    path = tmp_path / "spool.log"
    events = [{"payload": {"event": "e%d" % i, "data": {"t": "a\tb\nc"}}, "meta": {"delivery_id": "sig-%d" % i}}
              for i in range(3)]
    data = b"".join(ws.record(i + 1, "sig-%d" % i, "fp%d" % i, e) for i, e in enumerate(events))
    path.write_bytes(data + b"4\tsig-3\tfp3\t{\"payl")          # cut by a crash
    records, good = ws.read_records(str(path))
    assert good == len(data)
    assert [(r[0], r[1], r[2]) for r in records] == [(1, "sig-0", "fp0"), (2, "sig-1", "fp1"), (3, "sig-2", "fp2")]
    assert [json.loads(r[4]) for r in records] == events            # tabs and newlines stay inside the JSON
    assert records[-1][3] == good
    # a range, a count limit and a byte window
    second = ws.read_records(str(path), records[0][3], good)[0]
    assert [r[0] for r in second] == [2, 3]
    assert [r[0] for r in ws.read_records(str(path), 0, good, limit=1)[0]] == [1]
    assert [r[0] for r in ws.read_records(str(path), 0, good, window=10)[0]] == [1]   # one whole record
    assert ws.read_records(str(tmp_path / "missing"), 5) == ([], 5)
