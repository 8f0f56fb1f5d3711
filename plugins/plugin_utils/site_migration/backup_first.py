# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The backup of a destination before a run overwrites it (step "backup", between the preflight and the run): which
sites take it, the site_backup arguments, and what its result does to each site.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

A site takes it when its run would overwrite a copy: ``site_migration_backup_before_refresh`` and a migration that
existed before this run (its earlier runs put a copy there; a migration created now has not), or always for a live
site refreshed with ``site_migration_overwrite_live``. The backup is new for each run (files and database, waited for
until the service lists them; the service's quota of one per type makes the new one replace the older), except after
a refresh that did not succeed: the backup taken before it is still the last good copy, so the next attempt reuses it
(found by its age) rather than replacing it with a copy of the broken site. A failed backup stops the site before its
run.
"""

from __future__ import annotations

import calendar
import time

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import MIN_POLL_INTERVAL
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import DONE, role_message
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.state_records import (
    BACKUP_KEY,
    REFRESH_SUCCEEDED,
)

# max_age of a backup that must be new: any older one is replaced (site_backup's replace_older).
NEW_BACKUP_AGE = 1
# Added to the age of a reused backup: the service's clock and this controller's may differ by this much.
CLOCK_MARGIN = 120
DEFAULT_TIMEOUT = 1800


def backup_first(entry, operation):
    """Whether the site takes a backup before its run, after the create step said what happened to its migration
    (``operation``: create, update or none)."""
    if entry.get("live_consented"):
        return True
    return bool(entry.get("backup_before_refresh")) and operation in ("update", "none")


def _seconds(stamp):
    try:
        return calendar.timegm(time.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None


def reusable(entry):
    """The backup recorded before a refresh that did not succeed (failed, interrupted, rolled back): still the last
    good copy of the site, or None."""
    recorded = (entry.get("recorded") or {}).get(BACKUP_KEY)
    if not isinstance(recorded, dict) or recorded.get("refresh") == REFRESH_SUCCEEDED:
        return None
    if not recorded.get("backup_ids") or _seconds(recorded.get("recorded_at")) is None:
        return None
    return recorded


def max_age(entry, now=None):
    """site_backup's ``max_age`` for the site: the age of the reusable backup (and a margin), else a new backup."""
    recorded = reusable(entry)
    if recorded is None:
        return str(NEW_BACKUP_AGE)
    now = time.time() if now is None else now
    return str(int(max(0, now - _seconds(recorded["recorded_at"]))) + CLOCK_MARGIN)


def backup_arguments(sites, now=None):
    """The site_backup arguments (list form) for the sites of the step: files and database of each, one wait for all."""
    return {"client": sites[0]["client"],
            "sites": [{"site": s["target"], "max_age": max_age(s, now)} for s in sites],
            "type": "both", "state": "present", "replace_older": True,
            "wait_timeout": max(s.get("backup_timeout") or DEFAULT_TIMEOUT for s in sites),
            "poll_interval": min(s.get("poll_interval") or MIN_POLL_INTERVAL for s in sites)}


def why(entry):
    return ("site_migration_overwrite_live" if entry.get("live_consented")
            else "site_migration_backup_before_refresh")


def outcome_of_backup(s, r, check_mode=False):
    """The entry keys a site gets from its site_backup result: on to the run with its backup (``backup``: the IDs, the
    ones created, whether it was reused, and what the state file records of it), or stopped before its run."""
    if r.get("failed"):
        return {"stage": DONE, "result": "backup_failed",
                "backup": {"backup_ids": [], "created": [], "reused": False, "actions": list(r.get("actions") or []),
                           "why": why(s)},
                "message": "site %s: the backup before the run failed, so the run was not started (%s): %s"
                           % (s["site"], why(s), role_message(r.get("msg"), "backup"))}
    ids = [str(i) for i in r.get("backup_ids") or []]
    created = [str(i) for i in r.get("created") or []]
    backup = {"backup_ids": ids, "created": created, "reused": bool(ids) and not created,
              "actions": list(r.get("actions") or []), "why": why(s)}
    if check_mode:
        # the preview: the site stays "checked", on to the cutover's preview when it has one (outcomes.py going_on)
        backup["would"] = list(r.get("actions") or [])
        return {"stage": DONE, "backup": backup}
    if len(ids) != 2:
        return {"stage": DONE, "result": "backup_failed", "backup": backup,
                "message": "site %s: the backup before the run did not give a files and a database backup (%s), so "
                           "the run was not started (%s)" % (s["site"], ", ".join(ids) or "none", why(s))}
    taken = [b.get("taken") for b in r.get("backups") or [] if isinstance(b, dict) and str(b.get("backup_id")) in ids]
    backup["taken"] = min([t for t in taken if t] or [None]) if any(taken) else None
    backup["record"] = {"backup_ids": ids, "taken": backup["taken"],
                        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "live": bool(s.get("live"))}
    if backup["reused"]:
        recorded = reusable(s)
        if recorded is not None:
            backup["record"]["recorded_at"] = recorded["recorded_at"]
    return {"stage": "run", "backup": backup}
