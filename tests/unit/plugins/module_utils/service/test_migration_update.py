# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""An update sends only what the user gave; credentials given and not sent are said; null IDs in check mode.

The migration module's logic on a fake service (tests/unit/plugins/fake_service.py),
with the arguments validated by the module's own spec, as the action plugin does.
"""

from __future__ import annotations

import json

import pytest

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import FIELD_NAMES
from ansible_collections.wpcloud.hosting.plugins.modules import migration
from ansible_collections.wpcloud.hosting.plugins.modules import migration_info


def new_key():
    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                             serialization.NoEncryption()).decode()


def updates(api):
    return [c for c in api.writes if c["operation"] == "migration.update"]


# -- 1. an option's default applies on create only ---------------------------------------------------------

def test_no_option_that_is_sent_has_a_spec_default():
    """A spec default cannot be told from a value the user gave: it would be sent on every update."""
    spec = migration.MODULE_SPEC["argument_spec"]
    sent = [name for name in FIELD_NAMES if "default" in spec[name]]
    assert sent == []
    assert [name for name in FIELD_NAMES if "default" in spec["migrations"]["options"][name]] == []


def test_an_update_with_only_a_key_keeps_the_stored_port(fake_api, run_logic):
    """The bug of issue 13: remote-port=22 (the default) was sent over a stored 2022."""
    mid = fake_api.add_migration(**{"remote-host": "src.example", "remote-user": "www", "remote-port": 2022})
    result, warnings = run_logic(migration, {"migration_id": mid, "ssh_id": new_key()}, diff=True)
    assert not isinstance(result, ModuleFailure), result
    assert result["updated_fields"] == ["ssh-id"]
    assert [c["params"] for c in updates(fake_api)] == [["ssh-id"]]
    assert fake_api.migrations[mid]["args"]["remote-port"] == 2022
    assert "remote-port" not in result["diff"]["before"] and "remote-port" not in result["diff"]["after"]


def test_an_element_of_migrations_inherits_only_what_the_task_set(fake_api, run_logic):
    mid = fake_api.add_migration(site="1003", **{"remote-host": "src.example", "remote-user": "www",
                                                 "remote-port": 2022})
    result, warnings = run_logic(migration, {"ssh_id": new_key(), "migrations": [{"migration_id": mid}]})
    assert not isinstance(result, ModuleFailure), result
    assert result["results"][0]["updated_fields"] == ["ssh-id"]
    assert [c["params"] for c in updates(fake_api)] == [["ssh-id"]]
    assert fake_api.migrations[mid]["args"]["remote-port"] == 2022


def test_an_element_inherits_the_port_the_task_did_set(fake_api, run_logic):
    mid = fake_api.add_migration(site="1003", **{"remote-host": "src.example", "remote-user": "www",
                                                 "remote-port": 2022})
    result, warnings = run_logic(migration, {"remote_port": 2200, "migrations": [{"migration_id": mid}]})
    assert result["results"][0]["updated_fields"] == ["remote-port"]
    assert fake_api.migrations[mid]["args"]["remote-port"] == 2200


def test_a_create_without_a_port_sends_the_create_default(fake_api, run_logic):
    fake_api.sites["1002"] = "true"
    result, warnings = run_logic(migration, {"site": "1002", "remote_host": "src.example", "remote_user": "www"},
                                 diff=True)
    assert result["operation"] == "create"
    create = [c for c in fake_api.writes if c["operation"] == "migration.create"]
    assert create[0]["sent"]["remote-port"] == "22"  # a form body holds text
    assert result["diff"]["after"]["remote-port"] == 22


def test_the_diff_compares_like_with_like(fake_api, run_logic):
    mid = fake_api.add_migration(**{"remote-host": "src.example", "remote-user": "www", "remote-port": "2022"})
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_port": 2200}, diff=True, check_mode=True)
    assert result["diff"] == {"before": {"remote-port": 2022}, "after": {"remote-port": 2200}}
    assert fake_api.writes == []


def test_the_same_port_as_a_string_from_the_service_is_no_change(fake_api, run_logic):
    mid = fake_api.add_migration(**{"remote-host": "src.example", "remote-user": "www", "remote-port": "2022"})
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_port": 2022})
    assert result["changed"] is False and fake_api.writes == []


def test_port_22_on_a_record_without_a_port_is_the_services_default(fake_api, run_logic):
    mid = fake_api.add_migration(**{"remote-host": "src.example", "remote-user": "www"})
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_port": 22})
    assert result["changed"] is False and fake_api.writes == []


# -- 5. credentials given and not sent ---------------------------------------------------------------------

def test_a_password_given_and_not_sent_is_said_without_the_password(fake_api, run_logic):
    mid = fake_api.add_migration(auth="password", **{"remote-host": "src.example", "remote-user": "www",
                                                     "remote-pass": "old-Pass-1"})
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_pass": "new-Pass-2"})
    assert result["changed"] is False and fake_api.writes == []
    assert result["credentials_not_sent"] == ["remote_pass"]
    assert len(warnings) == 1
    assert "remote_pass was given but not sent to migration %s" % mid in warnings[0]
    assert "update_secret: always" in warnings[0]
    assert "new-Pass-2" not in json.dumps([result, warnings])


def test_update_secret_always_sends_it_and_says_nothing(fake_api, run_logic):
    mid = fake_api.add_migration(auth="password", **{"remote-host": "src.example", "remote-user": "www",
                                                     "remote-pass": "old"})
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_pass": "new-Pass-2",
                                             "update_secret": "always"})
    assert result["updated_fields"] == ["remote-pass"] and warnings == []
    assert "credentials_not_sent" not in result


def test_a_key_recorded_in_the_state_file_tells_same_from_changed(fake_api, run_logic, tmp_path):
    fake_api.sites["1002"] = "true"
    state = str(tmp_path / "1002.json")
    first, second = new_key(), new_key()
    base = {"site": "1002", "remote_host": "src.example", "remote_user": "www", "state_file": state}
    created, warnings = run_logic(migration, dict(base, ssh_id=first))
    assert created["operation"] == "create"
    recorded = json.loads(open(state).read())
    assert recorded["ssh_id_fingerprint"] == created["ssh_id_fingerprint"]
    assert first.splitlines()[1] not in open(state).read()

    same, warnings = run_logic(migration, dict(base, ssh_id=first))
    assert same["changed"] is False and warnings == [] and "credentials_not_sent" not in same

    # Another key is sent (update_secret when_changed, the default; issue 40), and its fingerprint kept.
    other, warnings = run_logic(migration, dict(base, ssh_id=second))
    assert other["updated_fields"] == ["ssh-id"] and warnings == [] and "credentials_not_sent" not in other
    assert json.loads(open(state).read())["ssh_id_fingerprint"] == other["ssh_id_fingerprint"]
    again, warnings = run_logic(migration, dict(base, ssh_id=second))
    assert again["changed"] is False and warnings == []

    sent, warnings = run_logic(migration, dict(base, ssh_id=second, update_secret="always"))
    assert sent["updated_fields"] == ["ssh-id"] and warnings == []


def test_a_fleet_gets_one_warning_for_its_unsent_credentials(fake_api, run_logic):
    ids = [fake_api.add_migration(site=str(1100 + n), auth="password",
                                  **{"remote-host": "src.example", "remote-user": "www", "remote-pass": "x"})
           for n in range(3)]
    result, warnings = run_logic(migration, {"remote_pass": "fleet-Pass-9",
                                             "migrations": [{"migration_id": m} for m in ids]})
    assert result["changed"] is False
    assert len(warnings) == 1, warnings
    assert "remote_pass was given but not sent to 3 migrations (%s)" % ", ".join(map(str, ids)) in warnings[0]
    assert "fleet-Pass-9" not in warnings[0]


# -- 3. a null migration_id: check mode only ---------------------------------------------------------------

def test_a_null_migration_id_in_check_mode_says_what_it_would_do(fake_api, run_logic):
    result, warnings = run_logic(migration, {"migration_id": None, "remote_docroot": "/srv/www"},
                                 check_mode=True, diff=True)
    assert not isinstance(result, ModuleFailure), result
    assert result["changed"] is True and result["migration_id"] is None
    assert result["updated_fields"] == ["remote-docroot"]
    assert "check mode" in result["msg"]
    assert fake_api.calls == []


def test_a_null_migration_id_outside_check_mode_is_an_error_naming_it(fake_api, run_logic):
    result, warnings = run_logic(migration, {"migration_id": None, "remote_docroot": "/srv/www"})
    assert isinstance(result, ModuleFailure)
    assert "migration_id" in result.msg and "null" in result.msg
    assert fake_api.calls == []


@pytest.mark.parametrize("check_mode", [True, False])
def test_migration_info_with_a_null_id(fake_api, run_logic, check_mode):
    result, warnings = run_logic(migration_info, {"migration_id": None}, check_mode=check_mode)
    if check_mode:
        assert result["exists"] is False and "check mode" in result["msg"]
    else:
        assert isinstance(result, ModuleFailure) and "migration_id" in result.msg
    assert fake_api.calls == []


# -- an update whose answer was lost (issue 23 item 7) ------------------------------------------------------

PLAIN = {"remote-host": "src.example", "remote-user": "www"}


@pytest.mark.parametrize("fault, sends", [(dict(error="reset", after=True), 1), (dict(status=500), 2),
                                          (dict(error="reset"), 2)], ids=["applied", "refused-500", "not-sent"])
def test_a_lost_update_of_plain_fields_is_read_back(fake_api, run_logic, fake_time, fault, sends):
    """The read shows the fields (happened: not sent again) or not (idempotent while not running: sent again)."""
    mid = fake_api.add_migration(**PLAIN)
    fake_api.fault("migration.update", **fault)
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_user": "deploy"})
    assert not isinstance(result, ModuleFailure), result
    assert len(updates(fake_api)) == sends and fake_api.migrations[mid]["args"]["remote-user"] == "deploy"
    (entry,) = result["uncertain"]
    assert (entry["write"], entry["outcome"], entry["sends"]) == (
        "migration.update", "happened" if sends == 1 else "repeated", sends)


def test_a_lost_update_with_a_secret_is_sent_again_after_the_window(fake_api, run_logic, fake_time):
    """A secret cannot be read back, so the read cannot show the update; it is sent again (idempotent),
    but only once the original can no longer arrive."""
    mid = fake_api.add_migration(auth="password", **PLAIN)
    fake_api.fault("migration.update", error="reset", after=True)
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_pass": "new-pass",
                                             "update_secret": "always"})
    assert not isinstance(result, ModuleFailure), result
    assert len(updates(fake_api)) == 2 and result["uncertain"][0]["outcome"] == "repeated"
    assert sum(fake_time.naps) >= 30 + 2            # the client's timeout (default 30 s) and the margin


def test_a_lost_update_of_a_migration_that_is_now_running_fails_and_says_why(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration(**PLAIN)
    fake_api.fault("migration.update", status=500)
    fake_api.states(mid, "new", "migration-running")
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_user": "deploy"})
    assert isinstance(result, ModuleFailure) and "is now running" in result.msg
    assert len(updates(fake_api)) == 1 and result.details["uncertain"][0]["write"] == "migration.update"
