# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action site_migration_setup (plugins/action/site_migration_setup.py) on the fake service: what its
result holds (the fleet, each step's summary, warnings, diffs, the check-mode fact) and never holds (a
credential), and when it is hidden. The hosts' variables, which Ansible's variable manager gives the real
action (tests/system/test_role.py), are given here."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ansible_collections.wpcloud.hosting.plugins.action import site_migration_setup
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import CHECK_MODE_CREATED_SITES_FACT
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration import fleet_builders as fb
from ansible_collections.wpcloud.hosting.tests.unit.plugins.action_doubles import Templar


@pytest.fixture()
def setup(fake_api, tmp_path, monkeypatch):
    """setup(sites, check_mode=False, diff=False): the action's result for the sites (host -> role variables)."""

    def run(sites, check_mode=False, diff=False, facts=None):
        given = dict((host, fb.inputs(site_migration_state_dir=str(tmp_path), **values)) for host, values in sites.items())
        read = []

        def read_fleet_variables(task, templar, task_vars, hosts, names, seen=None, prefixes=()):
            read.append(sorted(names))
            for host in hosts:
                for name in given[host]:
                    if seen is not None and name.startswith(prefixes):
                        seen.setdefault(name, []).append(host)
            return [given[h] for h in hosts]
        monkeypatch.setattr(site_migration_setup, "read_fleet_variables", read_fleet_variables)
        args = {"argument_spec": fb.SPEC, "api_url": fake_api.url, "api_key": fake_api.api_key}
        task = SimpleNamespace(args=args, check_mode=check_mode, diff=diff, async_val=0,
                               action="wpcloud.hosting.site_migration_setup")
        action = site_migration_setup.ActionModule(task, SimpleNamespace(_shell=SimpleNamespace(tmpdir="/x")), None,
                                                   None, Templar(), None)
        result = action.run(task_vars={"inventory_hostname": list(sites)[0], "ansible_play_batch": list(sites),
                                       "hostvars": fb.HOSTVARS, "ansible_facts": facts or {}})
        assert read == [sorted(fb.SPEC["options"])]   # every option of the role's spec, read once
        return result
    return run


def password_site(site, **more):
    return dict({"site_migration_site": site, "site_migration_auth": "password",
                 "site_migration_remote_pass": fb.PASSWORD}, **more)


def test_the_result_holds_the_fleet_and_no_credential_and_is_shown(fake_api, setup):
    fake_api.add_site("1001")
    result = setup({"dest1.example": password_site("1001")})
    assert result["changed"] is True and not result.get("failed")
    assert result["fleet"][0]["stage"] == "preflight"
    assert result["going_live"] is False      # a plain migration: the role skips its going-live steps
    assert result["steps"] == {"check": {"sites": 1, "changed": False}, "allow": {"sites": 1, "changed": True},
                               "create": {"sites": 1, "changed": True}}
    assert fb.PASSWORD not in json.dumps(result) and fake_api.api_key not in json.dumps(result)
    # A site gives a credential, which the result does not hold: it is shown (--diff shows the sites' diffs).
    assert "_ansible_no_log" not in result


def test_without_a_credential_the_diffs_show_and_a_rerun_changes_nothing(fake_api, setup):
    fake_api.add_site("1001")
    site = {"dest1.example": {"site_migration_site": "1001", "site_migration_auth": "generated"}}
    result = setup(site, diff=True)
    assert "_ansible_no_log" not in result
    assert result["diff"] and all(isinstance(d, dict) for d in result["diff"])
    again = setup(dict(site, **{}), diff=True)
    assert again["changed"] is False and "diff" not in again and "warnings" not in again


def test_a_warning_of_the_check_and_the_create_steps_is_said_once_in_the_roles_words(fake_api, setup, tmp_path):
    fake_api.add_site("1001")
    setup({"dest1.example": password_site("1001")})
    # A state file that keeps no record of the password sent (an earlier version's): nothing to compare with.
    state = tmp_path / "1001.json"
    state.write_text(json.dumps(dict((k, v) for k, v in json.loads(state.read_text()).items()
                                     if k != "remote_pass_digest")))
    result = setup({"dest1.example": password_site("1001", site_migration_remote_pass="another-Pass-9")})
    warnings = [w for w in result.get("warnings") or [] if "given but not sent" in w]
    assert len(warnings) == 1 and "another-Pass-9" not in json.dumps(result)
    assert warnings[0].startswith("site_migration_remote_pass was given but not sent to migration ")
    assert "set site_migration_update_secret: always for one run" in warnings[0]


def test_a_corrected_password_is_sent_before_preflight_and_once(fake_api, setup):
    """Issue 40: the role's default (site_migration_update_secret when_changed) sends a password known to
    differ from the one last sent, in the create step's update; the re-run sends nothing."""
    fake_api.add_site("1001")
    setup({"dest1.example": password_site("1001")})
    result = setup({"dest1.example": password_site("1001", site_migration_remote_pass="corrected-Pass-9")})
    site = result["fleet"][0]
    assert site["stage"] == "preflight" and site["migration"]["updated_fields"] == ["remote-pass"]
    assert "warnings" not in result and "corrected-Pass-9" not in json.dumps(result)
    sent = [c for c in fake_api.writes if c["operation"] == "migration.update"]
    assert [c["sent"]["remote-pass"] for c in sent] == ["corrected-Pass-9"]
    again = setup({"dest1.example": password_site("1001", site_migration_remote_pass="corrected-Pass-9")})
    assert again["fleet"][0]["stage"] == "preflight" and again["fleet"][0]["migration"]["updated_fields"] == []
    assert len([c for c in fake_api.writes if c["operation"] == "migration.update"]) == 1


def test_on_create_stops_a_site_whose_password_is_known_stale_before_any_write(fake_api, setup):
    fake_api.add_site("1001")
    fake_api.add_site("1002")
    setup({"dest1.example": password_site("1001"), "dest2.example": password_site("1002")})
    writes = len(fake_api.writes)
    result = setup({"dest1.example": password_site("1001", site_migration_remote_pass="corrected-Pass-9",
                                                   site_migration_update_secret="on_create"),
                    "dest2.example": password_site("1002", site_migration_update_secret="on_create")})
    stopped, fine = result["fleet"]
    assert stopped["stage"] == "done" and stopped["result"] == "invalid_input"
    assert stopped["message"].startswith("site 1001: site_migration_remote_pass is not the password last sent to "
                                         "migration ")
    assert "site_migration_update_secret is on_create" in stopped["message"]
    assert "Set site_migration_update_secret: when_changed (the default)" in stopped["message"]
    assert "update_secret:" not in stopped["message"].replace("site_migration_update_secret:", "")
    assert fine["stage"] == "preflight"
    assert len(fake_api.writes) == writes                 # the check step stopped it: nothing sent for either
    assert "corrected-Pass-9" not in json.dumps(result)


def test_check_mode_writes_nothing_and_keeps_the_sites_it_would_create_for_a_later_play(fake_api, setup):
    site = dict(fb.NEW, site_migration_client="acme", site_migration_site="shop.example", site_migration_admin_pass=fb.ADMIN_PASS)
    result = setup({"shop.example": site}, check_mode=True, facts={CHECK_MODE_CREATED_SITES_FACT: ["older.example"]})
    assert fake_api.writes == [] and result["fleet"][0]["result"] == "checked"
    assert result["ansible_facts"] == {CHECK_MODE_CREATED_SITES_FACT: ["older.example", "shop.example"]}
    assert fb.ADMIN_PASS not in json.dumps(result)


def test_an_argument_spec_without_options_is_refused_before_any_call(fake_api, setup, monkeypatch):
    task = SimpleNamespace(args={"argument_spec": {"short_description": "x"}, "api_key": "k"}, check_mode=False,
                           diff=False, async_val=0, action="wpcloud.hosting.site_migration_setup")
    action = site_migration_setup.ActionModule(task, SimpleNamespace(_shell=SimpleNamespace(tmpdir="/x")), None,
                                               None, Templar(), None)
    result = action.run(task_vars={"ansible_play_batch": ["dest1.example"]})
    assert result["failed"] is True and "argument_spec has no options" in result["msg"] and fake_api.log == []
