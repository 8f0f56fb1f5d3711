#!/usr/bin/env python
"""What the role's one task per site costs (issue 25): the play recap and AWX's host summary list a host
only when a task ran for it, so tasks/stop.yml runs once per site (an assert: failed, changed or ok).

    .venv/bin/python tests/benchmarks/recap/run.py [--hosts 1000] [--pairs 3] [--forks 5] [--base /tmp/base]

Plays over N local hosts (ansible_connection local): a run_once set_fact with the fleet's outcome
(half the sites "changed"), then either nothing ("without") or the role's own tasks/stop.yml ("with").
Interleaved (without, with, without, with ...); wall and CPU (user+sys of ansible-playbook and its
children) per run, medians, and the 1-minute load average before each run (docs/performance.md).
--base adds a third variant, "base": another checkout's tasks/stop.yml and collection (without, base, with ...).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
BIN = os.path.dirname(sys.executable)

PLAY = """
- name: Recap cost
  hosts: all
  gather_facts: false
  tasks:
    - name: The fleet's outcome, once
      ansible.builtin.set_fact:
        site_migration__recap:
          stopped: {}
          changed: "{{ dict(ansible_play_hosts_all[::2] | zip_longest([], fillvalue=true)) }}"
      run_once: true
%s
"""
WITH = """
    - name: The role's task per site
      ansible.builtin.import_tasks: %s
"""


def stop_tasks(checkout):
    return WITH % os.path.join(checkout, "roles", "site_migration", "tasks", "stop.yml")


def collections(workdir, variant, checkout):
    """A collections path with ``checkout`` as wpcloud.hosting (the task may be one of its modules)."""
    path = os.path.join(workdir, "collections-%s" % variant)
    os.makedirs(os.path.join(path, "ansible_collections", "wpcloud"))
    os.symlink(checkout, os.path.join(path, "ansible_collections", "wpcloud", "hosting"))
    return path


def one(workdir, variant, forks):
    playbook = os.path.join(workdir, "%s.yml" % variant)
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", os.path.join(workdir, "inventory.json"),
                           "-f", str(forks), playbook], capture_output=True, text=True,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=os.path.join(workdir, "none.cfg"),
                                   ANSIBLE_COLLECTIONS_PATH=os.path.join(workdir, "collections-%s" % variant)),
                          check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout[-3000:] + proc.stderr[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"variant": variant, "wall": round(wall, 2), "cpu": round(cpu, 2), "load1": round(load, 2)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--base", help="another checkout (e.g. a detached worktree): its stop.yml as variant base")
    args = parser.parse_args()
    checkouts = [("without", ROOT), ("with", ROOT)] + ([("base", os.path.abspath(args.base))] if args.base else [])
    variants = [name for name, dummy in checkouts if name != "with"] + ["with"]
    with tempfile.TemporaryDirectory() as workdir:
        hosts = dict(("site%04d.example" % i, {}) for i in range(args.hosts))
        inventory = {"all": {"vars": {"ansible_connection": "local",
                                      "ansible_python_interpreter": sys.executable}, "hosts": hosts}}
        with open(os.path.join(workdir, "inventory.json"), "w") as handle:
            json.dump(inventory, handle)
        for variant, checkout in checkouts:
            collections(workdir, variant, checkout)
            with open(os.path.join(workdir, "%s.yml" % variant), "w") as handle:
                handle.write(PLAY % ("" if variant == "without" else stop_tasks(checkout)))
        runs = []
        for pair in range(args.pairs):
            for variant in variants:
                runs.append(one(workdir, variant, args.forks))
                print(json.dumps(runs[-1]), flush=True)
    summary = {}
    for variant in variants:
        mine = [r for r in runs if r["variant"] == variant]
        summary[variant] = {"wall": statistics.median(r["wall"] for r in mine),
                            "cpu": statistics.median(r["cpu"] for r in mine)}
    summary["per_host_ms"] = {k: round(1000 * (summary["with"][k] - summary["without"][k]) / args.hosts, 2)
                              for k in ("wall", "cpu")}
    if args.base:
        summary["base_per_host_ms"] = {k: round(1000 * (summary["base"][k] - summary["without"][k]) / args.hosts, 2)
                                       for k in ("wall", "cpu")}
    summary["load1"] = [r["load1"] for r in runs]
    print(json.dumps(dict(summary, hosts=args.hosts, forks=args.forks, pairs=args.pairs)))


if __name__ == "__main__":
    main()
