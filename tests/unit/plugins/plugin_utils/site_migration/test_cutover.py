# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cutover (plugins/plugin_utils/site_migration/cutover.py): which sites take it after their run, its arguments,
its outcome in the report and the recap, and the domain change in the site's one diff."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.cutover import (
    cutover_arguments,
    outcome_of_cutover,
    planned_diff,
    recap_words,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.report import report
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    fleet_at_preflight,
    results,
    ticket_result,
)

LIVE = {"site_migration_client": "demo", "site_migration_production_domain": "shop.example"}
SWITCHED = {"site": "1001", "site_id": 1001, "domain": "shop.example", "previous_domain": "a.example",
            "domain_switch": "switched", "job_id": 7004, "actions": ["switch the primary domain"],
            "domains": [{"domain": "shop.example", "role": "primary", "ssl": "pending", "ssl_detail": {}},
                        {"domain": "a.example", "role": "alias", "ssl": "issued"}],
            "dns_records": [{"type": "A", "name": "shop.example", "value": "198.51.100.23"}]}


def _run_done(**given):
    fleet, done = fleet_at_preflight(1, **dict(LIVE, **given))
    done["find"] = {"sites": [{"site_id": 1001, "domain": "a.example"}]}      # where it is: not live
    done["preflight"] = results(ticket_result(7, "p7"))
    done["run"] = results(ticket_result(7, "r7"))
    return fleet, done


def test_a_confirmed_cutover_follows_a_successful_run():
    fleet, done = _run_done(site_migration_confirm_cutover=True, site_migration_keep_old_domain_as_alias=True,
                            site_migration_cutover_timeout=60)
    todo = step_arguments(fleet, "cutover", done)
    assert todo["count"] == 1 and todo["client"] == "demo" and todo["wait_timeout"] == 60
    assert todo["sites"] == [{"site": "1001", "domain": "shop.example", "keep_old_domain": True}]
    done["cutover"] = results(SWITCHED)
    rep = report(todo["fleet"], ["dest0.example"], done, True, generated="T")
    site = rep["sites"][0]
    assert site["result"] == "succeeded" and rep["cutovers"] == {"switched": 1}
    assert site["cutover"]["state"] == "switched" and site["cutover"]["old_domain_kept"] is True
    assert site["cutover"]["domains"] == [{"domain": "shop.example", "role": "primary", "ssl": "pending"},
                                          {"domain": "a.example", "role": "alias", "ssl": "issued"}]
    assert site["cutover"]["summary"] == ("cut over to shop.example (a.example kept as an alias); SSL of shop.example "
                                          "pending; DNS records to set: A shop.example 198.51.100.23")
    recap = step_arguments(todo["fleet"], "stop", done)
    assert recap["changed"] == {"dest0.example": True} and recap["cutover"]["dest0.example"] == site["cutover"]["summary"]


def test_without_the_confirmation_the_site_is_migrated_and_not_cut_over():
    fleet, done = _run_done()
    assert step_arguments(fleet, "cutover", done)["count"] == 0
    rep = report(fleet, ["dest0.example"], done, True, generated="T")
    assert rep["sites"][0]["cutover"]["state"] == "not_confirmed" and rep["cutovers"] == {"not_confirmed": 1}
    assert "set site_migration_confirm_cutover: true" in rep["sites"][0]["cutover"]["summary"]
    assert "cutover" not in step_arguments(fleet, "stop", done)     # nothing said on the site's recap line


def test_a_failed_cutover_stops_the_site_and_a_failed_run_is_not_cut_over():
    fleet, done = _run_done(site_migration_confirm_cutover=True)
    done["cutover"] = results({"site": "1001", "failed": True,
                               "msg": "Job 7004 (switch of site 1001 to shop.example) was still running when "
                                      "wait_timeout=60s ran out"})
    rep = report(fleet, ["dest0.example"], done, True, generated="T")
    site = rep["sites"][0]
    assert site["result"] == "cutover_failed" and site["cutover"]["state"] == "failed"
    assert "site_migration_cutover_timeout=60s" in site["message"]
    fleet, done = _run_done(site_migration_confirm_cutover=True)
    done["run"] = results(ticket_result(7, "r7", state="failure", failed=True))
    assert step_arguments(fleet, "cutover", done)["count"] == 0
    assert report(fleet, ["dest0.example"], done, True, generated="T")["sites"][0]["cutover"]["state"] == "not_reached"


def test_a_domain_primary_already_says_nothing_on_the_recap_once_its_certificates_are_issued():
    outcome = outcome_of_cutover({"site": "1001", "production_domain": "shop.example"},
                                 {"domain_switch": "none", "domains": [{"domain": "shop.example", "role": "primary",
                                                                        "ssl": "issued"}]})
    assert outcome["cutover"]["state"] == "already"
    assert recap_words(outcome) is None and recap_words(outcome, quiet=False) == "live on shop.example; SSL issued"
    pending = dict(outcome["cutover"], domains=[{"domain": "shop.example", "ssl": "failed"}])
    assert recap_words({"cutover": pending}) == ("live on shop.example; SSL of shop.example not issued yet: its last "
                                                 "attempt failed, the service retries")


def test_check_mode_previews_the_switch():
    outcome = outcome_of_cutover({"site": "1001", "production_domain": "shop.example"}, SWITCHED, check_mode=True)
    assert outcome["cutover"]["state"] == "would_switch" and "result" not in outcome
    assert recap_words(outcome).startswith("check mode: would cut over to shop.example")


def test_the_rollback_switches_back_to_the_recorded_domain_and_releases_the_production_one():
    entry = {"site": "1001", "target": "1001", "client": "demo", "workflow": "rollback", "primary": "shop.example",
             "recorded": {"cutover": {"domain": "shop.example", "previous_domain": "a.example"}}}
    assert cutover_arguments([entry])["sites"] == [{"site": "1001", "domain": "a.example", "keep_old_domain": False}]
    outcome = outcome_of_cutover(entry, dict(SWITCHED, domain="a.example", previous_domain="shop.example"))
    assert outcome["result"] == "rolled_back" and recap_words(dict(entry, **outcome)).startswith("switched back to a.example")
    assert planned_diff(entry) == ({"primary_domain": "shop.example"}, {"primary_domain": "a.example"})


def test_the_diff_shows_the_primary_domain_and_the_old_one_kept():
    entry = {"production_domain": "shop.example", "keep_old_domain_as_alias": True, "primary": "a.example"}
    assert planned_diff(entry) == ({"primary_domain": "a.example"},
                                   {"primary_domain": "shop.example", "kept_as_alias": "a.example"})
    assert planned_diff(dict(entry, primary="shop.example")) is None       # live already: no change
    assert planned_diff(dict(entry, primary=None)) is None                 # not read (a site created by the run)
