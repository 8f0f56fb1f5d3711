# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""migration and migration_info on the fake service: create, read, resolve, the records they return, the
migrations and sites list forms. (Updates and credentials not sent: test_migration_update.py.)"""

from __future__ import annotations

import json

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import MASK
from ansible_collections.wpcloud.hosting.plugins.modules import migration, migration_info

SOURCE = {"remote_host": "src.example", "remote_user": "www"}
PASSWORD = "p@ss-Canary-1"


def test_a_create_reads_the_site_then_records_the_migration_id(fake_api, run_logic, tmp_path):
    fake_api.add_site("1002", allow="true")
    state = tmp_path / "1002.json"
    result, warnings = run_logic(migration, dict(SOURCE, site="1002", state_file=str(state)))
    assert (result["changed"], result["operation"], result["migration_id"]) == (True, "create", 5001)
    assert result["ssh_id_pub"].startswith("ssh-ed25519 ") and result["state"] == "new"
    assert json.loads(state.read_text())["migration_id"] == 5001
    assert fake_api.operations() == ["site_meta.get", "migration.create", "migration.get"]
    # A re-run manages the same migration: no second create.
    again, warnings = run_logic(migration, dict(SOURCE, site="1002", state_file=str(state)))
    assert again["changed"] is False and again["migration_id"] == 5001
    assert [c["operation"] for c in fake_api.writes] == ["migration.create"]


def test_credentials_are_sent_in_the_form_body_and_never_returned(fake_api, run_logic):
    fake_api.add_site("1002", allow="true")
    result, warnings = run_logic(migration, dict(SOURCE, site="1002", remote_pass=PASSWORD), diff=True)
    create = [c for c in fake_api.writes if c["operation"] == "migration.create"][0]
    assert create["sent"]["remote-pass"] == PASSWORD and PASSWORD not in create["query"]
    assert result["record"]["args"]["remote-pass"] == MASK and result["record"]["auth"] == "password"
    assert result["diff"]["after"]["auth"] == "password"
    assert PASSWORD not in json.dumps(result)


def test_a_create_needs_host_and_user_and_a_site_that_allows_it(fake_api, run_logic):
    fake_api.add_site("1002", allow="true")
    fake_api.add_site("1003")
    missing, warnings = run_logic(migration, {"site": "1002", "remote_host": "src.example"})
    assert isinstance(missing, ModuleFailure) and missing.msg == "remote_user is required to create a migration for site 1002."
    refused, warnings = run_logic(migration, dict(SOURCE, site="1003"))
    assert isinstance(refused, ModuleFailure) and "HTTP 403" in refused.msg
    # A 403 leads with the key (issue 23); what was refused follows.
    assert refused.msg.startswith("The service refused the API key") and "(Creating a migration for site 1003)" in refused.msg
    assert refused.details["failure"]["effect"] == "none"


def test_check_mode_says_what_it_would_create_and_writes_nothing(fake_api, run_logic):
    fake_api.add_site("1002", allow="true")
    result, warnings = run_logic(migration, dict(SOURCE, site="1002"), check_mode=True, diff=True)
    assert (result["changed"], result["operation"], result["migration_id"]) == (True, "create", None)
    assert result["diff"]["after"] == {"remote-host": "src.example", "remote-user": "www", "remote-port": 22,
                                       "auth": "generated"}
    assert fake_api.writes == []


def test_a_running_migration_is_not_updated(fake_api, run_logic):
    mid = fake_api.add_migration(state="migration-running", **{"remote-host": "src.example", "remote-user": "www"})
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_docroot": "/srv/www"})
    assert isinstance(result, ModuleFailure) and "actively running" in result.msg
    assert result.details["state"] == "migration-running" and fake_api.writes == []


@pytest.mark.parametrize("args,named", [
    ({"remote_host": "bad host"}, "remote_host"), ({"remote_user": "a b"}, "remote_user"),
    ({"remote_port": 0}, "remote_port"), ({"remote_docroot": " "}, "remote_docroot"),
    ({"remote_domain": "1234"}, "remote_domain"), ({"remote_pass": ""}, "remote_pass"),
    ({"ssh_id": "not a key"}, "ssh_id"),
])
def test_bad_values_are_refused_before_any_call(fake_api, run_logic, args, named):
    result, warnings = run_logic(migration, dict(args, site="1002"))
    assert isinstance(result, ModuleFailure) and result.msg.startswith(named) and fake_api.calls == []


def test_the_migrations_list_form_creates_and_updates_and_names_the_failed(fake_api, run_logic):
    fake_api.add_site("1001", allow="true")
    mid = fake_api.add_migration(site="1002", **{"remote-host": "src.example", "remote-user": "www"})
    result, warnings = run_logic(migration, dict(SOURCE, remote_pass=PASSWORD, migrations=[
        {"site": "1001"}, {"site": "1002", "remote_docroot": "/srv/www"}, {"site": "9999"}]))
    assert isinstance(result, ModuleFailure) and result.msg.startswith("1 of 3 migrations failed: site 9999: ")
    first, second, third = result.details["results"]
    assert (first["operation"], second["operation"], third["failed"]) == ("create", "update", True)
    assert second["migration_id"] == mid and "remote-docroot" in second["updated_fields"]
    assert PASSWORD not in json.dumps(result.details)


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
