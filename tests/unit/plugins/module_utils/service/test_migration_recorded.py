# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the state file keeps for a re-run (issue 25): a digest of the password last sent, so that a re-run
with the same vaulted password is quiet and a changed one is sent (issue 40); and a recorded migration ID that the
service no longer knows (a deleted migration, a reset service).

The migration module's logic on a fake service (tests/unit/plugins/fake_service.py).
"""

from __future__ import annotations

import json

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.state_file import same_secret, secret_digest
from ansible_collections.wpcloud.hosting.plugins.modules import migration

PASSWORD = "vaulted-Pass-1"


def _base(state):
    return {"site": "1002", "remote_host": "src.example", "remote_user": "www", "state_file": state}


def test_the_digest_tells_the_same_secret_from_another_and_never_holds_it():
    digest = secret_digest(PASSWORD)
    assert PASSWORD not in digest and digest.startswith("pbkdf2-sha256$")
    assert same_secret(PASSWORD, digest) and not same_secret("other", digest)
    assert secret_digest(PASSWORD) != digest                    # a new salt each time
    assert not same_secret(PASSWORD, "garbage") and not same_secret(PASSWORD, None)


def test_a_rerun_with_the_same_password_is_quiet_and_a_changed_one_is_sent(fake_api, run_logic, tmp_path):
    fake_api.sites["1002"] = "true"
    state = str(tmp_path / "1002.json")
    created, warnings = run_logic(migration, dict(_base(state), remote_pass=PASSWORD))
    assert created["operation"] == "create" and warnings == []
    recorded = open(state).read()
    assert PASSWORD not in recorded and same_secret(PASSWORD, json.loads(recorded)["remote_pass_digest"])

    # The list form, as the role runs it (check step and create step): nothing to say.
    for check_mode in (True, False):
        same, warnings = run_logic(migration, {"migrations": [dict(_base(state), remote_pass=PASSWORD)]},
                                   check_mode=check_mode)
        assert same["changed"] is False and warnings == [], (same, warnings)
        assert "credentials_not_sent" not in same["results"][0]

    # A changed one is sent (update_secret when_changed, the default; issue 40), and its digest kept: the
    # next re-run is quiet again. (Every case of the decision: test_migration_credentials.py.)
    other, warnings = run_logic(migration, {"migrations": [dict(_base(state), remote_pass="changed-Pass-2")]})
    assert other["results"][0]["updated_fields"] == ["remote-pass"] and warnings == []
    assert "changed-Pass-2" not in json.dumps(other)
    assert same_secret("changed-Pass-2", json.loads(open(state).read())["remote_pass_digest"])
    again, warnings = run_logic(migration, dict(_base(state), remote_pass="changed-Pass-2"))
    assert again["changed"] is False and warnings == []


def test_without_a_digest_the_module_still_says_what_it_did_not_send(fake_api, run_logic):
    mid = fake_api.add_migration(auth="password", **{"remote-host": "src.example", "remote-user": "www"})
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_pass": PASSWORD})
    assert result["credentials_not_sent"] == ["remote_pass"] and len(warnings) == 1


def _recorded(tmp_path, migration_id):
    state = tmp_path / "1002.json"
    state.write_text(json.dumps({"site": "1002", "migration_id": migration_id}))
    return str(state)


def test_a_recorded_migration_the_service_forgot_is_replaced_when_the_site_holds_none(fake_api, run_logic, tmp_path):
    fake_api.sites["1002"] = "true"                 # allowed, holding no migration (a reset service)
    state = _recorded(tmp_path, 5999)
    preview, warnings = run_logic(migration, dict(_base(state)), check_mode=True)
    assert preview["operation"] == "create" and fake_api.writes == []
    assert json.loads(open(state).read())["migration_id"] == 5999   # check mode rewrites nothing
    result, warnings = run_logic(migration, dict(_base(state)))
    assert result["operation"] == "create", result
    assert len(warnings) == 1 and "5999" in warnings[0] and state in warnings[0] and "holds none" in warnings[0]
    assert json.loads(open(state).read())["migration_id"] == result["migration_id"] != 5999


def test_a_recorded_migration_the_service_forgot_gives_way_to_the_one_the_site_holds(fake_api, run_logic, tmp_path):
    mid = fake_api.add_migration(site="1002", **{"remote-host": "src.example", "remote-user": "www"})
    state = _recorded(tmp_path, 5999)
    result, warnings = run_logic(migration, dict(_base(state)))
    assert result["migration_id"] == mid and result["operation"] == "none", result
    assert len(warnings) == 1 and "holds migration %s" % mid in warnings[0]
    assert json.loads(open(state).read())["migration_id"] == mid
    assert [c for c in fake_api.writes if c["operation"] == "migration.create"] == []


def test_a_recorded_migration_the_site_still_names_is_not_replaced(fake_api, run_logic, tmp_path):
    fake_api.sites["1002"] = "5999"                 # the site names it, the service cannot read it
    state = _recorded(tmp_path, 5999)
    result, warnings = run_logic(migration, dict(_base(state)))
    assert isinstance(result, ModuleFailure) and fake_api.writes == []
    assert state in result.msg and "holds it in allow_site_migration" in result.msg
