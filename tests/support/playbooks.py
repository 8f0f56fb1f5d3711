"""The one place the suites run Ansible from: the collection tree, the environment, ansible-playbook.

tests/system, tests/reliability, tests/support (webhook_harness) and the benchmarks import it by name
(``tests/support`` is on ``sys.path`` through their conftest or support module)::

    from playbooks import ansible_env, collection_tree, run_playbook

- :func:`collection_tree`: a directory holding ``ansible_collections/wpcloud/hosting`` -> this checkout
  (or another one, for a benchmark of two checkouts side by side);
- :func:`ansible_env`: the environment of an Ansible process of a test: this venv's bin first, the
  tree, its own ANSIBLE_HOME and local temp, no colour, no retry files; ``clean=True`` also leaves
  out the user's ``ansible.cfg`` and the service's environment variables (so a run can only use what
  the test gave it);
- :func:`run_playbook`: one ansible-playbook process with captured output; :func:`play_recap` reads its recap;
- :data:`EMULATOR_HOOK_DIR`: the ``emulator_hook`` action, for ANSIBLE_ACTION_PLUGINS;
- :data:`CALLBACK_DIR`: the suites' callback plugins (``callback_plugins/``, one JSON-lines shape:
  ``jsonl_callback.py``).
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CALLBACK_DIR = Path(__file__).resolve().parent / "callback_plugins"
# The emulator_hook action (the emulator's /_emulator hooks from a play, in the controller process): the integration
# targets' setup_emulator role holds it; other suites' plays get it through ANSIBLE_ACTION_PLUGINS.
EMULATOR_HOOK_DIR = ROOT / "tests" / "integration" / "targets" / "setup_emulator" / "action_plugins"

# the service's settings a module reads from the environment: a clean run must not inherit them
SERVICE_ENV = ("WPCLOUD_API_URL", "WPCLOUD_API_KEY", "WPCLOUD_CA_PATH", "WPCLOUD_WEBHOOK_HMAC_KEYS")


def collection_tree(base, repo=ROOT, name="collections"):
    """A tree base/<name>/ansible_collections/wpcloud/hosting -> ``repo`` (this checkout by default)."""
    root = Path(base) / name
    parent = root / "ansible_collections" / "wpcloud"
    parent.mkdir(parents=True, exist_ok=True)
    link = parent / "hosting"
    if not link.exists():
        link.symlink_to(Path(repo), target_is_directory=True)
    return root


def job_project(pdd):
    """The project of a controller job in a private data directory: the job template's playbook
    (importing migrate_site) and the collection where the controller installs a project's collections."""
    project = Path(pdd) / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "migrate_site.yml").write_text(
        "---\n- name: Migrate sites (job template playbook)\n  ansible.builtin.import_playbook: wpcloud.hosting.migrate_site\n")
    collection_tree(project)
    return project


def ansible_env(base, home=None, clean=False, **extra):
    """The environment of an Ansible process run in ``base``: ANSIBLE_HOME and ANSIBLE_LOCAL_TEMP under
    ``home`` (default ``base``). ``clean``: no ansible.cfg (``base``/no-ansible.cfg, empty), no service
    settings from the environment, no localhost or unparsed-inventory warnings, the default stdout
    callback. ``extra`` is added last (values made strings)."""
    home = Path(home or base)
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(collection_tree(base)),
        "ANSIBLE_HOME": str(home / ".ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(home / ".ansible-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "PATH": "%s:%s" % (BIN, os.environ.get("PATH", "")),
    })
    if clean:
        for name in SERVICE_ENV:
            env.pop(name, None)
        config = Path(base) / "no-ansible.cfg"
        if not config.exists():
            config.write_text("")
        env.update({
            "ANSIBLE_CONFIG": str(config),
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
            "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default",
        })
    env.update({k: str(v) for k, v in extra.items()})
    return env


def localhost_inventory(base, host_vars=None):
    """base/localhost.json: localhost, local connection, this interpreter, plus ``host_vars``."""
    path = Path(base) / "localhost.json"
    variables = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    variables.update(host_vars or {})
    path.write_text(json.dumps({"all": {"hosts": {"localhost": variables}}}))
    return path


def run_playbook(base, playbook, extra_vars=None, args=(), env=None, check=True, timeout=600, inventory=None):
    """ansible-playbook ``playbook`` in ``base`` (inventory: localhost unless given); returns
    (CompletedProcess, combined output), the process's ``elapsed`` seconds set on it. ``check``: a
    failed run raises AssertionError with the end of its output."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(inventory or localhost_inventory(base)), str(playbook)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    cmd += [str(a) for a in args]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env or ansible_env(base), timeout=timeout,
                          cwd=str(base), check=False)
    proc.elapsed = time.monotonic() - started
    output = proc.stdout + proc.stderr
    if check and proc.returncode != 0:
        raise AssertionError("ansible-playbook failed (%d):\n%s" % (proc.returncode, output[-6000:]))
    return proc, output


# A line of the PLAY RECAP: "host : ok=3 changed=1 ...". Only such lines: the output may hold stderr after it
# (cryptography 51 prints a DeprecationWarning "path.py:18: ..." from every Ansible process).
RECAP_LINE = re.compile(r"^(\S+)\s*:\s*((?:[a-z]+=-?\d+\s*)+)$")


def play_recap(output):
    """{host: {ok, changed, skipped, failed, ...}} from the last PLAY RECAP of ``output``. A host that ran no task of
    its own (the role's steps are run_once tasks) is not in it: zeros."""
    recap = collections.defaultdict(lambda: collections.defaultdict(int))
    for line in output.split("PLAY RECAP")[-1].splitlines()[1:]:
        found = RECAP_LINE.match(line.strip())
        if found:
            recap[found.group(1)].update((k, int(v)) for k, v in (p.split("=") for p in found.group(2).split()))
    return recap


def emulator_vars(emu):
    return {"wpcloud_api_url": emu.url, "wpcloud_api_key": emu.api_key, "wpcloud_ca_path": emu.ca_path,
            "wpcloud_client": emu.client}
