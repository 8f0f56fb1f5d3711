# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_domain on the fake service: the primary domain switched through its job (the old one kept or released),
aliases present, absent or exact (never the primary), a re-run that writes nothing, check mode and diff, a domain
held elsewhere refused with its TXT record before any write, a lost answer read back, a pending switch followed,
the list form, and bad input refused by the option's name before any call."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import site_domain


def declare(run_logic, check_mode=False, diff=False, **args):
    return run_logic(site_domain, dict({"client": "acme", "site": "1001", "poll_interval": 1}, **args),
                     check_mode=check_mode, diff=diff)


@pytest.fixture()
def live(fake_api, fake_time):
    fake_api.add_live_site(1001, "staging.example", aliases=["old.example"])
    fake_api.job_steps = ["queued", "success"]
    return fake_api


def ops(service):
    return [c["operation"] for c in service.writes]


def test_the_switch_keeps_the_old_domain_as_an_alias_and_waits_for_its_job(live, run_logic):
    result, warnings = declare(run_logic, domain="shop.example", keep_old_domain=True, aliases=["www.shop.example"])
    assert ops(live) == ["site.alias_add", "site.update_domain_keep"]
    assert (result["domain"], result["previous_domain"], result["domain_switch"]) == (
        "shop.example", "staging.example", "switched")
    assert result["aliases"] == ["old.example", "staging.example", "www.shop.example"]
    assert result["job"]["outcome"] == "success" and result["job"]["polls"] == 2
    ssl = dict((e["domain"], (e["role"], e["ssl"])) for e in result["domains"])
    assert ssl == {"shop.example": ("primary", "pending"), "www.shop.example": ("alias", "pending"),
                   "old.example": ("alias", "issued"), "staging.example": ("alias", "issued")}
    assert sorted(set(r["name"] for r in result["dns_records"])) == ["shop.example", "www.shop.example"]
    assert all(r["type"] == "A" for r in result["dns_records"]) and warnings == []


def test_a_rerun_writes_nothing(live, run_logic):
    args = dict(domain="shop.example", keep_old_domain=True, aliases=["www.shop.example"])
    declare(run_logic, **args)
    writes = len(live.writes)
    again, warnings = declare(run_logic, **args)
    assert len(live.writes) == writes and again["changed"] is False and again["actions"] == []
    assert again["domain_switch"] == "none" and warnings == []


def test_the_site_named_by_its_old_domain_is_found_under_the_new_one(live, run_logic):
    declare(run_logic, site="staging.example", domain="shop.example")
    again, warnings = declare(run_logic, site="staging.example", domain="shop.example")
    assert again["site_id"] == 1001 and again["changed"] is False and ops(live) == ["site.update_domain"]


def test_without_keep_the_old_domain_is_released(live, run_logic):
    result, warnings = declare(run_logic, domain="shop.example")
    assert ops(live) == ["site.update_domain"] and result["keep_old_domain"] is False
    assert result["aliases"] == ["old.example"] and "staging.example" not in live.ssl


def test_an_alias_is_promoted_and_old_listed_in_aliases_means_keep(live, run_logic):
    result, warnings = declare(run_logic, domain="old.example", aliases=["staging.example"])
    assert ops(live) == ["site.update_domain_keep"] and result["keep_old_domain"] is True
    assert result["domain"] == "old.example" and result["aliases"] == ["staging.example"]


def test_exact_removes_the_others_but_never_the_primary_nor_a_kept_old_domain(live, run_logic):
    live.site_aliases["1001"].append("extra.example")
    result, warnings = declare(run_logic, domain="shop.example", keep_old_domain=True, aliases=["www.shop.example"],
                               aliases_state="exact")
    assert ops(live) == ["site.alias_remove", "site.alias_remove", "site.alias_add", "site.update_domain_keep"]
    assert result["aliases"] == ["staging.example", "www.shop.example"]
    emptied, warnings = declare(run_logic, aliases=[], aliases_state="exact")
    assert emptied["aliases"] == [] and live.primary["1001"] == "shop.example"


def test_absent_removes_only_what_is_there(live, run_logic):
    result, warnings = declare(run_logic, aliases=["old.example", "never.example"], aliases_state="absent")
    assert ops(live) == ["site.alias_remove"] and result["actions"] == ["remove alias old.example"]


def test_check_mode_and_diff_preview_without_a_write(live, run_logic):
    result, warnings = declare(run_logic, check_mode=True, diff=True, domain="shop.example", keep_old_domain=True)
    assert live.writes == [] and result["changed"] and result["domain_switch"] == "switched"
    assert result["diff"] == {"before": {"domain": "staging.example", "aliases": ["old.example"]},
                              "after": {"domain": "shop.example", "aliases": ["old.example", "staging.example"]}}
    assert result["actions"] == ["switch the primary domain staging.example -> shop.example (the old one kept as an "
                                 "alias)"]
    new = [e for e in result["domains"] if e["domain"] == "shop.example"][0]
    assert new["ssl"] == "pending" and new["dns_records"]


def test_a_domain_held_elsewhere_is_refused_with_its_txt_record_before_any_write(live, run_logic):
    live.used_domains.add("taken.example")
    result, warnings = declare(run_logic, domain="taken.example", aliases=["www.shop.example"])
    assert isinstance(result, ModuleFailure) and live.writes == []
    assert "cannot take taken.example" in result.msg and "TXT taken.example = atomic-domain-" in result.msg
    assert result.details["dns_records"][0]["type"] == "TXT"


def test_a_failed_switch_job_says_the_site_keeps_its_domain(live, run_logic):
    live.job_steps = ["running", "failure"]
    result, warnings = declare(run_logic, domain="shop.example")
    assert isinstance(result, ModuleFailure) and "keeps its primary domain staging.example" in result.msg
    assert result.details["changed"] is True and result.details["job"]["outcome"] == "failure"


def test_a_switch_whose_answer_was_lost_is_read_back_and_followed(live, run_logic):
    live.fault("site.update_domain", error="reset", after=True)
    result, warnings = declare(run_logic, domain="shop.example")
    assert ops(live) == ["site.update_domain"] and result["uncertain"][0]["outcome"] == "happened"
    assert result["domain"] == "shop.example" and result["domain_switch"] == "switched"


def test_a_switch_left_pending_by_an_earlier_run_is_followed_not_sent_again(live, run_logic):
    live.job_steps = ["running"] * 40
    first, warnings = declare(run_logic, domain="shop.example", wait_timeout=3)
    assert isinstance(first, ModuleFailure) and first.details["timed_out"] and "run the task again" in first.msg
    live.jobs[max(live.jobs)]["steps"] = ["running", "success"]
    live.fault("site.update_domain", status=423)        # the service locks the site while its switch runs
    again, warnings = declare(run_logic, domain="shop.example")
    assert again["job_id"] == first.details["job_id"] and again["domain_switch"] == "switched"


def test_without_wait_the_job_is_returned(live, run_logic):
    result, warnings = declare(run_logic, domain="shop.example", wait=False)
    assert result["domain_switch"] == "started" and result["domain"] == "staging.example" and result["job_id"]


def test_ssl_retry_asks_again_for_failed_certificates_only(live, run_logic):
    live.ssl["old.example"] = "failed"
    result, warnings = declare(run_logic, ssl_retry=True)
    assert ops(live) == ["site.ssl_retry"] and result["actions"] == ["retry the certificate of old.example"]
    assert [e["ssl"] for e in result["domains"]] == ["issued", "pending"]


def test_a_service_that_takes_only_the_domain_form(live, run_logic):
    live.service_form = "domain"
    result, warnings = declare(run_logic, aliases=["www.staging.example"])
    paths = [c["path"] for c in live.calls if "site-alias" in c["path"]]
    assert paths[0].endswith("acme/1001/list") and all("/domain/staging.example/" in p for p in paths[1:])
    assert result["aliases"] == ["old.example", "www.staging.example"]


def test_the_list_form_switches_every_site_and_waits_once(fake_api, run_logic, fake_time):
    for n in range(3):
        fake_api.add_live_site(1001 + n, "s%d.example" % n)
    fake_api.job_steps = ["queued", "running", "success"]
    result, warnings = run_logic(site_domain, {"client": "acme", "sites": [
        {"site": "1001", "domain": "a.example"}, {"site": "1002", "domain": "b.example", "keep_old_domain": True},
        {"site": "1003", "domain": "b.example"}]})
    assert isinstance(result, ModuleFailure) and result.msg.startswith("sites declares b.example for site 1002")
    assert fake_api.calls == []
    result, warnings = run_logic(site_domain, {"client": "acme", "sites": [
        {"site": "1001", "domain": "a.example"}, {"site": "1002", "domain": "b.example", "keep_old_domain": True},
        {"site": "9999", "domain": "c.example"}]})
    assert isinstance(result, ModuleFailure) and result.msg.startswith("1 of 3 sites failed: site 9999: site 9999 was")
    results = result.details["results"]
    assert [(r["site"], r.get("domain"), r["failed"]) for r in results] == [
        ("1001", "a.example", False), ("1002", "b.example", False), ("9999", None, True)]
    assert results[1]["aliases"] == ["s1.example"]
    # one wait for both jobs: their polls interleave, three rounds
    polls = [c["path"].rsplit("/", 1)[1] for c in fake_api.calls if c["operation"] == "job.status"]
    assert len(polls) == 6 and polls[:2] != [polls[0]] * 2


@pytest.mark.parametrize("args,expected", [
    ({"domain": "https://shop.example/"}, "domain must be a host name, not a URL (https://shop.example/): give "
                                          "shop.example"),
    ({"domain": "shop.example/path"}, "domain must be a host name without a path"),
    ({"domain": "shop.example:8443"}, "domain must be a host name without a port (shop.example:8443): give "
                                      "shop.example."),
    ({"domain": "*.shop.example"}, "domain must be one host name, not a wildcard"),
    ({"aliases": ["www.example", "*.example"]}, "aliases must be one host name, not a wildcard"),
    ({"domain": "192.0.2.10"}, "domain must be a host name, not an IP address"),
    ({"domain": ""}, "domain is empty"),
    ({"domain": "shop..example"}, "domain must be a host name like shop.example.com"),
    ({"domain": "xn--zz.example"}, "domain has an xn-- label that is not valid punycode"),
    ({"domain": "shop.example", "aliases": ["SHOP.example."]}, "aliases lists shop.example, which domain makes the "
                                                               "primary domain"),
    ({"aliases": ["a.example", "A.Example."]}, "aliases lists a.example twice"),
    ({"aliases": ["bücher.example", "xn--bcher-kva.example"]}, "aliases lists xn--bcher-kva.example twice"),
    ({"aliases_state": "exact"}, "aliases_state=exact needs aliases"),
    ({}, "site_domain needs domain (the primary domain), aliases, or both"),
    ({"aliases": ["a.example"], "keep_old_domain": True}, "keep_old_domain applies to a change of the primary domain"),
    ({"site": "x/y", "domain": "shop.example"}, "site must be"),
    ({"client": " ", "domain": "shop.example"}, "client is empty"),
    ({"domain": "shop.example", "wait_timeout": 0}, "wait_timeout must be a positive number"),
])
def test_bad_input_is_refused_before_any_call(live, run_logic, args, expected):
    result, warnings = declare(run_logic, **args)
    assert isinstance(result, ModuleFailure) and expected in result.msg, result
    assert live.calls == []


@pytest.mark.parametrize("args,expected", [
    ({"aliases": ["staging.example"]}, "aliases lists staging.example, the primary domain of site 1001"),
    ({"aliases": ["staging.example"], "aliases_state": "absent"}, "is never removed as one"),
    ({"domain": "shop.example", "keep_old_domain": False, "aliases": ["staging.example"]},
     "keep_old_domain=false and aliases_state=present with staging.example"),
    ({"domain": "shop.example", "keep_old_domain": True, "aliases": ["staging.example"], "aliases_state": "absent"},
     "keep_old_domain=true and aliases_state=absent"),
])
def test_what_contradicts_the_site_is_refused_before_any_write(live, run_logic, args, expected):
    result, warnings = declare(run_logic, **args)
    assert isinstance(result, ModuleFailure) and expected in result.msg, result
    assert live.writes == []


def test_names_are_normalised_before_they_are_sent(live, run_logic):
    result, warnings = declare(run_logic, domain="Bücher.Example.", aliases=["WWW.Shop.Example."])
    sent = [c["path"].rsplit("/", 1)[1] for c in live.writes]
    assert sent == ["www.shop.example", "xn--bcher-kva.example"]
    assert result["domain"] == "xn--bcher-kva.example"
