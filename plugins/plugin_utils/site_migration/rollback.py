# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The rollback (``site_migration_workflow: rollback``, playbook wpcloud.hosting.rollback_site): the site restored
from the backup taken before its last refresh (step "restore"), then its primary domain switched back to the one it
had before its cutover (step "cutover", cutover.py). What the state file recorded decides which; a rollback done
(its backup restored, its cutover undone) is not done again.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.backup_first import DEFAULT_TIMEOUT
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import DONE, role_message
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.state_records import (
    BACKUP_KEY,
    REFRESH_ROLLED_BACK,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.going_live import recorded_cutover_domain
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import MIN_POLL_INTERVAL


def backup_to_restore(entry):
    """The backup IDs (files, then database) recorded before the site's last refresh, unless it was restored already."""
    recorded = (entry.get("recorded") or {}).get(BACKUP_KEY)
    if not isinstance(recorded, dict) or recorded.get("refresh") == REFRESH_ROLLED_BACK:
        return None
    ids = [str(i) for i in recorded.get("backup_ids") or []]
    return ids if len(ids) == 2 else None


def switch_back_due(entry):
    """The site's cutover recorded in its state file is still in place: its primary domain is the one it went live on."""
    domain = recorded_cutover_domain(entry)
    return bool(domain) and entry.get("primary") == domain \
        and bool(((entry.get("recorded") or {}).get("cutover") or {}).get("previous_domain"))


def first_step(entry):
    """The entry keys of a site to roll back, once the listing placed it: its first step, or done with nothing to do."""
    if backup_to_restore(entry):
        return {"stage": "restore"}
    if switch_back_due(entry):
        return {"stage": "cutover"}
    recorded = (entry.get("recorded") or {}).get(BACKUP_KEY)
    if isinstance(recorded, dict) and recorded.get("refresh") == REFRESH_ROLLED_BACK:
        return {"stage": DONE, "result": "left_alone",
                "message": "rolled back already: restored from backups %s, and its cutover is not in place"
                           % ", ".join(str(i) for i in recorded.get("backup_ids") or [])}
    return {"stage": DONE, "result": "invalid_input",
            "message": "site %s: nothing to roll back: the state file %s records no backup taken before a refresh "
                       "(site_migration_backup_before_refresh) and no cutover still in place. Restore from a backup with "
                       "wpcloud.hosting.site_backup (state: listed, then state: restored), or switch the domain with "
                       "wpcloud.hosting.site_domain" % (entry["site"], entry.get("state_file"))}


def restore_arguments(sites):
    """The site_backup arguments (list form, state restored) for the sites of the step."""
    return {"client": sites[0]["client"], "state": "restored", "confirm_overwrite": True,
            "sites": [{"site": s["target"], "backup_ids": backup_to_restore(s)} for s in sites],
            "wait_timeout": max(s.get("backup_timeout") or DEFAULT_TIMEOUT for s in sites),
            "poll_interval": min(s.get("poll_interval") or MIN_POLL_INTERVAL for s in sites)}


def outcome_of_restore(s, r, check_mode=False):
    """The entry keys a site gets from its restore: on to the switch back (when its cutover is in place), or done."""
    restore = {"restored_from": [str(i) for i in r.get("restored_from") or backup_to_restore(s) or []],
               "job_id": r.get("job_id"), "actions": list(r.get("actions") or [])}
    if r.get("failed"):
        return {"stage": DONE, "result": "rollback_failed", "restore": restore,
                "message": "site %s: the restore from backups %s failed: %s" % (
                    s["site"], ", ".join(restore["restored_from"]), role_message(r.get("msg"), "restore"))}
    if switch_back_due(s):
        return {"stage": "cutover", "restore": restore}
    return {"stage": DONE, "restore": restore, "result": "checked" if check_mode else "rolled_back",
            "message": "check mode: the site would be restored" if check_mode else ""}
