# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The migration module on the fake service (tests/unit/plugins/fake_service.py), with the arguments validated by
its own spec as the action plugin does: create, read and resolve, the record it returns, refusals before any call;
the migrations list form; an update sends only what the user gave (an option's default applies on create only);
credentials given and not sent are said; a null migration_id in check mode; an update whose answer was lost; what
the state file keeps for a re-run (the digest of the password last sent, a recorded migration the service forgot).
Its logic: module_utils/service/migration_module.py and migration.py."""

from __future__ import annotations

import json

import pytest

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import MASK, no_log_values
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.state_file import same_secret
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import FIELD_NAMES
from ansible_collections.wpcloud.hosting.plugins.modules import migration

SOURCE = {"remote_host": "src.example", "remote_user": "www"}
PASSWORD = "p@ss-Canary-1"
VAULTED = "vaulted-Pass-1"


def new_key():
    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                             serialization.NoEncryption()).decode()


def updates(api):
    return [c for c in api.writes if c["operation"] == "migration.update"]


# -- create, read, resolve -----------------------------------------------------------------------------------

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


@pytest.mark.parametrize("flag", ["false", "0", ""])
def test_a_create_for_a_site_whose_flag_is_known_off_fails_before_the_write(fake_api, run_logic, flag):
    fake_api.add_site("1004", allow=flag)
    refused, warnings = run_logic(migration, dict(SOURCE, site="1004"))
    assert isinstance(refused, ModuleFailure) and "HTTP 403" not in refused.msg
    assert refused.msg.startswith("site 1004 does not accept a migration: its allow_site_migration is off.")
    assert "wpcloud.hosting.site_allow_migration" in refused.msg and "site_migration_confirm_overwrite" in refused.msg
    assert fake_api.writes == [] and refused.details["failure"]["effect"] == "none"
    # Check mode says what a real run would create (the role checks its inputs before it allows the site).
    checked, warnings = run_logic(migration, dict(SOURCE, site="1004"), check_mode=True)
    assert checked["operation"] == "create" and fake_api.writes == []


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


# -- the migrations list form: one task for a fleet ----------------------------------------------------------

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


def validated(module, args):
    args = dict(args, api_key="k")
    result = ArgumentSpecValidator(**module.MODULE_SPEC).validate(args)
    return result


def task_params(**args):
    result = validated(migration, args)
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


def test_element_rules_and_exclusions_are_checked_by_the_spec():
    def errors(**args):
        return " ".join(validated(migration, args).error_messages)

    assert "mutually exclusive" in errors(migrations=[{"site": "1", "remote_pass": "p", "ssh_id": "k"}])
    assert "ssh_id" in errors(migrations=[{"site": "1", "ssh_id_pass": "p"}])
    assert "one of the following is required" in errors(migrations=[{"remote_host": "h.example"}])
    assert "mutually exclusive" in errors(site="1", migrations=[{"site": "2"}])
    assert "mutually exclusive" in errors(state_file="/tmp/x.json", migrations=[{"site": "2"}])
    assert errors(migrations=[]) == ""
    # Element secrets are no_log values, so the runners mask them everywhere in the result.
    result = validated(migration, dict(migrations=[{"site": "1", "remote_pass": "canary-pass-1"}]))
    assert "canary-pass-1" in no_log_values(migration.MODULE_SPEC["argument_spec"], result.validated_parameters)


class NoCallContext(object):
    check_mode = False
    diff = False

    def client(self):
        raise AssertionError("a call was about to be made")


@pytest.mark.parametrize("elements,named", [
    ([{"site": "1001"}, {"site": "1001"}], "site 1001"),
    ([{"site": "Dest.example"}, {"site": "dest.example "}], "site dest.example"),
    ([{"migration_id": 7}, {"site": "1001", "migration_id": 7}], "migration_id 7"),
    ([{"site": "1", "state_file": "/tmp/s.json"}, {"site": "2", "state_file": "/tmp/s.json"}], "state_file"),
])
def test_duplicates_are_refused_before_any_call(elements, named):
    params = task_params(remote_host="h.example", remote_user="www", migrations=elements)
    with pytest.raises(ModuleFailure) as raised:
        migration.run_logic(params, NoCallContext())
    assert named in raised.value.msg and "twice" in raised.value.msg


# -- an option's default applies on create only --------------------------------------------------------------

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


# -- credentials given and not sent --------------------------------------------------------------------------

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


# -- a null migration_id: check mode only --------------------------------------------------------------------

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


# -- an update whose answer was lost (issue 23 item 7) -------------------------------------------------------

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


# -- what the state file keeps for a re-run (issue 25) -------------------------------------------------------

def _base(state):
    return {"site": "1002", "remote_host": "src.example", "remote_user": "www", "state_file": state}


def test_a_rerun_with_the_same_password_is_quiet_and_a_changed_one_is_sent(fake_api, run_logic, tmp_path):
    fake_api.sites["1002"] = "true"
    state = str(tmp_path / "1002.json")
    created, warnings = run_logic(migration, dict(_base(state), remote_pass=VAULTED))
    assert created["operation"] == "create" and warnings == []
    recorded = open(state).read()
    assert VAULTED not in recorded and same_secret(VAULTED, json.loads(recorded)["remote_pass_digest"])

    # The list form, as the role runs it (check step and create step): nothing to say.
    for check_mode in (True, False):
        same, warnings = run_logic(migration, {"migrations": [dict(_base(state), remote_pass=VAULTED)]},
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
    result, warnings = run_logic(migration, {"migration_id": mid, "remote_pass": VAULTED})
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


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    module_docs(migration)
