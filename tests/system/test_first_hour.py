"""The first hour of a new user (issue 25): the documented create-then-migrate workflow previewed with
--check and run for real, quiet successful runs and re-runs, the play recap of every site.

Real ansible-playbook (and ansible-runner) processes against the emulator; assertions read the
emulator's request log, the role's JSON report and the play's output.
"""

import json
import secrets
import shutil
import subprocess

import pytest

from test_role import BIN, Run, _explain, _ids, _recap, _writes, collections_root  # noqa: F401 pylint: disable=unused-import

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


@pytest.fixture
def run(tmp_path, collections_root):  # noqa: F811 pylint: disable=redefined-outer-name
    return Run(tmp_path / "run", collections_root)


def _since(emu):
    log = emu.requests_log()
    return log[-1]["seq"] if log else 0


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
    since = _since(emu)
    proc = run.play(str(playbook), extra=["--check"])
    assert proc.returncode == 0, _explain(proc)
    assert _writes(emu.requests_log(since)) == []
    report, by_host = run.last_report()
    assert {s["result"] for s in by_host.values()} == {"checked"}, by_host
    assert all("an earlier task would create site" in s["message"] for s in by_host.values()), by_host
    _quiet(proc)

    # For real: created by the first play, migrated by the role.
    since = _since(emu)
    proc = run.play(str(playbook))
    assert proc.returncode == 0, _explain(proc)
    report, by_host = run.last_report()
    assert report["counts"] == {"succeeded": 3}, report
    log = emu.requests_log(since)
    assert len(_writes(log, "site.create")) == 3 and len(_writes(log, "migration.ready")) == 3
    _quiet(proc)

    # Again, leaving the finished migrations alone: nothing written, nothing changed, no warning.
    for extra in (["-e", "site_migration_refresh=false"], ["-e", "site_migration_refresh=false", "--check"], ["--check"]):
        since = _since(emu)
        proc = run.play(str(playbook), extra=extra)
        assert proc.returncode == 0, _explain(proc)
        assert _writes(emu.requests_log(since)) == [], extra
        recap = _recap(proc.stdout)
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
    recap = _recap(proc.stdout)
    assert set(recap) == set(sites) and all(recap[h]["changed"] >= 1 and recap[h]["failed"] == 0 for h in sites), \
        recap
    assert PASSWORD not in proc.stdout + proc.stderr

    # A normal re-run with the same vaulted password (it replaces the sites again): quiet.
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    _quiet(proc)
    assert "Check the migrations' inputs" in proc.stdout
    check_task = proc.stdout.split("Check the migrations' inputs")[1].split("TASK [")[0]
    assert "changed:" not in check_task and "ok:" in check_task, check_task

    # A re-run that leaves the finished migrations alone: nothing written, changed=0 everywhere, every site "ok".
    since = _since(emu)
    proc = run.play(extra=["-e", "site_migration_refresh=false", "--diff"])
    assert proc.returncode == 0, _explain(proc)
    _quiet(proc)
    assert _writes(emu.requests_log(since)) == []
    recap = _recap(proc.stdout)
    assert set(recap) == set(sites) and all(recap[h]["changed"] == 0 and recap[h]["ok"] >= 1 for h in sites), recap
    assert '"sites_total"' not in proc.stdout

    # A changed password that the re-run cannot send (update_secret on_create) is still said, once.
    proc = run.play(extra=["-e", "site_migration_remote_pass=another-Pass-9"])
    assert proc.returncode == 0, _explain(proc)
    assert proc.stdout.count("remote_pass is not the password last sent") + \
        proc.stderr.count("remote_pass is not the password last sent") >= 1, _explain(proc)
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
