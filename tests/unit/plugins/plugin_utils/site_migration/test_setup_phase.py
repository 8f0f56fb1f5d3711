# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role's phase before the key install as one call (plugins/plugin_utils/site_migration/setup_phase.py):
the modules' own logic on the fake service, run as the action site_migration_setup runs them."""

from __future__ import annotations

import json

from ansible_collections.wpcloud.hosting.plugins.module_utils.service import migration_module
from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import run_in_controller
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.setup_phase import role_secrets, set_up
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    ADMIN_PASS,
    HOSTVARS,
    NEW,
    PASSWORD,
    SPEC,
    inputs,
)


def phase(fake_api, tmp_path, *sites, check_mode=False):
    """set_up for the sites (each a dict of role variables, with its host), every call recorded."""
    hosts = [s.pop("host", "dest%d.example" % i) for i, s in enumerate(sites)]
    given = [inputs(site_migration_state_dir=str(tmp_path), **s) for s in sites]
    calls, lines = [], []

    def call(module, args, forced_check_mode, by_field):
        calls.append((module, forced_check_mode))
        return run_in_controller(module, dict(args, api_url=fake_api.url, api_key=fake_api.api_key),
                                 check_mode=forced_check_mode, by_field=by_field)
    fleet, steps = set_up(given, hosts, SPEC, call, HOSTVARS, check_mode, lines.append)
    return fleet, steps, calls, lines


def password_site(site, **more):
    return dict({"site_migration_site": site, "site_migration_auth": "password",
                 "site_migration_remote_pass": PASSWORD}, **more)


def test_the_phase_allows_and_creates_the_migrations_each_step_once(fake_api, tmp_path):
    fake_api.add_site("1001")
    fake_api.add_site("1002")
    fleet, steps, calls, lines = phase(fake_api, tmp_path, password_site("1001"), password_site("1002"))
    # One call per step for both sites; the check step in check mode, whatever the run's mode.
    assert calls == [("migration", True), ("site_allow_migration", False), ("migration", False)]
    assert sorted(steps) == ["allow", "check", "create"] and all(s["sites"] == 2 for s in steps.values())
    assert [s["stage"] for s in fleet] == ["preflight", "preflight"]
    assert all(isinstance(s["migration_id"], int) for s in fleet)
    writes = [w["operation"] for w in fake_api.writes]
    assert writes == ["site.allow_migration"] * 2 + ["migration.create"] * 2
    # The credential reaches the service's form field, and nothing the phase returns holds it.
    assert all(w["sent"]["remote-pass"] == PASSWORD for w in fake_api.writes if w["operation"] == "migration.create")
    assert PASSWORD not in json.dumps(fleet) and PASSWORD not in json.dumps(lines)
    assert lines == ["Check the migrations' inputs before anything is written (2 sites)",
                     "Allow a migration into every destination site (2 sites)",
                     "Create the migrations, or update what changed (2 sites)"]


def test_a_credential_carries_its_field_name_only_from_the_role_variable_to_the_form(fake_api, tmp_path, monkeypatch):
    """One name per value: the phase puts site_migration_remote_pass straight under the service's field
    remote-pass (the vocabulary's ROLE_FIELDS), and the migration logic takes it under that name; neither the
    arguments handed over nor the options of one migration hold the module option's name remote_pass."""
    fake_api.add_site("1001")
    handed, taken = [], []
    real_run_one = migration_module.run_one

    def run_one(params, ctx):
        taken.append(dict(params))
        return real_run_one(params, ctx)
    monkeypatch.setattr(migration_module, "run_one", run_one)

    def call(module, args, check_mode, by_field):
        handed.append((module, by_field, args))
        return run_in_controller(module, dict(args, api_url=fake_api.url, api_key=fake_api.api_key),
                                 check_mode=check_mode, by_field=by_field)
    given = [inputs(site_migration_state_dir=str(tmp_path), **password_site("1001"))]
    fleet, steps = set_up(given, ["dest0.example"], SPEC, call, HOSTVARS)
    assert fleet[0]["stage"] == "preflight"
    elements = [element for module, by_field, args in handed if module == "migration" for element in args["migrations"]]
    assert [by_field for module, by_field, args in handed] == [True, False, True] and len(elements) == 2
    assert len(taken) == 2
    for options in elements + taken:
        holding = sorted(name for name, value in options.items() if value == PASSWORD)
        assert holding == ["remote-pass"], holding
        assert not set(options) & {"remote_pass", "ssh_id", "ssh_id_pass", "remote_host", "remote_user", "remote_port"}
    assert [w["sent"]["remote-pass"] for w in fake_api.writes if w["operation"] == "migration.create"] == [PASSWORD]


def test_a_rerun_with_refresh_false_reads_and_writes_nothing(fake_api, tmp_path):
    fake_api.add_site("1001")
    phase(fake_api, tmp_path, password_site("1001"))
    migration_id = int(fake_api.sites["1001"])
    fake_api.migrations[migration_id]["state"] = "migration-succeeded"
    before = len(fake_api.writes)
    fleet, steps, calls, dummy = phase(fake_api, tmp_path, password_site("1001", site_migration_refresh=False))
    assert calls == [("migration_info", False)] and len(fake_api.writes) == before
    assert fleet[0]["result"] == "left_alone" and not steps["info"]["result"]["changed"]


def test_bad_inputs_stop_their_site_before_any_call(fake_api, tmp_path):
    fake_api.add_site("1001")
    fleet, steps, calls, dummy = phase(fake_api, tmp_path, {"site_migration_site": "1001", "site_migration_auth": "password",
                                                            "site_migration_remote_port": "ssh"})
    assert calls == [] and steps == {} and fake_api.log == []
    assert fleet[0]["result"] == "invalid_input"
    assert "site_migration_remote_pass" in fleet[0]["message"] and "site_migration_remote_port" in fleet[0]["message"]


def test_a_site_the_modules_refuse_is_done_in_the_role_s_words_the_other_goes_on(fake_api, tmp_path):
    fake_api.add_site("1001")
    fake_api.add_site("1002")
    fleet, steps, calls, dummy = phase(fake_api, tmp_path, password_site("1001", site_migration_docroot="/srv/\x01"),
                                       password_site("1002"))
    assert fleet[0]["result"] == "invalid_input" and "site_migration_docroot" in fleet[0]["message"]
    assert fleet[1]["stage"] == "preflight"
    assert [w["path"].rsplit("/", 1)[1] for w in fake_api.writes if w["operation"] == "site.allow_migration"] == ["1002"]


def test_check_mode_writes_nothing_and_says_what_would_happen(fake_api, tmp_path):
    fake_api.add_site("1001")
    fleet, steps, calls, dummy = phase(fake_api, tmp_path, password_site("1001"), check_mode=True)
    assert fake_api.writes == [] and all(mode for dummy, mode in calls)
    assert fleet[0]["result"] == "checked"


def test_missing_destinations_are_created_ready_for_a_migration(fake_api, tmp_path):
    site = dict(NEW, site_migration_client="acme", site_migration_site="shop.example", site_migration_admin_pass=ADMIN_PASS)
    fleet, steps, calls, dummy = phase(fake_api, tmp_path, site)
    assert [c[0] for c in calls] == ["site_info", "site", "migration", "migration"]
    assert fleet[0]["destination"] == "created" and fleet[0]["stage"] == "preflight"
    assert ADMIN_PASS not in json.dumps(fleet) and ADMIN_PASS not in json.dumps(
        dict((k, v["sites"]) for k, v in steps.items()))


def test_the_role_secrets_are_every_no_log_value_given():
    given = [inputs(site_migration_remote_pass=PASSWORD), inputs(site_migration_admin_pass=ADMIN_PASS), None]
    assert role_secrets(given, SPEC) == {PASSWORD, ADMIN_PASS}
