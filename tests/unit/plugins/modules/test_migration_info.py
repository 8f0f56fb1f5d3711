# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""migration_info on the fake service: a migration read by site, by ID and for many sites (its record masked), a
migration of another site refused, a null ID in check mode, the rules of its sites list form.
Its logic: run_info in module_utils/service/migration.py."""

from __future__ import annotations

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import MASK
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_info


def test_migration_info_by_site_by_id_and_for_many_sites(fake_api, run_logic):
    mid = fake_api.add_migration(site="1002", auth="password", **{"remote-host": "src.example", "remote-pass": "x"})
    fake_api.add_site("1003", allow="true")
    by_site, warnings = run_logic(migration_info, {"site": "1002"})
    by_id, warnings = run_logic(migration_info, {"migration_id": mid})
    assert by_site == by_id
    assert (by_site["exists"], by_site["migration_id"], by_site["site_id"]) == (True, mid, 1002)
    assert by_site["record"]["args"] == {"remote-host": "src.example", "remote-pass": MASK}
    none, warnings = run_logic(migration_info, {"site": "1003"})
    assert none == {"changed": False, "exists": False, "migration_id": None}
    many, warnings = run_logic(migration_info, {"sites": ["1002", "1003"]})
    assert [(r["site"], r["exists"]) for r in many["results"]] == [("1002", True), ("1003", False)]
    assert fake_api.writes == []


def test_migration_info_refuses_a_migration_of_another_site(fake_api, run_logic):
    mid = fake_api.add_migration(site="1002")
    result, warnings = run_logic(migration_info, {"site": "1003", "migration_id": mid})
    assert isinstance(result, ModuleFailure) and result.msg == "migration_id %d belongs to site 1002, not to site 1003." % mid


@pytest.mark.parametrize("check_mode", [True, False])
def test_migration_info_with_a_null_id(fake_api, run_logic, check_mode):
    result, warnings = run_logic(migration_info, {"migration_id": None}, check_mode=check_mode)
    if check_mode:
        assert result["exists"] is False and "check mode" in result["msg"]
    else:
        assert isinstance(result, ModuleFailure) and "migration_id" in result.msg
    assert fake_api.calls == []


def validated(module, args):
    args = dict(args, api_key="k")
    result = ArgumentSpecValidator(**module.MODULE_SPEC).validate(args)
    return result


def test_migration_info_sites_excludes_site_and_migration_id_but_not_each_other():
    def errors(**args):
        return " ".join(validated(migration_info, args).error_messages)

    assert "mutually exclusive" in errors(sites=["1"], site="1")
    assert "mutually exclusive" in errors(sites=["1"], migration_id=4)
    assert "one of the following is required" in errors()
    # The single form's site with migration_id (the migration must belong to the site) stays valid.
    assert errors(site="1001", migration_id=4) == ""


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(migration_info)
