# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The backup before a run (plugins/plugin_utils/site_migration/backup_first.py): which sites take it, new or reused,
and a failed backup stopping its site before its run."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.backup_first import (
    backup_arguments,
    backup_first,
    max_age,
    outcome_of_backup,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    created_result,
    fleet_at_preflight,
    results,
    ticket_result,
)

BACKUP = {"site_migration_client": "demo", "site_migration_backup_before_refresh": True}
NOW = 1_800_000_000


def test_a_run_that_overwrites_a_copy_is_backed_up_first():
    assert backup_first({"backup_before_refresh": True}, "update") and backup_first({"backup_before_refresh": True}, "none")
    # a migration created now has copied nothing yet; without the variable, no backup
    assert not backup_first({"backup_before_refresh": True}, "create")
    assert not backup_first({"backup_before_refresh": False}, "none")
    # a live site refreshed with the consent, always
    assert backup_first({"live_consented": True}, "none")


def _updated(fleet, done):
    done["create"] = results(*[created_result(str(1001 + i), 7 + i, operation="none") for i in range(len(fleet))])
    return done


def test_the_sites_that_take_it_go_from_the_preflight_to_the_backup_then_the_run():
    fleet, done = fleet_at_preflight(2, **BACKUP)
    _updated(fleet, done)
    done["preflight"] = results(ticket_result(7, "p7"), ticket_result(8, "p8"))
    todo = step_arguments(fleet, "backup", done)
    assert todo["count"] == 2 and todo["client"] == "demo" and todo["type"] == "both" and todo["replace_older"] is True
    assert [s["site"] for s in todo["sites"]] == ["1001", "1002"] and all(s["max_age"] == "1" for s in todo["sites"])
    backups = [{"backup_id": "30%d1" % i, "taken": "2026-11-28 10:00:00"} for i in (1, 2)]
    done["backup"] = results({"site": "1001", "backup_ids": ["3011", "3012"], "created": ["3011", "3012"],
                              "backups": backups, "actions": ["create a files backup", "create a database backup"]},
                             {"site": "1002", "failed": True,
                              "msg": "The files and database backup of site 1002 was not listed when wait_timeout=60s "
                                     "ran out."})
    todo = step_arguments(todo["fleet"], "run", done)
    assert todo["migration_ids"] == [7]
    ok, failed = todo["fleet"]
    assert ok["backup"]["backup_ids"] == ["3011", "3012"] and ok["backup"]["reused"] is False
    assert failed["result"] == "backup_failed" and failed["stage"] == "done"
    assert "the run was not started (site_migration_backup_before_refresh)" in failed["message"]
    assert "site_migration_backup_timeout=60s" in failed["message"]
    # recorded before the run, its refresh pending
    (record,) = todo["records"]
    assert record["path"].endswith("/1001.json") and record["migration_id"] == 7
    assert record["values"]["pre_refresh_backup"]["backup_ids"] == ["3011", "3012"]
    assert record["values"]["pre_refresh_backup"]["refresh"] == "pending"


def test_a_new_site_migration_takes_no_backup():
    fleet, done = fleet_at_preflight(1, **BACKUP)          # created by this run: nothing to back up
    done["preflight"] = results(ticket_result(7, "p7"))
    assert step_arguments(fleet, "backup", done)["count"] == 0


def test_after_a_refresh_that_did_not_succeed_its_backup_is_reused():
    # NOW is 2027-01-15T08:00:00Z: the backup was recorded an hour before
    recorded = {"backup_ids": ["3001", "3002"], "recorded_at": "2027-01-15T07:00:00Z", "refresh": "failed"}
    entry = {"recorded": {"pre_refresh_backup": recorded}}
    # its age, and a margin for the clocks of the service and the controller: it counts as present
    assert max_age(entry, now=NOW) == "3720"
    # an interrupted refresh (pending) and a rolled-back one keep it too
    for refresh in ("pending", "rolled_back"):
        assert max_age({"recorded": {"pre_refresh_backup": dict(recorded, refresh=refresh)}}, now=NOW) == "3720"
    # a refresh that succeeded after it, or none recorded: a new backup
    assert max_age({"recorded": {"pre_refresh_backup": dict(recorded, refresh="succeeded")}}, now=NOW) == "1"
    assert max_age({}, now=NOW) == "1"
    args = backup_arguments([dict(entry, client="demo", target="1001", backup_timeout=30, poll_interval=2.0)], now=NOW)
    assert args["sites"] == [{"site": "1001", "max_age": "3720"}]
    assert args["wait_timeout"] == 30 and args["poll_interval"] == 2.0


def test_a_reused_backup_keeps_the_time_it_was_recorded_and_a_half_backup_stops_the_site():
    recorded = {"backup_ids": ["3001", "3002"], "recorded_at": "2027-01-15T07:50:00Z", "refresh": "failed"}
    entry = {"site": "1001", "recorded": {"pre_refresh_backup": recorded}}
    outcome = outcome_of_backup(entry, {"backup_ids": ["3001", "3002"], "created": []})
    assert outcome["stage"] == "run" and outcome["backup"]["reused"] is True
    assert outcome["backup"]["record"]["recorded_at"] == "2027-01-15T07:50:00Z"
    half = outcome_of_backup(entry, {"backup_ids": ["3001"], "created": ["3001"]})
    assert half["result"] == "backup_failed"


def test_check_mode_previews_the_backup_and_goes_on_to_the_cutover_preview():
    outcome = outcome_of_backup({"site": "1001"}, {"actions": ["create a files backup"]}, check_mode=True)
    assert outcome == {"stage": "done", "backup": {"backup_ids": [], "created": [], "reused": False,
                                                   "actions": ["create a files backup"],
                                                   "why": "site_migration_backup_before_refresh",
                                                   "would": ["create a files backup"]}}
