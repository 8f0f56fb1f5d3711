# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a site's state file records of its going-live steps, next to its migration ID: the backup taken before its
last refresh (``pre_refresh_backup``: the backup IDs, when, and how that refresh ended) and its cutover (``cutover``:
the production domain, the domain it left, when). The setup reads them (``recorded_going_live``); the steps' records
(``backup_records`` before the run, ``final_records`` at the end) are written by wpcloud.hosting.site_migration_record.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

Why the state file: the service says which domain is primary (the live check reads it there first), but not which
backup was taken before which refresh, nor whether that refresh then succeeded. A run that failed keeps its backup as
the rollback point: the next attempt reuses it instead of replacing it with a copy of the broken site
(backup_first.py), and the rollback restores it (rollback.py).
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Mapping

# The keys of the state file that the going-live steps read and write.
BACKUP_KEY = "pre_refresh_backup"
CUTOVER_KEY = "cutover"
ROLLED_BACK_KEY = "rolled_back"
# How the refresh after a recorded backup ended: only a success makes the next refresh take a new backup.
REFRESH_PENDING = "pending"
REFRESH_SUCCEEDED = "succeeded"
REFRESH_FAILED = "failed"
REFRESH_ROLLED_BACK = "rolled_back"


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_state_record(path):
    """The JSON of a state file, {} when there is none; one that cannot be read is {} too (the migration step says why,
    naming the file, before any write)."""
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, Mapping) else {}


def recorded_going_live(data):
    """What the setup keeps of a state file: the migration ID (the identity of the site), the backup before the last
    refresh and the cutover (never anything of the credentials the file also records)."""
    data = data if isinstance(data, Mapping) else {}
    kept = dict((key, data[key]) for key in ("migration_id", BACKUP_KEY, CUTOVER_KEY)
                if data.get(key) is not None)
    return kept


def record(entry, values):
    """One write of the record step: the site's state file, its site and migration (kept with them) and the values."""
    return {"path": entry["state_file"], "site": entry["site"],
            "migration_id": entry.get("migration_id") or (entry.get("recorded") or {}).get("migration_id"),
            "values": values}


def backup_records(fleet, check_mode=False):
    """The records to write before the run (step "run"): each backup taken or reused for it, its refresh pending. So a
    run that is interrupted keeps its backup as the rollback point."""
    if check_mode:
        return []
    return [record(s, {BACKUP_KEY: dict(s["backup"]["record"], refresh=REFRESH_PENDING)})
            for s in fleet if (s.get("backup") or {}).get("record") and s.get("stage") == "run"]


def refresh_outcome(entry):
    """How this run's refresh of the site ended, for a backup recorded before it: succeeded, failed, or None (no run
    ended here: the backup stays the rollback point of a refresh still pending)."""
    if not entry.get("run"):
        return None
    if entry.get("result") == "succeeded" or entry.get("result") == "cutover_failed":
        return REFRESH_SUCCEEDED
    if entry.get("result") == "run_failed":
        return REFRESH_FAILED
    return None


def final_records(fleet, check_mode=False):
    """The records to write at the end of the run: how the refresh after a recorded backup ended, the cutover made, a
    rollback done."""
    if check_mode:
        return []
    records = []
    for s in fleet:
        values = {}
        backup = (s.get("backup") or {}).get("record") or (s.get("recorded") or {}).get(BACKUP_KEY)
        outcome = refresh_outcome(s)
        if isinstance(backup, Mapping) and outcome and backup.get("refresh") != outcome:
            values[BACKUP_KEY] = dict(backup, refresh=outcome)
        cutover = s.get("cutover") or {}
        if cutover.get("state") == "switched" and s.get("workflow") != "rollback":
            values[CUTOVER_KEY] = {"domain": cutover["domain"], "previous_domain": cutover.get("previous_domain"),
                                   "old_domain_kept": cutover.get("old_domain_kept"), "at": utc_now()}
        if s.get("workflow") == "rollback" and s.get("result") == "rolled_back":
            recorded = s.get("recorded") or {}
            values[ROLLED_BACK_KEY] = {"at": utc_now(), "restored_from": (s.get("restore") or {}).get("restored_from"),
                                       "domain": cutover.get("domain") if cutover.get("state") == "switched" else None}
            if (s.get("restore") or {}).get("restored_from") and isinstance(recorded.get(BACKUP_KEY), Mapping):
                values[BACKUP_KEY] = dict(recorded[BACKUP_KEY], refresh=REFRESH_ROLLED_BACK)
            if cutover.get("state") == "switched":
                values[CUTOVER_KEY] = None        # switched back: no longer the cutover of record
        if values:
            records.append(record(s, values))
    return records
