# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_allow_migration's logic on the fake service: one site and the sites list form, check and diff mode.
(How the service's spellings of allow_site_migration are read: tests/unit/plugins/module_utils/service/test_site.py.)"""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import site_allow_migration


def allow(run_logic, **args):
    return run_logic(site_allow_migration, dict({"confirm_overwrite": True}, **args))


def test_allows_once_then_changes_nothing(fake_api, run_logic):
    fake_api.add_site("1002")
    first, warnings = allow(run_logic, site="1002")
    assert (first["changed"], first["ready"], first["migration_id"]) == (True, True, None)
    again, warnings = allow(run_logic, site="1002")
    assert again["changed"] is False and again["ready"] is True
    assert [c["operation"] for c in fake_api.writes] == ["site.allow_migration"]


def test_check_mode_and_diff_write_nothing(fake_api, run_logic):
    fake_api.add_site("1002")
    result, warnings = run_logic(site_allow_migration, {"site": "1002", "confirm_overwrite": True}, check_mode=True,
                                 diff=True)
    assert result["changed"] is True and fake_api.writes == []
    assert result["diff"] == {"before": {"allow_site_migration": "disabled"}, "after": {"allow_site_migration": "enabled"}}


def test_a_site_holding_a_migration_reports_it(fake_api, run_logic):
    mid = fake_api.add_migration(site="1003")
    result, warnings = allow(run_logic, site="1003")
    assert (result["changed"], result["ready"], result["migration_id"]) == (False, False, mid)
    assert fake_api.writes == []


def test_without_confirm_overwrite_nothing_is_read(fake_api, run_logic):
    fake_api.add_site("1002")
    for args in ({"site": "1002"}, {"sites": ["1002"]}):
        result, warnings = run_logic(site_allow_migration, args)
        assert isinstance(result, ModuleFailure) and "confirm_overwrite must be true" in result.msg
    assert fake_api.calls == []


@pytest.mark.parametrize("site", ["", "0", "a/b", "http://x.example", "x y.example"])
def test_a_bad_site_is_refused_before_any_call(fake_api, run_logic, site):
    result, warnings = allow(run_logic, site=site)
    assert isinstance(result, ModuleFailure) and result.msg.startswith("site must be") and fake_api.calls == []


def test_the_list_form_serves_every_site_and_names_the_failed_ones(fake_api, run_logic):
    fake_api.add_site("1001")
    fake_api.add_site("1002", allow="true")
    result, warnings = allow(run_logic, sites=["1001", "1002", "9999"])
    assert isinstance(result, ModuleFailure)
    assert result.msg == "1 of 3 sites failed: site 9999: site 9999 was not found (HTTP 404): check the site ID or domain."
    assert [(r["site"], r["changed"] if "changed" in r else None, r["failed"]) for r in result.details["results"]] == [
        ("1001", True, False), ("1002", False, False), ("9999", None, True)]
    assert [c["operation"] for c in fake_api.writes] == ["site.allow_migration"]


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(site_allow_migration)
