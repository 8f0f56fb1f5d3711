# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A domain_name_changed event read against the role's inventory (plugins/plugin_utils/site_migration/domain_event.py):
a cutover confirmed, an alias change, WordPress's siteurl following or not."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.domain_event import domain_event

HOSTVARS = {"dest1.example": {"site_migration_production_domain": "shop.example"},
            "dest2.example": {"site_migration_site": "1002"}}
HOSTS = list(HOSTVARS)


def event(site_id, **data):
    return {"event": "domain_name_changed", "atomic_site_id": site_id, "data": data}


def test_a_switch_to_a_sites_production_domain_confirms_its_cutover():
    change = domain_event(event(1001, passed_old="dest1.example", passed_new="shop.example",
                                then_api_current="shop.example", then_db_siteurl="dest1.example"), HOSTS, HOSTVARS)
    assert change["kind"] == "primary" and change["host"] == "dest1.example" and change["confirmed"] is True
    assert change["siteurl_follows"] is False
    assert change["message"] == ("site 1001 (inventory host dest1.example): the primary domain is shop.example (was "
                                 "dest1.example): its cutover is confirmed by the service. WordPress's siteurl still "
                                 "names dest1.example, not shop.example: update the site's siteurl and home options")


def test_a_siteurl_given_as_a_url_and_a_site_named_by_its_id():
    change = domain_event(event(1002, passed_old="b.example", passed_new="shop-b.example",
                                then_api_current="shop-b.example", then_db_siteurl="https://Shop-B.example/"),
                          HOSTS, HOSTVARS)
    assert change["host"] == "dest2.example" and change["siteurl_follows"] is True
    assert "siteurl" not in change["message"]


def test_alias_changes_and_an_unknown_site():
    added = domain_event(event(7, passed_old="", passed_new="www.shop.example", then_api_current="shop.example"))
    assert added["kind"] == "alias_added" and added["host"] is None and added["confirmed"] is False
    assert added["message"] == "site 7: alias www.shop.example added; the primary domain is shop.example"
    removed = domain_event(event(7, passed_old="old.example", passed_new="", then_api_current="shop.example"))
    assert removed["kind"] == "alias_removed"
    # the service names another domain current: not confirmed
    stale = domain_event(event(7, passed_old="a.example", passed_new="b.example", then_api_current="a.example"))
    assert stale["confirmed"] is False and "the service names a.example as current" in stale["message"]
    with pytest.raises(AnsibleFilterError):
        domain_event(["not", "a", "payload"])
