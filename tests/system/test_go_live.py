"""Going live with the site_migration role, for real (issue 37): the playbooks migrate_site, go_live, cutover and
rollback_site run by ansible-playbook against the emulator.

Three sites are migrated; the destinations then change (a marker in each site's files and database, as edits on a
site would), and the go-live run backs each one up first (the IDs in the report and the state file), refreshes it and
cuts it over (one keeps its old domain as an alias), reporting each certificate; the cutover run again writes nothing;
--check previews the cutover and writes nothing; a migration into a live site is refused without the consent, and
with it runs only after a backup; the rollback restores the copy taken before the refresh (files and database
compared byte for byte) and switches the domain back. The emulator's request log is the proof of what was written.

The scripted executor, not the real SSH source host: what is tested here is what the role does around the run (the
backup, the cutover, the restore), which the scripted run exercises the same way (it overwrites the destination's
files and database, as a real run does); the real SSH copy is tests/system/test_role.py's. The emulator windows are
short (golive_harness.py).
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from file_tree import site_storage
from golive_harness import live  # noqa: F401 pylint: disable=unused-import
from playbooks import BIN, ansible_env, play_recap

SITES = {"a.example": 41001, "b.example": 41002, "c.example": 41003}
PRODUCTION = {"a.example": "shop-a.example", "b.example": "shop-b.example", "c.example": "shop-c.example"}


class GoLive:
    """A work directory with an inventory of the three sites and the collection's playbooks run against it."""

    def __init__(self, base, emu):
        self.base = Path(base)
        self.emu = emu
        self.state_dir = self.base / "state"
        self.report_dir = self.base / "reports"
        self.host_vars = {}

    def inventory(self):
        common = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                  "site_migration_confirm_overwrite": True, "site_migration_install_key": False,
                  "site_migration_remote_host": "src.example", "site_migration_remote_user": "www",
                  "site_migration_client": self.emu.client, "site_migration_backup_before_refresh": True,
                  "site_migration_state_dir": str(self.state_dir), "site_migration_report_dir": str(self.report_dir),
                  "site_migration_backup_timeout": 60, "site_migration_cutover_timeout": 60,
                  "wpcloud_api_url": self.emu.url, "wpcloud_api_key": self.emu.api_key,
                  "wpcloud_ca_path": self.emu.ca_path}
        hosts = {}
        for host in SITES:
            hosts[host] = dict({"site_migration_production_domain": PRODUCTION[host]}, **self.host_vars.get(host, {}))
        hosts["a.example"]["site_migration_keep_old_domain_as_alias"] = True
        path = self.base / "inventory.json"
        path.write_text(json.dumps({"all": {"children": {"wpcloud_sites": {"vars": common, "hosts": hosts}}}}))
        return path

    def play(self, playbook, *args):
        """(returncode, output, report, {host: site report}, writes since the start) of one ansible-playbook run."""
        mark = len(self.emu.requests_log())
        before = set(self.report_dir.glob("*.json")) if self.report_dir.exists() else set()
        started = time.monotonic()
        proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(self.inventory()), playbook] + list(args),
                              capture_output=True, text=True, env=ansible_env(self.base), cwd=str(self.base),
                              timeout=300, check=False)
        output = proc.stdout + proc.stderr
        new = sorted(set(self.report_dir.glob("*.json")) - before)
        assert len(new) == 1, "one report per run:\n" + output[-4000:]
        report = json.loads(new[0].read_text())
        log = self.emu.requests_log()[mark:]
        self.last = {"elapsed": time.monotonic() - started, "log": log}
        return (proc.returncode, output, report, dict((s["host"], s) for s in report["sites"]),
                [(e["endpoint"], e["path"]) for e in log if e["write"]])

    def state(self, host):
        return json.loads((self.state_dir / ("%s.json" % host)).read_text())


def _of_site(writes, site_id, migration_id):
    """The endpoints of the writes to one site (its paths name its ID, or its migration's), in order."""
    names = ("/%s" % site_id, "/%s" % migration_id)
    return [e for e, p in writes if any(("%s/" % n) in p + "/" for n in names)]


def _touch(storage, text):
    """The destination changed after its migration (an edit on the site): a file and a database row."""
    with open(os.path.join(storage, "files", "marker.txt"), "w", encoding="utf-8") as handle:
        handle.write(text)
    with open(os.path.join(storage, "db.sql"), "a", encoding="utf-8") as handle:
        handle.write("INSERT INTO wp_options VALUES ('marker', '%s');\n" % text)


@pytest.fixture
def golive(live, tmp_path):  # noqa: F811 pylint: disable=redefined-outer-name
    live.fresh(webhooks=False)
    emu = live.emu
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 0.2},
                                  "run": {"outcome": "success", "duration": 0.3}}})
    for host, site_id in SITES.items():
        emu.add_site(site_id, host)
    return GoLive(tmp_path, emu)


def test_go_live_from_migration_to_rollback(golive):
    emu = golive.emu

    # -- 1. the first migration: nothing to back up yet, the cutover not confirmed
    rc, output, report, sites, writes = golive.play("wpcloud.hosting.migrate_site")
    assert rc == 0, output[-6000:]
    assert report["counts"] == {"succeeded": 3} and report["backups"] == 0
    assert report["cutovers"] == {"not_confirmed": 3}
    assert [e for e, p in writes if e.startswith(("backup.", "site.update_domain"))] == []

    # -- 2. the destinations change; their copy before the refresh
    before = {}
    for host, site_id in SITES.items():
        storage = emu.site(site_id)["storage"]
        _touch(storage, "edited on %s before the go-live" % host)
        before[host] = site_storage(storage)

    # -- 3. --check previews the backup, the refresh and the cutover, and writes nothing
    rc, output, report, sites, writes = golive.play("wpcloud.hosting.go_live", "--check", "--diff")
    assert rc == 0, output[-6000:]
    assert writes == []
    assert report["counts"] == {"checked": 3} and report["cutovers"] == {"would_switch": 3}
    assert all(s["backup"]["would"] for s in sites.values())
    assert '-    "primary_domain": "a.example"' in output and '+    "primary_domain": "shop-a.example"' in output
    assert '"kept_as_alias": "a.example"' in output
    assert "check mode: would cut over to shop-a.example (a.example kept as an alias)" in output
    assert list(golive.state_dir.glob("*.json")) and not any("cutover" in golive.state(h) for h in SITES)

    # -- 4. go live: a backup first, the refresh, then the cutover
    rc, output, report, sites, writes = golive.play("wpcloud.hosting.go_live", "-e", "site_migration_confirm_cutover=true")
    assert rc == 0, output[-6000:]
    assert report["counts"] == {"succeeded": 3} and report["cutovers"] == {"switched": 3} and report["backups"] == 3
    for host, site_id in SITES.items():
        mine = _of_site(writes, site_id, sites[host]["migration_id"])
        assert mine.index("backup.create") < mine.index("migration.ready") < mine.index("site.update_domain")
        switch = [p for e, p in writes if e == "site.update_domain" and "/%d/" % site_id in p]
        assert len(switch) == 1 and switch[0].endswith("/keep") == (host == "a.example"), switch
        site = sites[host]
        assert len(site["backup"]["backup_ids"]) == 2 and site["backup"]["created"] == site["backup"]["backup_ids"]
        assert golive.state(host)["pre_refresh_backup"]["backup_ids"] == site["backup"]["backup_ids"]
        assert golive.state(host)["pre_refresh_backup"]["refresh"] == "succeeded"
        assert golive.state(host)["cutover"]["domain"] == PRODUCTION[host]
        cutover = site["cutover"]
        assert cutover["state"] == "switched" and cutover["domain"] == PRODUCTION[host]
        assert cutover["domains"][0] == {"domain": PRODUCTION[host], "role": "primary", "ssl": cutover["domains"][0]["ssl"]}
        for domain in cutover["domains"]:
            assert domain["ssl"] in ("issued", "pending", "failed")
        pending = [d["domain"] for d in cutover["domains"] if d["ssl"] != "issued"]
        assert sorted(set(r["name"] for r in cutover["dns_records"])) == sorted(pending)
        assert emu.site(site_id)["domain_name"] == PRODUCTION[host]
        assert site_storage(emu.site(site_id)["storage"]) != before[host]        # the refresh overwrote the edit
    assert sites["a.example"]["cutover"]["old_domain_kept"] is True
    assert emu.site(SITES["a.example"])["aliases"] == ["a.example"] and emu.site(SITES["b.example"])["aliases"] == []
    recap = play_recap(output)
    assert all(recap[h]["changed"] >= 1 and recap[h]["failed"] == 0 for h in SITES)
    assert "cut over to shop-a.example (a.example kept as an alias); SSL of shop-a.example" in output

    # -- 5. DNS arrives; the cutover again writes nothing and reports every certificate issued, quietly
    for domain in list(PRODUCTION.values()) + ["a.example"]:
        emu.set_dns(domain, arrived=True)
    time.sleep(0.6)
    rc, output, report, sites, writes = golive.play("wpcloud.hosting.cutover", "-e", "site_migration_confirm_cutover=true")
    assert rc == 0, output[-6000:]
    assert writes == [] and report["cutovers"] == {"already": 3} and report["counts"] == {"left_alone": 3}
    assert all(d["ssl"] == "issued" for s in sites.values() for d in s["cutover"]["domains"])
    assert all(v["changed"] == 0 for v in play_recap(output).values()) and "[WARNING]" not in output

    # -- 6. the sites are live: refused without the consent; with it (b), a backup before its run
    golive.host_vars["b.example"] = {"site_migration_overwrite_live": "shop-b.example"}
    rc, output, report, sites, writes = golive.play("wpcloud.hosting.go_live", "-e", "site_migration_confirm_cutover=true")
    assert rc != 0
    assert sites["a.example"]["result"] == sites["c.example"]["result"] == "refused_live"
    assert "site_migration_overwrite_live: shop-a.example" in sites["a.example"]["message"]
    assert [w for h in ("a.example", "c.example") for w in _of_site(writes, SITES[h], sites[h]["migration_id"])] == []
    mine = _of_site(writes, SITES["b.example"], sites["b.example"]["migration_id"])
    assert mine.index("backup.create") < mine.index("migration.ready") and "site.update_domain" not in mine
    b = sites["b.example"]
    assert b["result"] == "succeeded" and b["live"] is True and b["backup"]["why"] == "site_migration_overwrite_live"
    assert b["cutover"]["state"] == "already"
    recap = play_recap(output)
    assert recap["a.example"]["failed"] == 1 and recap["b.example"]["failed"] == 0

    # -- 7. a rollback that does not name its sites is refused before any request (no default group)
    mark = len(emu.requests_log())
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(golive.inventory()), "wpcloud.hosting.rollback_site",
                           "-e", "site_migration_confirm_rollback=true"], capture_output=True, text=True,
                          env=ansible_env(golive.base), cwd=str(golive.base), timeout=300, check=False)
    assert proc.returncode != 0 and "wpcloud_rollback_hosts is required" in proc.stdout + proc.stderr
    assert emu.requests_log()[mark:] == []

    # -- 7b. roll a back: the copy before the go-live refresh, byte for byte, and its old domain
    backup_ids = golive.state("a.example")["pre_refresh_backup"]["backup_ids"]
    rc, output, report, sites, writes = golive.play(
        "wpcloud.hosting.rollback_site", "-e", "wpcloud_rollback_hosts=a.example",
        "-e", "site_migration_confirm_rollback=true")
    assert rc == 0, output[-6000:]
    a = sites["a.example"]
    assert a["result"] == "rolled_back" and a["restore"]["restored_from"] == backup_ids
    assert a["cutover"]["state"] == "switched" and a["cutover"]["domain"] == "a.example"
    assert [e for e, p in writes if e in ("site.restore", "site.update_domain")] == ["site.restore", "site.update_domain"]
    site = emu.site(SITES["a.example"])
    assert site["domain_name"] == "a.example" and site_storage(site["storage"]) == before["a.example"]
    assert golive.state("a.example")["cutover"] is None and golive.state("a.example")["rolled_back"]["restored_from"]
