"""The loop of issue 15 closed for real: the site_migration role creates a destination and leaves it to
its webhook (site_migration_create_wait: false); the emulator's creation job ends and its WebhookSender
delivers a signed site_provisioned to ansible-rulebook running the collection's sample rulebook, whose
playbook (wpcloud.hosting.on_site_provisioned) migrates that site. A second delivery for the same site
starts nothing: the migration runs exactly once.

Run twice: with the event names as the spec lists them, and with the emulator sending
``site-provisioned`` (``--webhook-event-names hyphens``, a reading the owner's panel allows for): the
source's normalised ``meta.event`` still runs ``on_site_provisioned``."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

import webhook_harness as wh

launcher = pytest.importorskip("launcher")

BIN = Path(sys.executable).parent
KEY = "provisioned-loop-key-4b5c6d7e8f9a0b1c"


def _writes(log, endpoint, site=None):
    return [e for e in log if e["write"] and e["endpoint"] == endpoint and e["status"] == 200
            and (site is None or e["path"].rstrip("/").endswith("/%s" % site))]


@pytest.mark.parametrize("event_names", ["as-listed", "hyphens"])
def test_a_created_sites_webhook_starts_its_migration_exactly_once(tmp_path, event_names):
    wh.rulebook_bin()
    tree = wh.collection_tree(tmp_path)
    tls = wh.tls(tmp_path / "tls")
    port = wh.free_port()
    url = "https://127.0.0.1:%d" % port
    sent_as = "site-provisioned" if event_names == "hyphens" else "site_provisioned"
    emu = launcher.start_emulator(tmp_path / "emu", extra_args=["--webhook-ca", tls["ca"],
                                                                "--webhook-event-names", event_names])
    rb = None
    try:
        emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1},
                                      "run": {"outcome": "success", "duration": 1}}})
        for meta_key, value in (("webhook_url", url + "/wpcloud"), ("webhook_hmac_key", KEY)):
            status, body = emu.api("client-meta/%s/%s/add" % (emu.client, meta_key), method="POST",
                                   data={"value": value})
            assert status == 200, body
        domain = "later-%s.example" % secrets.token_hex(3)
        records, state, reports = tmp_path / "records", tmp_path / "state", tmp_path / "reports"
        site_vars = {"ansible_connection": "local", "ansible_python_interpreter": str(BIN / "python"),
                     "site_migration_confirm_overwrite": True, "site_migration_state_dir": str(state),
                     "site_migration_report_dir": str(reports), "site_migration_source_host": "src.example",
                     "site_migration_install_key": False, "site_migration_client": emu.client,
                     "site_migration_admin_user": "admin", "site_migration_admin_email": "admin@example.com",
                     "site_migration_create_wait": False}
        inventory = {"all": {
            "vars": {"wpcloud_api_url": emu.url, "wpcloud_api_key": emu.api_key, "wpcloud_ca_path": emu.ca_path},
            "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": str(BIN / "python")}},
            "children": {"wpcloud_sites": {"vars": site_vars, "hosts": {domain: {}}},
                         "wpcloud_sources": {"hosts": {"src.example": {"ansible_user": "www"}}}}}}
        (tmp_path / "inventory.yml").write_text(json.dumps(inventory))
        (tmp_path / "vars.yml").write_text(json.dumps({
            "wpcloud_webhook_host": "127.0.0.1", "wpcloud_webhook_port": port,
            "wpcloud_webhook_certfile": tls["cert"], "wpcloud_webhook_keyfile": tls["key"],
            "wpcloud_webhook_spool_dir": str(tmp_path / "spool"), "wpcloud_webhook_record_dir": str(records)}))
        env = {"ANSIBLE_COLLECTIONS_PATH": str(tree), "ANSIBLE_NOCOLOR": "1", "WPCLOUD_WEBHOOK_HMAC_KEYS": KEY}
        rb = wh.Rulebook(tmp_path, ["-r", "wpcloud.hosting.webhooks", "-i", "inventory.yml", "--vars", "vars.yml"],
                         env)
        rb.start()
        rb.wait_ready(url, tls["ca"])

        # The role creates the site and stops: its migration waits for the webhook.
        play_env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tree), ANSIBLE_NOCOLOR="1",
                        PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
        proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
                               "wpcloud.hosting.migrate_site"], capture_output=True, text=True, env=play_env,
                              cwd=str(tmp_path), timeout=300, check=False)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        assert "awaiting_provisioning" in proc.stdout.lower() or "AWAITING_PROVISIONING" in proc.stdout
        site_id = emu.site(domain)["atomic_site_id"]

        # The creation job ends, site_provisioned is delivered, the rulebook's playbook migrates the site.
        def migrated():
            return _writes(emu.requests_log(), "migration.ready")
        wh.wait_for(migrated, 120, 0.5, "the migration started by the site_provisioned webhook", detail=rb.tail)
        wh.wait_for(lambda: len(list(reports.glob("*.json"))) >= 2, 120, 0.5, "the webhook run's report",
                    detail=rb.tail)
        report = json.loads(sorted(reports.glob("*.json"), key=lambda p: p.stat().st_mtime)[-1].read_text())
        assert [(s["host"], s["result"], s["destination"]) for s in report["sites"]] == [
            (domain, "succeeded", "existing")]
        deliveries = [d for d in emu.deliveries() if d["event"] == sent_as]
        assert [(d["status"], d["signed"]) for d in deliveries] == [(200, True)]

        # Another delivery for the same site (a new delivery id): recorded, acknowledged, nothing written.
        wh.wait_for(lambda: len(list((records / "site_provisioned").glob("*.json"))) == 1, 120, 0.3, "first record",
                    detail=rb.tail)
        before = emu.requests_log()[-1]["seq"]
        emu.emit("site_provisioned", atomic_site_id=int(site_id), data=[])
        wh.wait_for(lambda: len(list((records / "site_provisioned").glob("*.json"))) == 2, 120, 0.3, "second record",
                    detail=rb.tail)
        wh.wait_for(lambda: len(list(reports.glob("*.json"))) >= 3, 120, 0.5, "the second webhook run's report",
                    detail=rb.tail)
        time.sleep(1)
        again = [e for e in emu.requests_log(before) if e["write"]]
        assert again == [], again
        report = json.loads(sorted(reports.glob("*.json"), key=lambda p: p.stat().st_mtime)[-1].read_text())
        assert [s["result"] for s in report["sites"]] == ["left_alone"]
        log = emu.requests_log()
        assert len(_writes(log, "migration.create")) == 1 and len(_writes(log, "migration.ready")) == 1
        assert len(_writes(log, "site.create")) == 1 and _writes(log, "site.allow_migration") == []
        # the API key (an inventory variable here) never shows in the rulebook's or the playbooks' output
        assert emu.api_key not in rb.output() and emu.api_key not in proc.stdout + proc.stderr
    finally:
        if rb is not None:
            rb.stop()
        emu.stop()
