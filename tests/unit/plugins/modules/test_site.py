# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The site module on the fake service: create by domain as a migration destination and wait for the
job, never twice; differences of an existing site reported; delete only when confirmed; the list form;
check mode and diff; bad input refused by the option's name before any call."""

from __future__ import annotations

import json

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import site

NEW = {"client": "acme", "domain": "shop.example", "admin_user": "shopadmin", "admin_email": "a@shop.example",
       "admin_pass": "Adm1n-pass-of-the-shop"}


def test_a_new_site_is_created_as_a_destination_and_its_job_waited_for(fake_api, run_logic, fake_time):
    lines = []
    result, warnings = run_logic(site, dict(NEW, progress_interval=1), progress=lines.append)
    assert (result["changed"], result["operation"], result["site_id"]) == (True, "create", 9001)
    assert result["job"]["status"] == "success" and result["job"]["polls"] == 3
    (create,) = fake_api.writes
    assert create["sent"]["meta[allow_site_migration]"] == "true" and create["sent"]["domain_name"] == "shop.example"
    assert fake_api.sites["shop.example"] == "true"
    assert "Adm1n-pass-of-the-shop" not in json.dumps(result) and lines and "job" in lines[0]


def test_an_existing_site_is_read_never_created_again(fake_api, run_logic, fake_time):
    run_logic(site, NEW)
    writes = len(fake_api.writes)
    result, warnings = run_logic(site, dict(NEW, php_version="8.2"))
    assert (result["changed"], result["operation"], result["site_id"]) == (False, "none", 9001)
    assert len(fake_api.writes) == writes
    assert result["differences"] == {"php_version": {"site": "8.3", "given": "8.2"}}
    assert "differs from the task in php_version" in warnings[0]
    assert "db_pass" not in result["record"]


def test_an_existing_site_without_the_flag_points_to_site_allow_migration(fake_api, run_logic):
    fake_api.add_site("old.example")
    result, warnings = run_logic(site, dict(NEW, domain="old.example"))
    assert result["differences"]["allow_site_migration"] == {"site": False, "given": True}
    assert "site_allow_migration" in warnings[0] and fake_api.writes == []


def test_check_mode_and_diff_write_nothing(fake_api, run_logic):
    result, warnings = run_logic(site, NEW, check_mode=True, diff=True)
    assert result["changed"] and result["site_id"] is None and fake_api.writes == []
    assert result["diff"]["after"]["domain_name"] == "shop.example" and "admin_pass" not in result["diff"]["after"]


def test_a_create_whose_answer_was_lost_is_read_and_its_job_found(fake_api, run_logic, fake_time):
    fake_api.fault("site.create", error="reset", after=True)
    result, warnings = run_logic(site, NEW)
    assert len(fake_api.writes) == 1 and result["uncertain"][0]["outcome"] == "happened"
    assert result["site_id"] == 9001 and result["job"]["status"] == "success"


def test_delete_needs_confirmation_and_waits_for_its_job(fake_api, run_logic, fake_time):
    run_logic(site, NEW)
    refused, warnings = run_logic(site, {"client": "acme", "domain": "shop.example", "state": "absent"})
    assert isinstance(refused, ModuleFailure) and "confirm_delete must be true" in refused.msg
    result, warnings = run_logic(site, {"client": "acme", "domain": "shop.example", "state": "absent",
                                        "confirm_delete": True})
    assert (result["changed"], result["operation"], result["job"]["status"]) == (True, "delete", "success")
    again, warnings = run_logic(site, {"client": "acme", "domain": "shop.example", "state": "absent",
                                       "confirm_delete": True})
    assert again["changed"] is False


def test_the_list_form_creates_every_new_site_and_leaves_the_others(fake_api, run_logic, fake_time):
    fake_api.add_site("old.example", allow="true")
    args = {"client": "acme", "admin_user": "web", "admin_email": "ops@example.com",
            "sites": [{"domain": "a.example"}, {"domain": "old.example"}, {"domain": "b.example", "php_version": "8.4"}]}
    result, warnings = run_logic(site, args)
    assert [r["operation"] for r in result["results"]] == ["create", "none", "create"]
    assert result["failed_count"] == 0 and result["changed"]
    assert [c["sent"].get("php_version") for c in fake_api.writes] in ([None, "8.4"], ["8.4", None])


@pytest.mark.parametrize("args, words", [
    ({"domain": "not a domain"}, "domain must be"),
    ({"domain": "1234"}, "domain must be the site's domain name"),
    ({"admin_user": "shop admin"}, "admin_user must be 1 to 60 letters"),
    ({"admin_email": "nobody"}, "admin_email must be an e-mail address"),
    ({"php_version": "eight"}, "php_version must be a version like 8.3"),
    ({"admin_pass": ""}, "admin_pass is empty"),
    ({"admin_user": " "}, "admin_user is empty"),
    ({"wait_timeout": 0}, "wait_timeout must be a positive number"),
])
def test_bad_input_is_refused_before_any_call(fake_api, run_logic, args, words):
    result, warnings = run_logic(site, dict(NEW, **args))
    assert isinstance(result, ModuleFailure) and words in result.msg and fake_api.log == []


def test_a_new_site_needs_its_admin(fake_api, run_logic):
    result, warnings = run_logic(site, {"client": "acme", "domain": "shop.example"})
    assert isinstance(result, ModuleFailure) and "admin_user is required to create site shop.example" in result.msg
    assert fake_api.writes == []


def test_a_403_for_the_domain_blames_the_key_unless_the_domain_is_proven_taken(fake_api, run_logic):
    fake_api.fault("site.get", status=403)
    result, warnings = run_logic(site, NEW)
    assert isinstance(result, ModuleFailure)
    assert result.msg.startswith("The service refused the API key for site shop.example (HTTP 403")
    assert "choose another domain" not in result.msg.lower() and fake_api.writes == []
    # Proven: the key lists the client's sites without it, and the service says the domain is used.
    fake_api.used_domains.add("shop.example")
    fake_api.fault("site.get", status=403)
    result, warnings = run_logic(site, NEW)
    assert isinstance(result, ModuleFailure) and result.msg.startswith("domain shop.example is used by a site")
    assert "Choose another domain" in result.msg and fake_api.writes == []
    assert fake_api.operations()[-3:] == ["site.get", "site.list", "site.check_domain"]


def test_a_refused_listing_proves_nothing_about_the_domain(fake_api, run_logic):
    fake_api.used_domains.add("shop.example")
    fake_api.fault("site.get", status=403)
    fake_api.fault("site.list", status=403)
    result, warnings = run_logic(site, NEW)
    assert isinstance(result, ModuleFailure) and result.msg.startswith("The service refused the API key")
    assert "Choose another domain" not in result.msg


def test_a_failed_job_fails_the_task(fake_api, run_logic, fake_time):
    fake_api.job_steps = ["running", "failure"]
    result, warnings = run_logic(site, NEW)
    assert isinstance(result, ModuleFailure) and "failed" in result.msg and result.details["job"]["status"] == "failure"


# -- job words and the created site's flag (issue 23) -------------------------------------------------------

@pytest.mark.parametrize("steps, outcome", [
    (["queued", "done"], "success"), (["running", "Completed"], "success"), (["OK"], "success"),
    (["running", "failed"], "failure"), (["ERROR"], "failure"), (["queued", "failure"], "failure")])
def test_every_known_job_word_ends_the_wait_at_once(fake_api, run_logic, fake_time, steps, outcome):
    fake_api.job_steps = steps
    result, warnings = run_logic(site, dict(NEW, wait_timeout=600))
    job = result["job"] if outcome == "success" else result.details["job"]
    assert job["outcome"] == outcome and job["status"] == steps[-1] and job["polls"] == len(steps)
    assert job["elapsed"] < 60
    if outcome == "failure":
        assert isinstance(result, ModuleFailure) and "(status %s)" % steps[-1] in result.msg


def test_an_unknown_job_word_keeps_polling_and_is_named(fake_api, run_logic, fake_time):
    fake_api.job_steps = ["queued", "finishing-up"]
    lines = []
    result, warnings = run_logic(site, dict(NEW, wait_timeout=20, progress_interval=5), progress=lines.append)
    assert isinstance(result, ModuleFailure) and result.details["timed_out"]
    assert "still finishing-up (a status this collection does not know" in result.msg
    assert result.details["job"]["polls"] > 5 and result.details["job"]["outcome"] is None
    assert any("finishing-up (a status this collection does not know; still polling)" in line for line in lines)


def test_a_created_site_is_checked_to_hold_the_flag(fake_api, run_logic, fake_time):
    result, warnings = run_logic(site, NEW)
    assert result["allow_site_migration"] is True and not warnings
    assert fake_api.operations()[-1] == "site_meta.get"
    fake_api.create_keeps_flag = False
    result, warnings = run_logic(site, dict(NEW, domain="second.example"))
    assert result["allow_site_migration"] is False and result["changed"]
    assert "did not keep its allow_site_migration" in warnings[0] and "site_allow_migration" in warnings[0]


def test_no_flag_check_without_a_wait_or_the_flag(fake_api, run_logic, fake_time):
    run_logic(site, dict(NEW, wait=False))
    run_logic(site, dict(NEW, domain="plain.example", allow_site_migration=False))
    assert "site_meta.get" not in fake_api.operations()


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(site)
