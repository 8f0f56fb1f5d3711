# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The operator command (webhook.py events list|replay|ack) on a spool written by hand."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aiohttp")

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.operator_command import main as operator_main  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.webhook.source_parts import (  # noqa: E402  pylint: disable=wrong-import-position
    ids, write_named_spool, write_spool,
)


def operator(capsys, *argv):
    code = operator_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_operator_command_lists_replays_and_dismisses(tmp_path, capsys):
    names = ids(3)
    write_spool(tmp_path, names)
    (tmp_path / "emitted.log").write_bytes(b"1\n")
    spool.append_journal(str(tmp_path / "processing.log"), spool.journal_line("dead", names[2], 3, 5))
    code, out, err = operator(capsys, "list", "--spool-dir", str(tmp_path), "--json")
    assert code == 0 and "3 deliveries listed (1 dead, 1 done, 1 stored)" in err
    assert [json.loads(line)["state"] for line in out.splitlines()] == ["done", "stored", "dead"]
    code, out, err = operator(capsys, "replay", "--spool-dir", str(tmp_path), "--state", "dead")
    assert code == 0 and names[2] in out and "1 delivery asked to be handed over again" in err
    code, out, err = operator(capsys, "list", "--spool-dir", str(tmp_path), "--id", names[2])
    assert "replay" in out
    code, out, err = operator(capsys, "ack", "--spool-dir", str(tmp_path), "--id", names[1], "--id", names[0])
    assert code == 0 and "1 delivery marked done" in err           # names[0] already was done
    assert [i["state"] for i in spool.list_deliveries(str(tmp_path))] == ["done", "done", "replay"]
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
        operator_main([argv[0], "--spool-dir", str(tmp_path)] + argv[1:])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_operator_command_needs_a_spool(tmp_path, capsys):
    with pytest.raises(SystemExit):
        operator_main(["list", "--spool-dir", str(tmp_path / "nothing")])
    assert "not the spool_dir of a wpcloud.hosting.webhook source" in capsys.readouterr().err


def test_operator_event_selector_matches_either_spelling(tmp_path, capsys):
    delivery_ids, dummy = write_named_spool(tmp_path, ["site-provisioned", "site_provisioned", "over_quota"])
    code, out, err = operator(capsys, "list", "--spool-dir", str(tmp_path), "--event", "site_provisioned", "--json")
    assert code == 0 and [json.loads(line)["delivery_id"] for line in out.splitlines()] == delivery_ids[:2]
    code, out, err = operator(capsys, "list", "--spool-dir", str(tmp_path), "--event", "over-quota", "--json")
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["over_quota"]
