"""The scripted executor's credential judgement (tests/support/emulator/README.md, "Executor configuration"):
a host with ``accept`` refuses any password or key but its own, in a preflight and in a run, so that a client
that keeps a stale credential fails as it would against a real source (issue 40).

Over the emulator's HTTPS API (migration create, update, preflight, ready), and on the executor itself.
"""

import copy

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from executors.scripted import ScriptedExecutor, private_key_fingerprint, public_key_fingerprint
from test_emulator import call, create, fast, get_migration, poll, start

RIGHT, WRONG = "right-Pass-4711", "stale-Pass-0815"


def _key(passphrase=None):
    key = ed25519.Ed25519PrivateKey.generate()
    encryption = serialization.BestAvailableEncryption(passphrase.encode()) if passphrase \
        else serialization.NoEncryption()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, encryption).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, public


def _messages(emu, tid):
    """The ended ticket: its status and its messages."""
    data = poll(emu, tid)[-1][1]
    return {"status": data["status"], "messages": [r["message"] for r in data["responses"]]}


def test_a_host_accepts_its_password_only_and_an_update_fixes_the_login(emu, new_site):
    fast(emu, hosts={"judge.example": {"accept": {"password": RIGHT}}})
    site = new_site()
    mid = create(emu, site, **{"remote-host": "judge.example", "remote-pass": WRONG}).json()["data"]["migration-id"]
    refused = _messages(emu, start(emu, mid))
    assert refused["status"] == "failure"
    assert any("Permission denied (publickey,password)." in m for m in refused["messages"]), refused
    assert get_migration(emu, mid)["state"] == "preflight-failed"

    assert call(emu, "POST", "migration/update/%s" % mid, {"remote-pass": RIGHT}).status_code == 200
    accepted = _messages(emu, start(emu, mid))
    assert accepted["status"] == "success", accepted
    assert any('using "password"' in m for m in accepted["messages"])
    assert _messages(emu, start(emu, mid, "ready"))["status"] == "success"

    # Switched back to the stale one: the run refuses the login too, whatever an outcome says.
    assert call(emu, "POST", "migration/update/%s" % mid, {"remote-pass": WRONG}).status_code == 200
    assert _messages(emu, start(emu, mid))["status"] == "failure"


def test_the_accepted_password_is_never_shown_back(emu):
    shown = emu.set_executor({"hosts": {"judge.example": {"accept": {"password": RIGHT}}}})
    assert shown["hosts"]["judge.example"]["accept"]["password"] == "********"
    assert RIGHT not in str(shown) and RIGHT not in str(emu._hook("GET", "executor"))  # pylint: disable=protected-access


def test_keys_are_judged_by_their_public_half_and_their_passphrase(emu, new_site):
    accepted, accepted_public = _key("open-sesame")
    other, other_public = _key()
    emu.set_executor({"default": {"preflight": {"duration": 0.1}},
                      "hosts": {"keys.example": {"accept": {"keys": [accepted_public, public_key_fingerprint(
                          other_public)]}}}})
    site = new_site()
    mid = create(emu, site, **{"remote-host": "keys.example", "ssh-id": accepted,
                               "ssh-id-pass": "not-it"}).json()["data"]["migration-id"]
    wrong_passphrase = _messages(emu, start(emu, mid))
    assert wrong_passphrase["status"] == "failure"
    assert 'Load key "ssh-id": incorrect passphrase supplied to decrypt private key' in wrong_passphrase["messages"]
    call(emu, "POST", "migration/update/%s" % mid, {"ssh-id-pass": "open-sesame"})
    assert _messages(emu, start(emu, mid))["status"] == "success"
    call(emu, "POST", "migration/update/%s" % mid, {"ssh-id": other})       # a plain key, by its fingerprint
    assert _messages(emu, start(emu, mid))["status"] == "success"
    stranger, dummy = _key()
    call(emu, "POST", "migration/update/%s" % mid, {"ssh-id": stranger})
    assert _messages(emu, start(emu, mid))["status"] == "failure"


def test_a_generated_identity_needs_its_public_key_among_the_accepted(emu, new_site):
    emu.set_executor({"default": {"preflight": {"duration": 0.1}}, "hosts": {"gen.example": {"accept": {}}}})
    created = create(emu, new_site(), **{"remote-host": "gen.example"}).json()["data"]
    assert _messages(emu, start(emu, created["migration-id"]))["status"] == "failure"
    emu.set_executor({"default": {"preflight": {"duration": 0.1}},
                      "hosts": {"gen.example": {"accept": {"keys": [created["ssh-id-pub"]]}}}})
    assert _messages(emu, start(emu, created["migration-id"]))["status"] == "success"


def test_without_accept_nothing_is_judged_and_bad_entries_are_refused(emu):
    executor = ScriptedExecutor({"config": {"default": {"preflight": {"duration": 0}}}})
    migration = {"auth": "password", "args": {"remote-host": "any.example", "remote-user": "www",
                                              "remote-pass": WRONG}}
    assert executor._refused(copy.deepcopy(migration)) == []                # pylint: disable=protected-access
    for bad in ({"password": ""}, {"keys": "ssh-ed25519 AAAA"}, {"keys": ["not a key"]}, {"user": "www"}):
        with pytest.raises(Exception):
            emu.set_executor({"hosts": {"x.example": {"accept": bad}}})


def test_fingerprints_agree_with_the_collections():
    private, public = _key("pp")
    assert private_key_fingerprint(private, "pp") == public_key_fingerprint(public)
    with pytest.raises(ValueError, match="incorrect passphrase"):
        private_key_fingerprint(private, None)
    with pytest.raises(ValueError, match="invalid format"):
        private_key_fingerprint("not a key", None)
