"""playbooks/rotate_webhook_key.yml rotates the signing key with the receiver running: the receiver
takes both keys from its hmac_secret_file, the account switches, a delivery verified with the new key
is seen, the old key is dropped; no delivery is refused or lost on the way."""

import json

import pytest

from launcher import start_emulator
from playbooks import run_playbook
import webhook_harness as wh

pytest.importorskip("aiohttp")

OLD_KEY = "old-rotation-key-" + "0123456789abcdef" * 2
NEW_KEY = "new-rotation-key-" + "fedcba9876543210" * 2


def wait_for(predicate, timeout=20):
    wh.wait_for(predicate, timeout)


def test_rotation_keeps_every_event(tmp_path):
    tls = wh.tls(tmp_path / "tls")
    ca = tls["ca"]
    keys_file = tmp_path / "receiver.keys"
    keys_file.write_text(OLD_KEY + "\n")
    keys_file.chmod(0o600)
    port = wh.free_port()
    args = wh.source_args(tmp_path / "spool", tls, port, None, hmac_secret_file=str(keys_file))
    del args["hmac_secret"]
    source = wh.Source(args).start()
    emu = start_emulator(tmp_path / "emulator", extra_args=["--accept-delay", "0.3", "--webhook-ca", ca])
    try:
        receiver = "https://127.0.0.1:%d" % port
        assert emu.api("client-meta/%s/webhook_url/add" % emu.client, "POST", {"value": receiver + "/hook"})[0] == 200
        assert emu.api("client-meta/%s/webhook_hmac_key/add" % emu.client, "POST", {"value": OLD_KEY})[0] == 200
        emu.emit("wp_version_changed", atomic_site_id=1001, data={"version": "previous"})
        wait_for(lambda: len(source.events) == 1)
        assert source.events[0]["meta"]["signature"]["key_index"] == 0

        vault_vars = tmp_path / "rotation.json"
        vault_vars.write_text(json.dumps({
            "wpcloud_api_url": emu.url, "wpcloud_api_key": emu.api_key, "wpcloud_ca_path": emu.ca_path,
            "wpcloud_client": emu.client, "wpcloud_webhook_new_hmac_key": NEW_KEY,
            "wpcloud_webhook_old_hmac_key": OLD_KEY, "wpcloud_webhook_receiver_health_url": receiver + "/healthz",
            "wpcloud_webhook_receiver_ca_path": ca, "wpcloud_webhook_receiver_keys_file": str(keys_file),
            "wpcloud_webhook_rotation_timeout": 60,
            "wpcloud_webhook_rotation_probe": {"url": emu.url + "/_emulator/events", "ca_path": emu.ca_path,
                                               "body": {"event": "site_provisioned", "atomic_site_id": 1001,
                                                        "data": []}}}))
        dummy, output = run_playbook(tmp_path, "wpcloud.hosting.rotate_webhook_key", args=["-e", "@%s" % vault_vars])
        assert "The old key was dropped from the receiver" in output
        for secret in (OLD_KEY, NEW_KEY):
            assert secret not in output
        assert keys_file.read_text() == NEW_KEY + "\n"

        # The probe's event arrived signed with the new key; every delivery was accepted.
        wait_for(lambda: len(source.events) == 2)
        assert source.events[1]["payload"]["event"] == "site_provisioned"
        assert source.events[1]["meta"]["signature"]["key_index"] == 0
        assert [d["status"] for d in emu.deliveries()] == [200, 200]
        # After the drop, a delivery signed with the old key is refused; with the new key it is taken.
        emu.api("client-meta/%s/webhook_hmac_key/update" % emu.client, "POST", {"value": OLD_KEY})
        emu.emit("domain_name_changed", atomic_site_id=1001, data={"passed_old": "a", "passed_new": "b"})
        wait_for(lambda: any(d["status"] == 401 for d in emu.deliveries()))
        assert len(source.events) == 2
    finally:
        emu.stop()
        source.stop()
