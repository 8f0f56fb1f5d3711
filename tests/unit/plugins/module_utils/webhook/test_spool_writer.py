# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The receiver's spool writer: its memory rebuilt from the spool, a torn tail cut, one receiver per directory."""

from __future__ import annotations

import pytest

pytest.importorskip("aiohttp")

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.spool_writer import SpoolWriter  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.webhook.source_parts import (  # noqa: E402  pylint: disable=wrong-import-position
    Notify,
)


def test_spool_writer_rebuilds_its_memory_and_cuts_a_torn_tail(tmp_path):
    directory = tmp_path / "spool"
    directory.mkdir()
    old = spool.record(1, "sig-a", "fa", {"payload": {}, "meta": {}})
    current = spool.record(2, "sig-b", "fb", {"payload": {}, "meta": {}})
    (directory / "spool.log.1").write_bytes(old)
    (directory / "spool.log").write_bytes(current + b"3\tsig-c\tfc\t{")
    writer = SpoolWriter(str(directory), 1 << 20, 1000, Notify())
    writer.marked_seq = 1
    writer.open()
    try:
        assert writer.check("sig-a", "fa") == ("duplicate", None)
        assert writer.check("sig-b", "other") == ("conflict", None)
        assert writer.check("sig-c", "fc") == ("new", None)
        assert (directory / "spool.log").read_bytes() == current
        assert writer.next_seq == 3 and writer.durable_offset == len(current)
    finally:
        writer.close_files()


def test_spool_directory_is_locked(tmp_path):
    first = SpoolWriter(str(tmp_path), 1 << 20, 10, Notify())
    first.open()
    try:
        with pytest.raises(RuntimeError, match="used by another receiver"):
            SpoolWriter(str(tmp_path), 1 << 20, 10, Notify()).open(lock_timeout=0.2)
    finally:
        first.close_files()
