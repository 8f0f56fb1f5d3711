"""The migrate_site playbook through ansible_runner.run(), the way an AWX / Automation Controller job runs it.

What the controller does for a job template, and what this test does the same way:

* a private data directory with ``project/`` (the playbook; the collection in ``project/collections``,
  where the controller installs a project's ``collections/requirements.yml``), ``inventory/`` (hosts and
  vaulted ``host_vars``: a whole vaulted file and an ``encrypt_string`` value) and ``env/`` (``envvars``, ``extravars``, ``settings``);
* the API credential is a custom credential type: its injectors
  (``extensions/awx/credential_types/wpcloud_api/injectors.yml``) are rendered with the credential's
  inputs into environment variables (``WPCLOUD_API_KEY``, ``WPCLOUD_API_URL``, ``WPCLOUD_CA_PATH``, the
  modules' env fallbacks), the CA certificate into a file, as the controller renders them;
* the vault password is a Vault credential: the controller passes ``--vault-id <id>@prompt`` on the
  command line and answers ansible-playbook's ``Vault password (<id>):`` prompt through ansible-runner's
  expect passwords, so the password is never written to disk, to ``env/`` or to an artifact.

No SSH host is needed: the emulator runs with the scripted executor and the sites use a password (vaulted)
or a service-generated identity without key install.

Then: status ``successful``, rc 0, every site migrated, and no secret (API key, vault password, the vaulted
passwords) in any file under ``artifacts/`` nor in the events, in clear, base64 or URL-encoded form.
"""

import base64
import json
import os
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
import pytest
import yaml

from launcher import start_emulator
from playbooks import job_project

ansible_runner = pytest.importorskip("ansible_runner")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CREDENTIAL_TYPE = ROOT / "extensions" / "awx" / "credential_types" / "wpcloud_api"
VAULT_ID = "wpcloud"
VAULT_PASSWORD = "runner-vault-pw-Zq8#r7!Kx2 canary"
# Secrets that only exist inside vaulted files (whole-file vault and an encrypt_string value).
VAULTED_PASS_FILE = "vaulted-file-pass-V7k!d9 canary/+="
VAULTED_PASS_INLINE = "vaulted-inline-pass-Q3w&e5 canary?"


def encoded_forms(secret):
    """The secret and the encodings under which it could leak."""
    raw = secret.encode()
    forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret),
             base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode(),
             base64.b64encode(raw).decode().rstrip("="), json.dumps(secret)[1:-1], raw.hex()}
    return sorted(f for f in forms if len(f) >= 8)


def render_credential(inputs, private_data_dir):
    """Render the credential type's injectors like the controller: (env dict, extra_vars dict)."""
    fields = yaml.safe_load((CREDENTIAL_TYPE / "input.yml").read_text())
    injectors = yaml.safe_load((CREDENTIAL_TYPE / "injectors.yml").read_text())
    known = {f["id"] for f in fields["fields"]}
    assert set(inputs) <= known and set(fields.get("required", [])) <= set(inputs)
    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
    namespace = dict(inputs)
    if "file" in injectors:
        path = Path(private_data_dir) / "env" / "tmp_cred_file"
        path.write_text(env.from_string(injectors["file"]["template"]).render(**namespace))
        path.chmod(0o600)
        namespace["tower"] = {"filename": str(path)}
    rendered_env = {k: env.from_string(v).render(**namespace) for k, v in (injectors.get("env") or {}).items()}
    extra_vars = {k: env.from_string(v).render(**namespace) for k, v in (injectors.get("extra_vars") or {}).items()}
    return rendered_env, extra_vars


def vault(args, env, stdin=None):
    """Run ansible-vault with the password from a throwaway file outside the private data directory."""
    return subprocess.run([str(BIN / "ansible-vault")] + args, check=True, capture_output=True, text=True,
                          env=env, input=stdin).stdout


@pytest.fixture
def scripted_emulator(tmp_path):
    emu = start_emulator(tmp_path / "emulator", executor="scripted", extra_args=["--accept-delay", "0.3"])
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 0.3},
                                  "run": {"outcome": "success", "duration": 0.5}}})
    yield emu
    emu.stop()


def build_private_data_dir(base, emu):
    pdd = base / "pdd"
    for sub in ("inventory/host_vars/dest1.example", "env"):
        (pdd / sub).mkdir(parents=True, exist_ok=True)
    job_project(pdd)

    # the vault password lives only in a file outside the private data directory, to encrypt the vars
    pw_file = base / "vault-pass-for-encrypting"
    pw_file.write_text(VAULT_PASSWORD)
    pw_file.chmod(0o600)
    venv = dict(os.environ, ANSIBLE_NOCOLOR="1")
    vault_args = ["--vault-id", "%s@%s" % (VAULT_ID, pw_file)]

    sites = {}
    for n in (1, 2, 3):
        site_id = 41000 + n + (os.getpid() % 500) * 10
        emu.add_site(site_id, "runner%d.example" % n, allow_migration=True)
        sites["dest%d.example" % n] = site_id
    inventory = {"all": {"children": {
        "wpcloud_sources": {"hosts": {"src.example": {"ansible_user": "www"}}},
        "wpcloud_sites": {
            "vars": {"ansible_connection": "local",
                     "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                     "site_migration_source_host": "src.example",
                     "site_migration_confirm_overwrite": True,
                     "site_migration_poll_interval": 1.0,
                     "site_migration_state_dir": str(base / "state"),
                     "site_migration_report_dir": str(base / "reports")},
            "hosts": {
                "dest1.example": {"site_migration_site": str(sites["dest1.example"]), "site_migration_auth": "password"},
                "dest2.example": {"site_migration_site": str(sites["dest2.example"]), "site_migration_auth": "password"},
                "dest3.example": {"site_migration_site": str(sites["dest3.example"]), "site_migration_auth": "generated",
                                  "site_migration_install_key": False}}}}}}
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))

    # a whole-file vaulted vars file (host_vars/dest1.example/vault.yml) ...
    group_vault = pdd / "inventory" / "host_vars" / "dest1.example" / "vault.yml"
    group_vault.write_text(yaml.safe_dump({"site_migration_remote_pass": VAULTED_PASS_FILE}))
    vault(["encrypt"] + vault_args + [str(group_vault)], venv)
    # ... and an encrypt_string value in host_vars/dest2.example.yml
    inline = vault(["encrypt_string"] + vault_args + ["--stdin-name", "site_migration_remote_pass"], venv,
                   stdin=VAULTED_PASS_INLINE)
    (pdd / "inventory" / "host_vars" / "dest2.example.yml").write_text("---\n" + inline)
    for path in (group_vault, pdd / "inventory" / "host_vars" / "dest2.example.yml"):
        text = path.read_text()
        assert VAULTED_PASS_FILE not in text and VAULTED_PASS_INLINE not in text and "$ANSIBLE_VAULT;1.2;AES256;" + VAULT_ID in text

    # credentials, rendered as the controller does, into env/envvars
    cred_env, cred_extra = render_credential(
        {"api_url": emu.url, "api_key": emu.api_key, "ca_cert": Path(emu.ca_path).read_text()}, pdd)
    assert set(cred_env) == {"WPCLOUD_API_KEY", "WPCLOUD_API_URL", "WPCLOUD_CA_PATH"} and not cred_extra
    envvars = dict(cred_env)
    envvars.update({
        "ANSIBLE_COLLECTIONS_PATH": str(pdd / "project" / "collections"),
        "ANSIBLE_HOME": str(base / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(base / "ansible-tmp"),
        "ANSIBLE_CONFIG": str(base / "no-ansible.cfg"),
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_FORCE_COLOR": "False",
        "ANSIBLE_NOCOLOR": "1",
        "PATH": "%s:%s" % (BIN, os.environ.get("PATH", "")),
    })
    (pdd / "env" / "envvars").write_text(yaml.safe_dump(envvars))
    # the job template's extra variables (the controller writes them to env/extravars)
    (pdd / "env" / "extravars").write_text(yaml.safe_dump({"wpcloud_migrate_hosts": "wpcloud_sites"}))
    (pdd / "env" / "settings").write_text(yaml.safe_dump({"job_timeout": 300, "pexpect_timeout": 5,
                                                          "suppress_ansible_output": True}))
    return pdd, sites


def run_job(pdd, ident, vault_password):
    """ansible_runner.run() with what the controller passes for a job with a Vault credential."""
    return ansible_runner.run(
        private_data_dir=str(pdd),
        playbook="migrate_site.yml",
        cmdline="--vault-id %s@prompt" % VAULT_ID,
        passwords={r"^Vault password \(%s\):\s*?$" % VAULT_ID: vault_password},
        suppress_env_files=True,          # AWX_RUNNER_OMIT_ENV_FILES (default True in AWX)
        quiet=True,
        ident=ident,
    )


@pytest.fixture(autouse=True)
def _venv_on_path(monkeypatch):
    """ansible-runner finds ansible-playbook on PATH, like the controller in its execution environment."""
    monkeypatch.setenv("PATH", "%s:%s" % (BIN, os.environ.get("PATH", "")))


def command_artifact_env(path):
    """artifacts/<ident>/command: ansible-runner always dumps the command AND the job's whole
    environment there (0600), injected credential variables included, as it does under AWX (where the
    private data directory is deleted after the job). The environment is checked separately; the rest of
    the file is scanned like every other artifact."""
    data = json.loads(path.read_text())
    assert path.stat().st_mode & 0o077 == 0, "artifacts/command must be readable by its owner only"
    return data.pop("env"), json.dumps(data)


def test_migrate_site_as_a_controller_job(tmp_path, scripted_emulator):
    emu = scripted_emulator
    pdd, sites = build_private_data_dir(tmp_path, emu)

    result = run_job(pdd, "job1", VAULT_PASSWORD)
    artifacts = pdd / "artifacts" / "job1"
    stdout = (artifacts / "stdout").read_text() if (artifacts / "stdout").exists() else ""
    assert result.status == "successful", "%s rc=%s\n%s" % (result.status, result.rc, stdout[-6000:])
    assert result.rc == 0

    events = list(result.events)
    stats = [e for e in events if e["event"] == "playbook_on_stats"][-1]["event_data"]
    # The job's host summaries: every site, "changed" (its migration ran), through the role's one task per site.
    assert set(stats["ok"]) == set(stats["changed"]) == set(sites), stats
    assert not stats.get("failures") and not stats.get("dark"), stats

    # every site was migrated, by the API the credential pointed at
    reports = sorted((tmp_path / "reports").glob("*.json"))
    assert reports, "no report"
    report = json.loads(reports[-1].read_text())
    assert {s["host"]: s["result"] for s in report["sites"]} == {h: "succeeded" for h in sites}
    log = emu.requests_log()
    creates = [e for e in log if e["endpoint"] == "migration.create" and e["status"] == 200]
    assert len(creates) == 3
    # the password sites were created with a password (decrypted from the vault), redacted when read back
    for host, secret in (("dest1.example", VAULTED_PASS_FILE), ("dest2.example", VAULTED_PASS_INLINE)):
        migration_id = json.loads((tmp_path / "state" / ("%s.json" % sites[host])).read_text())["migration_id"]
        status, body = emu.api("migration/get/%s" % migration_id)
        assert status == 200 and body["data"]["auth"] == "password"
        assert body["data"]["args"]["remote-pass"] == "[redacted]"

    # no secret anywhere in the artifacts or the events
    secrets = {"API key": emu.api_key, "vault password": VAULT_PASSWORD,
               "vaulted file secret": VAULTED_PASS_FILE, "vaulted encrypt_string secret": VAULTED_PASS_INLINE}
    files = [p for p in (pdd / "artifacts").rglob("*") if p.is_file()]
    assert any(p.parent.name == "job_events" for p in files) and (artifacts / "stdout").is_file()
    leaks = []
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        if path.name == "command" and path.parent == artifacts:
            env, text = command_artifact_env(path)
            # the only secret in the job environment is the one the credential injected, nothing else
            holders = sorted(k for k, v in env.items()
                             if any(f in v for s in secrets.values() for f in encoded_forms(s)))
            assert holders == ["WPCLOUD_API_KEY"], holders
        for name, secret in secrets.items():
            leaks += ["%s in %s (%r)" % (name, path.relative_to(pdd), f) for f in encoded_forms(secret) if f in text]
    events_text = json.dumps(events)
    for name, secret in secrets.items():
        leaks += ["%s in the events (%r)" % (name, f) for f in encoded_forms(secret) if f in events_text]
    assert not leaks, "\n".join(leaks)

    # the vault password never touched the private data directory at all (it came through the prompt),
    # and the vaulted secrets are only in the vaulted files' ciphertext
    for path in (p for p in pdd.rglob("*") if p.is_file() and "collections" not in p.parts):
        text = path.read_bytes().decode("utf-8", "replace")
        for form in encoded_forms(VAULT_PASSWORD) + encoded_forms(VAULTED_PASS_FILE) + encoded_forms(VAULTED_PASS_INLINE):
            assert form not in text, "%r in %s" % (form, path.relative_to(pdd))


def test_wrong_vault_password_fails_the_job_without_showing_it(tmp_path, scripted_emulator):
    pdd, dummy = build_private_data_dir(tmp_path, scripted_emulator)
    wrong = "not-the-vault-password-X1y2"
    result = run_job(pdd, "job2", wrong)
    assert result.status == "failed" and result.rc != 0
    stdout = (pdd / "artifacts" / "job2" / "stdout").read_text()
    assert "Decryption failed" in stdout or "decrypt" in stdout.lower(), stdout[-3000:]
    assert wrong not in stdout and wrong not in json.dumps(list(result.events))
    assert not [e for e in scripted_emulator.requests_log() if e["write"]]


PROGRESS_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Two migrations
      wpcloud.hosting.migration:
        remote_host: src.example
        remote_user: www
        migrations: [{site: "%(site_1)s"}, {site: "%(site_2)s"}]
      register: fleet
    - name: Preflight both and wait
      wpcloud.hosting.migration_preflight:
        migration_ids: "{{ fleet.results | map(attribute='migration_id') | list }}"
        progress_interval: 1
"""


def test_progress_lines_are_verbose_events_while_the_wait_runs(tmp_path, scripted_emulator):
    """What AWX shows while a job waits: each progress line is a `verbose` event that the runner emits when
    the line is printed (not at the end of the task), and it is in the job's stdout."""
    import time
    emu = scripted_emulator
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 5},
                                  "run": {"outcome": "success", "duration": 0.5}}})
    site_1, site_2 = 43001 + (os.getpid() % 500) * 10, 43002 + (os.getpid() % 500) * 10
    for site in (site_1, site_2):
        emu.add_site(site, "progress%d.example" % site, allow_migration=True)
    pdd = tmp_path / "pdd"
    for sub in ("project", "env", "inventory"):
        (pdd / sub).mkdir(parents=True)
    (pdd / "project" / "progress.yml").write_text(PROGRESS_PLAYBOOK % {"site_1": site_1, "site_2": site_2})
    coll = pdd / "project" / "collections" / "ansible_collections" / "wpcloud"
    coll.mkdir(parents=True)
    (coll / "hosting").symlink_to(ROOT)
    (pdd / "inventory" / "hosts").write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n"
                                             % sys.executable)
    (pdd / "env" / "envvars").write_text(yaml.safe_dump({
        "WPCLOUD_API_KEY": emu.api_key, "WPCLOUD_API_URL": emu.url, "WPCLOUD_CA_PATH": emu.ca_path,
        "ANSIBLE_COLLECTIONS_PATH": str(pdd / "project" / "collections"),
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "ANSIBLE_CONFIG": str(tmp_path / "no-ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
        "PATH": "%s:%s" % (BIN, os.environ.get("PATH", ""))}))
    arrived = []

    def handler(event):
        arrived.append((time.monotonic(), event))
        return True

    result = ansible_runner.run(private_data_dir=str(pdd), playbook="progress.yml", quiet=True, ident="progress",
                                event_handler=handler)
    stdout = (pdd / "artifacts" / "progress" / "stdout").read_text()
    assert result.status == "successful", stdout[-3000:]
    progress = [(when, e) for when, e in arrived
                if e["event"] == "verbose" and "migration_preflight: " in e.get("stdout", "")]
    assert len(progress) >= 3, [e.get("stdout") for when, e in arrived]
    for dummy, event in progress:
        assert re.match(r"^\[localhost\] migration_preflight: [0-2]/2 done \([0-2] failed\), [0-2] running, "
                        r"\d+ s elapsed$", event["stdout"]), event["stdout"]
        assert event["stdout"] in stdout
    # live: the first line arrived seconds before the task's result
    done = [when for when, e in arrived if e["event"] == "runner_on_ok"
            and e["event_data"].get("task") == "Preflight both and wait"]
    assert done and done[0] - progress[0][0] > 2.5, (done, [when for when, dummy in progress])
    # one second apart, give or take a poll
    gaps = [b[0] - a[0] for a, b in zip(progress, progress[1:])]
    assert all(0.5 < gap < 2.5 for gap in gaps), gaps
    assert emu.api_key not in json.dumps([e for dummy, e in arrived]) and emu.api_key not in stdout
