# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role's --diff (plugins/plugin_utils/site_migration/setup_phase.py site_diffs): one diff per site of what the
phase changes or would change (the site created, its allow flag, the migration's fields), redacted as the modules
redact theirs, on the fake service. Through a real ansible-playbook: tests/system/test_role_in_a_play.py."""

from __future__ import annotations

import json

from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import run_in_controller
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.setup_phase import set_up, site_diffs
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    ADMIN_PASS,
    HOSTVARS,
    NEW,
    PASSWORD,
    SPEC,
    inputs,
)


def diffs(fake_api, tmp_path, sites, check_mode=False):
    hosts = list(sites)
    given = [inputs(site_migration_state_dir=str(tmp_path), **sites[h]) for h in hosts]

    def call(module, args, forced_check_mode, by_field):
        return run_in_controller(module, dict(args, api_url=fake_api.url, api_key=fake_api.api_key),
                                 check_mode=forced_check_mode, diff=True, by_field=by_field)
    fleet, steps = set_up(given, hosts, SPEC, call, HOSTVARS, check_mode)
    return site_diffs(steps, fleet)


def password_site(site, **more):
    return dict({"site_migration_site": site, "site_migration_auth": "password",
                 "site_migration_remote_pass": PASSWORD}, **more)


def test_each_site_shows_its_allow_flag_and_migration_once_without_a_credential(fake_api, tmp_path):
    fake_api.add_site("1001")
    fake_api.add_site("1002", allow="true")
    found = diffs(fake_api, tmp_path, {"dest1.example": password_site("1001"), "dest2.example": password_site("1002")})
    assert [d["before_header"] for d in found] == ["site 1001 (host dest1.example)", "site 1002 (host dest2.example)"]
    first, second = found
    assert first["before"] == {"allow_site_migration": "disabled", "migration": {}}
    assert first["after"]["allow_site_migration"] == "enabled"
    assert first["after"]["migration"] == {"auth": "password", "remote-host": "10.0.0.5", "remote-port": 2222,
                                           "remote-user": "www"}
    assert "allow_site_migration" not in second["before"]          # allowed already: not a change
    assert PASSWORD not in json.dumps(found)


def test_check_mode_shows_the_same_and_an_update_shows_only_what_changes(fake_api, tmp_path):
    fake_api.add_site("1001")
    previewed = diffs(fake_api, tmp_path, {"dest1.example": password_site("1001")}, check_mode=True)
    assert fake_api.writes == [] and previewed[0]["after"]["migration"]["remote-user"] == "www"
    diffs(fake_api, tmp_path, {"dest1.example": password_site("1001")})
    changed = diffs(fake_api, tmp_path, {"dest1.example": password_site("1001", site_migration_remote_user="deploy",
                                                                        site_migration_update_secret="always")})
    assert changed == [{"before_header": "site 1001 (host dest1.example)", "after_header": "site 1001 (host dest1.example)",
                        "before": {"migration": {"auth": "password", "remote-user": "www"}},
                        "after": {"migration": {"auth": "password (credentials replaced)", "remote-user": "deploy"}}}]
    # Nothing to change: no diff at all.
    assert diffs(fake_api, tmp_path, {"dest1.example": password_site("1001", site_migration_remote_user="deploy")}) == []


def test_a_site_the_role_creates_shows_the_site_and_its_migration(fake_api, tmp_path):
    site = dict(NEW, site_migration_client="acme", site_migration_site="shop.example", site_migration_admin_pass=ADMIN_PASS)
    found = diffs(fake_api, tmp_path, {"shop.example": site})
    assert len(found) == 1 and found[0]["before_header"] == "site shop.example"
    assert found[0]["before"]["site"] == {"state": "absent"}
    assert found[0]["after"]["site"]["allow_site_migration"] is True and found[0]["after"]["migration"]["auth"]
    assert ADMIN_PASS not in json.dumps(found)
