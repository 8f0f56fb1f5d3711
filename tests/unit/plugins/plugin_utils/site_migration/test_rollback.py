# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rollback (plugins/plugin_utils/site_migration/rollback.py): what the state file recorded decides the restore and
the switch back; a rollback done is not done again."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.inputs import lineup
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.rollback import (
    first_step,
    outcome_of_restore,
    restore_arguments,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    HOSTVARS,
    SPEC,
    inputs,
    results,
)

RECORDED = {"migration_id": 7,
            "pre_refresh_backup": {"backup_ids": ["3001", "3002"], "recorded_at": "2027-01-15T07:00:00Z",
                                   "refresh": "succeeded"},
            "cutover": {"domain": "shop.example", "previous_domain": "a.example"}}
ROLLBACK = {"site_migration_client": "demo", "site_migration_workflow": "rollback", "site_migration_confirm_rollback": True,
            "site_migration_production_domain": "shop.example", "site_migration_site": "a.example"}


def fleet_of(recorded=None, **more):
    recorded = RECORDED if recorded is None else recorded
    return lineup([inputs(**dict(ROLLBACK, **more))], ["a.example"], SPEC, HOSTVARS, read_record=lambda path: recorded)


def test_a_rollback_restores_the_backup_then_switches_the_domain_back():
    fleet = fleet_of()
    assert fleet[0]["stage"] == "find"
    done = {"find": {"sites": [{"site_id": 1001, "domain": "shop.example", "migration_id": 7}]}}
    todo = step_arguments(fleet, "restore", done)
    assert todo["count"] == 1 and todo["state"] == "restored" and todo["confirm_overwrite"] is True
    assert todo["sites"] == [{"site": "1001", "backup_ids": ["3001", "3002"]}]
    done["restore"] = results({"site": "1001", "restored_from": ["3001", "3002"], "job_id": 7012, "changed": True})
    todo = step_arguments(todo["fleet"], "cutover", done)
    assert todo["sites"] == [{"site": "1001", "domain": "a.example", "keep_old_domain": False}]
    done["cutover"] = results({"site": "1001", "domain": "a.example", "previous_domain": "shop.example",
                               "domain_switch": "switched", "domains": [{"domain": "a.example", "ssl": "issued"}]})
    records = step_arguments(todo["fleet"], "record", done)["records"]
    (values,) = [r["values"] for r in records]
    assert values["cutover"] is None and values["pre_refresh_backup"]["refresh"] == "rolled_back"
    assert values["rolled_back"]["restored_from"] == ["3001", "3002"]
    assert step_arguments(todo["fleet"], "stop", done)["changed"] == {"a.example": True}


def test_a_rollback_done_is_not_done_again():
    recorded = dict(RECORDED, cutover=None,
                    pre_refresh_backup=dict(RECORDED["pre_refresh_backup"], refresh="rolled_back"))
    fleet = fleet_of(recorded)
    # its domain switched back (the listing), its backup restored already
    done = {"find": {"sites": [{"site_id": 1001, "domain": "a.example", "migration_id": 7}]}}
    todo = step_arguments(fleet, "restore", done)
    assert todo["count"] == 0 and todo["fleet"][0]["result"] == "left_alone"
    assert "rolled back already" in todo["fleet"][0]["message"]


def test_nothing_recorded_stops_the_site_with_the_modules_to_use():
    outcome = first_step({"site": "a.example", "state_file": "/s/a.example.json", "recorded": {}})
    assert outcome["result"] == "invalid_input" and "wpcloud.hosting.site_backup" in outcome["message"]


def test_only_the_switch_back_when_no_backup_was_recorded_and_only_the_restore_when_not_cut_over():
    entry = {"primary": "shop.example", "recorded": {"cutover": RECORDED["cutover"]}}
    assert first_step(entry) == {"stage": "cutover"}
    entry = {"site": "a", "primary": "a.example", "recorded": RECORDED}
    assert first_step(entry) == {"stage": "restore"}
    assert outcome_of_restore(entry, {"restored_from": ["3001", "3002"]})["result"] == "rolled_back"


def test_a_failed_restore_stops_the_site_before_the_switch_back():
    entry = {"site": "a.example", "primary": "shop.example", "recorded": RECORDED}
    outcome = outcome_of_restore(entry, {"failed": True, "msg": "the restore's job failed"})
    assert outcome["result"] == "rollback_failed" and outcome["stage"] == "done"
    assert restore_arguments([dict(entry, client="demo", target="1001")])["sites"][0]["backup_ids"] == ["3001", "3002"]


def test_a_site_the_listing_does_not_show_has_nothing_to_roll_back_without_a_recorded_backup():
    fleet = fleet_of({"migration_id": 7})
    todo = step_arguments(fleet, "restore", {"find": {"sites": []}})
    assert todo["count"] == 0 and todo["fleet"][0]["result"] == "invalid_input"
    assert "nothing to roll back" in todo["fleet"][0]["message"]
