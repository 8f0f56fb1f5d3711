# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""service/backup.py without a server: max_age as users write it, listed backups in every form the sources show
(IDs as strings, numbers or prefixed; times as text or Unix seconds), backup_ids checked."""

from __future__ import annotations

import calendar
import time

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service import backup


@pytest.mark.parametrize("given,seconds", [
    ("3600", 3600), (3600, 3600), ("30m", 1800), ("2h", 7200), ("1d", 86400), ("1w", 604800), ("1.5h", 5400),
    (" 10 M ", 600), (None, None),
])
def test_max_age(given, seconds):
    assert backup.max_age_seconds(given) == seconds


@pytest.mark.parametrize("given", ["", "0", "-5", "soon", "5y", "1h30m"])
def test_a_max_age_that_is_not_one_is_refused(given):
    with pytest.raises(ModuleFailure, match="^max_age must be a positive age"):
        backup.max_age_seconds(given)


NOW = calendar.timegm(time.strptime("2026-07-16 01:00:00", "%Y-%m-%d %H:%M:%S"))


@pytest.mark.parametrize("entry,expected", [
    ({"atomic_backup_id": "1234", "backup_timestamp": "2026-07-16 00:00:00", "type": "ondemand-fs"},
     {"backup_id": "1234", "content": "files", "on_demand": True, "taken": "2026-07-16 00:00:00", "age": 3600}),
    ({"atomic_backup_id": 1234, "backup_timestamp": NOW - 60, "type": "db"},
     {"backup_id": "1234", "content": "database", "on_demand": False, "taken": "2026-07-16 00:59:00", "age": 60}),
    ({"atomic_backup_id": "bkp-7", "backup_timestamp": str(NOW), "type": "ondemand-db"},
     {"backup_id": "bkp-7", "content": "database", "on_demand": True, "taken": "2026-07-16 01:00:00", "age": 0}),
    ({"atomic_backup_id": "012345", "backup_timestamp": "yesterday", "type": "fs"},
     {"backup_id": "012345", "content": "files", "on_demand": False, "taken": None, "age": None}),
])
def test_every_form_of_a_listed_backup(entry, expected):
    record = backup.backup_record(entry, now=NOW)
    assert dict((k, record[k]) for k in expected) == expected


def test_backup_ids_are_opaque_strings_checked_by_state():
    assert backup.backup_ids({"backup_ids": [12, "bkp-3"]}, "absent") == ["12", "bkp-3"]
    assert backup.backup_ids({"backup_ids": None}, "absent") is None
    with pytest.raises(ModuleFailure, match="backup_ids is required with state=restored"):
        backup.backup_ids({"backup_ids": None}, "restored")
    with pytest.raises(ModuleFailure, match="backup_ids must hold two IDs"):
        backup.backup_ids({"backup_ids": ["1", "2", "3"]}, "restored")


def test_kinds_files_first():
    assert backup.kinds_of({"type": "both"}) == ["fs", "db"]
    assert backup.kinds_of({"type": "database"}) == ["db"]
