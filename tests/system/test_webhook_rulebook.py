"""ansible-rulebook with the collection's rulebook (wpcloud.hosting.webhooks) and source, over HTTPS
with a locally made CA; the emulator-side WebhookSender delivers signed events; playbooks fire.
Forged, tampered, reused-signature and unsigned deliveries are refused and never emitted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from webhook_harness import (REPO, Rulebook, collection_tree, delivery_id_of, free_port, get_json, post,
                             rulebook_bin, tls, wait_for, write_rulebook_inputs)

from webhooks import WebhookSender, build_body  # noqa: E402  (tests/support/emulator on sys.path)

KEY = "rulebook-key-7f3a9c1e5b2d4f60a8e1"
OLD_KEY = "rulebook-old-key-0d9e8f7a6b5c4d3e"


@pytest.fixture
def rulebook_env(tmp_path):
    rulebook_bin()
    tree = collection_tree(tmp_path)
    tls_files = tls(tmp_path / "tls")
    port = free_port()
    records = write_rulebook_inputs(tmp_path, tls_files, port)
    env = {"ANSIBLE_COLLECTIONS_PATH": str(tree), "ANSIBLE_NOCOLOR": "1",
           # the key reaches the source from the environment, never from the rulebook
           "WPCLOUD_WEBHOOK_HMAC_KEYS": "%s,%s" % (KEY, OLD_KEY)}
    rb = Rulebook(tmp_path, ["-r", "wpcloud.hosting.webhooks", "-i", "inventory.yml", "--vars", "vars.yml"], env)
    yield {"rb": rb, "url": "https://127.0.0.1:%d" % port, "ca": tls_files["ca"], "records": records}
    rb.stop()


def test_rulebook_signed_deliveries_fire_rules_and_bad_ones_are_refused(rulebook_env):
    rb, url, ca, records = (rulebook_env[k] for k in ("rb", "url", "ca", "records"))
    rb.start()
    rb.wait_ready(url, ca)
    meta = {"webhook_url": url + "/wpcloud", "webhook_hmac_key": KEY}
    sender = WebhookSender(lambda client, key: meta.get(key), ca_path=ca, retry_delay=0.2)
    try:
        sender.emit("demo", "site_provisioned", 4242, [])
        sender.emit("demo", "response_ticket_updated", 4242,
                    {"response-ticket-id": "697101d6.1", "status": "success", "operation": "preflight"})
        changed = {"passed_old": "old.example", "passed_new": "new.example", "then_api_current": "new.example",
                   "then_db_siteurl": "https://new.example"}
        sender.emit("demo", "domain_name_changed", 4242, changed)
        backup = {"state": "created", "action": "create", "atomic_backup_request_id": 9001,
                  "atomic_backup_id": "3001", "type": "ondemand-fs"}
        sender.emit("demo", "on-demand-backup", 4242, backup)
        sender.emit("demo", "wp_version_changed", 4242, {"version": "previous"})
        sender.emit("demo", "entirely_new_event", None, {"field_nobody_documented": {"a": 1}})
        sender.emit("demo", "malware-scanner-results", 4242, {"status": "clean", "results": []},
                    signature_in_data=True)
        assert sender.wait_idle(30)
        meta["webhook_hmac_key"] = OLD_KEY          # rotation window: the old key is still accepted
        sender.emit("demo", "site_provisioned", 4343, [])
        assert sender.wait_idle(30)
    finally:
        sender.close()
    assert [(d["event"], d["status"], d["attempt"]) for d in sender.deliveries] == [
        (d["event"], 200, 1) for d in sender.deliveries]

    # refused deliveries: forged key, tampered event name, reused signature with another body, unsigned
    good = sender.deliveries[0]["body"]
    payload = json.loads(good)
    forged = build_body("site_provisioned", 6661, [], "attacker-key")
    tampered = json.dumps(dict(json.loads(sender.deliveries[3]["body"]), event="site_provisioned",
                               atomic_site_id=6662))
    reused = json.dumps(dict(payload, atomic_site_id=6663))
    unsigned = json.dumps({"event": "site_provisioned", "timestamp": 1, "atomic_site_id": 6664, "data": []})
    forged_unknown = build_body("forged_unknown_event", None, {}, "attacker-key")
    assert post(url + "/wpcloud", forged, ca)[0] == 401
    assert post(url + "/wpcloud", tampered, ca)[0] == 401
    assert post(url + "/wpcloud", reused, ca)[0] == 409
    assert post(url + "/wpcloud", unsigned, ca)[0] == 401
    assert post(url + "/wpcloud", forged_unknown, ca)[0] == 401
    assert post(url + "/wpcloud", good, ca)[0] == 200           # exact redelivery: acknowledged, not re-emitted

    ids = {d["event"] + str(json.loads(d["body"]).get("atomic_site_id")): delivery_id_of(d["body"])
           for d in sender.deliveries}
    site_dir = records / "site_provisioned"

    spool = Path(rulebook_env["records"]).parent / "spool"

    def acknowledged():
        path = spool / "processing.log"
        text = path.read_text() if path.exists() else ""
        return {line.split()[1] for line in text.splitlines() if line.startswith("ack ")}

    def fired():
        lines = (records / "events.jsonl").read_text().splitlines() if (records / "events.jsonl").exists() else []
        return (site_dir.is_dir() and len(list(site_dir.glob("*.json"))) >= 2 and len(lines) >= 5
                and len(acknowledged()) >= 8)
    wait_for(fired, 120, 0.5, "the rules to fire and their playbooks to acknowledge",
             progress=lambda: (len(acknowledged()), len(list(site_dir.glob("*.json"))) if site_dir.is_dir() else 0),
             detail=rb.tail)

    # site_provisioned ran its playbook: one record per delivery id, none for refused deliveries
    recs = {p.stem: json.loads(p.read_text()) for p in site_dir.glob("*.json")}
    assert set(recs) == {ids["site_provisioned4242"], ids["site_provisioned4343"]}
    assert sorted(r["atomic_site_id"] for r in recs.values()) == [4242, 4343]
    # every other event (known or not) is recorded by the catch-all rule's playbook
    lines = [json.loads(line) for line in (records / "events.jsonl").read_text().splitlines()]
    assert lines[0] == {"delivery_id": ids["response_ticket_updated4242"], "event": "response_ticket_updated",
                        "event_as_sent": "response_ticket_updated", "atomic_site_id": 4242,
                        "data": {"response-ticket-id": "697101d6.1", "status": "success", "operation": "preflight"}}
    assert sorted(line["event"] for line in lines) == sorted([
        "response_ticket_updated", "domain_name_changed", "wp_version_changed", "entirely_new_event",
        "malware_scanner_results"])       # normalised: sent as malware-scanner-results
    assert [line["event_as_sent"] for line in lines if line["event"] == "malware_scanner_results"] == [
        "malware-scanner-results"]
    # going live: the domain change read by its own playbook (recorded, in words), the backup in backups.jsonl
    (change,) = [json.loads(p.read_text()) for p in (records / "domain_name_changed").glob("*.json")]
    assert change["kind"] == "primary" and change["confirmed"] is True and change["siteurl_follows"] is True
    assert change["delivery_id"] == ids["domain_name_changed4242"] and change["host"] is None
    assert [json.loads(line)["data"] for line in (records / "backups.jsonl").read_text().splitlines()] == [backup]
    # every stored delivery's playbook ran to its acknowledgement, each once
    assert acknowledged() == set(ids.values())
    out = rb.output()
    assert "forged_unknown_event" not in (records / "events.jsonl").read_text()   # never emitted
    assert "rejected delivery (mismatch) for event 'forged_unknown_event'" in out
    for site in ("6661", "6662", "6663", "6664"):
        assert "site %s provisioned" % site not in out
    assert out.count("site 4242 provisioned") == 1              # redelivery not emitted twice
    assert KEY not in out and OLD_KEY not in out
    counters = get_json(url + "/healthz", ca)
    assert counters["stored"] == 8 and counters["duplicates"] == 1
    assert counters["conflicts"] == 1 and counters["rejected"] == 4
    assert KEY not in (spool / "spool.log").read_text()


def test_filter_in_a_real_playbook(tmp_path):
    """webhook_verify through Ansible's plugin loader (collection found via ANSIBLE_COLLECTIONS_PATH)."""
    ansible = Path(sys.executable).parent / "ansible-playbook"
    if not ansible.exists():
        pytest.skip("ansible-core not installed in the test venv")
    tree = collection_tree(tmp_path)
    body = build_body("malware-scanner-results", 5, {"status": "clean"}, KEY, signature_in_data=True).decode()
    (tmp_path / "vars.json").write_text(json.dumps({"raw_body": body, "keys": [OLD_KEY, KEY]}))
    (tmp_path / "pb.yml").write_text("""
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        check: "{{ raw_body | wpcloud.hosting.webhook_verify(keys) }}"
        bad: "{{ raw_body | wpcloud.hosting.webhook_verify('wrong') }}"
      no_log: true
    - ansible.builtin.assert:
        that:
          - check.valid
          - check.key_index == 1
          - check.location == 'data'
          - check.timestamp | length == 17
          - not bad.valid
          - bad.reason == 'mismatch'
""")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tree), ANSIBLE_HOME=str(tmp_path / ".ansible"),
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    result = subprocess.run([str(ansible), "pb.yml", "-e", "@vars.json",
                             "-e", "ansible_python_interpreter=%s" % sys.executable],
                            cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "failed=0" in result.stdout
    assert KEY not in result.stdout and OLD_KEY not in result.stdout
    assert REPO.exists()
