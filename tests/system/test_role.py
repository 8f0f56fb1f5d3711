"""The wpcloud.hosting.site_migration role and the migrate_site / configure_webhooks playbooks, for real.

Real ansible-playbook processes against the emulator (tests/support/emulator). Authentication tests use
the real SSH source host (tests/support/source_host) and the emulator's SSH executor, which copies the
site for real; failure causes, resumes and fleets use the scripted executor's outcomes. Assertions read
the emulator's request log (GET /_emulator/requests) and the role's JSON report. The role on its own
(one site, its report, a re-run, check mode) is also the integration target role_site_migration.
"""

import collections
import itertools
import secrets
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EMULATOR_DIR
from launcher import start_emulator
from playbooks import collection_tree, play_recap
from source_host_fixtures import source_host  # noqa: F401 pylint: disable=unused-import

ROOT = Path(__file__).resolve().parents[2]

BIN = Path(sys.executable).parent
VAULT_PASSWORD = "demo-vault-password-for-tests-only"
HAS_SSH_EXECUTOR = (EMULATOR_DIR / "executors" / "ssh.py").exists()
_ids = itertools.count(31001)


# --------------------------------------------------------------------------- helpers

@pytest.fixture(scope="module")
def collections_root(tmp_path_factory):
    """ANSIBLE_COLLECTIONS_PATH with this checkout as wpcloud.hosting."""
    return collection_tree(tmp_path_factory.mktemp("collections"))


@pytest.fixture(scope="module")
def ssh_emu(tmp_path_factory):
    """An emulator whose executor really connects to the source host (scripted when not available)."""
    emu = start_emulator(tmp_path_factory.mktemp("emulator-ssh"),
                         executor="ssh" if HAS_SSH_EXECUTOR else "scripted",
                         extra_args=["--accept-delay", "0.3"])
    yield emu
    emu.stop()


class Run:
    """Runs the playbooks of the collection in a work directory with its own inventory and vault."""

    def __init__(self, workdir, collections):
        self.dir = Path(workdir)
        self.collections = collections
        self.dir.mkdir(parents=True, exist_ok=True)
        self.vault_file = self.dir / "vault-password"
        self.vault_file.write_text(VAULT_PASSWORD + "\n")
        self.vault_file.chmod(0o600)
        self.state_dir = self.dir / "state"
        self.report_dir = self.dir / "reports"

    def env(self, extra=None):
        env = dict(os.environ)
        env.update({
            "ANSIBLE_COLLECTIONS_PATH": str(self.collections),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_LOCAL_TEMP": str(self.dir / ".ansible-tmp"),
            "ANSIBLE_CONFIG": str(self.dir / "no-ansible.cfg"),
            "PATH": "%s:%s" % (BIN, env.get("PATH", "")),
        })
        for name in ("WPCLOUD_API_URL", "WPCLOUD_API_KEY", "WPCLOUD_CA_PATH"):
            env.pop(name, None)
        env.update(extra or {})
        return env

    def inventory(self, emu, sites, sources, site_vars=None, api_vars=True):
        """sites: {host: vars}; sources: {host: vars}. Writes inventory.json and returns its path."""
        common = {"ansible_connection": "local",
                  "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                  "site_migration_confirm_overwrite": True,
                  "site_migration_state_dir": str(self.state_dir),
                  "site_migration_report_dir": str(self.report_dir),
                  "site_migration_poll_interval": 1.0}
        common.update(site_vars or {})
        top = {}
        if api_vars:
            top = {"wpcloud_api_url": emu.url, "wpcloud_api_key": emu.api_key, "wpcloud_ca_path": emu.ca_path}
        children = {"wpcloud_sites": {"vars": common, "hosts": sites}}
        if sources is not None:                  # None: no source inventory host at all
            children["wpcloud_sources"] = {"hosts": sources}
        inventory = {"all": {"vars": top, "children": children}}
        path = self.dir / "inventory.json"
        path.write_text(json.dumps(inventory, indent=1))
        return path

    def vault_host_vars(self, host, data):
        """host_vars/<host>.yml next to the inventory, encrypted with ansible-vault."""
        folder = self.dir / "host_vars"
        folder.mkdir(exist_ok=True)
        path = folder / ("%s.yml" % host)
        path.write_text(json.dumps(data))         # JSON is YAML
        subprocess.run([str(BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(self.vault_file),
                        str(path)], check=True, capture_output=True, env=self.env())
        assert path.read_text().startswith("$ANSIBLE_VAULT;")
        return path

    def argv(self, playbook="wpcloud.hosting.migrate_site", extra=()):
        return [str(BIN / "ansible-playbook"), "-i", str(self.dir / "inventory.json"),
                "--vault-password-file", str(self.vault_file), playbook] + list(extra)

    def play(self, playbook="wpcloud.hosting.migrate_site", extra=(), env=None, timeout=300):
        started = time.monotonic()
        proc = subprocess.run(self.argv(playbook, extra), capture_output=True, text=True, env=self.env(env),
                              check=False, cwd=str(self.dir), timeout=timeout)
        proc.elapsed = time.monotonic() - started
        return proc

    def reports(self):
        return sorted(self.report_dir.glob("site-migration-*.json"), key=lambda p: p.stat().st_mtime)

    def last_report(self):
        reports = self.reports()
        assert reports, "no report written"
        data = json.loads(reports[-1].read_text())
        return data, dict((s["host"], s) for s in data["sites"])

    def state(self, site):
        return json.loads((self.state_dir / ("%s.json" % site)).read_text())


@pytest.fixture
def run(tmp_path, collections_root):
    return Run(tmp_path / "run", collections_root)


def _explain(proc):
    return "rc=%s\n--- stdout\n%s\n--- stderr\n%s" % (proc.returncode, proc.stdout[-6000:], proc.stderr[-3000:])


def _writes(log, endpoint=None):
    return [e for e in log if e["write"] and (endpoint is None or e["endpoint"] == endpoint)]


def _count(log, endpoint, status=None):
    return len([e for e in log if e["endpoint"] == endpoint and (status is None or e["status"] == status)])


def _site(emu, domain=None, allow=True):
    site_id = next(_ids)
    emu.add_site(site_id, domain or "site%d.example" % site_id, allow_migration=allow)
    return site_id


def _tree(path):
    """{relative path: (kind, mode, content or link target)} of a directory, for byte-for-byte checks."""
    entries = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, path)
            st = os.lstat(full)
            if os.path.islink(full):
                entries[rel] = ("link", None, os.readlink(full))
            elif os.path.isdir(full):
                entries[rel] = ("dir", st.st_mode & 0o777, None)
            else:
                with open(full, "rb") as handle:
                    entries[rel] = ("file", st.st_mode & 0o777, handle.read())
    return entries


# --------------------------------------------------------------------------- authentication, real source host

def _source_vars(host):
    return {"source1": host.ansible_vars()}


AUTH_CASES = ["password", "key", "key_passphrase", "generated"]


def test_authentication_against_the_real_source_host(run, ssh_emu, source_host):
    """Each way to authenticate, one site each, in one run against the real source host (sshd, rsync): the
    migration is created with that authentication's credentials only, preflighted and run; the files and the
    database arrive; no credential shows in the output or the report."""
    sites, creds = {}, {}
    for auth in AUTH_CASES:
        host = "dest-%s.example" % auth.replace("_", "-")
        sites[host] = {"site_migration_site": str(_site(ssh_emu)), "site_migration_source_host": "source1",
                       "site_migration_auth": "key" if auth.startswith("key") else auth}
        if auth == "password":
            creds[host] = {"site_migration_remote_pass": source_host.password}
        elif auth == "key":
            creds[host] = {"site_migration_ssh_id": Path(source_host.client_key).read_text()}
        elif auth == "key_passphrase":
            creds[host] = {"site_migration_ssh_id": Path(source_host.passphrase_key).read_text(),
                           "site_migration_ssh_id_pass": source_host.key_passphrase}
    run.inventory(ssh_emu, sites, _source_vars(source_host))
    for host, values in creds.items():
        run.vault_host_vars(host, values)
    since = ssh_emu.requests_log()[-1]["seq"] if ssh_emu.requests_log() else 0

    proc = run.play(extra=["-v"])
    assert proc.returncode == 0, _explain(proc)

    report, by_host = run.last_report()
    log = ssh_emu.requests_log(since)
    authorized = Path(source_host.home, ".ssh", "authorized_keys").read_text()
    for auth, host in zip(AUTH_CASES, sites):
        entry = by_host[host]
        assert entry["result"] == "succeeded", entry
        assert entry["auth"] == {"password": "password", "key": "key", "key_passphrase": "key-passphrase",
                                 "generated": "generated"}[auth]
        assert entry["preflight"]["state"] == "success" and entry["run"]["state"] == "success"
        site = sites[host]["site_migration_site"]
        assert run.state(site)["migration_id"] == entry["migration_id"]

        ids = {site, str(entry["migration_id"])}           # the last part of the path of this site's writes
        mine = [e for e in _writes(log) if e["path"].rstrip("/").rsplit("/", 1)[-1] in ids]
        creates = [e for e in mine if e["endpoint"] == "migration.create"]
        assert len(creates) == 1, creates
        sent = set(creates[0]["params"])
        expected = {"password": {"remote-pass"}, "key": {"ssh-id"}, "key_passphrase": {"ssh-id", "ssh-id-pass"},
                    "generated": set()}[auth]
        assert sent & {"remote-pass", "ssh-id", "ssh-id-pass"} == expected, (auth, sent)
        assert [e["endpoint"] for e in mine][-2:] == ["migration.preflight", "migration.ready"], (auth, mine)

        if auth == "generated":
            public = ssh_emu.api("migration/get/%s" % entry["migration_id"])[1]["data"]["ssh-id-pub"]
            assert public in authorized
            assert entry["key_installed"] is True
            assert oct(os.stat(Path(source_host.home, ".ssh", "authorized_keys")).st_mode & 0o777) == "0o600"
            source_host.unauthorize_key(public)
        if HAS_SSH_EXECUTOR:
            storage = Path(ssh_emu.site(int(site))["storage"])
            assert _tree(storage / "files") == _tree(source_host.docroot)
            dump = (storage / "db.sql").read_text()
            for row in ("Hello from the source", "Second post", "Source Blog", "wp_users"):
                assert row in dump

    # No secret anywhere in the output or the report.
    report_text = run.reports()[-1].read_text()
    for values in creds.values():
        for value in values.values():
            for line in value.strip().splitlines()[1:-1] or [value]:
                assert line not in proc.stdout and line not in proc.stderr
                assert line not in report_text


def test_generated_identity_without_install_fails_preflight_with_auth_failed(run, ssh_emu, source_host):
    if not HAS_SSH_EXECUTOR:
        pytest.skip("needs the SSH executor")
    site = _site(ssh_emu)
    run.inventory(ssh_emu, {"dest-noinstall.example": {"site_migration_site": str(site)}}, _source_vars(source_host),
                  site_vars={"site_migration_source_host": "source1", "site_migration_install_key": False})
    proc = run.play()
    assert proc.returncode != 0
    assert "failed (auth_failed)" in proc.stdout, _explain(proc)
    dummy, by_host = run.last_report()
    assert by_host["dest-noinstall.example"]["result"] == "preflight_failed"
    assert by_host["dest-noinstall.example"]["diagnosis"]["code"] == "auth_failed"


# --------------------------------------------------------------------------- preflight failure causes (scripted)

CAUSES = {"authfail.example": "auth_failed", "nodocroot.example": "docroot_missing",
          "nowpcli.example": "wp_cli_missing", "norsync.example": "rsync_missing"}


def test_each_preflight_failure_stops_its_site_with_the_diagnosis(run, emu):
    sites, sources = {}, {"good.example": {"ansible_user": "www"}}
    for source in CAUSES:
        sources[source] = {"ansible_user": "www"}
        sites["to-" + source] = {"site_migration_site": str(_site(emu)), "site_migration_source_host": source}
    sites["to-good.example"] = {"site_migration_site": str(_site(emu)), "site_migration_source_host": "good.example"}
    sources["runfail.example"] = {"ansible_user": "www"}
    sites["to-runfail.example"] = {"site_migration_site": str(_site(emu)),
                                   "site_migration_source_host": "runfail.example"}
    run.inventory(emu, sites, sources, site_vars={"site_migration_auth": "password"})
    (run.dir / "group_vars").mkdir()
    group_vault = run.dir / "group_vars" / "wpcloud_sites.yml"
    group_vault.write_text(json.dumps({"site_migration_remote_pass": "correct horse battery"}))
    subprocess.run([str(BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(run.vault_file),
                    str(group_vault)], check=True, capture_output=True, env=run.env())

    proc = run.play()
    assert proc.returncode == 2, _explain(proc)
    recap = play_recap(proc.stdout)
    dummy, by_host = run.last_report()
    for source, code in CAUSES.items():
        host = "to-" + source
        assert recap[host]["failed"] == 1
        assert "site %s: preflight of migration" % sites[host]["site_migration_site"] in proc.stdout
        assert "failed (%s)" % code in proc.stdout
        assert by_host[host]["result"] == "preflight_failed"
        assert by_host[host]["diagnosis"]["code"] == code
        assert by_host[host]["run"] is None
    assert by_host["to-good.example"]["result"] == "succeeded"
    assert recap["to-good.example"]["failed"] == 0
    # A run that fails after a good preflight stops its site too, with the run's messages.
    assert by_host["to-runfail.example"]["result"] == "run_failed"
    assert recap["to-runfail.example"]["failed"] == 1
    assert "site %s: the run of migration" % sites["to-runfail.example"]["site_migration_site"] in proc.stdout
    assert "correct horse battery" not in proc.stdout + proc.stderr

    log = emu.requests_log()
    assert len(_writes(log, "migration.create")) == 6
    assert len(_writes(log, "migration.preflight")) == 6
    assert len(_writes(log, "migration.ready")) == 2       # only the sites whose preflight succeeded


def test_invalid_inputs_are_refused_before_any_call(run, emu):
    site = _site(emu)
    run.inventory(emu, {"dest.example": {"site_migration_site": str(site)}}, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_auth": "password",
                             "site_migration_confirm_overwrite": False})
    proc = run.play()
    assert proc.returncode == 2
    assert "site_migration_confirm_overwrite must be true" in proc.stdout, _explain(proc)
    assert "site_migration_remote_pass" in proc.stdout
    assert [e for e in emu.requests_log() if e["write"]] == []
    dummy, by_host = run.last_report()
    assert by_host["dest.example"]["result"] == "invalid_input"


def test_the_role_resolves_every_option_of_its_argument_spec():
    """tasks/fleet.yml gives the setup its own argument spec, whose every option the setup reads for each site
    (tests/unit/plugins/action/test_site_migration_setup.py): a new option is read without a list to update."""
    import yaml
    role = ROOT / "roles" / "site_migration"
    tasks = yaml.safe_load((role / "tasks" / "fleet.yml").read_text())
    setup = [t for t in tasks[0]["block"] if "wpcloud.hosting.site_migration_setup" in t]
    assert [t["name"] for t in setup] == ["Check every site's inputs, then allow and create or update the migrations"]
    assert setup[0]["wpcloud.hosting.site_migration_setup"] == {"argument_spec": (
        "{{ (lookup('ansible.builtin.file', role_path ~ '/meta/argument_specs.yml') | from_yaml).argument_specs.main }}")}


def test_argument_errors_stop_only_their_site_and_name_the_option(run, emu):
    good, bad = _site(emu), _site(emu)
    run.inventory(emu, {"good.example": {"site_migration_site": str(good)},
                        "bad.example": {"site_migration_site": str(bad), "site_migration_auth": "pasword",
                                        "site_migration_preflight_timeout": "soon"}},
                  {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    proc = run.play()
    assert proc.returncode == 2, _explain(proc)
    recap = play_recap(proc.stdout)
    assert recap["bad.example"]["failed"] == 1 and recap["good.example"]["failed"] == 0
    assert "site %s: invalid inputs:" % bad in proc.stdout
    assert "site_migration_auth" in proc.stdout and "site_migration_preflight_timeout" in proc.stdout
    # One clear message: the site's own failure, no "fatal ... censored" and "...ignoring" block before it.
    assert "...ignoring" not in proc.stdout and "censored" not in proc.stdout, _explain(proc)
    assert [line for line in proc.stdout.splitlines() if line.startswith("fatal:")] == [
        line for line in proc.stdout.splitlines() if line.startswith("fatal: [bad.example]")]
    assert len([line for line in proc.stdout.splitlines() if line.startswith("fatal:")]) == 1
    dummy, by_host = run.last_report()
    assert by_host["bad.example"]["result"] == "invalid_input"
    assert by_host["good.example"]["result"] == "succeeded"
    written = [e["path"] for e in _writes(emu.requests_log())]
    assert not [p for p in written if str(bad) in p]
    assert [p for p in written if str(good) in p]


def test_an_empty_remote_host_or_user_is_refused_not_replaced_by_the_source_hosts(run, emu):
    """Issue 13 item 2: "" never means "take ansible_host / ansible_user of the source host"."""
    sites = {"empty-host.example": {"site_migration_site": str(_site(emu)), "site_migration_remote_host": ""},
             "blank-user.example": {"site_migration_site": str(_site(emu)), "site_migration_remote_user": " "},
             "good.example": {"site_migration_site": str(_site(emu)), "site_migration_remote_user": None}}
    run.inventory(emu, sites, {"src.example": {"ansible_host": "127.0.0.1", "ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    proc = run.play()
    assert proc.returncode == 2, _explain(proc)
    recap = play_recap(proc.stdout)
    assert recap["empty-host.example"]["failed"] == recap["blank-user.example"]["failed"] == 1
    assert recap["good.example"]["failed"] == 0
    assert "site_migration_remote_host is empty" in proc.stdout and "site_migration_remote_user is empty" in proc.stdout
    dummy, by_host = run.last_report()
    assert by_host["empty-host.example"]["result"] == by_host["blank-user.example"]["result"] == "invalid_input"
    assert by_host["good.example"]["result"] == "succeeded"            # null: the source host's values
    assert by_host["good.example"]["remote"]["remote-user"] == "www"
    written = [e["path"] for e in _writes(emu.requests_log())]
    for host in ("empty-host.example", "blank-user.example"):
        assert not [p for p in written if sites[host]["site_migration_site"] in p]


def test_no_source_inventory_host_is_needed_when_no_key_is_installed(run, emu):
    """Issue 13 item 6: with password or key authentication, or install_key false, Ansible never
    connects to the source, so the inventory needs no wpcloud_sources host; remote_host and
    remote_user come from the role variables."""
    remote = {"site_migration_remote_host": "old.example", "site_migration_remote_user": "blog"}
    sites = {"pw.example": dict(remote, site_migration_site=str(_site(emu)), site_migration_auth="password",
                                site_migration_remote_pass="not-a-real-password"),
             "gen.example": dict(remote, site_migration_site=str(_site(emu)), site_migration_install_key=False),
             "install.example": dict(remote, site_migration_site=str(_site(emu))),
             "nohost.example": {"site_migration_site": str(_site(emu)), "site_migration_install_key": False}}
    run.inventory(emu, sites, None)
    proc = run.play()
    assert proc.returncode == 2, _explain(proc)
    dummy, by_host = run.last_report()
    assert by_host["pw.example"]["result"] == by_host["gen.example"]["result"] == "succeeded", _explain(proc)
    remote = by_host["pw.example"]["remote"]
    assert (remote["remote-host"], str(remote["remote-port"]), remote["remote-user"]) == ("old.example", "22", "blog")
    assert by_host["install.example"]["result"] == by_host["nohost.example"]["result"] == "invalid_input"
    assert "site_migration_source_host is needed to install the generated key" in proc.stdout
    assert "set site_migration_remote_host" in proc.stdout and "site_migration_remote_user" in proc.stdout


def test_a_credential_that_the_authentication_does_not_use_is_never_shown(run, emu):
    """A password given with site_migration_auth=generated (a mistake the role refuses) is a secret all
    the same: hidden at -vvvv too, also when another input of the site fails the argument spec (on
    main the per-site argument loop printed it even at default verbosity)."""
    canary = "canary-unused-password-%s" % secrets.token_hex(6)
    run.inventory(emu, {"dest.example": {"site_migration_site": str(_site(emu)), "site_migration_remote_pass": canary,
                                         "site_migration_poll_interval": "soon"}},
                  {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    for verbosity in ([], ["-vvvv"]):
        proc = run.play(extra=verbosity)
        assert proc.returncode == 2, _explain(proc)
        assert "site_migration_remote_pass is only for site_migration_auth=password" in proc.stdout
        assert canary not in proc.stdout + proc.stderr
        assert canary not in run.reports()[-1].read_text()


def test_the_role_never_loops_over_a_secret():
    """ansible-core shows a loop's whole item in the item's result (at -v, and at any verbosity when
    it fails), whatever loop_control.label says (docs/security.md). The role's only loops are those of
    the key step, whose entries hold names and a public key (tests/unit/plugins/filter)."""
    import yaml

    def tasks(items):
        for task in items or []:
            yield task
            for section in ("block", "rescue", "always"):
                yield from tasks(task.get(section))
    loops = []
    for path in sorted((ROOT / "roles" / "site_migration" / "tasks").glob("*.yml")):
        for task in tasks(yaml.safe_load(path.read_text())):
            loops += [(path.name, task[k]) for k in task if k == "loop" or k.startswith("with_")]
    assert loops == [("fleet.yml", "{{ site_migration__recap.stopped | default({}) | list }}"),  # host names
                     ("install_keys.yml", "{{ site_migration__todo.absent_sources }}"),    # names, addresses
                     ("install_keys.yml", "{{ site_migration__todo.users }}"),
                     ("install_keys.yml", "{{ site_migration__todo.sites }}")]


def test_check_mode_writes_nothing_and_reports_what_would_happen(run, emu):
    sites = {"dest%d.example" % i: {"site_migration_site": str(_site(emu, allow=False))} for i in range(3)}
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    since = emu.requests_log()[-1]["seq"] if emu.requests_log() else 0
    proc = run.play(extra=["--check"])
    assert proc.returncode == 0, _explain(proc)
    assert _writes(emu.requests_log(since)) == []
    dummy, by_host = run.last_report()
    assert {s["result"] for s in by_host.values()} == {"checked"}
    assert not run.state_dir.exists() or not list(run.state_dir.glob("*.json"))


# --------------------------------------------------------------------------- partner rule, re-runs, resume

def test_ready_is_refused_without_a_fresh_preflight_and_the_role_follows_the_rule(run, emu):
    site = _site(emu)
    run.inventory(emu, {"dest.example": {"site_migration_site": str(site)}}, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_auth": "generated",
                             "site_migration_install_key": False})
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    migration_id = run.state(str(site))["migration_id"]

    # Update the migration, then try to start it directly: the partner rule refuses.
    direct = run.dir / "direct.yml"
    direct.write_text(json.dumps([{
        "hosts": "localhost", "gather_facts": False,
        "module_defaults": {"group/wpcloud.hosting.all": {
            "api_url": emu.url, "api_key": emu.api_key, "ca_path": emu.ca_path}},
        "tasks": [
            {"name": "update", "wpcloud.hosting.migration": {"migration_id": migration_id,
                                                             "remote_docroot": "/srv/www/blog"}},
            {"name": "start without preflight", "wpcloud.hosting.migration_ready": {"migration_id": migration_id},
             "register": "ready", "ignore_errors": True},
            {"name": "check", "ansible.builtin.assert": {"that": [
                "ready is failed", "'latest preflight has not succeeded' in ready.msg", "ready.state == 'new'"]}},
        ]}]))
    since = emu.requests_log()[-1]["seq"]
    proc = run.play(str(direct), extra=["-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable])
    assert proc.returncode == 0, _explain(proc)
    log = emu.requests_log(since)
    assert [e["endpoint"] for e in _writes(log)] == ["migration.update"]

    # The role runs preflight after the update, then starts the run.
    since = emu.requests_log()[-1]["seq"]
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    writes = [e["endpoint"] for e in _writes(emu.requests_log(since))]
    assert writes == ["migration.preflight", "migration.ready"]
    dummy, by_host = run.last_report()
    assert by_host["dest.example"]["result"] == "succeeded"


def test_rerun_refreshes_without_a_second_migration_and_refresh_false_writes_nothing(run, emu):
    sites = {"dest%d.example" % i: {"site_migration_site": str(_site(emu))} for i in range(3)}
    sites["dest0.example"]["site_migration_source_domain"] = ""          # explicitly empty: sent empty
    sites["dest1.example"]["site_migration_source_domain"] = None        # null: absent
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    first = emu.requests_log()
    assert len(_writes(first, "migration.create")) == 3
    creates = dict((e["path"].rsplit("/", 1)[1], e["params"]) for e in _writes(first, "migration.create"))
    assert "remote-domain" in creates[sites["dest0.example"]["site_migration_site"]]
    assert "remote-domain" not in creates[sites["dest1.example"]["site_migration_site"]]
    ids = dict((h, run.state(v["site_migration_site"])["migration_id"]) for h, v in sites.items())

    # Again, with the connection from the environment instead of variables: a refresh.
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}}, api_vars=False,
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    since = first[-1]["seq"]
    proc = run.play(env={"WPCLOUD_API_URL": emu.url, "WPCLOUD_API_KEY": emu.api_key, "WPCLOUD_CA_PATH": emu.ca_path})
    assert proc.returncode == 0, _explain(proc)
    second = emu.requests_log(since)
    assert _writes(second, "migration.create") == []
    assert _writes(second, "migration.update") == []
    assert len(_writes(second, "migration.preflight")) == 3
    assert len(_writes(second, "migration.ready")) == 3
    dummy, by_host = run.last_report()
    assert all(by_host[h]["result"] == "succeeded" and by_host[h]["migration_id"] == ids[h] for h in sites)

    # refresh false: completed migrations are left alone, no write call at all.
    since = second[-1]["seq"]
    proc = run.play(extra=["-e", "site_migration_refresh=false"],
                    env={"WPCLOUD_API_URL": emu.url, "WPCLOUD_API_KEY": emu.api_key, "WPCLOUD_CA_PATH": emu.ca_path})
    assert proc.returncode == 0, _explain(proc)
    assert _writes(emu.requests_log(since)) == []
    dummy, by_host = run.last_report()
    assert {s["result"] for s in by_host.values()} == {"left_alone"}


def test_an_update_whose_answer_was_lost_is_resolved_within_the_run(run, emu):
    """Issue 23 item 7: a re-run changes each site's source domain; the three updates lose their answers
    (applied then reset, a gateway's 502, reset before the service saw it). Each is read back and sent
    again only when the read does not show it: one applied update per migration, and the run succeeds."""
    sites = {"upd%d.example" % i: {"site_migration_site": str(_site(emu)), "site_migration_source_domain": "old.example"}
             for i in range(3)}
    source = {"src.example": {"ansible_user": "www"}}
    site_vars = {"site_migration_source_host": "src.example", "site_migration_install_key": False}
    run.inventory(emu, sites, source, site_vars=site_vars)
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    for host in sites:
        sites[host]["site_migration_source_domain"] = "new.example"
    run.inventory(emu, sites, source, site_vars=site_vars)
    since = emu.requests_log()[-1]["seq"]
    emu.set_faults([{"endpoint": "migration.update", "reset": "after", "count": 1},
                    {"endpoint": "migration.update", "status": 502, "count": 1},
                    {"endpoint": "migration.update", "reset": "before", "count": 1}])
    again = run.play(extra=["-e", "wpcloud_timeout=3"])
    emu.set_faults([])
    assert again.returncode == 0, _explain(again)
    log = emu.requests_log(since)
    assert sorted(e["fault"] for e in log if e["fault"]) == ["reset=after", "reset=before", "status=502"]
    applied = collections.Counter(e["path"] for e in _writes(log, "migration.update") if e["status"] == 200)
    assert sorted(applied.values()) == [1, 1, 1], applied               # never applied twice, never lost
    assert len(_writes(log, "migration.update")) == 5                   # the 502 and the reset-before sent again
    dummy, by_host = run.last_report()
    outcomes = sorted(u["outcome"] for s in by_host.values() for u in s["uncertain"] if u["write"] == "migration.update")
    assert outcomes == ["happened", "repeated", "repeated"], by_host
    for host, values in sites.items():
        mid = run.state(values["site_migration_site"])["migration_id"]
        assert emu.api("migration/get/%s" % mid)[1]["data"]["args"]["remote-domain"] == "new.example"
        assert by_host[host]["result"] == "succeeded"


def _reads(log, endpoint):
    return [e for e in log if e["endpoint"] == endpoint]


def _killed_once_the_runs_started(run, emu, sites, run_seconds, then=0.0, hold=False):
    """migrate_site for ``sites`` (scripted runs of ``run_seconds``, ``hold``: until emu.release_runs()),
    killed with its whole process group ``then`` seconds after every site's migration.ready reached
    the emulator."""
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 0.3},
                                  "run": {"outcome": "success", "duration": run_seconds, "hold": hold}}})
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    with open(run.dir / "killed.out", "w") as out:
        proc = subprocess.Popen(run.argv(), stdout=out, stderr=subprocess.STDOUT, env=run.env(), cwd=str(run.dir),
                                start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(_writes(emu.requests_log(), "migration.ready")) < len(sites):
            assert proc.poll() is None, (run.dir / "killed.out").read_text()
            time.sleep(0.1)
        assert len(_writes(emu.requests_log(), "migration.ready")) == len(sites)
        time.sleep(then)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_resume_after_the_playbook_was_killed_during_the_run_wait(run, emu):
    # The runs are held active until the resumed play's run step has read them running and its wait has
    # polled them (a fourth read of each: check, create, run, a poll), then released: a timed run (20 s)
    # had ended before a loaded machine's resumed play reached it (that case is
    # test_resume_when_the_run_ends_before_the_run_step_reads_it).
    sites = {"dest%d.example" % i: {"site_migration_site": str(_site(emu))} for i in range(3)}
    _killed_once_the_runs_started(run, emu, sites, run_seconds=0.3, then=1.5, hold=True)   # inside the run's wait
    assert "Run every site's migration and wait for all of them" in (run.dir / "killed.out").read_text()
    ids = [run.state(v["site_migration_site"])["migration_id"] for v in sites.values()]
    running = [emu.api("migration/get/%s" % mid)[1]["data"]["state"] for mid in ids]
    assert running == ["migration-running"] * 3

    since = emu.requests_log()[-1]["seq"]

    def read_four_times():
        reads = [e["path"] for e in _reads(emu.requests_log(since), "migration.get")]
        return all(sum(1 for p in reads if p.endswith("/%s" % mid)) >= 4 for mid in ids)

    with open(run.dir / "resumed.out", "w") as out:
        proc = subprocess.Popen(run.argv(), stdout=out, stderr=subprocess.STDOUT, env=run.env(), cwd=str(run.dir))
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not read_four_times():
            assert proc.poll() is None, (run.dir / "resumed.out").read_text()
            time.sleep(0.1)
        emu.release_runs()
        proc.wait(timeout=300)
    again = subprocess.CompletedProcess(proc.args, proc.returncode, (run.dir / "resumed.out").read_text(), "")
    assert again.returncode == 0, _explain(again)
    log = emu.requests_log()
    assert len(_writes(log, "migration.create")) == 3                  # one migration per site, ever
    assert len(set(e["path"] for e in _writes(log, "migration.create"))) == 3
    resumed = emu.requests_log(since)
    assert _writes(resumed, "migration.create") == []
    assert _writes(resumed, "migration.ready") == []                   # no second run while one is active
    assert _writes(resumed, "migration.preflight") == []
    dummy, by_host = run.last_report()
    for host in sites:
        assert by_host[host]["result"] == "succeeded"
        assert by_host[host]["run"]["already_running"] is True


def test_resume_when_the_run_ends_before_the_run_step_reads_it(run, emu):
    """Issue 23 item 7, the resume race, made exact: the play that started the run is killed; the run is
    held active until the resumed play's create step has read it, then released, while the run step's
    read of the migration is held (a delay on the third migration.get: check, create, run). The ended
    run is the site's outcome, not a refusal by the partner rule, and no run is started again."""
    sites = {"late.example": {"site_migration_site": str(_site(emu))}}
    _killed_once_the_runs_started(run, emu, sites, run_seconds=0.3, hold=True)
    (migration_id,) = [run.state(v["site_migration_site"])["migration_id"] for v in sites.values()]
    since = emu.requests_log()[-1]["seq"]
    emu.set_faults([{"endpoint": "migration.get", "every": 3, "count": 1, "latency": 5}])
    with open(run.dir / "resumed.out", "w") as out:
        proc = subprocess.Popen(run.argv(), stdout=out, stderr=subprocess.STDOUT, env=run.env(), cwd=str(run.dir))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(_reads(emu.requests_log(since), "migration.get")) < 2:
            assert proc.poll() is None, (run.dir / "resumed.out").read_text()
            time.sleep(0.05)
        assert _reads(emu.requests_log(since), "migration.get")[1]["status"] == 200
        emu.release_runs()                       # the create step saw it running; now it ends
        proc.wait(timeout=300)
    emu.set_faults([])
    resumed = emu.requests_log(since)
    reads = _reads(resumed, "migration.get")
    assert reads[2]["fault"] == "latency=5", reads
    again = subprocess.CompletedProcess(proc.args, proc.returncode, (run.dir / "resumed.out").read_text(), "")
    assert again.returncode == 0, _explain(again)
    assert _writes(resumed) == []                              # nothing started, created or changed
    assert emu.api("migration/get/%s" % migration_id)[1]["data"]["state"] == "migration-succeeded"
    dummy, by_host = run.last_report()
    assert by_host["late.example"]["result"] == "succeeded", by_host
    assert by_host["late.example"]["run"]["already_running"] is True


def test_ten_sites_in_one_play_wait_together(run, emu):
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                  "run": {"outcome": "success", "duration": 4}}})
    sites = {"fleet%02d.example" % i: {"site_migration_site": str(_site(emu))} for i in range(10)}
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_auth": "password",
                             "site_migration_remote_pass": "not-a-real-password"})
    proc = run.play(extra=["-f", "10"])
    assert proc.returncode == 0, _explain(proc)
    report, by_host = run.last_report()
    assert report["counts"] == {"succeeded": 10}
    # One wait task per phase polls every ticket: the waits last about as long as the slowest site, far
    # less than one site after another (10 x 4 s, 10 x 1 s) even on a loaded machine.
    assert report["run_wait_seconds"] < 10 * 4 / 2
    assert report["preflight_wait_seconds"] < 10 * 1 / 2
    log = emu.requests_log()
    assert len(_writes(log, "migration.create")) == 10
    assert len(_writes(log, "migration.ready")) == 10
    assert proc.stdout.count("TASK [wpcloud.hosting.site_migration : Run every site's migration and wait for all of them]") == 1
    recap = play_recap(proc.stdout)
    # One task runs per site ("Stop the sites ...", so that the recap lists every site); the inputs are read in one
    # task and every API step is one task for the whole fleet (a task costs the controller a worker process per
    # site it runs for).
    assert sorted(recap) == sorted(sites) and all(recap[h]["changed"] >= 1 for h in sites), recap
    assert proc.stdout.count("TASK [") == proc.stdout.count("TASK [wpcloud.hosting.site_migration : ")
    print("recap hosts:", list(recap), "elapsed %.1fs" % proc.elapsed)


# --------------------------------------------------------------------------- new destination sites (rule 1)

def test_missing_destinations_are_created_with_the_flag_all_at_once_and_migrated(run, emu):
    """Fifty destinations named by domain that the client lacks are created in one task with
    allow_site_migration (no allow call for them); two existing ones take the allow path. A re-run
    with refresh false creates and writes nothing; --check on new domains writes nothing."""
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                  "run": {"outcome": "success", "duration": 2}}})
    tag = secrets.token_hex(3)
    new = {"new%02d-%s.example" % (i, tag): {} for i in range(50)}
    old = {"old%d-%s.example" % (i, tag): {"site_migration_site": str(_site(emu, allow=False))} for i in range(2)}
    admin_pass = "new-site-admin-pass-%s" % secrets.token_hex(8)
    site_vars = {"site_migration_source_host": "src.example", "site_migration_install_key": False,
                 "site_migration_client": emu.client, "site_migration_admin_user": "admin",
                 "site_migration_admin_email": "admin@example.com", "site_migration_php_version": "8.3"}
    run.inventory(emu, dict(new, **old), {"src.example": {"ansible_user": "www"}}, site_vars=site_vars)
    run.vault_host_vars("new00-%s.example" % tag, {"site_migration_admin_pass": admin_pass})
    since = emu.requests_log()[-1]["seq"] if emu.requests_log() else 0
    proc = run.play(extra=["-f", "20"])
    assert proc.returncode == 0, _explain(proc)
    log = emu.requests_log(since)
    creates = _writes(log, "site.create")
    assert len(creates) == 50
    assert all("meta[allow_site_migration]" in e["params"] for e in creates), creates[0]
    assert sorted(e["path"].rsplit("/", 1)[1] for e in _writes(log, "site.allow_migration")) == sorted(
        v["site_migration_site"] for v in old.values())
    assert len(_writes(log, "migration.create")) == 52 and len(_writes(log, "migration.ready")) == 52
    assert _count(log, "site.list") == 2      # one listing page finds them all, an empty page ends it
    # One call creates them all: the setup's line for the step, once.
    assert proc.stdout.count("Create the missing destination sites, ready for a migration (50 sites)") == 1
    assert admin_pass not in proc.stdout + proc.stderr
    report, by_host = run.last_report()
    assert report["counts"] == {"succeeded": 52} and report["destinations"] == {"created": 50, "existing": 2}
    assert all(by_host[h]["destination"] == "created" and by_host[h]["new_site"]["job_status"] == "success"
               for h in new)
    assert admin_pass not in json.dumps(report)

    # A re-run that leaves finished migrations alone: nothing created, nothing written.
    since = log[-1]["seq"]
    proc = run.play(extra=["-f", "20", "-e", "site_migration_refresh=false"])
    assert proc.returncode == 0, _explain(proc)
    assert _writes(emu.requests_log(since)) == []
    report, by_host = run.last_report()
    assert report["counts"] == {"left_alone": 52} and report["destinations"] == {"existing": 52}

    # --check with destinations that do not exist yet: nothing written, each says what would happen.
    fresh = {"fresh%d-%s.example" % (i, tag): {} for i in range(3)}
    run.inventory(emu, fresh, {"src.example": {"ansible_user": "www"}}, site_vars=site_vars)
    since = emu.requests_log()[-1]["seq"]
    proc = run.play(extra=["--check"])
    assert proc.returncode == 0, _explain(proc)
    assert _writes(emu.requests_log(since)) == []
    report, by_host = run.last_report()
    assert {s["result"] for s in by_host.values()} == {"checked"}
    assert all("would be created" in s["message"] for s in by_host.values())


def test_a_new_destination_left_to_its_webhook_is_created_and_not_migrated(run, emu):
    tag = secrets.token_hex(3)
    run.inventory(emu, {"later-%s.example" % tag: {}}, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False,
                             "site_migration_client": emu.client, "site_migration_admin_user": "admin",
                             "site_migration_admin_email": "admin@example.com", "site_migration_create_wait": False})
    since = emu.requests_log()[-1]["seq"] if emu.requests_log() else 0
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    log = emu.requests_log(since)
    assert len(_writes(log, "site.create")) == 1 and _writes(log, "migration.create") == []
    assert _count(log, "job.status") == 0                     # nothing waits for the job
    dummy, by_host = run.last_report()
    assert by_host["later-%s.example" % tag]["result"] == "awaiting_provisioning"


def test_new_destination_inputs_are_refused_by_their_role_variable_before_any_write(run, emu):
    tag = secrets.token_hex(3)
    sites = {"a-%s.example" % tag: {"site_migration_admin_email": "nobody"},
             "b-%s.example" % tag: {"site_migration_admin_user": None},
             "c-%s.example" % tag: {"site_migration_client": None}}
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False,
                             "site_migration_client": emu.client, "site_migration_admin_user": "admin",
                             "site_migration_admin_email": "admin@example.com"})
    since = emu.requests_log()[-1]["seq"] if emu.requests_log() else 0
    proc = run.play()
    assert proc.returncode != 0
    assert _writes(emu.requests_log(since)) == []
    dummy, by_host = run.last_report()
    assert "site_migration_admin_email must be an e-mail address" in by_host["a-%s.example" % tag]["message"]
    assert "set site_migration_admin_user too" in by_host["b-%s.example" % tag]["message"]
    # c names no client, so its new-site values describe nothing: refused, not ignored
    assert "site_migration_admin_user describes a destination site the role creates: set site_migration_client" \
        in by_host["c-%s.example" % tag]["message"]


# --------------------------------------------------------------------------- configure_webhooks

def test_configure_webhooks_sets_url_and_key_without_showing_the_key(run, emu):
    key = secrets.token_hex(32)
    run.inventory(emu, {}, {})
    vault = run.dir / "webhooks.yml"
    vault.write_text(json.dumps({"wpcloud_client": emu.client, "wpcloud_webhook_url": "https://hooks.example.com/wp",
                                 "wpcloud_webhook_hmac_key": key}))
    subprocess.run([str(BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(run.vault_file), str(vault)],
                   check=True, capture_output=True, env=run.env())
    common = ["-e", "@" + str(vault), "-e", "wpcloud_api_url=%s" % emu.url, "-e", "wpcloud_api_key=%s" % emu.api_key,
              "-e", "wpcloud_ca_path=%s" % emu.ca_path, "-v"]
    proc = run.play("wpcloud.hosting.configure_webhooks", extra=common)
    assert proc.returncode == 0, _explain(proc)
    assert key not in proc.stdout + proc.stderr
    assert emu.api("client-meta/%s/webhook_url/get" % emu.client)[1]["data"] == "https://hooks.example.com/wp"
    assert emu.api("client-meta/%s/webhook_hmac_key/get" % emu.client) == (200, {"message": "OK", "data": None}) \
        or emu.api("client-meta/%s/webhook_hmac_key/get" % emu.client)[1]["data"] is None
    since = emu.requests_log()[-1]["seq"]
    proc = run.play("wpcloud.hosting.configure_webhooks", extra=common)
    assert proc.returncode == 0, _explain(proc)
    assert _writes(emu.requests_log(since)) == []            # idempotent: on_create for the key
    assert "changed=0" in proc.stdout
