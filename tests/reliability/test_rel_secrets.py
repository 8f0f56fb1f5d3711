"""1. Secrets never leak.

Every module (action plugin and classic module), the site_migration role, the configure_webhooks
playbook, the webhook event source and the webhook_verify filter run through success and failure
paths at -vvvv with distinct canary secrets, with faults injected so that the error paths run too.
Everything they leave behind is scanned for every canary in raw, JSON-escaped, URL-encoded, hex and
base64 forms, and for every line of the private keys: stdout/stderr, ANSIBLE_LOG_PATH, the JSON
callback, the role's reports and state files, the emulator's request log and log file, the event
source's log, spool and marks, ansible-rulebook's output.

Not scanned (they hold the secrets by design): the input vars files (tests/reliability writes them
under inputs/), the emulator's persisted state (emulator-state.json: the service's own credential
store) and the emulator's handshake line (emulator.stdout, which carries its API key).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys

import pytest

import reliability_support as rs
from playbook_texts import SECRETS_MODULES

_site_ids = iter(range(61001, 62000))


def _site(emu, allow=True):
    site_id = next(_site_ids)
    emu.add_site(site_id, "leak%d.example" % site_id, allow_migration=allow)
    return site_id


def _canary_vars(canaries):
    return {"canary_api_key": canaries.api_key, "canary_remote_pass": canaries.remote_pass,
            "canary_ssh_id_pass": canaries.ssh_id_pass, "canary_webhook_hmac_key": canaries.webhook_hmac_key,
            "canary_ssh_id": canaries.ssh_id, "canary_ssh_id_protected": canaries.ssh_id_protected,
            "canary_ssh_id_pem": canaries.ssh_id_pem}


def _assert_clean(paths, canaries, what, finding=False):
    hits, files, size = rs.scan(paths, canaries)
    rs.record_scan(hits, files, size, finding=finding)
    if finding:
        rs.FINDING_DIRS.extend(str(p) for p in paths)
    assert files > 0
    assert hits == [], "%s: secret occurrences found:\n%s" % (what, rs.describe_hits(hits))
    return files, size


# ------------------------------------------------------------------------------------------ modules

def test_modules_success_and_failure_paths_leak_nothing(emu, canaries, rel_dir):
    out = rel_dir / "out" / "secrets-modules"
    out.mkdir(parents=True)
    inputs = rel_dir / "inputs" / "secrets-modules.json"
    inputs.write_text(json.dumps(_canary_vars(canaries)))
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 0.2},
                                  "run": {"outcome": "success", "duration": 0.3}},
                      "hosts": {"authfail.example": {"preflight": {"outcome": "auth_failed", "duration": 0.2}}}})
    sites = {name: _site(emu, allow=(name != "pw")) for name in
             ("pw", "key", "kp", "pem", "fail", "new1", "new2", "mod", "chg", "chgkey")}
    variables = {"rel_api_url": emu.url, "rel_emulator_url": emu.url, "rel_ca_path": emu.ca_path,
                 "rel_client": emu.client, "rel_state_dir": str(out / "state"),
                 "rel_sites_allow": [str(sites["pw"])]}
    variables.update({"rel_site_%s" % k: str(v) for k, v in sites.items()})
    inventory = rs.localhost_inventory(rel_dir)
    playbook = rel_dir / "secrets_modules.yml"
    playbook.write_text(SECRETS_MODULES)
    run = rs.run_playbook(rel_dir, out, "modules", playbook, inventory,
                          args=["-e", json.dumps(variables), "-e", "@%s" % inputs, "--diff"],
                          env={"ANSIBLE_INJECT_INVOCATION": "true"})
    assert run.proc.returncode == 0, run.explain()
    rs.dump_request_log(emu, out, "modules")

    # the failure paths really failed, the success paths really succeeded
    results = {r["task"]["name"]: r for r in run.results() if not r["event"].startswith("item")}
    failed = sorted(n for n, r in results.items() if r["event"] == "failed_ignored")
    expected_failures = sorted(n for n in results if "FAIL" in n)
    assert failed == expected_failures, (failed, expected_failures)
    assert results["FAIL: preflight of the failing source"]["result"]["diagnosis"]["code"] == "auth_failed"
    unknown = results["FAIL: update answered 503 (effect unknown)"]["result"]
    assert unknown["failure"]["effect"] == "unknown" and "not repeated" in unknown["msg"]
    # Writes whose answer was lost are resolved by a read within the task (module_utils/runtime/uncertain_writes.py).
    lost = results["RESOLVED: create whose answer is lost (reset after), read back"]["result"]
    assert lost["uncertain"][0]["outcome"] == "happened" and lost["operation"] == "create"
    again = results["RESOLVED: ready answered 504, read and sent again"]["result"]
    assert again["uncertain"][0]["outcome"] == "repeated"
    assert results["Re-run finds it (read after the 429 is retried)"]["result"]["operation"] == "none"
    assert "MODULE: create with a protected key" in results
    # A credential known to differ (issue 40): on_create refused it naming the option; when_changed sent it.
    for kind, field in (("password", "remote-pass"), ("key", "ssh-id")):
        refused = results["FAIL: %s with update_secret on_create (known to differ)" % (
            "the corrected password" if kind == "password" else "a replaced key")]["result"]
        assert "update_secret is on_create" in refused["msg"], refused
        sent = results["The %s, sent as known to differ (when_changed), diff" % (
            "corrected password" if kind == "password" else "replaced key")]["result"]
        assert sent["updated_fields"] == [field], sent
    warned = results["The same password without a state file (nothing to compare with, warned)"]["result"]
    assert warned["credentials_not_sent"] == ["remote_pass"] and warned["warnings"], warned
    _assert_clean([out, emu.workdir], canaries, "modules")


MISSPELLED_FINDING = (
    "FINDING: a secret passed under a misspelled option name (remote_password instead of remote_pass) is "
    "echoed in clear in the task result's invocation.module_args, so it shows at -vvv, in ANSIBLE_LOG_PATH "
    "and in JSON callbacks whenever invocation is injected (ANSIBLE_INJECT_INVOCATION=true; always on "
    "ansible-core 2.16). plugins/plugin_utils/_controller_action.py run(): outcome['invocation'] = "
    "{'module_args': params} also when validation failed with unsupported parameters; the module path "
    "(_execute_module) hands the raw args to AnsibleModule, which does the same.")


@pytest.mark.parametrize("execution", ["controller", "module"])
def test_misspelled_secret_option_is_not_echoed(emu, canaries, rel_dir, execution):
    out = rel_dir / "out" / ("secrets-misspelled-%s" % execution)
    out.mkdir(parents=True)
    inputs = rel_dir / "inputs" / "misspelled.json"
    inputs.write_text(json.dumps(_canary_vars(canaries)))
    playbook = rel_dir / "misspelled.yml"
    playbook.write_text("""
- hosts: localhost
  gather_facts: false
  tasks:
    - name: "FAIL: the password in an unknown option"
      wpcloud.hosting.migration:
        api_url: "{{ rel_api_url }}"
        api_key: "{{ canary_api_key }}"
        ca_path: "{{ rel_ca_path }}"
        site: "1002"
        remote_host: src.example
        remote_user: wp
        remote_password: "{{ canary_remote_pass }}"
      ignore_errors: true
""")
    run = rs.run_playbook(rel_dir, out, "misspelled", playbook, rs.localhost_inventory(rel_dir),
                          args=["-e", json.dumps({"rel_api_url": emu.url, "rel_ca_path": emu.ca_path,
                                                  "wpcloud_hosting_execution": execution}), "-e", "@%s" % inputs],
                          env={"ANSIBLE_INJECT_INVOCATION": "true"})
    assert run.proc.returncode == 0, run.explain()
    assert "Unsupported parameters" in run.output and "remote_password" in run.output
    _assert_clean([out], canaries, "misspelled option (%s)" % execution, finding=True)


# ------------------------------------------------------------------------------------------ role

def _role_inventory(rel_dir, emu, sites, auth_vars, name):
    common = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
              "site_migration_confirm_overwrite": True, "site_migration_source_host": "src.example",
              "site_migration_state_dir": str(rel_dir / "out" / name / "state"),
              "site_migration_report_dir": str(rel_dir / "out" / name / "reports"),
              "site_migration_poll_interval": 1.0}
    common.update(auth_vars)
    inventory = {"all": {"vars": {"wpcloud_api_url": emu.url, "wpcloud_ca_path": emu.ca_path},
                         "children": {"wpcloud_sources": {"hosts": {"src.example": {"ansible_user": "wp"}}},
                                      "wpcloud_sites": {"vars": common, "hosts": sites}}}}
    path = rel_dir / ("%s-inventory.json" % name)
    path.write_text(json.dumps(inventory))
    return path


def _vault_password(rel_dir):
    path = rel_dir / "inputs" / "vault-password"
    if not path.exists():
        path.write_text("reliability-suite-vault-password\n")
        path.chmod(0o600)
    return path


def test_role_with_faults_leaks_nothing(emu, canaries, rel_dir):
    """The role for seven sites in one play, password, key (protected) and generated identities: some
    succeed, one fails preflight (auth), one fails the run, two lose their create answer and are
    converged by a second run; one destination does not exist and is created by the role with an admin
    password. Credentials come from a vaulted vars file. Every run with --diff, the last in check mode with the
    credentials sent again (each site's diff says "credentials replaced"): the sites' diffs hold none."""
    name = "secrets-role"
    out = rel_dir / "out" / name
    out.mkdir(parents=True)
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 0.2},
                                  "run": {"outcome": "success", "duration": 0.3}},
                      "hosts": {"authfail.example": {"preflight": {"outcome": "auth_failed", "duration": 0.2}},
                                "runfail.example": {"run": {"outcome": "failure", "duration": 0.2}}}})
    password = {"site_migration_auth": "password", "site_migration_remote_pass": "{{ canary_remote_pass }}"}
    key = {"site_migration_auth": "key", "site_migration_ssh_id": "{{ canary_ssh_id_protected }}",
           "site_migration_ssh_id_pass": "{{ canary_ssh_id_pass }}"}
    pem = {"site_migration_auth": "key", "site_migration_ssh_id": "{{ canary_ssh_id_pem }}"}
    generated = {"site_migration_auth": "generated", "site_migration_install_key": False}
    hosts = {}
    for label, remote, auth in (("ok-pw", "src.example", password), ("pfail-pw", "authfail.example", password),
                                ("lost-pw", "src.example", password), ("ok-key", "src.example", key),
                                ("rfail-key", "runfail.example", key), ("lost-pem", "src.example", pem),
                                ("ok-gen", "src.example", generated)):
        hosts["%s.example" % label] = dict(auth, site_migration_site=str(_site(emu, allow=False)),
                                           site_migration_remote_host=remote)
    hosts["new-pw-%s.example" % name] = dict(
        password, site_migration_remote_host="src.example", site_migration_client=emu.client,
        site_migration_admin_user="admin", site_migration_admin_email="admin@example.com",
        site_migration_admin_pass="{{ canary_remote_pass }}")
    vault = rs.write_vault(rel_dir / "inputs" / ("%s.vault.yml" % name),
                           dict(_canary_vars(canaries), wpcloud_api_key=canaries.api_key),
                           _vault_password(rel_dir), rel_dir)
    inventory = _role_inventory(rel_dir, emu, hosts, {}, name)
    emu.set_faults([{"endpoint": "migration.create", "reset": "after", "count": 2},
                    {"endpoint": "site.allow_migration", "status": 429, "retry_after": 1, "count": 2},
                    {"endpoint": "ticket.summary", "status": 503, "count": 3},
                    {"endpoint": "ticket.full", "reset": "before", "count": 1},
                    {"endpoint": "migration.get", "latency": 0.2, "count": 3}])
    args = ["--vault-password-file", str(_vault_password(rel_dir)), "-e", "@%s" % vault, "-f", "8", "--diff"]
    first = rs.run_playbook(rel_dir, out, "run1", "wpcloud.hosting.migrate_site", inventory, args=args)
    emu.set_faults([])
    second = rs.run_playbook(rel_dir, out, "run2", "wpcloud.hosting.migrate_site", inventory, args=args)
    rs.dump_request_log(emu, out, "role")
    assert first.proc.returncode != 0 and second.proc.returncode != 0, second.explain()
    report = json.loads(sorted((out / "reports").glob("*.json"), key=os.path.getmtime)[-1].read_text())
    results = {s["host"]: s["result"] for s in report["sites"]}
    for host in ("ok-pw", "lost-pw", "ok-key", "lost-pem", "ok-gen", "new-pw-%s" % name):
        assert results["%s.example" % host] == "succeeded", (host, report)
    assert results["pfail-pw.example"] != "succeeded" and results["rfail-key.example"] != "succeeded"
    assert len(rs.writes(emu.requests_log(), "migration.create")) == 8
    assert len(rs.writes(emu.requests_log(), "site.create")) == 1
    assert len(list((out / "state").glob("*.json"))) == 8
    preview = rs.run_playbook(rel_dir, out, "run3", "wpcloud.hosting.migrate_site", inventory,
                              args=args + ["--check", "-e", "site_migration_update_secret=always"])
    assert "--- before: site " in first.proc.stdout and "(credentials replaced)" in preview.proc.stdout, \
        preview.explain()
    _assert_clean([out, emu.workdir], canaries, name)


SITES_PLAY = r"""
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: "{{ rel_api_url }}"
      api_key: "{{ canary_api_key }}"
      ca_path: "{{ rel_ca_path }}"
  tasks:
    - name: Create a site with an admin password
      wpcloud.hosting.site:
        client: "{{ rel_client }}"
        domain: leak-new.example
        admin_user: leakadmin
        admin_email: admin@leak-new.example
        admin_pass: "{{ canary_remote_pass }}"
      register: created
    - name: The same task again (the password given, not sent)
      wpcloud.hosting.site:
        client: "{{ rel_client }}"
        domain: leak-new.example
        admin_user: leakadmin
        admin_email: admin@leak-new.example
        admin_pass: "{{ canary_remote_pass }}"
    - name: Read it, and every site of the account
      wpcloud.hosting.site_info:
        site: leak-new.example
      register: one
    - name: List the account
      wpcloud.hosting.site_info:
        client: "{{ rel_client }}"
    - name: "FAIL: a refused create with the password"
      wpcloud.hosting.site:
        client: "{{ rel_client }}"
        domain: leak-bad.example
        admin_user: leak admin
        admin_email: admin@leak-bad.example
        admin_pass: "{{ canary_remote_pass }}"
      ignore_errors: true
    - name: Delete it in check mode
      wpcloud.hosting.site:
        client: "{{ rel_client }}"
        domain: leak-new.example
        state: absent
        confirm_delete: true
      check_mode: true
    - name: Keep the site ID for the test
      ansible.builtin.copy:
        content: "{{ one.site_id }}"
        dest: "{{ rel_out }}/site_id.txt"
        mode: "0600"
"""


def test_site_modules_leak_neither_the_admin_password_nor_the_sites_credentials(emu, canaries, rel_dir):
    """site (admin_pass) and site_info (the service's record holds db_pass, smtp_pass, site_api_key) at
    -vvvv with --diff: nothing in any output."""
    out = rel_dir / "out" / "secrets-sites"
    out.mkdir(parents=True)
    inputs = rel_dir / "inputs" / "secrets-sites.json"
    inputs.write_text(json.dumps(_canary_vars(canaries)))
    playbook = rel_dir / "secrets_sites.yml"
    playbook.write_text(SITES_PLAY)
    variables = {"rel_api_url": emu.url, "rel_ca_path": emu.ca_path, "rel_client": emu.client, "rel_out": str(out)}
    run = rs.run_playbook(rel_dir, out, "sites", playbook, rs.localhost_inventory(rel_dir),
                          args=["-e", json.dumps(variables), "-e", "@%s" % inputs, "--diff"])
    assert run.proc.returncode == 0, run.explain()
    failed = sorted(r["task"]["name"] for r in run.results() if r["event"] == "failed_ignored")
    assert failed == ["FAIL: a refused create with the password"], failed
    status, body = emu.api("get-site/%s" % (out / "site_id.txt").read_text().strip())   # as the service returns it
    assert status == 200, body
    credentials = [str(body["data"][k]) for k in ("db_pass", "smtp_pass", "site_api_key") if body["data"].get(k)]
    assert len(credentials) == 3, sorted(body["data"])
    for path in rs.iter_files([out]):
        text = path.read_bytes()
        assert not [c for c in credentials if c.encode() in text], path
    _assert_clean([out, emu.workdir], canaries, "site modules")


GOLIVE_PLAY = r"""
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: "{{ rel_api_url }}"
      api_key: "{{ canary_api_key }}"
      ca_path: "{{ rel_ca_path }}"
  tasks:
    - name: Preview the DNS records
      wpcloud.hosting.site_domain_info: {client: "{{ rel_client }}", site: "{{ rel_site }}", domains: [leak-live.example, hosted-elsewhere.example]}
    - name: Cut over in check mode
      wpcloud.hosting.site_domain: &cutover
        client: "{{ rel_client }}"
        site: "{{ rel_site }}"
        domain: leak-live.example
        keep_old_domain: true
        aliases: [www.leak-live.example]
        poll_interval: 1
      check_mode: true
    - name: "RESOLVED: cut over, the alias add's answer lost and the switch answered 503"
      wpcloud.hosting.site_domain: *cutover
      register: cutover
    - name: "FAIL: a domain held elsewhere"
      wpcloud.hosting.site_domain: {client: "{{ rel_client }}", site: "{{ rel_site }}", aliases: [hosted-elsewhere.example]}
      ignore_errors: true
    - name: "FAIL: a URL for a domain"
      wpcloud.hosting.site_domain: {client: "{{ rel_client }}", site: "{{ rel_site }}", domain: "https://leak-live.example/"}
      ignore_errors: true
    - name: "RESOLVED: back up, the files backup answered 503"
      wpcloud.hosting.site_backup: {client: "{{ rel_client }}", site: "{{ rel_site }}", poll_interval: 1}
      register: backup
    - name: "FAIL: a restore without confirmation"
      wpcloud.hosting.site_backup:
        client: "{{ rel_client }}"
        site: "{{ rel_site }}"
        state: restored
        backup_ids: "{{ backup.backup_ids }}"
      ignore_errors: true
    - name: Restore, diff
      wpcloud.hosting.site_backup:
        client: "{{ rel_client }}"
        site: "{{ rel_site }}"
        state: restored
        backup_ids: "{{ backup.backup_ids }}"
        confirm_overwrite: true
        poll_interval: 1
      diff: true
    - name: Read the backups as a classic module process
      wpcloud.hosting.site_backup: {client: "{{ rel_client }}", site: "{{ rel_site }}", state: listed}
      vars:
        wpcloud_hosting_execution: module
    - name: Read the domains as a classic module process
      wpcloud.hosting.site_domain_info: {client: "{{ rel_client }}", site: "{{ rel_site }}"}
      vars:
        wpcloud_hosting_execution: module
    - name: "FAIL: a refused key, as a classic module process"
      wpcloud.hosting.site_domain: {client: "{{ rel_client }}", site: "{{ rel_site }}", aliases: [x.leak-live.example], api_key: "wrong-{{ canary_api_key }}"}
      vars:
        wpcloud_hosting_execution: module
      ignore_errors: true
    - name: Delete the backups
      wpcloud.hosting.site_backup: {client: "{{ rel_client }}", site: "{{ rel_site }}", state: absent}
"""


def test_going_live_modules_leak_nothing(emu, canaries, rel_dir):
    """site_domain, site_domain_info and site_backup (issue 37) at -vvvv with --diff, through success, failure and
    resolved-write paths, in the controller and as classic module processes: neither the API key nor the site's
    credentials (get-site returns them; the modules read the site) appear anywhere."""
    out = rel_dir / "out" / "secrets-golive"
    out.mkdir(parents=True)
    inputs = rel_dir / "inputs" / "secrets-golive.json"
    inputs.write_text(json.dumps(_canary_vars(canaries)))
    site = _site(emu)
    emu.set_provisioning({"default": {"domain": {"queued": 0.1, "duration": 0.3},
                                      "restore": {"queued": 0.1, "duration": 0.3}}})
    emu.set_backups({"create": {"acknowledged": 0.05, "duration": 0.3}, "list_lag": 0.3})
    emu.set_faults([{"endpoint": "site.alias_add", "reset": "after", "count": 1},
                    {"endpoint": "site.update_domain", "status": 503, "count": 1},
                    {"endpoint": "backup.create", "status": 503, "count": 1}])
    playbook = rel_dir / "secrets_golive.yml"
    playbook.write_text(GOLIVE_PLAY)
    variables = {"rel_api_url": emu.url, "rel_ca_path": emu.ca_path, "rel_client": emu.client, "rel_site": str(site)}
    run = rs.run_playbook(rel_dir, out, "golive", playbook, rs.localhost_inventory(rel_dir),
                          args=["-e", json.dumps(variables), "-e", "@%s" % inputs, "--diff"],
                          env={"ANSIBLE_INJECT_INVOCATION": "true"})
    assert run.proc.returncode == 0, run.explain()
    rs.dump_request_log(emu, out, "golive")
    results = {r["task"]["name"]: r for r in run.results() if not r["event"].startswith("item")}
    failed = sorted(n for n, r in results.items() if r["event"] == "failed_ignored")
    assert failed == sorted(n for n in results if "FAIL" in n), failed
    cutover = results["RESOLVED: cut over, the alias add's answer lost and the switch answered 503"]["result"]
    assert [u["outcome"] for u in cutover["uncertain"]] == ["happened", "repeated"]
    assert results["RESOLVED: back up, the files backup answered 503"]["result"]["uncertain"][0]["write"] == \
        "backup.create"
    status, body = emu.api("get-site/%d" % site)        # the site's credentials, as the service returns them
    credentials = [str(body["data"][k]) for k in ("db_pass", "smtp_pass", "site_api_key") if body["data"].get(k)]
    assert status == 200 and len(credentials) == 3
    for path in rs.iter_files([out]):
        text = path.read_bytes()
        assert not [c for c in credentials if c.encode() in text], path
    _assert_clean([out, emu.workdir], canaries, "going-live modules")


def test_configure_webhooks_playbook_with_faults_leaks_nothing(emu, canaries, rel_dir):
    out = rel_dir / "out" / "secrets-configure-webhooks"
    out.mkdir(parents=True)
    vault = rs.write_vault(rel_dir / "inputs" / "webhooks.vault.yml",
                           {"wpcloud_webhook_hmac_key": canaries.webhook_hmac_key, "wpcloud_api_key": canaries.api_key},
                           _vault_password(rel_dir), rel_dir)
    inventory = rs.localhost_inventory(rel_dir)
    base = ["--vault-password-file", str(_vault_password(rel_dir)), "-e", "@%s" % vault,
            "-e", json.dumps({"wpcloud_api_url": emu.url, "wpcloud_ca_path": emu.ca_path, "wpcloud_client": emu.client,
                              "wpcloud_webhook_url": "https://hooks.example.com/wp"})]
    # One lost answer is resolved by a read within the task; a write that keeps failing fails the play.
    emu.set_faults([{"endpoint": "client_meta.add", "status": 500, "count": 1}])
    resolved = rs.run_playbook(rel_dir, out, "resolved", "wpcloud.hosting.configure_webhooks", inventory, args=base)
    assert resolved.proc.returncode == 0, resolved.explain()
    emu.set_faults([{"endpoint": "client_meta.update", "status": 500}])
    broken = rs.run_playbook(rel_dir, out, "faulted", "wpcloud.hosting.configure_webhooks", inventory,
                             args=base + ["-e", "wpcloud_webhook_update_secret=always"])
    assert broken.proc.returncode != 0
    emu.set_faults([])
    for index, extra in enumerate((["-e", "wpcloud_webhook_update_secret=always", "--diff"], ["--check", "--diff"],
                                   ["-e", "wpcloud_webhooks_state=absent"])):
        run = rs.run_playbook(rel_dir, out, "run%d" % index, "wpcloud.hosting.configure_webhooks", inventory,
                              args=base + extra)
        assert run.proc.returncode == 0, run.explain()
    rs.dump_request_log(emu, out, "configure-webhooks")
    _assert_clean([out, emu.workdir], canaries, "configure_webhooks")


# ------------------------------------------------------------------------------------------ webhooks

def test_event_source_and_filter_leak_nothing(canaries, rel_dir):
    """The event source in-process at DEBUG (its receiver child logs to a captured stderr) with
    valid, forged and replayed deliveries; then the filter in a playbook at -vvvv with the key."""
    import webhook_harness as wh
    out = rel_dir / "out" / "secrets-webhook"
    out.mkdir(parents=True)
    tls = wh.tls(rel_dir / "inputs" / "tls-secrets")
    log_path = out / "source.log"
    handler = logging.FileHandler(log_path)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        port = wh.free_port()
        args = wh.source_args(out / "spool", tls, port, canaries.webhook_hmac_key + ", old-" + canaries.api_key)
        with wh.Source(args, stderr_path=out / "receiver.stderr") as source:
            url = "https://127.0.0.1:%d/wpcloud" % port
            good = wh.signed(canaries.webhook_hmac_key, "site_provisioned", 7001)
            statuses = [wh.post(url, good, tls["ca"])[0], wh.post(url, good, tls["ca"])[0]]
            statuses.append(wh.post(url, wh.signed("wrong-" + canaries.webhook_hmac_key, "site_provisioned", 7002),
                                    tls["ca"])[0])
            statuses.append(wh.post(url, good.replace(b'"atomic_site_id":7001', b'"atomic_site_id":7003'),
                                    tls["ca"])[0])
            statuses.append(wh.post(url, b"{not json " + canaries.webhook_hmac_key.encode(), tls["ca"])[0])
            statuses.append(wh.post(url, good, tls["ca"], headers={
                "Authorization": "Bearer " + canaries.api_key, "X-Api-Key": canaries.api_key})[0])
            rs.wait_for(lambda: len(source.events) >= 1, 10, what="the valid event")
            (out / "events.json").write_text(json.dumps(source.events, default=str))
            (out / "healthz.json").write_text(json.dumps(wh.get_json("https://127.0.0.1:%d/healthz" % port,
                                                                     tls["ca"])))
        assert statuses == [200, 200, 401, 409, 400, 200], statuses
    finally:
        root.removeHandler(handler)
        handler.close()
        root.setLevel(old_level)
    assert (out / "spool" / "spool.log").exists()

    # the filter, in a real playbook, at -vvvv, with the keys in a vars file
    body = wh.signed(canaries.webhook_hmac_key, "malware-scanner-results", 7004, in_data=True).decode()
    inputs = rel_dir / "inputs" / "filter-vars.json"
    inputs.write_text(json.dumps({"raw_body": body, "keys": ["old-" + canaries.api_key, canaries.webhook_hmac_key],
                                  "replay_file": str(out / "replay.tsv")}))
    playbook = rel_dir / "filter.yml"
    playbook.write_text("""
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        check: "{{ raw_body | wpcloud.hosting.webhook_verify(keys) }}"
        bad: "{{ raw_body | wpcloud.hosting.webhook_verify(keys[0]) }}"
    - ansible.builtin.set_fact:
        first: "{{ raw_body | wpcloud.hosting.webhook_verify(keys, replay_file=replay_file) }}"
    - ansible.builtin.set_fact:
        again: "{{ raw_body | wpcloud.hosting.webhook_verify(keys, replay_file=replay_file) }}"
    - ansible.builtin.debug:
        var: check
    - ansible.builtin.assert:
        that: [check.valid, check.key_index == 1, first.valid, not again.valid, again.reason == 'replayed',
               bad.reason == 'mismatch']
    - name: "FAIL: no key"
      ansible.builtin.debug:
        msg: "{{ raw_body | wpcloud.hosting.webhook_verify([]) }}"
      ignore_errors: true
    - name: "FAIL: a key that is not a string list"
      ansible.builtin.debug:
        msg: "{{ 12345 | wpcloud.hosting.webhook_verify(keys) }}"
      ignore_errors: true
""")
    run = rs.run_playbook(rel_dir, out, "filter", playbook, rs.localhost_inventory(rel_dir),
                          args=["-e", "@%s" % inputs])
    assert run.proc.returncode == 0, run.explain()
    _assert_clean([out], canaries, "webhook source and filter")


def test_rulebook_with_the_key_in_the_environment_leaks_nothing(canaries, rel_dir):
    """ansible-rulebook -vv running the collection's rulebook: its output and the source's files."""
    import webhook_harness as wh
    if not (rs.BIN / "ansible-rulebook").exists() or not shutil.which("java"):
        pytest.skip("ansible-rulebook and a JDK are needed")
    out = rel_dir / "out" / "secrets-rulebook"
    out.mkdir(parents=True)
    tls = wh.tls(rel_dir / "inputs" / "tls-rulebook")
    port = wh.free_port()
    result = wh.run_rulebook(out, tls, port, canaries.webhook_hmac_key, rs.ansible_env(rel_dir, out, "rulebook"),
                             headers={"X-Api-Key": canaries.api_key})
    assert result["statuses"] == [200, 401, 409, 200], result
    _assert_clean([out], canaries, "ansible-rulebook")
