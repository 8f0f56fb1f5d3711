"""wpcloud.hosting.fleet_vars in real ansible-playbook runs: in one task, every host's variables are what
a task of that host sees (checked against a per-host ``query('vars')`` for each source of a variable and
Ansible's precedence between them), on this ansible-core and on 2.16 when the machine has it (.venv-2.16);
its EXAMPLES run over three hosts; bad input is refused by option name; a vaulted value stays hidden."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap

import pytest
import yaml

from playbooks import ROOT, ansible_env

NAMES = ["a", "b", "c", "d", "e", "f", "g", "h", "secret"]
SECRET = "fleet-vars-vaulted-Canary-4242"
VAULT_PASS = "fleet-vars-vault-pass"

# ansible-playbook of this run's ansible-core, and of 2.16 where `make setup` made .venv-2.16.
CORES = [pytest.param(sys.executable, id="this-core")]
_216 = ROOT / ".venv-2.16" / "bin" / "python"
CORES.append(pytest.param(str(_216), id="core-2.16", marks=pytest.mark.skipif(
    not _216.exists(), reason=".venv-2.16 not on this machine (ansible-core 2.16 needs Python <= 3.12)")))


def playbook_bin(python):
    return str(type(ROOT)(python).parent / "ansible-playbook")


def project(tmp_path):
    """Three hosts whose variables come from every source, through a role."""
    vaulted = subprocess.run(
        [str(type(ROOT)(sys.executable).parent / "ansible-vault"), "encrypt_string", "--vault-password-file",
         str(_write(tmp_path / "vault-pass", VAULT_PASS)), SECRET, "--name", "secret"],
        check=True, capture_output=True, text=True).stdout
    _write(tmp_path / "inventory.ini", textwrap.dedent("""\
        [sites]
        h1 b=inventory-b
        h2 d=inventory-d
        h3
        [sites:vars]
        ansible_connection=local
        h=group-h
        """))
    _write(tmp_path / "host_vars" / "h3.yml", "a: host-vars-a\ne: host-vars-e\n" + vaulted)
    _write(tmp_path / "roles" / "r" / "defaults" / "main.yml",
           "a: default-a\nb: default-b\nc: \"{{ inventory_hostname }}-c\"\n")
    _write(tmp_path / "roles" / "r" / "tasks" / "main.yml", yaml.safe_dump([
        {"name": "Per host", "ansible.builtin.set_fact": {
            "per_host": "{{ dict(%r | zip(query('ansible.builtin.vars', *%r, default='<unset>'))"
                        " | rejectattr(1, 'equalto', '<unset>')) }}" % (NAMES, NAMES)},
         "no_log": True, "vars": {"g": "task-{{ inventory_hostname }}"}},
        {"name": "In one task", "wpcloud.hosting.fleet_vars": {"names": NAMES}, "register": "fleet",
         "run_once": True, "no_log": True, "vars": {"g": "task-{{ inventory_hostname }}"}},
        {"name": "Compare", "ansible.builtin.assert": {
            "that": ["fleet.hosts == ansible_play_batch",
                     "fleet.host_vars[ansible_play_batch.index(inventory_hostname)] == per_host"],
            "quiet": True}, "no_log": True},
        {"name": "Record", "ansible.builtin.copy": {
            "content": "{{ fleet.host_vars | to_json }}", "dest": str(tmp_path / "host_vars.json"), "mode": "0600"},
         "run_once": True, "delegate_to": "localhost", "no_log": True},
    ], sort_keys=False))
    _write(tmp_path / "play.yml", yaml.safe_dump([
        {"hosts": "sites", "gather_facts": False, "vars": {"d": "play-{{ inventory_hostname }}"},
         "pre_tasks": [{"name": "A fact on h2", "ansible.builtin.set_fact": {"f": "fact-{{ inventory_hostname }}"},
                        "when": "inventory_hostname == 'h2'"}],
         "roles": [{"role": "r", "b": "role-param-b"}]}], sort_keys=False))
    return tmp_path


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(python, tmp_path, playbook, *args):
    cmd = [playbook_bin(python), "-i", str(tmp_path / "inventory.ini"), str(playbook),
           "--vault-password-file", str(tmp_path / "vault-pass")] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=str(tmp_path), timeout=300,
                          env=ansible_env(tmp_path, ANSIBLE_ROLES_PATH=str(tmp_path / "roles")), check=False)


@pytest.mark.parametrize("python", CORES)
def test_every_hosts_variables_are_what_its_own_task_sees(python, tmp_path):
    base = project(tmp_path)
    proc = run(python, base, base / "play.yml", "-e", "e=extra-e", "-vvvv")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert "ok=4" in output and "failed=0" in output
    found = json.loads((base / "host_vars.json").read_text())
    # Each source, and the precedence between them: role default < inventory < host_vars < play vars < fact
    # < task vars < role params < extra vars.
    assert found[0] == {"a": "default-a", "b": "role-param-b", "c": "h1-c", "d": "play-h1", "e": "extra-e",
                        "g": "task-h1", "h": "group-h"}
    assert found[1]["d"] == "play-h2" and found[1]["f"] == "fact-h2" and "f" not in found[2]
    assert found[2]["a"] == "host-vars-a" and found[2]["e"] == "extra-e" and found[2]["secret"] == SECRET
    # The vaulted value was read decrypted, and no_log kept it out of the output at -vvvv.
    assert SECRET not in output


def examples_text():
    tree = ast.parse((ROOT / "plugins" / "modules" / "fleet_vars.py").read_text())
    return next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "EXAMPLES")


def test_the_examples_run_over_a_fleet(tmp_path):
    base = project(tmp_path)
    tasks = yaml.safe_load(examples_text())
    assert all(t.get("name") for t in tasks)
    _write(base / "examples.yml", yaml.safe_dump([
        {"hosts": "sites", "gather_facts": False, "vars": {"destination": "{{ inventory_hostname }}.example"},
         "tasks": tasks}], sort_keys=False))
    proc = run(sys.executable, base, base / "examples.yml", "-e", json.dumps({"source_host": "src1"}))
    assert proc.returncode == 0, proc.stdout[-4000:]
    for host in ("h1", "h2", "h3"):
        assert "%s: %s.example from src1" % (host, host) in proc.stdout
    assert proc.stdout.count("TASK [Read the destination and source of every site]") == 1


@pytest.mark.parametrize("args, message", [
    ({"names": ["a"], "hosts": []}, "hosts is empty"),
    ({"names": ["a"], "hosts": ["h1", "nowhere"]}, "host 'nowhere' is not in the inventory (hosts)"),
    ({}, "missing required arguments: names"),
])
def test_bad_input_is_refused_by_option_name(tmp_path, args, message):
    base = project(tmp_path)
    _write(base / "bad.yml", yaml.safe_dump([{"hosts": "sites", "gather_facts": False, "tasks": [
        {"name": "Read", "wpcloud.hosting.fleet_vars": args, "run_once": True}]}]))
    proc = run(sys.executable, base, base / "bad.yml")
    assert proc.returncode != 0
    assert message in proc.stdout, proc.stdout[-3000:]
