# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The going-live inputs and how the role knows a site is live (plugins/plugin_utils/site_migration/going_live.py):
each problem names the variable and the fix before any call; the listing and the state file decide "live"; a live
site is refused without the consent that names it."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.going_live import (
    after_listing,
    cutover_due,
    find_in_listing,
    listing_index,
    may_go_live,
    needs_listing,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.inputs import lineup
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.outcomes import advance
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    HOSTVARS,
    SPEC,
    inputs,
    line_up,
    results,
)

LIVE = {"site_migration_client": "demo", "site_migration_production_domain": "Shop.Example."}
LISTING = [{"site_id": 1001, "domain": "shop.example", "migration_id": 7},
           {"site_id": 1002, "domain": "b.example", "migration_id": None}]


def test_the_production_domain_is_normalised_and_the_site_takes_the_listing():
    fleet, dummy = line_up(dict(LIVE, site_migration_site="a.example"))
    assert fleet[0]["production_domain"] == "shop.example" and fleet[0]["stage"] == "find"
    assert fleet[0]["workflow"] == "migrate" and needs_listing(fleet[0])
    # a site without going-live variables takes today's path
    plain, dummy = line_up({})
    assert plain[0]["stage"] == "check" and not needs_listing(plain[0])


@pytest.mark.parametrize("given, going_live", [
    ({}, False),
    ({"site_migration_client": "demo"}, False),
    (dict(LIVE), True),                                   # a cutover's preview or the listing's live check
    (dict(LIVE, site_migration_confirm_cutover=True), True),
    ({"site_migration_client": "demo", "site_migration_backup_before_refresh": True}, True),
    (dict(LIVE, site_migration_overwrite_live="shop.example"), True),
    (dict(LIVE, site_migration_workflow="cutover", site_migration_confirm_cutover=True), True),
    ({"site_migration_client": "demo", "site_migration_workflow": "rollback", "site_migration_confirm_rollback": True},
     True),
])
def test_the_role_runs_its_going_live_steps_only_when_a_site_may_take_one(given, going_live):
    fleet, dummy = line_up(dict(given, site_migration_site="a.example"))
    assert fleet[0].get("result") is None, fleet[0].get("message")
    assert may_go_live(fleet[0]) is going_live
    # a fleet goes live when one of its sites may
    mixed, dummy = line_up({}, dict(given, site_migration_site="b.example"))
    assert any(may_go_live(entry) for entry in mixed) is going_live


@pytest.mark.parametrize("given, expected", [
    (dict(LIVE, site_migration_production_domain="https://shop.example/"),
     "site_migration_production_domain must be a host name, not a URL"),
    (dict(LIVE, site_migration_production_domain="*.shop.example"), "site_migration_production_domain must be one host"),
    (dict(LIVE, site_migration_production_domain=""), "site_migration_production_domain is empty"),
    ({"site_migration_production_domain": "shop.example"},
     "site_migration_production_domain needs site_migration_client"),
    ({"site_migration_backup_before_refresh": True}, "site_migration_backup_before_refresh needs site_migration_client"),
    (dict(LIVE, site_migration_overwrite_live=True), "site_migration_overwrite_live must name the live domain"),
    (dict(LIVE, site_migration_overwrite_live="yes"), "not yes: the consent is given for one site"),
    (dict(LIVE, site_migration_workflow="go_live"), "site_migration_confirm_cutover must be true with "
                                                    "site_migration_workflow=go_live: the run switches the site's "
                                                    "primary domain to shop.example"),
    ({"site_migration_client": "demo", "site_migration_workflow": "cutover"},
     "site_migration_workflow=cutover cuts every site over: set site_migration_production_domain"),
    ({"site_migration_client": "demo", "site_migration_workflow": "rollback"},
     "site_migration_confirm_rollback must be true"),
    ({"site_migration_workflow": "rollback", "site_migration_confirm_rollback": True},
     "site_migration_workflow=rollback needs site_migration_client"),
    (dict(LIVE, site_migration_cutover_timeout=0), "site_migration_cutover_timeout must be a positive number"),
])
def test_going_live_inputs_are_refused_by_their_variable_before_any_call(given, expected):
    fleet, dummy = line_up(dict(given, site_migration_site="a.example"))
    assert fleet[0]["result"] == "invalid_input" and expected in fleet[0]["message"], fleet[0]["message"]


def test_check_mode_previews_go_live_without_its_confirmation():
    given = [inputs(site_migration_site="a.example", site_migration_workflow="go_live", **LIVE)]
    fleet = lineup(given, ["a.example"], SPEC, HOSTVARS, check_mode=True)
    assert fleet[0]["result"] is None and cutover_due(fleet[0], True)
    # a real run cuts over only when confirmed; the migrate workflow never previews an unconfirmed cutover
    assert not cutover_due(dict(fleet[0], confirm_cutover=False), False)
    assert not cutover_due(dict(fleet[0], workflow="migrate"), True)
    assert cutover_due(dict(fleet[0], workflow="migrate", confirm_cutover=True), False)


def test_the_cutover_and_rollback_workflows_need_no_overwrite_confirmation():
    fleet, dummy = line_up(dict(LIVE, site_migration_site="a.example", site_migration_workflow="cutover",
                                site_migration_confirm_cutover=True, site_migration_confirm_overwrite=False))
    assert fleet[0]["result"] is None and fleet[0]["after_find"] == "info"


def test_a_client_alone_creates_nothing_and_asks_for_no_administrator():
    fleet, dummy = line_up({"site_migration_client": "demo", "site_migration_site": "new.example"})
    assert fleet[0]["result"] is None and not fleet[0]["creatable"] and fleet[0]["stage"] == "check"


def placed(entry, listing=None):
    by_id, by_domain = listing_index(LISTING if listing is None else listing)
    found, how = find_in_listing(entry, by_id, by_domain)
    return found, how, after_listing(entry, found, how)


def site(**more):
    fleet, dummy = line_up(dict(LIVE, **more))
    return fleet[0]


def test_a_site_is_live_when_the_listing_shows_its_production_domain_as_primary():
    found, how, outcome = placed(site(site_migration_site="1001"))
    assert how == "name" and outcome["live"] == "shop.example" and outcome["primary"] == "shop.example"
    assert outcome["result"] == "refused_live"
    assert "site_migration_overwrite_live: shop.example" in outcome["message"]
    # not live: its primary is another domain
    found, how, outcome = placed(site(site_migration_site="1002"))
    assert outcome["live"] is None and "result" not in outcome and outcome["target"] == "1002"


def test_a_site_named_by_the_domain_it_left_is_found_under_its_production_domain_by_its_id():
    found, how, outcome = placed(site(site_migration_site="a.example"))
    assert how == "production" and found["site_id"] == 1001 and outcome["target"] == "1001"
    assert outcome["result"] == "refused_live"


def test_the_consent_names_the_live_domain_and_only_that_one():
    found, how, outcome = placed(site(site_migration_site="1001", site_migration_overwrite_live="SHOP.example"))
    assert outcome["live_consented"] is True and "result" not in outcome
    found, how, outcome = placed(site(site_migration_site="1001", site_migration_overwrite_live="other.example"))
    assert outcome["result"] == "refused_live"
    assert "site_migration_overwrite_live names other.example, not the live domain" in outcome["message"]


def test_the_state_file_recorded_cutover_makes_a_site_live_without_the_variable():
    fleet = lineup([inputs(site_migration_site="1001", site_migration_client="demo")], ["a.example"], SPEC, HOSTVARS,
                   read_record=lambda path: {"migration_id": 7, "cutover": {"domain": "shop.example"}})
    assert fleet[0]["stage"] == "find" and fleet[0]["recorded"]["cutover"]["domain"] == "shop.example"
    found, how, outcome = placed(fleet[0])
    assert outcome["result"] == "refused_live" and "recorded in the state file" in outcome["message"]
    # what survives a lost state file: the variable (above); with neither, the site cannot be known live
    fleet = lineup([inputs(site_migration_site="1001", site_migration_client="demo")], ["a.example"], SPEC, HOSTVARS)
    assert fleet[0]["stage"] == "check"


def test_a_site_switched_back_is_no_longer_live():
    found, how, outcome = placed(site(site_migration_site="1001"), [{"site_id": 1001, "domain": "a.example"}])
    assert outcome["live"] is None and "result" not in outcome


def test_another_site_holding_the_production_domain_is_not_this_one():
    fleet = lineup([inputs(site_migration_site="a.example", **LIVE)], ["a.example"], SPEC, HOSTVARS,
                   read_record=lambda path: {"migration_id": 9})
    found, how, outcome = placed(fleet[0])
    assert outcome["result"] == "invalid_input" and "not migration 9 of the state file" in outcome["message"]


def test_with_refresh_false_a_live_site_whose_migration_succeeded_is_left_alone_and_others_refused():
    fleet, dummy = line_up(dict(LIVE, site_migration_site="1001", site_migration_refresh=False))
    listing = {"find": {"sites": LISTING}}
    done = advance(fleet, dict(listing, info=results({"site": "1001", "state": "migration-succeeded",
                                                      "migration_id": 7})), upto="check")
    assert done[0]["result"] == "left_alone"
    done = advance(fleet, dict(listing, info=results({"site": "1001", "state": "migration-failed",
                                                      "migration_id": 7})), upto="check")
    assert done[0]["result"] == "refused_live"


def test_a_created_destination_is_never_live_and_a_missing_one_is_only_created_when_asked():
    new = {"site_migration_admin_user": "admin", "site_migration_admin_email": "admin@example.com"}
    fleet, dummy = line_up(dict(LIVE, site_migration_site="new.example", **new))
    done = advance(fleet, {"find": {"sites": []}}, upto="new")
    assert done[0]["stage"] == "new" and not done[0].get("live")
    fleet, dummy = line_up(dict(LIVE, site_migration_site="new.example"))
    done = advance(fleet, {"find": {"sites": []}}, upto="new")
    assert done[0]["stage"] == "check"          # the check step then says it is not found
