"""Every module's EXAMPLES block runs, as written, against the emulator."""

import ast
import subprocess

import pytest
import yaml

from playbooks import ROOT, emulator_vars, run_playbook

MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py"))


def examples_of(module):
    tree = ast.parse((ROOT / "plugins" / "modules" / ("%s.py" % module)).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "EXAMPLES":
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no EXAMPLES" % module)


def api(emu, path, data=None, method="POST"):
    status, body = emu.api(path, method=method, data=data)
    assert status == 200, (path, status, body)
    return body["data"]


def wait_ticket(emu, ticket):
    import time
    for dummy in range(100):
        status, body = emu.api("response-ticket/get/summary", method="POST", data={"response-ticket-id": ticket})
        if status == 200 and body["data"]["status"] in ("success", "failure"):
            return body["data"]["status"]
        time.sleep(0.2)
    raise AssertionError("ticket %s did not finish" % ticket)


def prepare(emu, module, new_site, tmp_path):
    """Variables the module's examples refer to, with the service in the state they expect."""
    extra = emulator_vars(emu)
    if module == "client_meta":
        extra["vault_webhook_hmac_key"] = "example-" + "0f1e2d3c4b5a6978" * 3
    elif module == "site_allow_migration":
        extra["wpcloud_example_site"] = str(new_site(allow_migration=False))
    elif module == "migration":
        extra["wpcloud_example_site"] = str(new_site())
        key = tmp_path / "id_example"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "example passphrase", "-f", str(key)], check=True)
        extra["vault_source_ssh_key"] = key.read_text()
        extra["vault_source_ssh_key_passphrase"] = "example passphrase"
    else:
        site = new_site()
        # The preflight example shows the diagnosis of a failure: use a host scripted to fail.
        host = "authfail.example" if module == "migration_preflight" else "src.example"
        mid = api(emu, "migration/create/%s" % site, {"remote-host": host, "remote-user": "www"})["migration-id"]
        extra["wpcloud_example_site"] = str(site)
        extra["wpcloud_example_migration_id"] = mid
        if module in ("migration_ready", "response_ticket_wait"):
            ticket = api(emu, "migration/preflight/%s" % mid, method="GET")["response-ticket-id"]
            assert wait_ticket(emu, ticket) == "success"
            extra["wpcloud_example_ticket_id"] = ticket
            extra["wpcloud_example_ticket_ids"] = [ticket]
    return extra


@pytest.mark.parametrize("module", MODULES)
def test_examples_run(module, emu, new_site, tmp_path):
    tasks = examples_of(module)
    assert tasks, "EXAMPLES of %s is empty" % module
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    extra = prepare(emu, module, new_site, tmp_path)
    proc, output = run_playbook(tmp_path, playbook, extra)
    assert "failed=0" in output
    # Every example task ran: none was skipped by a condition the test did not meet.
    assert "skipping" not in output, output[-3000:]
    assert "ok=%d " % len(tasks) in output, output[-3000:]
    for secret in ("vault_webhook_hmac_key", "vault_source_ssh_key_passphrase"):
        if secret in extra:
            assert extra[secret] not in output
