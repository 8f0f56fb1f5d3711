"""AWX / Automation Controller job slicing, the way the controller runs it: a sliced job template over a
fleet's inventory becomes K jobs, each an ansible-runner run of the same playbook (migrate_site) over its
slice of the hosts (host i in slice i mod K), each in its own private data directory, at the same time,
against one account (here one emulator). Every site is migrated exactly once, no slice reads or writes
another's state or report, and the merge playbook (wpcloud.hosting.merge_site_migration_reports) makes
one fleet report from the slices' report files, and from their set_stats artifacts as a workflow node
would receive them. The benchmark at 200 sites is tests/benchmarks/fleet/slices.py."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from launcher import start_emulator
from playbooks import job_project

pytest.importorskip("ansible_runner")

BIN = Path(sys.executable).parent
SLICES, SITES = 4, 20


def slice_job(base, k, hosts, emu):
    """The private data directory of slice k (as the controller writes it) with its part of the inventory."""
    pdd = base / ("slice%d" % k)
    for sub in ("inventory", "env"):
        (pdd / sub).mkdir(parents=True, exist_ok=True)
    job_project(pdd)
    inventory = {"all": {"children": {
        "wpcloud_sources": {"hosts": {"src.example": {"ansible_user": "www"}}},
        "wpcloud_sites": {"vars": {"ansible_connection": "local",
                                   "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                                   "site_migration_source_host": "src.example", "site_migration_install_key": False,
                                   "site_migration_confirm_overwrite": True, "site_migration_report_artifact": True},
                          "hosts": dict((h, {"site_migration_site": str(site_id)}) for h, site_id in hosts)}}}}
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    envvars = {"WPCLOUD_API_URL": emu.url, "WPCLOUD_API_KEY": emu.api_key, "WPCLOUD_CA_PATH": emu.ca_path,
               "ANSIBLE_COLLECTIONS_PATH": str(pdd / "project" / "collections"),
               "ANSIBLE_HOME": str(pdd / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(pdd / "ansible-tmp"),
               "ANSIBLE_CONFIG": str(pdd / "no-ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               "PATH": "%s:%s" % (BIN, os.environ.get("PATH", ""))}
    (pdd / "env" / "envvars").write_text(yaml.safe_dump(envvars))
    (pdd / "env" / "settings").write_text(yaml.safe_dump({"job_timeout": 600, "suppress_ansible_output": True}))
    return pdd


@pytest.fixture(autouse=True)
def _venv_on_path(monkeypatch):
    monkeypatch.setenv("PATH", "%s:%s" % (BIN, os.environ.get("PATH", "")))


def test_sliced_job_migrates_every_site_once_and_the_reports_merge(tmp_path):
    emu = start_emulator(tmp_path / "emulator", executor="scripted", extra_args=["--accept-delay", "0.3"])
    try:
        emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                      "run": {"outcome": "success", "duration": 1}}})
        hosts = []
        for i in range(SITES):
            site_id = 52000 + i
            emu.add_site(site_id, "slice%02d.example" % i, allow_migration=False)
            hosts.append(("dest%02d.example" % i, site_id))
        slices = [hosts[k::SLICES] for k in range(SLICES)]          # as the controller slices an inventory
        jobs = [slice_job(tmp_path, k, part, emu) for k, part in enumerate(slices)]
        started = time.monotonic()
        # One ansible-runner process per slice, all at once (the controller runs slices on execution nodes).
        runs = [subprocess.Popen([str(BIN / "ansible-runner"), "run", str(pdd), "-p", "migrate_site.yml",
                                  "--ident", "slice%d" % k], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                for k, pdd in enumerate(jobs)]
        errors = [proc.communicate(timeout=600)[1] for proc in runs]
        elapsed = time.monotonic() - started
        log = emu.requests_log()
    finally:
        emu.stop()
    for k, (proc, pdd) in enumerate(zip(runs, jobs)):
        artifacts = pdd / "artifacts" / ("slice%d" % k)
        assert (artifacts / "status").read_text() == "successful" and proc.returncode == 0, (
            errors[k].decode()[-2000:] + (artifacts / "stdout").read_text()[-4000:])

    # every site migrated exactly once, whichever slice had it
    for endpoint in ("site.allow_migration", "migration.create", "migration.preflight", "migration.ready"):
        per_site = {}
        for entry in log:
            if entry["endpoint"] == endpoint and entry["status"] == 200:
                site = entry["path"].rstrip("/").split("/")[-1]
                per_site[site] = per_site.get(site, 0) + 1
        if endpoint.startswith("migration.p") or endpoint == "migration.ready":
            assert sum(per_site.values()) == SITES, (endpoint, per_site)
        else:
            assert per_site == dict((str(site_id), 1) for dummy, site_id in hosts), (endpoint, per_site)

    # each slice kept its own state and report: only its own sites, nothing of another slice
    reports = []
    for k, (part, pdd) in enumerate(zip(slices, jobs)):
        state = sorted(p.name for p in (pdd / "inventory" / "wpcloud-state").glob("*.json"))
        assert state == sorted("%s.json" % site_id for dummy, site_id in part)
        files = list((pdd / "inventory" / "wpcloud-reports").glob("site-migration-*.json"))
        assert len(files) == 1
        report = json.loads(files[0].read_text())
        assert sorted(s["host"] for s in report["sites"]) == sorted(h for h, dummy in part)
        assert report["counts"] == {"succeeded": len(part)}
        reports.append(files[0])

    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(jobs[0] / "project" / "collections"),
               PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    merged_file = tmp_path / "fleet.json"
    proc = subprocess.run([str(BIN / "ansible-playbook"), "wpcloud.hosting.merge_site_migration_reports", "-e",
                           json.dumps({"wpcloud_report_files": [str(p) for p in reports],
                                       "wpcloud_merged_report_file": str(merged_file)})],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    fleet = json.loads(merged_file.read_text())
    assert fleet["sites_total"] == SITES and fleet["counts"] == {"succeeded": SITES}
    assert [s["host"] for s in fleet["sites"]] == sorted(h for h, dummy in hosts)
    assert len(fleet["merged_from"]) == SLICES

    # The same from the slices' set_stats artifacts, as a workflow node after the sliced job gets them.
    artifacts = {}
    for k, pdd in enumerate(jobs):
        events = [json.loads(p.read_text()) for p in (pdd / "artifacts" / ("slice%d" % k) / "job_events").glob("*.json")]
        stats = [e for e in events if e.get("event") == "playbook_on_stats"][-1]["event_data"]
        artifacts.update(stats.get("artifact_data") or {})
    assert len(artifacts) == SLICES and all(k.startswith("site_migration_slice_report_") for k in artifacts)
    extra = tmp_path / "artifacts.json"
    extra.write_text(json.dumps(dict(artifacts, wpcloud_merged_report_file=str(tmp_path / "fleet2.json"))))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "wpcloud.hosting.merge_site_migration_reports",
                           "-e", "@%s" % extra], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert json.loads((tmp_path / "fleet2.json").read_text())["counts"] == {"succeeded": SITES}

    # Two slices that overlap are refused by name, never merged into a fleet report that counts a site twice.
    proc = subprocess.run([str(BIN / "ansible-playbook"), "wpcloud.hosting.merge_site_migration_reports", "-e",
                           json.dumps({"wpcloud_report_files": [str(reports[0]), str(reports[0])],
                                       "wpcloud_merged_report_file": str(tmp_path / "bad.json")})],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode != 0 and "is in reports 1 and 2" in proc.stdout + proc.stderr
    assert not (tmp_path / "bad.json").exists()
    print("%d slices x %d sites: %.1f s wall" % (SLICES, SITES // SLICES, elapsed))
