# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The site module on the fake service: create by domain as a migration destination and wait for the
job, never twice; differences of an existing site reported; delete only when confirmed; the list form;
check mode and diff; bad input refused by the option's name before any call."""

from __future__ import annotations

import json

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils._failure import ModuleFailure
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


def test_a_domain_of_another_client_is_refused_before_any_write(fake_api, run_logic):
    fake_api.fault("site.get", status=403)
    result, warnings = run_logic(site, NEW)
    assert isinstance(result, ModuleFailure) and "belongs to a site of another client" in result.msg
    assert fake_api.writes == []


def test_a_failed_job_fails_the_task(fake_api, run_logic, fake_time):
    fake_api.job_steps = ["running", "failure"]
    result, warnings = run_logic(site, NEW)
    assert isinstance(result, ModuleFailure) and "failed" in result.msg and result.details["job"]["status"] == "failure"
