"""The first hour of a new user (issue 25): the documented create-then-migrate workflow previewed with
--check and run for real, quiet successful runs and re-runs, the play recap of every site.

Real ansible-playbook (and ansible-runner) processes against the emulator; assertions read the
emulator's request log, the role's JSON report and the play's output.
"""

import json
import re
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from playbooks import play_recap
from test_role import BIN, Run, _explain, _ids, _writes, collections_root, run  # noqa: F401 pylint: disable=unused-import

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "quiet-rerun-Pass-%s" % secrets.token_hex(4)

CREATE_THEN_MIGRATE = """
- name: Create the destination sites
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Create the destinations (a re-run creates nothing)
      wpcloud.hosting.site:
        api_url: "{{ wpcloud_api_url }}"
        api_key: "{{ wpcloud_api_key }}"
        ca_path: "{{ wpcloud_ca_path }}"
        client: "{{ wpcloud_client }}"
        admin_user: webadmin
        admin_email: ops@example.com
        sites:
%s

- name: Migrate them
  hosts: wpcloud_sites
  gather_facts: false
  roles:
    - role: wpcloud.hosting.site_migration
"""


def _quiet(proc):
    """The play printed no warning (stdout and stderr)."""
    text = proc.stdout + proc.stderr
    assert "[WARNING]" not in text, _explain(proc)
    assert "[DEPRECATION WARNING]" not in text, _explain(proc)


def test_create_then_migrate_previews_with_check_then_runs_then_changes_nothing(run, emu):
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                  "run": {"outcome": "success", "duration": 1}}})
    tag = secrets.token_hex(3)
    sites = {"new%d-%s.example" % (i, tag): {} for i in range(3)}
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    inventory = json.loads((run.dir / "inventory.json").read_text())
    inventory["all"]["vars"]["wpcloud_client"] = emu.client
    (run.dir / "inventory.json").write_text(json.dumps(inventory))
    playbook = run.dir / "create-then-migrate.yml"
    playbook.write_text(CREATE_THEN_MIGRATE % "\n".join("          - domain: " + site for site in sites))

    # The preview: every site "checked", nothing written, no warning.
    since = emu.last_seq()
    proc = run.play(str(playbook), extra=["--check"])
    assert proc.returncode == 0, _explain(proc)
    assert _writes(emu.requests_log(since)) == []
    report, by_host = run.last_report()
    assert {s["result"] for s in by_host.values()} == {"checked"}, by_host
    assert all("an earlier task would create site" in s["message"] for s in by_host.values()), by_host
    _quiet(proc)

    # For real: created by the first play, migrated by the role.
    since = emu.last_seq()
    proc = run.play(str(playbook))
    assert proc.returncode == 0, _explain(proc)
    report, by_host = run.last_report()
    assert report["counts"] == {"succeeded": 3}, report
    log = emu.requests_log(since)
    assert len(_writes(log, "site.create")) == 3 and len(_writes(log, "migration.ready")) == 3
    _quiet(proc)

    # Again, leaving the finished migrations alone: nothing written, nothing changed, no warning.
    for extra in (["-e", "site_migration_refresh=false"], ["-e", "site_migration_refresh=false", "--check"], ["--check"]):
        since = emu.last_seq()
        proc = run.play(str(playbook), extra=extra)
        assert proc.returncode == 0, _explain(proc)
        assert _writes(emu.requests_log(since)) == [], extra
        recap = play_recap(proc.stdout)
        if "--check" not in extra or "-e" in extra:
            assert all(counts["changed"] == 0 for counts in recap.values()), (extra, _explain(proc))
        _quiet(proc)


def _password_fleet(run, emu, count=3, failing=None):
    """Existing sites, password authentication with the password in a vaulted group_vars file."""
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                  "run": {"outcome": "success", "duration": 1}}})
    sites = {}
    for i in range(count):
        site_id = next(_ids)
        emu.add_site(site_id, "quiet%d-%d.example" % (i, site_id), allow_migration=False)
        sites["quiet%d.example" % i] = {"site_migration_site": str(site_id)}
    if failing:
        sites[failing] = {"site_migration_site": "999999"}       # no such site: stopped with a 404
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_auth": "password"})
    (run.dir / "group_vars").mkdir()
    vaulted = run.dir / "group_vars" / "wpcloud_sites.yml"
    vaulted.write_text(json.dumps({"site_migration_remote_pass": PASSWORD}))
    subprocess.run([str(BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(run.vault_file),
                    str(vaulted)], check=True, capture_output=True, env=run.env())
    return sites


def test_a_successful_run_and_its_reruns_are_quiet_and_recap_every_site(run, emu):
    sites = _password_fleet(run, emu)

    # The first run (with --diff): no warning, no JSON report in the diff, every site "changed" in the recap.
    proc = run.play(extra=["--diff"])
    assert proc.returncode == 0, _explain(proc)
    _quiet(proc)
    assert '"sites_total"' not in proc.stdout, "the JSON report is printed as a diff"
    recap = play_recap(proc.stdout)
    assert set(recap) == set(sites) and all(recap[h]["changed"] >= 1 and recap[h]["failed"] == 0 for h in sites), \
        recap
    assert PASSWORD not in proc.stdout + proc.stderr

    # A normal re-run with the same vaulted password (it replaces the sites again): quiet.
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    _quiet(proc)
    # The inputs' check ran (the setup's line for it) and counts as no change: the setup, which writes nothing
    # new before the preflights of a re-run, says "ok".
    assert "Check the migrations' inputs before anything is written" in proc.stdout
    setup_task = proc.stdout.split("Check every site's inputs, then allow and create or update the migrations")[1]
    setup_task = setup_task.split("TASK [")[0]
    assert "changed:" not in setup_task and "ok:" in setup_task, setup_task

    # A re-run that leaves the finished migrations alone: nothing written, changed=0 everywhere, every site "ok".
    since = emu.last_seq()
    proc = run.play(extra=["-e", "site_migration_refresh=false", "--diff"])
    assert proc.returncode == 0, _explain(proc)
    _quiet(proc)
    assert _writes(emu.requests_log(since)) == []
    recap = play_recap(proc.stdout)
    assert set(recap) == set(sites) and all(recap[h]["changed"] == 0 and recap[h]["ok"] >= 1 for h in sites), recap
    assert '"sites_total"' not in proc.stdout

    # A changed password is sent, one update per site before its preflight (site_migration_update_secret
    # when_changed, the default; issue 40), quietly.
    since = emu.last_seq()
    proc = run.play(extra=["-e", "site_migration_remote_pass=another-Pass-9"])
    assert proc.returncode == 0, _explain(proc)
    _quiet(proc)
    updates = _writes(emu.requests_log(since), "migration.update")
    assert len(updates) == len(sites) and all(e["params"] == ["remote-pass"] for e in updates), updates
    assert "another-Pass-9" not in proc.stdout + proc.stderr


def test_the_runner_host_summary_lists_every_site_with_its_status(run, emu, tmp_path):
    ansible_runner = pytest.importorskip("ansible_runner")
    sites = _password_fleet(run, emu, failing="gone.example")
    pdd = tmp_path / "pdd"
    (pdd / "inventory").mkdir(parents=True)
    (pdd / "env").mkdir()
    (pdd / "inventory" / "hosts.json").write_text((run.dir / "inventory.json").read_text())
    shutil.copytree(run.dir / "group_vars", pdd / "inventory" / "group_vars")
    env = run.env()
    (pdd / "env" / "envvars").write_text(json.dumps({k: env[k] for k in (
        "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_NOCOLOR", "ANSIBLE_LOCAL_TEMP", "ANSIBLE_CONFIG", "PATH")}))

    def job(ident, *extra):
        result = ansible_runner.run(private_data_dir=str(pdd), playbook="wpcloud.hosting.migrate_site", quiet=True,
                                    ident=ident, cmdline=" ".join(["--vault-password-file", str(run.vault_file)]
                                                                  + list(extra)))
        stats = [e for e in result.events if e["event"] == "playbook_on_stats"][-1]["event_data"]
        return result, stats

    good = set(sites) - {"gone.example"}
    result, stats = job("first")
    assert result.status == "failed"                           # gone.example failed; the others did not
    assert set(stats["failures"]) == {"gone.example"}, stats
    assert set(stats["changed"]) == good and set(stats["ok"]) >= good, stats

    result, stats = job("rerun", "-e", "site_migration_refresh=false")
    assert set(stats["failures"]) == {"gone.example"}, stats
    assert set(stats["ok"]) >= good and not set(stats.get("changed") or {}) & good, stats


def _doc_block(path, needle):
    text = (ROOT / path).read_text(encoding="utf-8")
    found = [b for b in text.split("```")[1::2] if needle in b]
    assert len(found) == 1, (path, needle, len(found))
    return found[0].split("\n", 1)[1]


def test_the_inventory_plugin_of_getting_started_lists_the_sites(run, emu):
    """docs/getting-started.md step 6: its inventory file and command, against the emulator."""
    config = _doc_block("docs/getting-started.md", "# sites.wpcloud.yml")
    config = config.replace("https://127.0.0.1:8443", emu.url).replace("/tmp/wpcloud-emulator/ca.pem", emu.ca_path)
    (run.dir / "sites.wpcloud.yml").write_text(config)
    command = _doc_block("docs/getting-started.md", "ansible-inventory -i sites.wpcloud.yml").strip().split()
    proc = subprocess.run([str(BIN / command[0])] + command[1:], capture_output=True, text=True, cwd=str(run.dir),
                          env=run.env({"WPCLOUD_API_KEY": emu.api_key}), check=False, timeout=120)
    assert proc.returncode == 0, _explain(proc)
    destinations = proc.stdout.split("@migration_destinations:")[1].split("@other_sites:")[0]
    assert "dest2.example" in destinations and "dest3.example" in destinations, proc.stdout
    assert "dest1.example" in proc.stdout.split("@other_sites:")[1]
    assert emu.api_key not in proc.stdout + proc.stderr
    # The README's quick start names the same plugin and command.
    readme = _doc_block("README.md", "# sites.wpcloud.yml")
    assert "plugin: wpcloud.hosting.sites" in readme
    assert "ansible-inventory -i sites.wpcloud.yml --graph" in _doc_block("README.md", "ansible-inventory")


def test_an_api_url_with_the_prefix_and_a_wrong_port_say_what_to_fix(run, emu):
    """Issue 25 item 7, through a real ansible-playbook: the 404 hint, and a refused connection that says
    what it retries and gives up after two quick retries."""
    playbook = run.dir / "read.yml"
    playbook.write_text("""
- name: Read a site
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read site 1002
      wpcloud.hosting.site_info:
        site: "1002"
        api_url: "{{ url }}"
        api_key: "{{ key }}"
        ca_path: "{{ ca }}"
""")
    (run.dir / "inventory.json").write_text("{}")
    common = ["-e", json.dumps({"key": emu.api_key, "ca": emu.ca_path})]
    since = emu.last_seq()
    proc = run.play(str(playbook), extra=common + ["-e", "url=%s/api/v1.0" % emu.url])
    assert proc.returncode != 0
    assert "api_url ends in /api/v1.0, which the collection adds itself: give the service's base URL, such as %s." \
        % emu.url in proc.stdout, _explain(proc)
    assert emu.requests_log(since) == []                  # refused before any call

    port = int(emu.url.rsplit(":", 1)[1])
    wrong = emu.url.replace(":%d" % port, ":%d" % (port + 1 if port < 65535 else port - 1))
    proc = run.play(str(playbook), extra=common + ["-e", "url=%s" % wrong])
    assert proc.returncode != 0
    assert proc.stdout.count("retrying site.get: Could not reach") == 2, _explain(proc)
    # quick: the client's own waits (not the run's wall time, which is the machine's load)
    waits = [float(s) for s in re.findall(r"retrying site\.get: Could not reach .*?; retrying in ([0-9.]+)s", proc.stdout)]
    assert "connection refused" in proc.stdout and len(waits) == 2 and sum(waits) < 12, (waits, proc.elapsed)


def test_state_files_of_a_reset_service_recover_when_the_sites_hold_no_migration(run, emu):
    """Issue 25 item 2: the emulator reset (as a restart without a state file does) forgets every migration;
    the state files still name them. The sites hold none, so each recorded ID is forgotten with a warning
    that names its state file, and a new migration is created and run; the next run is quiet again."""
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                  "run": {"outcome": "success", "duration": 1}}})
    sites = {"reset-a.example": {"site_migration_site": "1002"}, "reset-b.example": {"site_migration_site": "1003"}}
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    before = dict((site, run.state(site)["migration_id"]) for site in ("1002", "1003"))

    emu.reset()                                   # the seed sites again, allowed, holding no migration
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                  "run": {"outcome": "success", "duration": 1}}})
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    report, by_host = run.last_report()
    assert report["counts"] == {"succeeded": 2}, report
    text = proc.stdout + proc.stderr
    for site, old in before.items():
        assert "migration_id %s, recorded in the state file %s, was not found (HTTP 404)" % (
            old, run.state_dir / ("%s.json" % site)) in " ".join(text.split()), _explain(proc)
        assert run.state(site)["migration_id"] != old
    assert len(_writes(emu.requests_log(), "migration.create")) == 2

    proc = run.play(extra=["-e", "site_migration_refresh=false"])
    assert proc.returncode == 0, _explain(proc)
    _quiet(proc)
