# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_domain_info on the fake service: a site's domains with their certificates, the A records of those without
one, planned domains previewed (the TXT record of one held elsewhere), the list form; reads only."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import site_domain_info


@pytest.fixture()
def live(fake_api):
    fake_api.add_live_site(1001, "staging.example", aliases=["www.staging.example"])
    fake_api.ssl["www.staging.example"] = "failed"
    return fake_api


def test_domains_certificates_and_the_records_to_set(live, run_logic):
    result, warnings = run_logic(site_domain_info, {"client": "acme", "site": "staging.example"})
    assert (result["site_id"], result["domain"], result["aliases"]) == (1001, "staging.example", ["www.staging.example"])
    primary, alias = result["domains"]
    assert (primary["role"], primary["ssl"], primary["dns_records"]) == ("primary", "issued", [])
    assert primary["ssl_detail"]["ca_provider"] == "letsencrypt" and primary["ssl_detail"]["certificate_id"]
    detail = alias["ssl_detail"]
    assert (alias["ssl"], detail["failcount"], detail["reason"]) == ("failed", 1, "not hosted here")
    assert result["dns_records"] == alias["dns_records"] == [
        {"type": "A", "name": "www.staging.example", "value": "192.0.2.29"},
        {"type": "A", "name": "www.staging.example", "value": "192.0.2.99"}]
    assert live.writes == [] and result["changed"] is False


def test_planned_domains_are_previewed_with_a_txt_record_where_held_elsewhere(live, run_logic):
    live.used_domains.add("taken.example")
    result, warnings = run_logic(site_domain_info, {"client": "acme", "site": "1001", "domains": [
        "Shop.Example.", "taken.example", "www.staging.example"]}, check_mode=True)
    planned = [e for e in result["domains"] if e["role"] == "planned"]
    assert [(e["domain"], e["attachable"]) for e in planned] == [("shop.example", True), ("taken.example", False)]
    assert [r["type"] for r in planned[1]["dns_records"]] == ["TXT", "A", "A"]
    assert planned[1]["dns_records"][0]["value"].startswith("atomic-domain-") and "refusal" in planned[1]
    assert len(result["domains"]) == 4 and live.writes == []


def test_a_pending_certificate_answered_as_an_empty_list(live, run_logic):
    live.ssl_pending_answer = "empty"
    live.ssl["www.staging.example"] = "pending"
    result, warnings = run_logic(site_domain_info, {"client": "acme", "site": "1001"})
    assert result["domains"][1]["ssl"] == "pending" and result["domains"][1]["dns_records"]


def test_the_list_form(live, run_logic):
    live.add_live_site(1002, "two.example")
    result, warnings = run_logic(site_domain_info, {"client": "acme", "sites": [
        {"site": "1001"}, {"site": "1002", "domains": ["shop.example"]}]})
    assert [r["domain"] for r in result["results"]] == ["staging.example", "two.example"]
    assert [e["role"] for e in result["results"][1]["domains"]] == ["primary", "planned"]


@pytest.mark.parametrize("args,expected", [
    ({"site": "1001", "domains": ["https://shop.example"]}, "domains must be a host name, not a URL"),
    ({"site": "1001", "domains": ["*.shop.example"]}, "domains must be one host name, not a wildcard"),
    ({"site": "1001", "client": ""}, "client is empty"),
    ({"sites": [{"site": "1001"}, {"site": "1001"}]}, "sites lists site 1001 twice"),
])
def test_bad_input_is_refused_before_any_call(live, run_logic, args, expected):
    result, warnings = run_logic(site_domain_info, dict({"client": "acme"}, **args))
    assert isinstance(result, ModuleFailure) and expected in result.msg and live.calls == []
