"""The site_migration role in a user's own play (issue 38), through real ansible-playbook runs against the emulator:
the play's module_defaults reach the role, with one precedence between the wpcloud_* variables, module_defaults and
the WPCLOUD_* environment; --check --diff and --diff show each site's change once, without a credential, in the
default callback and in ansible-runner's (AWX's) output; a misspelt variable warns once, a clean run not at all;
strategy free is refused before any write (and migrate_site keeps linear under ANSIBLE_STRATEGY=free); a plain play
over the sites inventory's hosts, with Ansible's default fact gathering, runs on the controller.

The parts that need no API call (what the role reads of the play, its refusals) run on ansible-core 2.16 too."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from playbooks import play_recap
from test_role import BIN, Run, _explain, _writes, collections_root, run  # noqa: F401 pylint: disable=unused-import

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "in-a-play-Pass-8134"
GROUP = "group/wpcloud.hosting.all"
DEAD_URL = "https://127.0.0.1:9"            # nothing listens there: a connection refused, at once
CORE_216 = ROOT / ".venv-2.16" / "bin"
HAS_216 = (CORE_216 / "ansible-playbook").exists()


def _warnings(proc):
    """The warnings of a run (Ansible writes them to stderr), each on one line."""
    return [w.strip() for w in " ".join(proc.stderr.split()).split("[WARNING]: ")[1:]]


def _quiet(proc):
    text = proc.stdout + proc.stderr
    assert "[WARNING]" not in text and "[DEPRECATION WARNING]" not in text, _explain(proc)


def fleet(run, emu, count=2, site_vars=None, api_vars=False):
    """``count`` existing sites that do not allow a migration yet, the source by host and user (no key install),
    password authentication; the connection only as ``api_vars`` says (the wpcloud_* variables)."""
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                  "run": {"outcome": "success", "duration": 1}}})
    sites = {}
    for i in range(count):
        site_id = 39001 + i
        emu.add_site(site_id, "play%d-%d.example" % (i, site_id), allow_migration=False)
        sites["play%d.example" % i] = {"site_migration_site": str(site_id)}
    common = {"site_migration_remote_host": "src.example", "site_migration_remote_user": "www",
              "site_migration_install_key": False, "site_migration_auth": "password",
              "site_migration_remote_pass": PASSWORD}
    common.update(site_vars or {})
    run.inventory(emu, sites, None, site_vars=common, api_vars=api_vars)
    return sites


def play(run, defaults=None, **keywords):
    """A playbook of the user's own: the role over the sites, with these module_defaults and play keywords."""
    entry = {"name": "Migrate the sites", "hosts": "wpcloud_sites", "gather_facts": False}
    entry.update(keywords)
    if defaults:
        entry["module_defaults"] = defaults
    entry["roles"] = [{"role": "wpcloud.hosting.site_migration"}]
    path = run.dir / "play.yml"
    path.write_text(yaml.safe_dump([entry], sort_keys=False))
    return str(path)


def connection(emu, **more):
    return dict({"api_url": emu.url, "api_key": emu.api_key, "ca_path": emu.ca_path}, **more)


def run_216(run, playbook, extra=(), env=None):
    argv = [str(CORE_216 / "ansible-playbook"), "-i", str(run.dir / "inventory.json"), playbook] + list(extra)
    return subprocess.run(argv, capture_output=True, text=True, env=run.env(env), check=False, cwd=str(run.dir),
                          timeout=300)


# --------------------------------------------------------------------------- 1. the connection

def test_the_plays_module_defaults_alone_migrate(run, emu):
    """No wpcloud_* variable, no WPCLOUD_* environment: the play's module_defaults for the group, as
    docs/getting-started.md shows them for modules (on 8da537a: "wpcloud_api_key is required")."""
    sites = fleet(run, emu)
    since = emu.last_seq()
    proc = run.play(play(run, {GROUP: connection(emu)}))
    assert proc.returncode == 0, _explain(proc)
    report, by_host = run.last_report()
    assert report["counts"] == {"succeeded": 2}, report
    assert len(_writes(emu.requests_log(since), "migration.ready")) == 2
    _quiet(proc)
    assert set(play_recap(proc.stdout)) == set(sites)


@pytest.mark.parametrize("case", ["variables over module_defaults", "module_defaults over the environment",
                                  "a module's own module_defaults over its group's", "the environment alone"])
def test_one_precedence_between_the_variables_module_defaults_and_the_environment(run, emu, case):
    """Each case gives the working connection to the source that must win and a dead one (a port nobody listens on,
    a wrong key) to the one below it: the run succeeds only when the role takes the winner."""
    dead = {"api_url": DEAD_URL, "api_key": "a-wrong-key-0123456789", "ca_path": emu.ca_path}
    env, defaults = {}, None
    if case == "variables over module_defaults":
        fleet(run, emu, api_vars=True)
        defaults = {GROUP: dead}
    elif case == "module_defaults over the environment":
        fleet(run, emu)
        defaults = {GROUP: connection(emu)}
        env = {"WPCLOUD_API_URL": DEAD_URL, "WPCLOUD_API_KEY": "a-wrong-key-0123456789"}
    elif case == "a module's own module_defaults over its group's":
        fleet(run, emu)
        defaults = {GROUP: dead}
        defaults.update(("wpcloud.hosting.%s" % m, connection(emu)) for m in (
            "site_info", "site", "migration_info", "migration", "site_allow_migration", "site_migration_setup",
            "migration_preflight", "migration_ready"))
    else:
        fleet(run, emu)
        env = {"WPCLOUD_API_URL": emu.url, "WPCLOUD_API_KEY": emu.api_key, "WPCLOUD_CA_PATH": emu.ca_path}
    proc = run.play(play(run, defaults), env=env)
    assert proc.returncode == 0, _explain(proc)
    assert run.last_report()[0]["counts"] == {"succeeded": 2}
    _quiet(proc)
    assert emu.api_key not in proc.stdout + proc.stderr and PASSWORD not in proc.stdout + proc.stderr


def test_module_defaults_for_one_module_only_are_refused_before_any_call(run, emu):
    """The setup would call the default address while the play names another for one module: never silently."""
    sites = fleet(run, emu)
    since = emu.last_seq()
    proc = run.play(play(run, {GROUP: {"api_key": emu.api_key, "ca_path": emu.ca_path},
                               "wpcloud.hosting.migration": {"api_url": emu.url}}))
    assert proc.returncode != 0
    assert emu.requests_log(since) == []                      # not one call, to either address
    report, by_host = run.last_report()
    for host in sites:
        message = by_host[host]["message"]
        assert "the modules this role calls would get different api_url values" in message, message
        assert "set api_url once for the play, in module_defaults for group/wpcloud.hosting.all, or set " \
               "wpcloud_api_url" in message
    assert emu.api_key not in proc.stdout + proc.stderr


def test_without_a_key_the_message_names_every_way_that_works_for_the_role(run, emu):
    fleet(run, emu)
    proc = run.play(play(run, {GROUP: {"api_url": emu.url, "ca_path": emu.ca_path}}))
    assert proc.returncode != 0
    text = " ".join(proc.stdout.split())
    assert "the API key is not set: set wpcloud_api_key (a vaulted variable of the play or of its sites), or api_key " \
           "in the play's module_defaults for group/wpcloud.hosting.all, or the WPCLOUD_API_KEY environment variable" \
           in text, _explain(proc)


# --------------------------------------------------------------------------- 2. --diff

def _site_diffs(stdout):
    """{header: diff text} of the diff blocks the default callback printed ("--- before: X" ... "+++ after: X")."""
    found = {}
    for block in stdout.split("--- before: ")[1:]:
        header = block.split("\n", 1)[0]
        found.setdefault(header, []).append(block.split("\n\n", 1)[0])
    return found


def test_check_diff_and_diff_show_each_sites_change_once_without_the_password(run, emu):
    """On 8da537a the role's preview said "check mode: preflight would be started" and showed no diff (the
    setup's result, hidden for its credentials, took the diffs with it)."""
    sites = fleet(run, emu, count=3, api_vars=True)
    ids = dict((host, values["site_migration_site"]) for host, values in sites.items())
    proc = run.play(play(run))
    assert proc.returncode == 0, _explain(proc)

    for extra in (["--check", "--diff"], ["--diff"]):
        since = emu.last_seq()
        proc = run.play(play(run), extra=extra + ["-e", "site_migration_remote_user=deploy"])
        assert proc.returncode == 0, _explain(proc)
        diffs = _site_diffs(proc.stdout)
        assert sorted(diffs) == sorted("site %s (host %s)" % (ids[h], h) for h in sites), proc.stdout
        for header, blocks in diffs.items():
            assert len(blocks) == 1, (header, blocks)                   # once per site
            assert '-        "remote-user": "www"' in blocks[0] and '+        "remote-user": "deploy"' in blocks[0]
        assert PASSWORD not in proc.stdout + proc.stderr
        assert (_writes(emu.requests_log(since)) == []) == ("--check" in extra)
        _quiet(proc)
    # Nothing left to change: no diff.
    proc = run.play(play(run), extra=["--check", "--diff", "-e", "site_migration_remote_user=deploy"])
    assert proc.returncode == 0 and _site_diffs(proc.stdout) == {}, _explain(proc)


def test_the_diff_reads_the_same_in_ansible_runners_output(run, emu, tmp_path):
    """AWX's job output is ansible-runner's stdout (its awx_display callback) and its events."""
    ansible_runner = pytest.importorskip("ansible_runner")
    sites = fleet(run, emu, count=2, api_vars=True)
    pdd = tmp_path / "pdd"
    (pdd / "inventory").mkdir(parents=True)
    (pdd / "env").mkdir()
    (pdd / "project").mkdir()
    (pdd / "inventory" / "hosts.json").write_text((run.dir / "inventory.json").read_text())
    (pdd / "project" / "play.yml").write_text(Path(play(run)).read_text())
    env = run.env()
    (pdd / "env" / "envvars").write_text(json.dumps({k: env[k] for k in (
        "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_NOCOLOR", "ANSIBLE_LOCAL_TEMP", "ANSIBLE_CONFIG", "PATH")}))
    result = ansible_runner.run(private_data_dir=str(pdd), playbook="play.yml", quiet=True, cmdline="--check --diff")
    assert result.status == "successful", result.stdout.read()
    stdout = result.stdout.read()
    diffs = _site_diffs(stdout)
    assert sorted(diffs) == sorted("site %s (host %s)" % (v["site_migration_site"], h) for h, v in sites.items())
    assert all(len(blocks) == 1 and '"remote-user": "www"' in blocks[0] for blocks in diffs.values()), stdout
    setup = [e for e in result.events if e["event"] == "runner_on_ok"
             and e["event_data"].get("task", "").startswith("Check every site's inputs")]
    assert len(setup) == 1 and len(setup[0]["event_data"]["res"]["diff"]) == 2
    assert PASSWORD not in stdout and PASSWORD not in json.dumps(list(result.events))


# --------------------------------------------------------------------------- 3. misspelt variables

def test_a_misspelt_variable_warns_once_and_a_clean_run_is_quiet(run, emu):
    """On 8da537a: no word; the role failed on the variable meant ("site_migration_confirm_overwrite must be
    true") or took its default."""
    fleet(run, emu, count=3, api_vars=True)
    misspelt = {"site_migration_confirm_overwite": True, "wpcloud_api_ur": emu.url}
    proc = run.play(play(run), extra=["--check", "-e", json.dumps(misspelt)])
    assert proc.returncode == 0, _explain(proc)
    warnings = _warnings(proc)
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("site_migration_confirm_overwite (set for play0.example, play1.example, "
                                  "play2.example) is not a variable of the role wpcloud.hosting.site_migration and is "
                                  "ignored: did you mean site_migration_confirm_overwrite?"), warnings
    assert warnings[1].startswith("wpcloud_api_ur (set for ") and "did you mean wpcloud_api_url?" in warnings[1]
    # Every variable the role knows, set: not a word.
    proc = run.play(play(run), extra=["--check", "-e", json.dumps({
        "wpcloud_timeout": 30, "wpcloud_rate_limit": 0, "wpcloud_validate_certs": True,
        "site_migration_update_secret": "on_create", "site_migration_refresh": True,
        "site_migration_report_artifact": False})])
    assert proc.returncode == 0, _explain(proc)
    _quiet(proc)


# --------------------------------------------------------------------------- 4. strategy

def test_strategy_free_writes_nothing_and_says_what_to_use(run, emu):
    """On 8da537a every site ran the whole fleet's setup at once: sites and migrations created, allowed and updated
    once per site, racing each other."""
    sites = fleet(run, emu, count=3, api_vars=True)
    since = emu.last_seq()
    proc = run.play(play(run, strategy="free"))
    assert proc.returncode != 0
    assert _writes(emu.requests_log(since)) == []
    text = " ".join(proc.stdout.split())
    # The first refusal of the run_once setup marks every host of the play failed (Ansible's rule for run_once); under
    # free, a site still before the setup task then never runs it (nor says why), so its recap may say failed=0: none
    # goes on. How many sites reach the task first depends on timing (3 of 3 alone, 2 of 3 on a loaded machine).
    assert text.count("the play runs with strategy free, under which run_once does not hold") >= 1
    assert "Run the role in a play with 'strategy: linear'" in text and "wpcloud.hosting.migrate_site" in text
    recap = play_recap(proc.stdout)
    assert any(recap[h]["failed"] == 1 for h in sites) and all(recap[h]["changed"] == 0 for h in sites), recap


def test_migrate_site_under_ansible_strategy_free_migrates_each_site_once(run, emu):
    sites = fleet(run, emu, count=3, api_vars=True)
    since = emu.last_seq()
    proc = run.play(env={"ANSIBLE_STRATEGY": "free"})
    assert proc.returncode == 0, _explain(proc)
    log = emu.requests_log(since)
    assert len(_writes(log, "migration.create")) == len(sites) and len(_writes(log, "migration.ready")) == len(sites)
    assert len(_writes(log, "site.allow_migration")) == len(sites)
    assert run.last_report()[0]["counts"] == {"succeeded": 3}
    _quiet(proc)


# --------------------------------------------------------------------------- 5. the sites inventory

def test_a_plain_play_over_the_sites_inventory_gathers_facts_on_the_controller(run, emu):
    """Ansible's default fact gathering over the wpcloud.hosting.sites inventory's hosts (on 8da537a: UNREACHABLE,
    "ssh: Could not resolve hostname")."""
    (run.dir / "sites.wpcloud.yml").write_text(yaml.safe_dump({
        "plugin": "wpcloud.hosting.sites", "client": emu.client, "api_url": emu.url, "ca_path": emu.ca_path}))
    (run.dir / "facts.yml").write_text(yaml.safe_dump([{
        "name": "A plain play", "hosts": "wpcloud_account_sites",
        "tasks": [{"name": "Show where it ran", "ansible.builtin.debug": {"var": "ansible_facts.python.executable"}}]}]))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "sites.wpcloud.yml", "facts.yml"], capture_output=True,
                          text=True, env=run.env({"WPCLOUD_API_KEY": emu.api_key}), cwd=str(run.dir), check=False,
                          timeout=300)
    assert proc.returncode == 0, _explain(proc)
    recap = play_recap(proc.stdout)
    assert {"dest1.example", "dest2.example", "dest3.example"} <= set(recap), recap
    assert all(r["unreachable"] == 0 and r["failed"] == 0 and r["ok"] == 2 for r in recap.values()), recap
    assert sys.executable in proc.stdout
    _quiet(proc)


# --------------------------------------------------------------------------- 6. on ansible-core 2.16

@pytest.mark.skipif(not HAS_216, reason=".venv-2.16 not on this machine (ansible-core 2.16 needs Python <= 3.12)")
def test_on_2_16_the_role_reads_the_plays_module_defaults_and_strategy(run, emu):
    """2.16 gives module_defaults to a task in its executor (already templated, omit as a placeholder): the role
    reads them the same; its refusals need no API call (and this venv has no requests)."""
    sites = fleet(run, emu)
    since = emu.last_seq()
    proc = run_216(run, play(run, {GROUP: {"api_url": emu.url + "/api/v1.0", "api_key": emu.api_key,
                                           "ca_path": "{{ nothing_here | default(omit) }}"}}),
                   extra=["-e", json.dumps({"site_migration_remote_usr": "www"})])
    assert proc.returncode != 0
    text = " ".join(proc.stdout.split())
    assert "api_url of the play's module_defaults for group/wpcloud.hosting.all ends in /api/v1.0" in text, \
        _explain(proc)
    assert "did you mean site_migration_remote_user?" in text or \
        "did you mean site_migration_remote_user?" in " ".join(proc.stderr.split())
    proc = run_216(run, play(run, {GROUP: connection(emu)}, strategy="free"))
    assert proc.returncode != 0
    # as on 2.21 (test_strategy_free_writes_nothing_and_says_what_to_use): the first refusal of the run_once setup
    # marks every host failed, so a site still before that task never says why (a loaded machine: 1 of 2 said it)
    assert " ".join(proc.stdout.split()).count("the play runs with strategy free") >= 1, _explain(proc)
    recap = play_recap(proc.stdout)
    assert any(recap[h]["failed"] == 1 for h in sites) and all(recap[h]["changed"] == 0 for h in sites), recap
    assert emu.requests_log(since) == []
