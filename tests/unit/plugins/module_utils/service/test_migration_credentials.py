# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""When a migration's credentials are sent (issue 40): update_secret's three choices against what the state
file recorded of the credentials last sent (module_utils/service/migration_credentials.py), the decision on its
own and through the migration module's logic on the fake service (tests/unit/plugins/fake_service.py), with the
role's view of its messages (its variables, not the module's options)."""

from __future__ import annotations

import json

import pytest

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.state_file import same_secret, secret_digest
from ansible_collections.wpcloud.hosting.plugins.module_utils.service import migration_credentials as mc
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.ssh_key import inspect_ssh_id
from ansible_collections.wpcloud.hosting.plugins.modules import migration
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import role_message

OLD, NEW = "old-Pass-1", "new-Pass-2"
MID = 5001


def new_key(passphrase=None):
    key = ed25519.Ed25519PrivateKey.generate()
    encryption = serialization.BestAvailableEncryption(passphrase.encode()) if passphrase \
        else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, encryption).decode()


def updates(api):
    return [c for c in api.writes if c["operation"] == "migration.update"]


# -- the decision on its own -------------------------------------------------------------------------------

def _params(policy=None, **fields):
    params = {"state_file": "/state/1002.json"}
    if policy is not None:
        params["update_secret"] = policy
    params.update(fields)
    return params


RECORDED = {"migration_id": MID, "remote_pass_digest": secret_digest(OLD)}


@pytest.mark.parametrize("policy, given, recorded, auth, send, why", [
    # the password last sent: nothing to send, whatever the choice but always
    ("when_changed", OLD, RECORDED, "password", False, "same"),
    ("on_create", OLD, RECORDED, "password", False, "same"),
    ("always", OLD, RECORDED, "password", True, "always"),
    # known to differ: when_changed sends it
    ("when_changed", NEW, RECORDED, "password", True, "changed"),
    (None, NEW, RECORDED, "password", True, "changed"),           # the default
    ("always", NEW, RECORDED, "password", True, "always"),
    # nothing to compare with: as on_create, not sent (the caller warns)
    ("when_changed", NEW, {}, "password", False, "unknown"),
    ("when_changed", NEW, {"migration_id": MID}, "password", False, "unknown"),
    ("on_create", NEW, {}, "password", False, "unknown"),
    ("when_changed", NEW, dict(RECORDED, migration_id=MID + 1), "password", False, "unknown"),   # another's
    # a switch of the method sends them with every choice
    ("on_create", NEW, RECORDED, "key", True, "method"),
    ("when_changed", NEW, {}, "generated", True, "method"),
])
def test_the_password_decision(policy, given, recorded, auth, send, why):
    decision = mc.decide(_params(policy, **{"remote-pass": given}), MID, recorded, None, auth)
    assert (decision.send, decision.why) == (send, why)
    assert decision.not_sent == (["remote_pass"] if why == "unknown" else [])


def test_on_create_with_a_password_known_to_differ_fails_naming_the_option_and_the_fix():
    with pytest.raises(ModuleFailure) as failure:
        mc.decide(_params("on_create", **{"remote-pass": NEW}), MID, RECORDED, None, "password")
    msg = failure.value.msg
    assert msg.startswith("remote_pass is not the password last sent to migration 5001 (state_file "
                          "/state/1002.json keeps a digest")
    assert "update_secret is on_create" in msg and "Nothing was sent" in msg
    assert "Set update_secret: when_changed (the default)" in msg and NEW not in msg and OLD not in msg
    assert failure.value.details["credentials_not_sent"] == ["remote_pass"]
    # The role says it with its variables.
    said = role_message(msg)
    assert said.startswith("site_migration_remote_pass is not the password last sent to migration 5001 (the state "
                           "file /state/1002.json (in site_migration_state_dir) keeps a digest")
    assert "site_migration_update_secret is on_create" in said
    assert "Set site_migration_update_secret: when_changed" in said and "this task" not in said


def test_a_key_is_judged_by_its_fingerprint_and_its_passphrase_goes_with_it():
    first, second = new_key("one passphrase"), new_key("two passphrase")
    seen = inspect_ssh_id(first, "one passphrase")
    other = inspect_ssh_id(second, "two passphrase")
    recorded = {"migration_id": MID, "ssh_id_fingerprint": seen}
    same = _params(**{"ssh-id": first, "ssh-id-pass": "a new passphrase"})
    assert mc.decide(same, MID, recorded, seen, "key-passphrase").why == "same"
    changed = _params(**{"ssh-id": second, "ssh-id-pass": "two passphrase"})
    assert mc.decide(changed, MID, recorded, other, "key-passphrase").why == "changed"
    unknown = mc.decide(changed, MID, {"migration_id": MID}, other, "key-passphrase")
    assert unknown.not_sent == ["ssh_id", "ssh_id_pass"]
    with pytest.raises(ModuleFailure) as failure:
        mc.decide(dict(changed, update_secret="on_create"), MID, recorded, other, "key-passphrase")
    assert "ssh_id is not the key last sent to migration 5001 (fingerprint %s; last sent %s)" % (other, seen) \
        in failure.value.msg
    assert "give the key last sent" in failure.value.msg
    # from a plain key to a protected one: the method changes, sent whatever the choice
    assert mc.decide(dict(changed, update_secret="on_create"), MID, recorded, other, "key").why == "method"


def test_what_the_state_file_keeps_of_the_credentials_sent():
    kept = mc.sent_record({"remote-pass": OLD}, RECORDED, None)
    assert kept == {"ssh_id_fingerprint": None, "remote_pass_digest": RECORDED["remote_pass_digest"]}  # no new salt
    fresh = mc.sent_record({"remote-pass": NEW}, RECORDED, None)["remote_pass_digest"]
    assert same_secret(NEW, fresh) and NEW not in fresh
    kept = mc.sent_record({"ssh-id": "k"}, RECORDED, "SHA256:x")
    assert kept == {"ssh_id_fingerprint": "SHA256:x", "remote_pass_digest": None}


def test_the_choices_and_the_default_are_the_modules_and_the_roles():
    import yaml
    from pathlib import Path
    spec = migration.MODULE_SPEC["argument_spec"]["update_secret"]
    documented = yaml.safe_load(migration.DOCUMENTATION)["options"]["update_secret"]
    assert spec["choices"] == documented["choices"] == ["when_changed", "on_create", "always"]
    assert spec["default"] == documented["default"] == "when_changed"
    element = migration.MODULE_SPEC["argument_spec"]["migrations"]["options"]["update_secret"]
    assert element["choices"] == spec["choices"] and "default" not in element     # the task's value applies
    role = Path(migration.__file__).resolve().parents[2] / "roles" / "site_migration"
    variable = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"][
        "options"]["site_migration_update_secret"]
    assert variable["choices"] == spec["choices"] and variable["default"] == "when_changed"
    assert yaml.safe_load((role / "defaults" / "main.yml").read_text())["site_migration_update_secret"] == "when_changed"


# -- through the module's logic ----------------------------------------------------------------------------

def _base(state, **more):
    return dict({"site": "1002", "remote_host": "src.example", "remote_user": "www", "state_file": state}, **more)


def test_a_corrected_password_is_sent_once_then_nothing(fake_api, run_logic, tmp_path):
    """Issue 40's flow: created with the password the source refuses, corrected, re-run unchanged."""
    fake_api.sites["1002"] = "true"
    state = str(tmp_path / "1002.json")
    created, warnings = run_logic(migration, _base(state, remote_pass=OLD))
    assert created["operation"] == "create" and warnings == []

    preview, warnings = run_logic(migration, _base(state, remote_pass=NEW), check_mode=True, diff=True)
    assert preview["changed"] is True and preview["updated_fields"] == ["remote-pass"] and warnings == []
    assert preview["diff"]["after"] == {"auth": "password (credentials replaced)"} and updates(fake_api) == []

    sent, warnings = run_logic(migration, _base(state, remote_pass=NEW))
    assert sent["operation"] == "update" and sent["updated_fields"] == ["remote-pass"] and warnings == []
    assert [u["sent"]["remote-pass"] for u in updates(fake_api)] == [NEW]
    kept = json.loads(open(state).read())
    assert same_secret(NEW, kept["remote_pass_digest"]) and kept["migration_id"] == created["migration_id"]

    again, warnings = run_logic(migration, _base(state, remote_pass=NEW))
    assert again["changed"] is False and warnings == [] and len(updates(fake_api)) == 1
    assert NEW not in json.dumps([preview, sent, again]) and OLD not in json.dumps([created])


def test_a_replaced_key_is_sent_once_with_its_passphrase(fake_api, run_logic, tmp_path):
    fake_api.sites["1002"] = "true"
    state = str(tmp_path / "1002.json")
    first, second = new_key("first passphrase"), new_key("second passphrase")
    run_logic(migration, _base(state, ssh_id=first, ssh_id_pass="first passphrase"))
    sent, warnings = run_logic(migration, _base(state, ssh_id=second, ssh_id_pass="second passphrase"))
    assert sent["updated_fields"] == ["ssh-id", "ssh-id-pass"] and warnings == []
    assert json.loads(open(state).read())["ssh_id_fingerprint"] == sent["ssh_id_fingerprint"]
    again, warnings = run_logic(migration, _base(state, ssh_id=second, ssh_id_pass="second passphrase"))
    assert again["changed"] is False and warnings == [] and len(updates(fake_api)) == 1


def test_a_switch_between_password_and_key_is_sent_and_recorded(fake_api, run_logic, tmp_path):
    fake_api.sites["1002"] = "true"
    state = str(tmp_path / "1002.json")
    key = new_key()
    run_logic(migration, _base(state, remote_pass=OLD))
    to_key, warnings = run_logic(migration, _base(state, ssh_id=key, update_secret="on_create"))
    assert to_key["updated_fields"] == ["ssh-id"] and warnings == []
    kept = json.loads(open(state).read())
    assert kept["ssh_id_fingerprint"] == to_key["ssh_id_fingerprint"] and kept["remote_pass_digest"] is None
    back, warnings = run_logic(migration, _base(state, remote_pass=OLD, update_secret="on_create"))
    assert back["updated_fields"] == ["remote-pass"] and warnings == []
    kept = json.loads(open(state).read())
    assert kept["ssh_id_fingerprint"] is None and same_secret(OLD, kept["remote_pass_digest"])


def test_on_create_never_sends_a_known_change_and_fails_before_any_write(fake_api, run_logic, tmp_path):
    fake_api.sites["1002"] = "true"
    state = str(tmp_path / "1002.json")
    run_logic(migration, _base(state, remote_pass=OLD))
    for check_mode in (True, False):
        failed, warnings = run_logic(migration, _base(state, remote_pass=NEW, remote_docroot="/srv/www",
                                                      update_secret="on_create"), check_mode=check_mode)
        assert isinstance(failed, ModuleFailure) and "update_secret is on_create" in failed.msg
        assert updates(fake_api) == []                      # not even the document root
    # The list form (the role's check and create steps): that element fails, the others go on.
    fleet, warnings = run_logic(migration, {"update_secret": "on_create", "migrations": [
        _base(state, remote_pass=NEW), {"migration_id": fake_api.add_migration(site="1003"), "remote_docroot": "/x"}]})
    assert isinstance(fleet, ModuleFailure) and fleet.msg.startswith("1 of 2 migrations failed: site 1002: ")
    results = fleet.details["results"]
    assert fleet.details["failed_count"] == 1 and results[0]["failed"] is True
    assert "remote_pass is not the password last sent" in results[0]["msg"]
    assert results[1]["updated_fields"] == ["remote-docroot"]
    assert NEW not in json.dumps([fleet.msg, fleet.details])


def test_where_nothing_can_be_compared_it_is_not_sent_and_said_once(fake_api, run_logic, tmp_path):
    mid = fake_api.add_migration(auth="password", **{"remote-host": "src.example", "remote-user": "www",
                                                     "remote-pass": OLD})
    # a state file that records the migration but not what was sent to it (an earlier version's, or a
    # migration made elsewhere), and no state file at all
    state = tmp_path / "1002.json"
    state.write_text(json.dumps({"site": "1002", "migration_id": mid}))
    for args in (_base(str(state), remote_pass=NEW), {"migration_id": mid, "remote_pass": NEW}):
        result, warnings = run_logic(migration, args)
        assert result["changed"] is False and result["credentials_not_sent"] == ["remote_pass"]
        assert len(warnings) == 1 and "remote_pass was given but not sent to migration %s" % mid in warnings[0]
        assert "set update_secret: always for one run" in warnings[0] and NEW not in warnings[0]
    assert updates(fake_api) == []
    # Sent once with always: recorded, and from then on told apart.
    run_logic(migration, _base(str(state), remote_pass=NEW, update_secret="always"))
    quiet, warnings = run_logic(migration, _base(str(state), remote_pass=NEW))
    assert quiet["changed"] is False and warnings == []
    sent, warnings = run_logic(migration, _base(str(state), remote_pass=OLD))
    assert sent["updated_fields"] == ["remote-pass"] and len(updates(fake_api)) == 2


def test_a_state_file_of_another_migration_forgets_what_was_sent_to_it(fake_api, run_logic, tmp_path):
    """A recorded migration the service forgot gives way to the site's own one: the digest kept for the old
    one tells nothing of the new one's password."""
    mid = fake_api.add_migration(auth="password", **{"remote-host": "src.example", "remote-user": "www"})
    state = tmp_path / "1002.json"
    state.write_text(json.dumps({"site": "1002", "migration_id": 5999, "remote_pass_digest": secret_digest(OLD)}))
    result, warnings = run_logic(migration, _base(str(state), remote_pass=OLD))
    assert result["migration_id"] == mid and result["credentials_not_sent"] == ["remote_pass"]
    assert any("given but not sent" in w for w in warnings)
    kept = json.loads(state.read_text())
    assert kept["migration_id"] == mid and kept["remote_pass_digest"] is None
