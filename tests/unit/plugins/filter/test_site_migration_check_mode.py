# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check mode across create-then-migrate (issue 25): a site that an earlier check-mode task said it would
create (wpcloud.hosting.site's fact) is previewed as about to exist, not as "not found"; and the play
recap's status of each site (the filter's "stop" step)."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.action.site import would_create
from ansible_collections.wpcloud.hosting.plugins.filter import site_migration as sm
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import CHECK_MODE_CREATED_SITES_FACT

from ansible_collections.wpcloud.hosting.tests.unit.plugins.filter.test_site_migration import SPEC, inputs, results

FACT = CHECK_MODE_CREATED_SITES_FACT
NOT_FOUND = {"failed": True, "msg": "site new.example was not found (HTTP 404): check the site ID or domain.",
             "failure": {"status": 404, "operation": "site_meta.get"}}


def _line_up(hostvars, check_mode=True, **given):
    site = dict(given, site_migration_site="New.Example")
    return sm.lineup([inputs(**site)], ["new.example"], SPEC, hostvars, check_mode)


def _hostvars(**facts_of):
    found = {"src.example": {"ansible_host": "10.0.0.5", "ansible_user": "www"}}
    for host, domains in facts_of.items():
        found[host.replace("_", ".")] = {"ansible_facts": {FACT: domains}}
    return found


def test_the_site_action_names_the_sites_it_would_create():
    listed = {"results": [{"domain": "a.example", "operation": "create", "site_id": None, "failed": False},
                          {"domain": "b.example", "operation": "none", "site_id": 7, "failed": False}]}
    assert would_create(listed) == ["a.example"]
    assert would_create({"domain": "C.example", "operation": "create", "site_id": None}) == ["c.example"]
    assert would_create({"domain": "d.example", "operation": "create", "site_id": 12}) == []   # created for real


def test_a_site_an_earlier_check_mode_task_would_create_is_checked_not_missing():
    for hostvars in (_hostvars(localhost=["new.example"]), _hostvars(new_example=["NEW.example"])):
        fleet = _line_up(hostvars)
        assert fleet[0]["about_to_exist"] is True and fleet[0]["stage"] == "check"
        done = {"check": results(dict(NOT_FOUND, site="New.Example"))}
        ended = sm.advance(fleet, done)[0]
        assert ended["result"] == "checked", ended
        assert "an earlier task would create site New.Example" in ended["message"]
        assert sm.step(fleet, "stop", done) == {"hosts": {}, "changed": {"new.example": True}}


def test_with_refresh_false_its_missing_migration_is_checked_too():
    fleet = _line_up(_hostvars(localhost=["new.example"]), site_migration_refresh=False)
    assert fleet[0]["stage"] == "info"
    done = {"info": results(dict(NOT_FOUND, site="New.Example"))}
    assert sm.step(fleet, "check", done, [inputs(site_migration_site="New.Example")])["count"] == 1
    done["check"] = results(dict(NOT_FOUND, site="New.Example"))
    assert sm.advance(fleet, done)[0]["result"] == "checked"


def test_a_missing_site_nobody_would_create_still_stops_its_host():
    for hostvars, check_mode in ((_hostvars(localhost=["other.example"]), True),
                                 (_hostvars(localhost=["new.example"]), False)):   # a real run: really missing
        fleet = _line_up(hostvars, check_mode)
        assert fleet[0]["about_to_exist"] is False
        done = {"check": results(dict(NOT_FOUND, site="New.Example"))}
        ended = sm.advance(fleet, done)[0]
        assert ended["result"] == "invalid_input" and "was not found (HTTP 404)" in ended["message"]
        assert sm.step(fleet, "stop", done)["hosts"] == {"new.example": ended["message"]}


def test_another_failure_of_a_site_about_to_exist_is_not_hidden():
    fleet = _line_up(_hostvars(localhost=["new.example"]))
    bad_port = {"failed": True, "msg": "remote_port must be between 1 and 65535", "site": "New.Example"}
    ended = sm.advance(fleet, {"check": results(bad_port)})[0]
    assert ended["result"] == "invalid_input" and "site_migration_remote_port" in ended["message"]
