#!/usr/bin/env python
"""AWX job slicing benchmark: one fleet of N sites migrated by K concurrent ansible-runner jobs, each over
its slice of the inventory as AWX slices it (tests/support/awx_slicing.py: all hosts sorted by name, the
source host among them, so it is in one slice only) in its own private data directory, against one
emulator, next to the same fleet in one job (K=1); interleaved (1, K, 1, K ...), medians
(docs/awx.md, "Fleets: sliced job templates").

    .venv/bin/python tests/benchmarks/fleet/slices.py [--sites 200] [--slices 4] [--repeats 2]

Per run: wall (first start to last end), controller CPU (user+sys of every ansible-runner process and all
it reaped, from wait4), API reads/writes per site, and a check that every site was migrated exactly once
(one migration.create and one migration.ready per site) and every slice's report covers its own hosts.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as fleet_bench  # noqa: E402  (Fleet, machine_cpu, median, log)
sys.path.insert(0, os.path.join(fleet_bench.ROOT, "tests", "support"))
from awx_slicing import awx_slice, write_script  # noqa: E402  (tests/support/awx_slicing.py)

BIN = os.path.dirname(sys.executable)
PLAYBOOK = "---\n- name: Migrate sites (job template playbook)\n  ansible.builtin.import_playbook: wpcloud.hosting.migrate_site\n"


def private_data_dir(fleet, base, k, k_slices, forks):
    """What the controller writes for slice k (1-based) of k_slices: project, the slice's inventory (AWX's
    slicing, tests/support/awx_slicing.py: the source host is a host like the sites, so it is in one slice
    only), env. Returns (directory, the slice's sites)."""
    pdd = os.path.join(base, "slice%d" % k)
    for sub in ("project", "inventory", "env"):
        os.makedirs(os.path.join(pdd, sub), exist_ok=True)
    with open(os.path.join(pdd, "project", "migrate_site.yml"), "w") as handle:
        handle.write(PLAYBOOK)
    with open(fleet.inventory) as handle:
        whole = json.load(handle)["all"]
    sites, sources = whole["children"]["wpcloud_sites"], whole["children"]["wpcloud_sources"]
    hostvars = dict(sites["hosts"], **sources["hosts"])
    # The layout that slices (docs/awx.md section 8): the source's address and user are the sites' own.
    site_vars = dict(sites["vars"], site_migration_remote_host=fleet_bench.SOURCE, site_migration_remote_user="www",
                     site_migration_state_dir=os.path.join(pdd, "state"),
                     site_migration_report_dir=os.path.join(pdd, "reports"))
    inventory = awx_slice(hostvars, {"wpcloud_sources": {"hosts": list(sources["hosts"])},
                                     "wpcloud_sites": {"hosts": list(sites["hosts"]), "vars": site_vars}},
                          whole["vars"], k, k_slices)
    write_script(pdd, inventory)
    env = dict((k_, v) for k_, v in fleet.env(os.path.join(pdd, "trace.jsonl")).items()
               if k_.startswith(("ANSIBLE_", "FLEET_", "PATH")))
    env["ANSIBLE_HOME"] = os.path.join(pdd, ".ansible")
    env["ANSIBLE_LOCAL_TEMP"] = os.path.join(pdd, ".ansible", "tmp")
    with open(os.path.join(pdd, "env", "envvars"), "w") as handle:
        json.dump(env, handle)
    with open(os.path.join(pdd, "env", "extravars"), "w") as handle:
        json.dump({"awx_job_id": 4700 + k, "tower_job_id": 4700 + k}, handle)
    with open(os.path.join(pdd, "env", "cmdline"), "w") as handle:
        handle.write("-f %d" % forks)
    return pdd, sorted(inventory.get("wpcloud_sites", {}).get("hosts", []))


def sliced_run(args, workroot, k_slices, repeat):
    fleet = fleet_bench.Fleet(os.path.join(workroot, "k%d-r%d" % (k_slices, repeat)), args.sites, args)
    try:
        made = [private_data_dir(fleet, fleet.dir, k, k_slices, args.forks) for k in range(1, k_slices + 1)]
        pdds, parts = [pdd for pdd, dummy in made], [part for dummy, part in made]
        busy0, total0 = fleet_bench.machine_cpu()
        started = time.monotonic()
        procs = [subprocess.Popen([os.path.join(BIN, "ansible-runner"), "run", pdd, "-p", "migrate_site.yml",
                                   "--ident", "job"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL)
                 for pdd in pdds]
        cpu, codes = 0.0, []
        for proc in procs:
            dummy, status, usage = os.wait4(proc.pid, 0)
            codes.append(os.waitstatus_to_exitcode(status))
            cpu += usage.ru_utime + usage.ru_stime
        wall = time.monotonic() - started
        busy1, total1 = fleet_bench.machine_cpu()
        log = fleet.emu.requests_log()
    finally:
        fleet.stop()
    tick = float(os.sysconf("SC_CLK_TCK"))
    once = {}
    for entry in log:
        if entry["write"] and entry["status"] == 200 and entry["endpoint"] in ("migration.create", "migration.ready"):
            key = (entry["endpoint"], entry["path"].rstrip("/").split("/")[-1])
            once[key] = once.get(key, 0) + 1
    creates = [v for (endpoint, dummy), v in once.items() if endpoint == "migration.create"]
    readies = [v for (endpoint, dummy), v in once.items() if endpoint == "migration.ready"]
    own_reports = True
    for part, pdd in zip(parts, pdds):
        files = [f for f in os.listdir(os.path.join(pdd, "reports")) if f.startswith("site-migration-")]
        with open(os.path.join(pdd, "reports", files[0])) as handle:
            report = json.load(handle)
        own_reports &= sorted(s["host"] for s in report["sites"]) == part and report["counts"] == {"succeeded": len(part)}
    return {"slices": k_slices, "repeat": repeat, "rc": max(codes), "wall": round(wall, 2), "cpu": round(cpu, 2),
            "reads": sum(1 for e in log if not e["write"]), "writes": sum(1 for e in log if e["write"]),
            "exactly_once": len(creates) == args.sites and set(creates) == {1}
            and len(readies) == args.sites and set(readies) == {1},
            "own_reports": own_reports,
            "machine_cores": round((busy1 - busy0) / tick / wall, 2),
            "loadavg": open("/proc/loadavg").read().split()[0]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--slices", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--preflight", type=float, default=2.0)
    parser.add_argument("--run", type=float, default=10.0)
    parser.add_argument("--accept-delay", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--workdir")
    args = parser.parse_args(argv)
    args.collection = fleet_bench.ROOT
    workroot = os.path.abspath(args.workdir or os.path.join(HERE, "work", "slices-" + time.strftime("%Y%m%dT%H%M%S")))
    os.makedirs(workroot, exist_ok=True)
    runs = []
    for repeat in range(args.repeats):
        for k in (1, args.slices):
            fleet_bench.log("K=%d x %d sites (repeat %d of %d)" % (k, args.sites // k, repeat + 1, args.repeats))
            result = sliced_run(args, workroot, k, repeat)
            runs.append(result)
            fleet_bench.log("  %s" % json.dumps(result))
    with open(os.path.join(workroot, "results.json"), "w") as handle:
        json.dump({"argv": sys.argv[1:], "runs": runs}, handle, indent=1)
    limit = 2 * (args.accept_delay + 1.0) + args.preflight + args.run
    print("\n| jobs | sites per job | runs | wall s (median) | wall − limit s | controller CPU-s (median) | CPU-s per site "
          "| API calls per site r / w | every site once | own reports | machine busy, cores (max) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for k in (1, args.slices):
        mine = [r for r in runs if r["slices"] == k]
        wall, cpu = fleet_bench.median([r["wall"] for r in mine]), fleet_bench.median([r["cpu"] for r in mine])
        print("| %d | %d | %d | %.1f | %+.1f | %.1f | %.3f | %.1f / %.1f | %s | %s | %.2f |" % (
            k, args.sites // k, len(mine), wall, wall - limit, cpu, cpu / args.sites,
            fleet_bench.median([r["reads"] for r in mine]) / args.sites,
            fleet_bench.median([r["writes"] for r in mine]) / args.sites,
            all(r["exactly_once"] for r in mine), all(r["own_reports"] for r in mine),
            max(r["machine_cores"] for r in mine)))
    return 0 if all(r["rc"] == 0 and r["exactly_once"] and r["own_reports"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
