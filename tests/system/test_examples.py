"""Every module's EXAMPLES block runs, as a user would write it, against the emulator.

The examples read like a user's playbook: the connection options once, through
``module_defaults: {group/wpcloud.hosting.all: ...}`` with the service's real URL and a vaulted key,
literal sites (dest1.example ...), IDs taken from earlier tasks. The test supplies its values from
outside the example text: the real URL becomes the emulator's (the one literal it rewrites), the
emulator's CA comes from WPCLOUD_CA_PATH (the option's environment fallback), and the variables are
extra-vars named like a user's vault variables. The emulator is reset to its seed sites (dest1.example
... dest3.example) and given the migrations the example expects.
"""

import ast
import re
import subprocess

import pytest
import yaml

from playbooks import ROOT, ansible_env, run_playbook

# The modules of group/wpcloud.hosting.all (the attributes fragment). webhook_ack, outside the group (it has
# no API options), runs its examples in tests/system/test_webhook_ack.py.
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py")
                 if "- wpcloud.hosting.attributes\n" in p.read_text())
SERVICE_URL = "https://atomic-api.wordpress.com"
CONNECTION = {"api_url", "api_key", "ca_path", "validate_certs", "timeout", "retries", "retry_timeout"}


def examples_text(module):
    tree = ast.parse((ROOT / "plugins" / "modules" / ("%s.py" % module)).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "EXAMPLES":
            return node.value.value
    raise AssertionError("%s has no EXAMPLES" % module)


def leaf_tasks(tasks):
    for task in tasks:
        if "block" in task:
            yield from leaf_tasks(task["block"])
        else:
            yield task


def api(emu, path, data=None, method="POST"):
    status, body = emu.api(path, method=method, data=data)
    assert status == 200, (path, status, body)
    return body["data"]


def prepare(emu, module, tmp_path):
    """The user's variables (named like vault variables) and the service in the state the example expects."""
    extra = {"vault_wpcloud_api_key": emu.api_key, "wpcloud_client": emu.client}
    if module == "client_meta":
        extra["vault_webhook_hmac_key"] = "example-" + "0f1e2d3c4b5a6978" * 3
    elif module == "migration":
        key = tmp_path / "id_example"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "example passphrase", "-f", str(key)], check=True)
        extra["vault_source_ssh_key"] = key.read_text()
        extra["vault_source_ssh_key_passphrase"] = "example passphrase"
    elif module != "site_allow_migration":
        # The preflight example shows the diagnosis of a failure: dest2's source is scripted to fail there.
        host = "authfail.example" if module == "migration_preflight" else "src.example"
        api(emu, "migration/create/dest2.example", {"remote-host": host, "remote-user": "www"})
        api(emu, "migration/create/dest3.example", {"remote-host": "src.example", "remote-user": "www"})
    return extra


@pytest.mark.parametrize("module", MODULES)
def test_examples_read_like_a_users_playbook(module):
    text = examples_text(module)
    assert "wpcloud_example" not in text and "default(42)" not in text and "default(omit)" not in text
    tasks = yaml.safe_load(text)
    blocks = [t for t in tasks if "block" in t]
    assert len(blocks) == 1 and blocks[0] is tasks[0], "%s: one block first, with the connection options" % module
    assert blocks[0]["module_defaults"] == {"group/wpcloud.hosting.all": {
        "api_url": SERVICE_URL, "api_key": "{{ vault_wpcloud_api_key }}"}}
    for task in leaf_tasks(tasks):
        options = next((v for k, v in task.items() if k.startswith("wpcloud.hosting.")), None) or {}
        assert not CONNECTION & set(options), "%s: %r sets connection options again" % (module, task.get("name"))
        assert task.get("name"), "%s: every task has a name" % module


@pytest.mark.parametrize("module", MODULES)
def test_examples_run(module, emu, tmp_path):
    text = examples_text(module)
    tasks = yaml.safe_load(text.replace(SERVICE_URL, emu.url))
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    extra = prepare(emu, module, tmp_path)
    # the example leaves ca_path out (the real service's certificate is public); the emulator's CA comes
    # from the option's environment fallback
    env = ansible_env(tmp_path, WPCLOUD_CA_PATH=emu.ca_path)
    proc, output = run_playbook(tmp_path, playbook, extra, env=env)
    assert "failed=0" in output
    # Every example task ran: none was skipped by a condition the test did not meet.
    assert "skipping" not in output, output[-3000:]
    assert re.search(r"ok=%d " % len(list(leaf_tasks(tasks))), output), output[-3000:]
    for secret in ("vault_webhook_hmac_key", "vault_source_ssh_key_passphrase", "vault_wpcloud_api_key"):
        if secret in extra:
            assert extra[secret] not in output
