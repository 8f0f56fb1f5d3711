# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_info on the fake service: one site (never its credentials), every site of a client page after
page, refusals that name the option."""

from __future__ import annotations

import json

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils._failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import site_info
from ansible_collections.wpcloud.hosting.tests.unit.plugins.fake_service import SITE_DB_PASS


def test_one_site_with_its_flag_and_migration_and_no_credential(fake_api, run_logic):
    fake_api.add_site("1002")
    mid = fake_api.add_migration(site="1002")
    result, warnings = run_logic(site_info, {"site": "1002"})
    assert (result["exists"], result["site_id"], result["allow_site_migration"], result["migration_id"]) == (
        True, 1002, True, mid)
    assert result["record"]["php_version"] == "8.3"
    assert SITE_DB_PASS not in json.dumps(result)
    assert not {"db_pass", "smtp_pass", "site_api_key"} & set(result["record"])
    assert fake_api.writes == []


def test_an_unknown_site_does_not_exist(fake_api, run_logic):
    result, warnings = run_logic(site_info, {"site": "4040"})
    assert result == {"changed": False, "exists": False, "site": "4040"}


def test_every_site_of_the_client_page_after_page(fake_api, run_logic):
    for n in range(1, 8):
        fake_api.add_site(str(1000 + n), allow="true" if n % 2 else None)
    result, warnings = run_logic(site_info, {"client": "acme", "page_size": 3})
    assert [s["site_id"] for s in result["sites"]] == list(range(1001, 1008))
    assert (result["count"], result["pages"]) == (7, 4)
    queries = ["limit=3", "limit=3&after=1003", "limit=3&after=1006", "limit=3&after=1007"]
    assert [c["query"] for c in fake_api.log] == queries
    assert result["sites"][0]["allow_site_migration"] is True and result["sites"][1]["allow_site_migration"] is False
    assert SITE_DB_PASS not in json.dumps(result)


def test_only_an_empty_page_ends_the_list(fake_api, run_logic):
    for n in range(1, 5):
        fake_api.add_site(str(1000 + n))
    result, warnings = run_logic(site_info, {"client": "acme", "page_size": 2})
    assert (result["count"], result["pages"]) == (4, 3)


@pytest.mark.parametrize("args, words", [
    ({"client": "other"}, "client other is not the client of this API key"),
    ({"client": "  "}, "client is empty"),
    ({"client": "acme", "page_size": 0}, "page_size must be between 1 and 1000"),
    ({"client": "acme", "page_size": 1001}, "page_size must be between 1 and 1000"),
    ({"site": ""}, "site must be a numeric site ID or a domain name; it is empty"),
    ({"site": "example.com/../x"}, "site must be"),
])
def test_bad_input_names_the_option(fake_api, run_logic, args, words):
    result, warnings = run_logic(site_info, args)
    assert isinstance(result, ModuleFailure) and words in result.msg


def test_a_site_of_another_client_is_refused_by_name(fake_api, run_logic):
    fake_api.fault("site.get", status=403)
    result, warnings = run_logic(site_info, {"site": "theirs.example"})
    assert isinstance(result, ModuleFailure) and result.msg.startswith("site theirs.example belongs to another client")
