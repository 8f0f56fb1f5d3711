# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_info on the fake service: one site (never its credentials), every site of a client page after
page, refusals that name the option."""

from __future__ import annotations

import json

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
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
    ({"client": "other"}, "The service refused the API key for client other (HTTP 403"),
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
    assert isinstance(result, ModuleFailure)
    assert result.msg.startswith("The service refused the API key for site theirs.example (HTTP 403")
    assert "or site theirs.example belongs to another client account" in result.msg
    assert "choose another domain" not in result.msg


# -- other readings of get-sites (issue 23) -----------------------------------------------------------------

def _sites(fake_api, count=5):
    for n in range(1, count + 1):
        fake_api.add_site(str(1000 + n), allow="true" if n % 2 else None)


@pytest.mark.parametrize("page_size", [2, 1000])
def test_a_service_that_ignores_paging_lists_each_site_once(fake_api, run_logic, page_size):
    _sites(fake_api)
    fake_api.paging = "ignore"
    result, warnings = run_logic(site_info, {"client": "acme", "page_size": page_size})
    assert [s["site_id"] for s in result["sites"]] == [1001, 1002, 1003, 1004, 1005]
    # The second page brought nothing new: the end (no more requests than a paging service's empty page).
    assert (result["count"], result["pages"]) == (5, 2)


def test_a_service_that_refuses_paging_is_asked_without_it(fake_api, run_logic):
    _sites(fake_api)
    fake_api.paging = "refuse"
    result, warnings = run_logic(site_info, {"client": "acme", "page_size": 2})
    assert [s["site_id"] for s in result["sites"]] == [1001, 1002, 1003, 1004, 1005]
    assert [(c["path"].rsplit("/", 1)[-1], c["query"], c["status"]) for c in fake_api.log] == [
        ("allow_site_migration", "limit=2", 400), ("allow_site_migration", "", 200)]
    assert result["sites"][0]["allow_site_migration"] is True and not warnings


@pytest.mark.parametrize("variant", ["refused", "dropped"])
def test_a_listing_without_the_flag_leaves_it_unknown(fake_api, run_logic, variant):
    _sites(fake_api)
    fake_api.list_key = variant
    result, warnings = run_logic(site_info, {"client": "acme", "page_size": 3})
    assert [s["site_id"] for s in result["sites"]] == [1001, 1002, 1003, 1004, 1005]
    assert all(s["allow_site_migration"] is None and s["migration_id"] is None for s in result["sites"])
    ops = fake_api.operations()
    if variant == "refused":    # paging kept, the column dropped: two refused forms, then pages without it
        assert ops[:3] == ["site.list", "site.list", "site.list_plain"] and "site.list" not in ops[3:]
    else:                       # the key accepted and left out: no extra request
        assert ops == ["site.list"] * 3
    assert "site_meta.get" not in ops  # a listing reads no flag per site


def test_a_page_that_repeats_sites_adds_only_the_new_ones(fake_api, run_logic, monkeypatch):
    _sites(fake_api, 4)
    pages = iter([["1001", "1002"], ["1002", "1003"], ["1003", "1004", "1001"], ["1004"]])
    original = fake_api._site_list

    def overlapping(params, client, key=None):
        status, entries = original({}, client, key)
        ids = next(pages)
        return status, [e for i in ids for e in entries if e["atomic_site_id"] == i]
    monkeypatch.setattr(fake_api, "_site_list", overlapping)
    result, warnings = run_logic(site_info, {"client": "acme", "page_size": 2})
    assert [s["site_id"] for s in result["sites"]] == [1001, 1002, 1003, 1004]
    assert result["pages"] == 4


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(site_info)
