"""Running real ansible-playbook processes against the collection from this checkout."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def collection_tree(base):
    """A directory holding ansible_collections/wpcloud/hosting -> this checkout."""
    tree = Path(base) / "collections"
    link = tree / "ansible_collections" / "wpcloud" / "hosting"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT)
    return tree


def job_project(pdd):
    """The project of a controller job in a private data directory: the job template's playbook
    (importing migrate_site) and the collection where the controller installs a project's collections."""
    project = Path(pdd) / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "migrate_site.yml").write_text(
        "---\n- name: Migrate sites (job template playbook)\n  ansible.builtin.import_playbook: wpcloud.hosting.migrate_site\n")
    collection_tree(project)
    return project


def ansible_env(base, **extra):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(collection_tree(base)),
        "ANSIBLE_HOME": str(Path(base) / ".ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(Path(base) / ".ansible-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "PATH": "%s:%s" % (BIN, os.environ.get("PATH", "")),
    })
    env.update({k: str(v) for k, v in extra.items()})
    return env


def localhost_inventory(base):
    path = Path(base) / "inventory.ini"
    path.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    return path


def run_playbook(base, playbook, extra_vars=None, args=(), env=None, check=True, timeout=600):
    """Run ansible-playbook; return (CompletedProcess, combined output)."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(localhost_inventory(base)), str(playbook)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    cmd += list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env or ansible_env(base), timeout=timeout,
                          cwd=str(base), check=False)
    output = proc.stdout + proc.stderr
    if check and proc.returncode != 0:
        raise AssertionError("ansible-playbook failed (%d):\n%s" % (proc.returncode, output[-6000:]))
    return proc, output


def emulator_vars(emu):
    return {"wpcloud_api_url": emu.url, "wpcloud_api_key": emu.api_key, "wpcloud_ca_path": emu.ca_path,
            "wpcloud_client": emu.client}
