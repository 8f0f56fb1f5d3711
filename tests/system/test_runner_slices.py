"""AWX / Automation Controller job slicing, the way the controller slices: a sliced job template becomes K
jobs, each an ansible-runner run of the same playbook (migrate_site) in its own private data directory, at
the same time, against one account (here one emulator whose executor really copies from the SSH source host).

Each slice's inventory is what AWX writes for it (awx/main/models/inventory.py, Inventory.get_script_data
with slice_number/slice_count), reproduced in tests/support/awx_slicing.py: every host of the inventory
sorted by name, slice k (1-based) takes hosts[k-1::K]; each group lists only the slice's hosts and keeps
its variables (AWX >= 4.0 keeps a group that the slice left empty); ``_meta.hostvars`` holds only the
slice's hosts; the file is an executable script. So the source host (``source.example``) is in slice 1
only; the sites of slices 2-4 name it and reach it through the variables of their group (docs/awx.md
section 8, the layout that slices).

The credentials as the controller injects them: WP Cloud API as environment variables (the injector of
extensions/awx/credential_types/wpcloud_api), the Machine credential as ``-u`` plus its key in ssh-agent
(ansible-runner ``env/ssh_key``), the Vault credential as ``--vault-id ...@prompt`` answered from
``env/passwords``; every job gets its own ``awx_job_id``. Half of the sites migrate with a vaulted password,
half with the identity the service generates, which the role installs on the source host over SSH (from
slices 2-4 without the source host in their inventory). The reports go to one shared directory, each named
by its job; merge_site_migration_reports makes one fleet report from them and from the set_stats artifacts.
The benchmark is tests/benchmarks/fleet/slices.py."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from awx_slicing import awx_slice, write_script
from launcher import start_emulator
from playbooks import collection_tree, job_project
from source_host_fixtures import source_host  # noqa: F401 pylint: disable=unused-import

pytest.importorskip("ansible_runner")

BIN = Path(sys.executable).parent
EMULATOR_DIR = Path(__file__).resolve().parents[1] / "support" / "emulator"
SLICES, SITES = 4, 8
VAULT_ID, VAULT_PASSWORD = "wpcloud", "slices-vault-password-for-tests-only"
SOURCE = "source.example"


def vaulted(text):
    """A vaulted value as AWX's inventory script carries it (JSON: {"__ansible_vault": ciphertext})."""
    from ansible.parsing.vault import VaultLib, VaultSecret  # pylint: disable=import-outside-toplevel
    lib = VaultLib([(VAULT_ID, VaultSecret(VAULT_PASSWORD.encode()))])
    return {"__ansible_vault": lib.encrypt(text, vault_id=VAULT_ID).decode()}


def slice_job(base, number, inventory, emu, src, job_id):
    """The private data directory the controller writes for one slice's job."""
    pdd = base / ("slice%d" % number)
    for sub in ("inventory", "env"):
        (pdd / sub).mkdir(parents=True, exist_ok=True)
    job_project(pdd)
    write_script(pdd, inventory)
    ca_file = pdd / "env" / "wpcloud_ca.pem"                    # the credential type's file injector
    ca_file.write_text(Path(emu.ca_path).read_text())
    envvars = {"WPCLOUD_API_URL": emu.url, "WPCLOUD_API_KEY": emu.api_key, "WPCLOUD_CA_PATH": str(ca_file),
               "ANSIBLE_COLLECTIONS_PATH": str(pdd / "project" / "collections"),
               "ANSIBLE_HOME": str(pdd / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(pdd / "ansible-tmp"),
               "ANSIBLE_CONFIG": str(pdd / "no-ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               "AWX_PRIVATE_DATA_DIR": str(pdd), "PATH": "%s:%s" % (BIN, os.environ.get("PATH", ""))}
    (pdd / "env" / "envvars").write_text(json.dumps(envvars))
    (pdd / "env" / "extravars").write_text(json.dumps({
        "awx_job_id": job_id, "tower_job_id": job_id, "awx_job_launch_type": "workflow",
        "awx_workflow_job_id": 900, "awx_workflow_job_name": "migrate fleet", "awx_job_template_name": "migrate fleet"}))
    # Machine credential: its user with -u, its key in the job's ssh-agent; Vault credential: a prompt.
    (pdd / "env" / "cmdline").write_text("-u %s --vault-id %s@prompt" % (src.user, VAULT_ID))
    (pdd / "env" / "ssh_key").write_text(Path(src.client_key).read_text())
    (pdd / "env" / "passwords").write_text(json.dumps({r"Vault password \(%s\):\s*?$" % VAULT_ID: VAULT_PASSWORD}))
    (pdd / "env" / "settings").write_text(json.dumps({"job_timeout": 600, "suppress_ansible_output": True}))
    return pdd


def merge(env, *extra):
    return subprocess.run([str(BIN / "ansible-playbook"), "wpcloud.hosting.merge_site_migration_reports"] + list(extra),
                          capture_output=True, text=True, env=env, timeout=120, check=False)


def test_a_sliced_job_template_with_the_source_host_in_one_slice(tmp_path, source_host):  # noqa: F811
    src = source_host
    emu = start_emulator(tmp_path / "emulator", executor="ssh" if (EMULATOR_DIR / "executors" / "ssh.py").exists()
                         else "scripted", extra_args=["--accept-delay", "0.3"])
    shared = tmp_path / "persistent"                            # one state and report directory for every slice
    before = Path(src.home, ".ssh", "authorized_keys").read_text()
    try:
        sites, hostvars = {}, {SOURCE: {"ansible_host": "127.0.0.1", "ansible_port": src.port}}
        for i in range(1, SITES + 1):
            site_id = 53000 + i
            emu.add_site(site_id, "slice%02d.example" % i, allow_migration=False)
            host = "site%02d.example" % i
            sites[host] = site_id
            # sites 1-4 (one per slice) with the generated identity, 5-8 with a password from the vault
            hostvars[host] = ({"site_migration_site": str(site_id), "site_migration_auth": "generated"} if i <= SLICES
                              else {"site_migration_site": str(site_id), "site_migration_auth": "password",
                                    "site_migration_remote_pass": vaulted(src.password)})
        groups = {
            "wpcloud_sites": {"children": ["from_source_example"], "vars": {
                "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                "site_migration_confirm_overwrite": True, "site_migration_report_artifact": True,
                "site_migration_poll_interval": 1.0,
                "site_migration_state_dir": str(shared / "state"), "site_migration_report_dir": str(shared / "reports")}},
            # The layout that slices: the source's address and user travel with its sites (group variables
            # are in every slice); Ansible logs in as the remote user itself (the Machine credential).
            "from_source_example": {"hosts": sorted(sites), "vars": {
                "site_migration_source_host": SOURCE, "site_migration_remote_host": "127.0.0.1",
                "site_migration_remote_port": src.port, "site_migration_remote_user": src.user,
                "site_migration_install_become": False}},
            "wpcloud_sources": {"hosts": [SOURCE], "vars": {
                "ansible_python_interpreter": "/usr/bin/python3",
                "ansible_ssh_common_args": "-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes" % src.known_hosts}},
        }
        inventories = [awx_slice(hostvars, groups, {}, k, SLICES) for k in range(1, SLICES + 1)]
        holding = [k for k, inv in enumerate(inventories, 1) if SOURCE in inv["_meta"]["hostvars"]]
        assert holding == [1] and [sorted(inv["_meta"]["hostvars"]) for inv in inventories][1] == [
            "site02.example", "site06.example"]
        jobs = [slice_job(tmp_path, k, inv, emu, src, 4700 + k) for k, inv in enumerate(inventories, 1)]
        started = time.monotonic()
        runs = [subprocess.Popen([str(BIN / "ansible-runner"), "run", str(pdd), "-p", "migrate_site.yml",
                                  "--ident", "job"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                for pdd in jobs]
        errors = [proc.communicate(timeout=600)[1] for proc in runs]
        elapsed = time.monotonic() - started
        log = emu.requests_log()
        keys = {}
        for host, site_id in sites.items():
            if hostvars[host]["site_migration_auth"] == "generated":
                migration = json.loads((shared / "state" / ("%s.json" % site_id)).read_text())["migration_id"]
                keys[host] = emu.api("migration/get/%s" % migration)[1]["data"]["ssh-id-pub"]
    finally:
        emu.stop()
    authorized = Path(src.home, ".ssh", "authorized_keys").read_text()
    for public in keys.values():
        src.unauthorize_key(public)
    assert Path(src.home, ".ssh", "authorized_keys").read_text() == before

    for k, (proc, pdd) in enumerate(zip(runs, jobs), 1):
        stdout = (pdd / "artifacts" / "job" / "stdout").read_text()
        assert (pdd / "artifacts" / "job" / "status").read_text() == "successful" and proc.returncode == 0, (
            "slice %d: %s%s" % (k, errors[k - 1].decode()[-2000:], stdout[-4000:]))
        for secret in (src.password, emu.api_key, VAULT_PASSWORD):
            assert secret not in stdout

    # every site migrated exactly once, whichever slice had it; each generated identity is on the source
    per_site = {}
    for entry in log:
        if entry["write"] and entry["status"] == 200 and entry["endpoint"] in ("site.allow_migration", "migration.create"):
            key = (entry["endpoint"], entry["path"].rstrip("/").split("/")[-1])
            per_site[key] = per_site.get(key, 0) + 1
    assert sorted(per_site.values()) == [1] * 2 * SITES and len(per_site) == 2 * SITES, per_site
    assert sorted(keys) == ["site%02d.example" % i for i in range(1, SLICES + 1)]
    for public in keys.values():
        assert public in authorized

    # one report per slice in the shared directory, named by its job: none lost, each with its own sites
    reports = sorted((shared / "reports").glob("site-migration-*.json"))
    assert sorted(p.name.rsplit("-", 1)[1] for p in reports) == ["job%d.json" % (4700 + k) for k in range(1, 5)]
    for report_file in reports:
        report = json.loads(report_file.read_text())
        number = int(report_file.name.rsplit("job", 1)[1].split(".")[0]) - 4700
        assert sorted(s["host"] for s in report["sites"]) == sorted(inventories[number - 1]["from_source_example"]["hosts"])
        assert report["counts"] == {"succeeded": 2}, report
        assert sorted(s["auth"] for s in report["sites"]) == ["generated", "password"]
        assert [s["key_installed"] for s in report["sites"] if s["auth"] == "generated"] == [True]

    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(collection_tree(tmp_path)),
               PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    proc = merge(env, "-e", json.dumps({"wpcloud_report_dir": str(shared / "reports"),
                                        "wpcloud_merged_report_file": str(tmp_path / "fleet.json")}))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    fleet = json.loads((tmp_path / "fleet.json").read_text())
    assert fleet["sites_total"] == SITES and fleet["counts"] == {"succeeded": SITES}
    assert [s["host"] for s in fleet["sites"]] == sorted(sites) and len(fleet["merged_from"]) == SLICES

    # The same from the slices' set_stats artifacts, as a workflow node after the sliced job gets them
    # (the controller merges them into one dict: names that collided would lose a slice).
    artifacts = {}
    for pdd in jobs:
        events = [json.loads(p.read_text()) for p in (pdd / "artifacts" / "job" / "job_events").glob("*.json")]
        stats = [e for e in events if e.get("event") == "playbook_on_stats"][-1]["event_data"]
        artifacts.update(stats.get("artifact_data") or {})
    assert sorted(artifacts) == ["site_migration_slice_report_" + p.name.replace("-", "_").replace(".", "_") for p in reports]
    extra = tmp_path / "artifacts.json"
    extra.write_text(json.dumps(dict(artifacts, wpcloud_merged_report_file=str(tmp_path / "fleet2.json"))))
    proc = merge(env, "-e", "@%s" % extra)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert json.loads((tmp_path / "fleet2.json").read_text())["counts"] == {"succeeded": SITES}

    # Two reports that overlap are refused by name, never merged into a fleet report that counts a site twice.
    proc = merge(env, "-e", json.dumps({"wpcloud_report_files": [str(reports[0]), str(reports[0])],
                                        "wpcloud_merged_report_file": str(tmp_path / "bad.json")}))
    assert proc.returncode != 0 and "is in reports 1 and 2" in proc.stdout + proc.stderr
    assert not (tmp_path / "bad.json").exists()
    print("%d slices x %d sites (source host in slice 1 only): %.1f s wall" % (SLICES, SITES // SLICES, elapsed))


def test_keys_that_slices_add_at_once_to_one_authorized_keys_are_all_kept(tmp_path):
    """The slices of a sliced job are separate jobs: sites that share a source user add their generated keys
    to one authorized_keys at the same time. The role's task appends (never reads and replaces), so 40
    writers at once keep all 40 lines, a key already there is not added twice, and check mode only looks."""
    import yaml  # pylint: disable=import-outside-toplevel
    tasks = yaml.safe_load((collection_tree(tmp_path) / "ansible_collections" / "wpcloud" / "hosting" / "roles"
                            / "site_migration" / "tasks" / "install_keys.yml").read_text())
    task = next(t for t in tasks if t["name"] == "Add the generated public keys to authorized_keys")
    script = tmp_path / "add_key.sh"
    script.write_text(task["ansible.builtin.shell"])
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA existing-without-newline")

    def add(key, check="false"):
        env = dict(os.environ, SITE_MIGRATION_KEY=key, SITE_MIGRATION_USER=str(os.getuid()),
                   SITE_MIGRATION_CHECK=check)
        return subprocess.Popen(["sh", str(script)], cwd=str(home), env=env, stdout=subprocess.PIPE, text=True)

    writers = [add("ssh-ed25519 AAAA slice-key-%02d" % i) for i in range(40)]
    assert sorted(proc.communicate(timeout=60)[0].strip() for proc in writers) == ["added"] * 40
    lines = (home / ".ssh" / "authorized_keys").read_text().splitlines()
    assert sorted(lines) == sorted(["ssh-ed25519 AAAA existing-without-newline"]
                                   + ["ssh-ed25519 AAAA slice-key-%02d" % i for i in range(40)])
    assert oct((home / ".ssh" / "authorized_keys").stat().st_mode & 0o777) == "0o600"
    assert add("ssh-ed25519 AAAA slice-key-07").communicate(timeout=60)[0].strip() == "present"
    assert add("ssh-ed25519 AAAA new", check="true").communicate(timeout=60)[0].strip() == "would add"
    assert len((home / ".ssh" / "authorized_keys").read_text().splitlines()) == 41
