"""A corrected source password or key reaches the service (issue 40; spec 4.5 rule 4: "Correct the problem
with an update, then run preflight again"), through the site_migration role, for real.

Real ansible-playbook processes (migrate_site) against the emulator, whose scripted executor judges each
source's credentials (tests/support/emulator/README.md, "Executor configuration": ``accept``): a stale
password or key fails the preflight with auth_failed because it is the wrong one, not because an outcome
was switched. Assertions read the emulator's request log (parameter names, never values), the role's JSON
report and the play's output.
"""

import secrets

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from test_role import Run, _explain, _ids, _writes, collections_root  # noqa: F401 pylint: disable=unused-import

STALE_PASS = "stale-Pass-%s" % secrets.token_hex(4)
RIGHT_PASS = "right-Pass-%s" % secrets.token_hex(4)
PW_HOST, KEY_HOST = "dest-pw.example", "dest-key.example"
PW_SOURCE, KEY_SOURCE = "pw-source.example", "key-source.example"


@pytest.fixture
def run(tmp_path, collections_root):  # noqa: F811 pylint: disable=redefined-outer-name
    return Run(tmp_path / "run", collections_root)


def _key(passphrase):
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.BestAvailableEncryption(passphrase.encode())).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode()


def _site(emu):
    site_id = next(_ids)
    emu.add_site(site_id, "site%d.example" % site_id, allow_migration=True)
    return str(site_id)


def _vault(run, password, key, passphrase):
    run.vault_host_vars(PW_HOST, {"site_migration_remote_pass": password})
    run.vault_host_vars(KEY_HOST, {"site_migration_ssh_id": key, "site_migration_ssh_id_pass": passphrase})


def _since(emu):
    log = emu.requests_log()
    return log[-1]["seq"] if log else 0


def _writes_of(log, site, migration_id):
    """The endpoints of the writes for one site and its migration, in order, with their parameter names."""
    return [(e["endpoint"], sorted(e["params"])) for e in _writes(log)
            if e["path"].rstrip("/").rsplit("/", 1)[-1] in (site, str(migration_id))]


def _no_secret(proc, run, texts):
    output = proc.stdout + proc.stderr + "".join(p.read_text() for p in run.reports())
    for text in texts:
        for line in text.strip().splitlines()[1:-1] or [text]:
            assert line not in output, "a credential in the output"


def test_a_corrected_password_or_key_is_sent_once_then_preflight_and_the_run(run, emu):
    """Run 1: each source refuses the credential given (preflight auth_failed). With the corrected one and
    site_migration_update_secret: on_create, each site stops before preflight, naming the variable, and
    nothing is written. Run 2, the default (when_changed): one migration.update carrying the new credential,
    then preflight and the run, SUCCEEDED. Run 3, unchanged: no update."""
    stale_key, stale_public = _key("stale passphrase")
    right_key, right_public = _key("right passphrase")
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 0.2},
                                  "run": {"outcome": "success", "duration": 0.2}},
                      "hosts": {PW_SOURCE: {"accept": {"password": RIGHT_PASS}},
                                KEY_SOURCE: {"accept": {"keys": [right_public]}}}})
    assert stale_public != right_public
    sites = {PW_HOST: {"site_migration_site": _site(emu), "site_migration_auth": "password",
                       "site_migration_remote_host": PW_SOURCE},
             KEY_HOST: {"site_migration_site": _site(emu), "site_migration_auth": "key",
                        "site_migration_remote_host": KEY_SOURCE}}
    run.inventory(emu, sites, None, site_vars={"site_migration_remote_user": "www", "site_migration_install_key": False})
    secrets_given = [STALE_PASS, RIGHT_PASS, stale_key, right_key, "stale passphrase", "right passphrase"]

    # Run 1: the stale credentials; each source refuses them.
    _vault(run, STALE_PASS, stale_key, "stale passphrase")
    proc = run.play()
    assert proc.returncode == 2, _explain(proc)
    dummy, by_host = run.last_report()
    for host in sites:
        assert by_host[host]["result"] == "preflight_failed", by_host[host]
        assert by_host[host]["diagnosis"]["code"] == "auth_failed"
    ids = dict((h, by_host[h]["migration_id"]) for h in sites)
    first = emu.requests_log()
    assert [sorted(set(p) & {"remote-pass", "ssh-id", "ssh-id-pass"}) for p in
            (e["params"] for e in _writes(first, "migration.create"))] in (
        [["remote-pass"], ["ssh-id", "ssh-id-pass"]], [["ssh-id", "ssh-id-pass"], ["remote-pass"]])

    # The corrected credentials with on_create: known stale, not to be sent, so each site stops before preflight.
    _vault(run, RIGHT_PASS, right_key, "right passphrase")
    since = _since(emu)
    proc = run.play(extra=["-e", "site_migration_update_secret=on_create"])
    assert proc.returncode == 2, _explain(proc)
    assert _writes(emu.requests_log(since)) == []
    dummy, by_host = run.last_report()
    pw_site, key_site = sites[PW_HOST]["site_migration_site"], sites[KEY_HOST]["site_migration_site"]
    assert by_host[PW_HOST]["result"] == by_host[KEY_HOST]["result"] == "invalid_input"
    assert by_host[PW_HOST]["message"].startswith(
        "site %s: site_migration_remote_pass is not the password last sent to migration %s" % (pw_site, ids[PW_HOST]))
    assert by_host[KEY_HOST]["message"].startswith(
        "site %s: site_migration_ssh_id is not the key last sent to migration %s" % (key_site, ids[KEY_HOST]))
    for host in sites:
        message = by_host[host]["message"]
        assert "site_migration_update_secret is on_create" in message, message
        assert "Set site_migration_update_secret: when_changed (the default)" in message
        assert message in proc.stdout
    _no_secret(proc, run, secrets_given)

    # Run 2, the default: one update carrying the corrected credential, then preflight and the run.
    since = _since(emu)
    proc = run.play(extra=["-vvvv"])
    assert proc.returncode == 0, _explain(proc)
    log = emu.requests_log(since)
    assert _writes_of(log, pw_site, ids[PW_HOST]) == [
        ("migration.update", ["remote-pass"]), ("migration.preflight", []), ("migration.ready", [])]
    assert _writes_of(log, key_site, ids[KEY_HOST]) == [
        ("migration.update", ["ssh-id", "ssh-id-pass"]), ("migration.preflight", []), ("migration.ready", [])]
    dummy, by_host = run.last_report()
    for host in sites:
        assert by_host[host]["result"] == "succeeded", by_host[host]
        assert by_host[host]["migration_id"] == ids[host]                  # the same migration, corrected
        assert by_host[host]["preflight"]["state"] == "success" and by_host[host]["run"]["state"] == "success"
    assert "[WARNING]" not in proc.stdout + proc.stderr, _explain(proc)
    _no_secret(proc, run, secrets_given)

    # Run 3, unchanged: nothing to send; preflight and the run again (a refresh).
    since = _since(emu)
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    log = emu.requests_log(since)
    assert _writes(log, "migration.update") == []
    assert sorted(e["endpoint"] for e in _writes(log)) == ["migration.preflight"] * 2 + ["migration.ready"] * 2
    dummy, by_host = run.last_report()
    assert {by_host[h]["result"] for h in sites} == {"succeeded"}
