#!/usr/bin/env python
"""Fleet migration benchmark: the collection's migrate_site playbook vs a plain-uri baseline vs the
physical limit, for fleets of N destination sites (docs/performance.md).

    .venv/bin/python tests/benchmarks/fleet/run.py [--sizes 1,10,50,100,200] [--forks 5]
        [--preflight 2 --run 10] [--baseline-max 100] [--docs] [--profile 100]
    .venv/bin/python tests/benchmarks/fleet/run.py --durations 10,60,300 --sizes 1,100 [--repeats 2]
        [--long-repeats 1]      # the adaptive waits (issue 26): today's fixed 1 s polls against the schedule
    .venv/bin/python tests/benchmarks/fleet/run.py --golive --sizes 1,100 --repeats 3 [--docs]
        # going live (issue 37): N sites cut over in one run, the cutover again, and go_live (backup, refresh, cutover)

Per N, each against a fresh emulator (tests/support/emulator, scripted executor, every site the same
preflight/run durations, loopback only):
  (a) collection: playbooks/migrate_site.yml (role site_migration, generated identity, key install off),
      then an idempotent re-run of the completed fleet with site_migration_refresh=false;
  (b) baseline:   tests/benchmarks/fleet/baseline/migrate_uri_baseline.yml (ansible.builtin.uri with
      until/retries/delay), same inventory, same forks; only for N <= --baseline-max;
  (c) limit:      computed, 2 x (accept_delay + 1 s poll granularity) + preflight + run.
Measured per run: wall, controller CPU (user+sys of ansible-playbook and all its reaped children, from
wait4), max RSS, API reads/writes per site (emulator request log), completion->return delay of every
ticket (emulator completion times from traced_emulator.py; task end times from the fleet_trace
callback), emulator CPU. Stdlib only; --docs also runs plot.py with .venv-bench (matplotlib).
"""

import argparse
import copy
import datetime
import glob
import json
import os
import shutil
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support", "emulator"))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import launcher  # noqa: E402  (tests/support/emulator/launcher.py)
import playbooks  # noqa: E402  (tests/support/playbooks.py: the collection tree, the callback plugins)

launcher.SERVER = os.path.join(HERE, "traced_emulator.py")  # server.py + ticket completion times

BIN = os.path.dirname(sys.executable)
BASELINE_PLAYBOOK = os.path.join(HERE, "baseline", "migrate_uri_baseline.yml")
DOC = os.path.join(ROOT, "docs", "performance.md")
PLOT = os.path.join(ROOT, "docs", "performance-fleet.png")
BENCH_PY = os.path.join(ROOT, ".venv-bench", "bin", "python")
START, END = "<!-- fleet-table:start -->", "<!-- fleet-table:end -->"
# --durations (issue 26): its own table and plot.
POLLING_MARKERS = ("<!-- polling-table:start -->", "<!-- polling-table:end -->")
POLLING_PLOT = os.path.join(ROOT, "docs", "performance-polling.png")
POLL = 1.0
SOURCE = "src.example"


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def pct(values, p):
    """Nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(p / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def machine_cpu():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def proc_cpu(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def tasks_file(trace):
    """The fleet_tasks callback's output beside a run's trace."""
    return trace.replace(".trace.jsonl", ".tasks.jsonl")


def read_tasks(path):
    """[[task name, wall s, controller CPU s]] in play order (fleet_tasks callback)."""
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [[entry["task"], entry["wall"], entry["cpu"]] for entry in map(json.loads, handle)]


class Fleet:
    """A fresh emulator with N sites and a run directory holding the inventory of the fleet."""

    def __init__(self, workdir, n, args):
        self.dir, self.n, self.args = workdir, n, args
        os.makedirs(workdir, exist_ok=True)
        # A reused work directory must not hand the fresh emulator the migration IDs of an old one.
        for stale in ("state", "reports"):
            shutil.rmtree(os.path.join(workdir, stale), ignore_errors=True)
        self.emu = launcher.start_emulator(os.path.join(workdir, "emulator"),
                                           extra_args=["--accept-delay", str(args.accept_delay),
                                                       "--log-level", "WARNING"])
        self.emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": args.preflight},
                                           "run": {"outcome": "success", "duration": args.run}}})
        self.sites = {}
        batch = []
        for i in range(n):
            site_id = 200001 + i
            batch.append({"id": site_id, "domain": "fleet-%04d.example" % (i + 1), "allow_migration": False})
            self.sites["site%04d" % (i + 1)] = {"site_migration_site": str(site_id)}
        for start in range(0, len(batch), 500):      # the emulator's hook adds many sites per call
            self.emu._hook("POST", "sites", {"sites": batch[start:start + 500]})
        playbooks.collection_tree(workdir, repo=args.collection)
        self.inventory = os.path.join(workdir, "inventory.json")
        common = {"ansible_connection": "local",
                  "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                  "site_migration_source_host": SOURCE,
                  "site_migration_install_key": False,
                  "site_migration_confirm_overwrite": True,
                  "site_migration_poll_interval": POLL,
                  "site_migration_state_dir": os.path.join(workdir, "state"),
                  "site_migration_report_dir": os.path.join(workdir, "reports")}
        inventory = {"all": {"vars": {"wpcloud_api_url": self.emu.url, "wpcloud_api_key": self.emu.api_key,
                                      "wpcloud_ca_path": self.emu.ca_path},
                             "children": {"wpcloud_sources": {"hosts": {SOURCE: {"ansible_user": "www"}}},
                                          "wpcloud_sites": {"vars": common, "hosts": self.sites}}}}
        with open(self.inventory, "w") as handle:
            json.dump(inventory, handle, indent=1)

    def stop(self):
        self.emu.stop()

    def env(self, trace):
        env = dict(os.environ)
        for name in ("WPCLOUD_API_URL", "WPCLOUD_API_KEY", "WPCLOUD_CA_PATH"):
            env.pop(name, None)
        env.update({
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(self.dir, "collections"),
            "ANSIBLE_CONFIG": os.path.join(self.dir, "no-ansible.cfg"),   # no config file: defaults
            "ANSIBLE_HOME": os.path.join(self.dir, ".ansible"),
            "ANSIBLE_LOCAL_TEMP": os.path.join(self.dir, ".ansible", "tmp"),
            "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_CALLBACK_PLUGINS": str(playbooks.CALLBACK_DIR),
            "ANSIBLE_CALLBACKS_ENABLED": "fleet_trace,fleet_tasks",
            "FLEET_TRACE_FILE": trace,
            "FLEET_TASKS_FILE": tasks_file(trace),
            "PATH": "%s:%s" % (BIN, env.get("PATH", "")),
        })
        return env

    def play(self, name, playbook, extra=(), wrap=()):
        """Run one playbook against the fleet; returns the measurements of the run."""
        trace = os.path.join(self.dir, "%s.trace.jsonl" % name)
        out = os.path.join(self.dir, "%s.out" % name)
        for path in (trace, tasks_file(trace)):
            if os.path.exists(path):
                os.unlink(path)
        previous = self.emu.requests_log()
        since = previous[-1]["seq"] if previous else 0
        argv = list(wrap) + [os.path.join(BIN, "ansible-playbook"), "-i", self.inventory,
                             "-f", str(self.args.forks), playbook] + list(extra)
        emu_cpu0 = proc_cpu(self.emu.proc.pid)
        busy0, total0 = machine_cpu()
        load0 = open("/proc/loadavg").read().split()[0]
        with open(out, "w") as handle:
            started = time.monotonic()
            proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=self.env(trace),
                                    cwd=self.dir, stdin=subprocess.DEVNULL, start_new_session=True)
            timer = threading.Timer(self.args.timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
            timer.start()
            dummy, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - started
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        emu_cpu = proc_cpu(self.emu.proc.pid)
        busy1, total1 = machine_cpu()
        tick = float(os.sysconf("SC_CLK_TCK"))
        own = usage.ru_utime + usage.ru_stime + ((emu_cpu or 0) - (emu_cpu0 or 0))
        # CPU used on the machine during the run by anything else (colleagues' jobs): contention.
        others = max(0.0, (busy1 - busy0) / tick - own)
        requests = self.emu.requests_log(since)
        reads = sum(1 for r in requests if not r["write"])
        writes = sum(1 for r in requests if r["write"])
        by_endpoint = {}
        for r in requests:
            by_endpoint[r["endpoint"]] = by_endpoint.get(r["endpoint"], 0) + 1
        delays = self.delays(trace)
        result = {
            "name": name, "n": self.n, "rc": proc.returncode, "wall": round(wall, 2),
            "cpu": round(usage.ru_utime + usage.ru_stime, 2), "cpu_user": round(usage.ru_utime, 2),
            "cpu_sys": round(usage.ru_stime, 2), "maxrss_mib": round(usage.ru_maxrss / 1024.0, 1),
            "reads": reads, "writes": writes, "by_endpoint": by_endpoint,
            "emulator_cpu": round(emu_cpu - emu_cpu0, 2) if emu_cpu is not None and emu_cpu0 is not None else None,
            "others_cpu": round(others, 1), "others_cores": round(others / wall, 2),
            "loadavg": open("/proc/loadavg").read().split()[0], "loadavg_start": load0,
            "output": out,
        }
        result.update(delays)
        result["tasks"] = read_tasks(tasks_file(trace))
        # Detection: a ticket's end (the emulator's completion) to the summary poll that first answered it,
        # both phases pooled; the rest of completion -> return is the task's (the wait ends with its last ticket).
        seen = [t["seen"] for t in ticket_polls(self) if t["seen"] is not None and t["seen"] >= -1.0]
        result.update(seen_p50=pct(seen, 50), seen_p95=pct(seen, 95), seen_max=max(seen) if seen else None,
                      phases=self.phases(trace))
        if proc.returncode != 0:
            log("  %s exited %s; see %s" % (name, proc.returncode, out))
        return result

    def phases(self, trace):
        """Per phase (preflight, ready): how far apart its tickets began (the starts' spread, which their ends
        keep), the last end to the last summary poll (the last ticket's detection), and that poll to the
        controller's result of the task (the task's own return): completion -> return of the earliest ticket
        is about the sum of the three (docs/performance.md, "Detection at a thousand sites")."""
        completed = {}
        path = os.path.join(self.emu.workdir, "ticket-completions.jsonl")
        if not os.path.exists(path) or not os.path.exists(trace):
            return {}
        with open(path) as handle:
            for line in handle:
                entry = json.loads(line)
                completed[entry["ticket_id"]] = entry
        polls = {}
        with open(os.path.join(self.emu.workdir, "ticket-polls.jsonl")) as handle:
            for line in handle:
                entry = json.loads(line)
                polls[entry["ticket_id"]] = max(polls.get(entry["ticket_id"], 0), entry["t"])
        returned = {}
        with open(trace) as handle:
            for line in handle:
                entry = json.loads(line)
                for tid in entry["done"]:
                    returned.setdefault(tid, entry["t"])
        out = {}
        for op in ("preflight", "ready"):
            mine = [t for t in completed.values() if t["operation"] == op and t["ticket_id"] in returned]
            created = [float(t["created"]) for t in mine if t.get("created")]
            if not mine or not created:
                continue
            last_end = max(t["completed"] for t in mine)
            last_poll = max(polls.get(t["ticket_id"], last_end) for t in mine)
            out[op] = {"spread": round(max(created) - min(created), 3), "last_seen": round(last_poll - last_end, 3),
                       "return": round(max(returned[t["ticket_id"]] for t in mine) - last_poll, 3)}
        return out

    def delays(self, trace):
        """Completion -> return delay of every ticket this run started (seconds)."""
        completed = {}
        path = os.path.join(self.emu.workdir, "ticket-completions.jsonl")
        if os.path.exists(path):
            with open(path) as handle:
                for line in handle:
                    entry = json.loads(line)
                    completed[entry["ticket_id"]] = entry
        started, returned = {}, {}
        if os.path.exists(trace):
            with open(trace) as handle:
                for line in handle:
                    entry = json.loads(line)
                    for tid in entry["started"]:
                        started.setdefault(tid, entry["t"])
                    for tid in entry["done"]:
                        returned.setdefault(tid, entry["t"])
        by_op = {"preflight": [], "ready": []}
        missing = 0
        ok = {"preflight": 0, "ready": 0}
        for tid in started:
            done = completed.get(tid)
            if done is None or tid not in returned:
                missing += 1
                continue
            by_op[done["operation"]].append(returned[tid] - done["completed"])
            ok[done["operation"]] += done["status"] == "success"
        every = by_op["preflight"] + by_op["ready"]

        def r3(v):
            return None if v is None else round(v, 3)
        return {"tickets": len(started), "tickets_unmatched": missing,
                "preflight_ok": ok["preflight"], "run_ok": ok["ready"],
                "delay_p50": r3(pct(every, 50)), "delay_p95": r3(pct(every, 95)), "delay_max": r3(max(every or [0])),
                "delay_preflight_p95": r3(pct(by_op["preflight"], 95)), "delay_run_p95": r3(pct(by_op["ready"], 95))}


def git_state(path):
    """HEAD of the benchmarked checkout and whether roles/plugins/playbooks had local changes."""
    try:
        head = subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "--", "roles", "plugins", "playbooks"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (with local changes in roles/plugins/playbooks)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def limit(args):
    return 2 * (args.accept_delay + POLL) + args.preflight + args.run


def bench(args, workroot):
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "argv": sys.argv[1:], "forks": args.forks, "preflight": args.preflight, "run": args.run,
               "accept_delay": args.accept_delay, "poll": POLL, "limit": limit(args), "runs": [],
               "collection": args.collection, "git": git_state(args.collection), "repeats": args.repeats,
               "long_repeats": args.long_repeats}
    if args.durations:
        return durations(args, workroot, results)
    if args.golive:
        return golive(args, workroot, results)
    if args.repeats > 1 or args.versions:
        return interleaved(args, workroot, results)
    for n in args.sizes:
        fleet = Fleet(os.path.join(workroot, "n%d-collection" % n), n, args)
        try:
            log("N=%d collection" % n)
            first = fleet.play("collection", os.path.join(args.collection, "playbooks", "migrate_site.yml"))
            first["kind"] = "collection"
            results["runs"].append(first)
            log("  wall %.1fs cpu %.1fs writes %d p95 %s"
                % (first["wall"], first["cpu"], first["writes"], first["delay_p95"]))
            if n in args.rerun_sizes:
                log("N=%d collection re-run (site_migration_refresh=false)" % n)
                again = fleet.play("rerun", os.path.join(args.collection, "playbooks", "migrate_site.yml"),
                                   extra=["-e", "site_migration_refresh=false"])
                again["kind"] = "rerun"
                results["runs"].append(again)
                log("  wall %.1fs cpu %.1fs writes %d" % (again["wall"], again["cpu"], again["writes"]))
        finally:
            fleet.stop()
        if n <= args.baseline_max:
            fleet = Fleet(os.path.join(workroot, "n%d-baseline" % n), n, args)
            try:
                log("N=%d baseline (uri)" % n)
                base = fleet.play("baseline", BASELINE_PLAYBOOK)
                base["kind"] = "baseline"
                results["runs"].append(base)
                log("  wall %.1fs cpu %.1fs writes %d p95 %s"
                    % (base["wall"], base["cpu"], base["writes"], base["delay_p95"]))
            finally:
                fleet.stop()
        with open(os.path.join(workroot, "results.json"), "w") as handle:
            json.dump(results, handle, indent=1)
    return results


def interleaved(args, workroot, results):
    """The sizes in turn, ``repeats`` times (1, 10, 100, 1, 10, 100, ...): every size sees the same
    machine conditions; the tables take medians. The re-runs follow the last repeat."""
    versions = args.versions or [("", args.collection, None)]
    results["versions"] = [(name, path, sizes, git_state(path)) for name, path, sizes in versions]
    for repeat in range(args.repeats):
        for n, (name, path, sizes) in [(n, v) for n in args.sizes for v in versions if v[2] is None or n in v[2]]:
            mine = copy.copy(args)
            mine.collection = path
            fleet = Fleet(os.path.join(workroot, "n%d-r%d%s" % (n, repeat, "-" + name if name else "")), n, mine)
            try:
                log("N=%d collection %s(repeat %d of %d), load average %s"
                    % (n, name + " " if name else "", repeat + 1, args.repeats, open("/proc/loadavg").read().split()[0]))
                run = fleet.play("collection", os.path.join(path, "playbooks", "migrate_site.yml"))
                run.update(kind="collection", repeat=repeat, version=name)
                results["runs"].append(run)
                log("  wall %.1fs cpu %.1fs writes %d p95 %s detection p95 %s other load %.2f cores"
                    % (run["wall"], run["cpu"], run["writes"], run["delay_p95"], _f(run["seen_p95"], "%.2f"),
                       run["others_cores"]))
                if repeat == args.repeats - 1 and n in args.rerun_sizes:
                    again = fleet.play("rerun", os.path.join(path, "playbooks", "migrate_site.yml"),
                                       extra=["-e", "site_migration_refresh=false"])
                    again.update(kind="rerun", repeat=repeat, version=name)
                    results["runs"].append(again)
                    log("  re-run wall %.1fs writes %d reads %d" % (again["wall"], again["writes"], again["reads"]))
            finally:
                fleet.stop()
            with open(os.path.join(workroot, "results.json"), "w") as handle:
                json.dump(results, handle, indent=1)
    return results


# ------------------------------------------------------------------------------------------ going live

GOLIVE_MARKERS = ("<!-- golive-table:start -->", "<!-- golive-table:end -->")
# What each measured run of --golive is, in order on its fleet (the migrate runs only set the fleet up).
GOLIVE_RUNS = (("cutover", "cutover.yml", "the cutover of N migrated sites in one run (cutover.yml)"),
               ("cutover_again", "cutover.yml", "the same again: every production domain primary already"),
               ("go_live", "go_live.yml", "go_live.yml on another fleet: a backup first, the refresh, the cutover"))


def golive_fleet(workdir, n, args):
    """A fleet whose sites name a production domain (every other one keeps its old domain as an alias), back up
    before a refresh, and belong to the emulator's client."""
    fleet = Fleet(workdir, n, args)
    with open(fleet.inventory) as handle:
        inventory = json.load(handle)
    sites = inventory["all"]["children"]["wpcloud_sites"]
    sites["vars"].update(site_migration_client=fleet.emu.client, site_migration_backup_before_refresh=True)
    for i, host in enumerate(sorted(sites["hosts"])):
        sites["hosts"][host].update(site_migration_production_domain="live-%04d.example" % (i + 1),
                                    site_migration_keep_old_domain_as_alias=i % 2 == 0)
    with open(fleet.inventory, "w") as handle:
        json.dump(inventory, handle, indent=1)
    return fleet


def golive(args, workroot, results):
    """--golive: per size and repeat, interleaved (1, 100, 1, 100 ...): a fleet migrated (not measured), then cut over
    in one run and cut over again; another fleet migrated, then taken live by go_live (its backups, refresh and
    cutover). Each measured run: wall, controller CPU, the API calls per site by endpoint, the machine's load."""
    results["golive"] = [name for name, dummy, dummy in GOLIVE_RUNS]
    confirm = ["-e", "site_migration_confirm_cutover=true"]
    for repeat in range(args.repeats):
        for n in args.sizes:
            for fleet_name, runs in (("cut", GOLIVE_RUNS[:2]), ("live", GOLIVE_RUNS[2:])):
                fleet = golive_fleet(os.path.join(workroot, "golive-n%d-r%d-%s" % (n, repeat, fleet_name)), n, args)
                try:
                    log("N=%d going live, fleet %s (repeat %d of %d), load average %s"
                        % (n, fleet_name, repeat + 1, args.repeats, open("/proc/loadavg").read().split()[0]))
                    setup = fleet.play("migrate", os.path.join(args.collection, "playbooks", "migrate_site.yml"))
                    if setup["rc"] != 0:
                        raise SystemExit("the fleet's first migration failed: %s" % setup["output"])
                    for name, playbook, dummy in runs:
                        run = fleet.play(name, os.path.join(args.collection, "playbooks", playbook), extra=confirm)
                        run.update(kind=name, repeat=repeat, per_site=dict(
                            (k, round(v / float(n), 2)) for k, v in run["by_endpoint"].items()))
                        results["runs"].append(run)
                        log("  %s: wall %.1fs cpu %.1fs writes %d reads %d other load %.2f cores"
                            % (name, run["wall"], run["cpu"], run["writes"], run["reads"], run["others_cores"]))
                finally:
                    fleet.stop()
                with open(os.path.join(workroot, "results.json"), "w") as handle:
                    json.dump(results, handle, indent=1)
    return results


def golive_tables(results):
    runs = results["runs"]
    rows = ["| run | N | runs | wall s (median; each) | controller CPU-s (median) | API calls per site: reads / writes "
            "(median) | other load, cores (each) | 1-min load average (each) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    sizes = sorted(set(r["n"] for r in runs))
    for name, dummy, about in GOLIVE_RUNS:
        for n in sizes:
            mine = [r for r in runs if r.get("kind") == name and r["n"] == n]
            if not mine:
                continue
            rows.append("| %s | %d | %d | %.1f (%s) | %.1f | %.1f / %.1f | %s | %s |" % (
                name, n, len(mine), median([r["wall"] for r in mine]), ", ".join("%.1f" % r["wall"] for r in mine),
                median([r["cpu"] for r in mine]), median([r["reads"] / float(n) for r in mine]),
                median([r["writes"] / float(n) for r in mine]), ", ".join("%.2f" % r["others_cores"] for r in mine),
                ", ".join(r["loadavg_start"] for r in mine)))
    calls = ["| run | N | API calls per site by endpoint (the last run) |", "| --- | --- | --- |"]
    for name, dummy, about in GOLIVE_RUNS:
        for n in sizes:
            mine = [r for r in runs if r.get("kind") == name and r["n"] == n]
            if mine:
                calls.append("| %s | %d | %s |" % (name, n, ", ".join(
                    "%s %g" % (k, v) for k, v in sorted(mine[-1]["per_site"].items()))))
    legend = "\n".join("* `%s`: %s." % (name, about) for name, dummy, about in GOLIVE_RUNS)
    return "\n".join(rows) + "\n\n" + "\n".join(calls) + "\n\n" + legend


# ------------------------------------------------------------------------------------------ durations

# The two poll schedules compared by --durations: "today" is the same code with poll_max_interval equal to
# poll_interval (the fixed 1 s rhythm of 33150e7), "after" the default schedule.
VARIANTS = {"today": ["-e", "site_migration_poll_max_interval=%g" % POLL], "after": []}


def ticket_polls(fleet):
    """Per ticket of the run: operation, summary polls, and completion -> the poll that saw the end (s)."""
    completed, polls = {}, {}
    for name, into in (("ticket-completions.jsonl", completed), ("ticket-polls.jsonl", polls)):
        path = os.path.join(fleet.emu.workdir, name)
        if not os.path.exists(path):
            continue
        with open(path) as handle:
            for line in handle:
                entry = json.loads(line)
                if into is completed:
                    completed[entry["ticket_id"]] = entry
                else:
                    polls.setdefault(entry["ticket_id"], []).append(entry)
    tickets = []
    for tid, done in completed.items():
        mine = polls.get(tid, [])
        seen = next((p["t"] for p in mine if p["status"] in ("success", "failure")), None)
        tickets.append({"operation": done["operation"], "polls": len(mine),
                        "seen": None if seen is None else seen - done["completed"]})
    return tickets


def peak_per_second(requests):
    """The most requests the emulator received within any one second (its log's times)."""
    times = sorted(r["time"] for r in requests)
    peak, first = 0, 0
    for last, when in enumerate(times):
        while times[first] <= when - 1.0:
            first += 1
        peak = max(peak, last - first + 1)
    return peak


def report_load(fleet):
    """api_load of the role's JSON report of the run (issue 26)."""
    reports = sorted(glob.glob(os.path.join(fleet.dir, "reports", "*.json")), key=os.path.getmtime)
    if not reports:
        return None
    with open(reports[-1]) as handle:
        return json.load(handle).get("api_load")


def durations(args, workroot, results):
    """Run durations D x sizes N x the two schedules, interleaved (today, after, for each N and D in turn),
    ``repeats`` times; D >= 300 only ``long_repeats`` times (a 300 s run takes ~6 minutes)."""
    results.update(durations=args.durations, variants=list(VARIANTS))
    for repeat in range(args.repeats):
        for d in args.durations:
            if d >= 300 and repeat >= args.long_repeats:
                continue
            for n in args.sizes:
                for variant, extra in VARIANTS.items():
                    run_args = copy.copy(args)
                    run_args.run = d
                    fleet = Fleet(os.path.join(workroot, "d%g-n%d-%s-r%d" % (d, n, variant, repeat)), n, run_args)
                    try:
                        log("D=%gs N=%d %s (repeat %d)" % (d, n, variant, repeat + 1))
                        since = fleet.emu.requests_log()
                        run = fleet.play(variant, os.path.join(args.collection, "playbooks", "migrate_site.yml"),
                                         extra=extra)
                        tickets = ticket_polls(fleet)
                        requests = fleet.emu.requests_log(since[-1]["seq"] if since else 0)
                        runs = [t for t in tickets if t["operation"] == "ready"]
                        seen = [t["seen"] for t in runs if t["seen"] is not None]
                        run.update(kind="durations", variant=variant, d=d, repeat=repeat,
                                   run_polls=median([t["polls"] for t in runs]),
                                   run_polls_max=max([t["polls"] for t in runs] or [0]),
                                   preflight_polls=median([t["polls"] for t in tickets if t["operation"] == "preflight"]),
                                   seen_p50=pct(seen, 50), seen_p95=pct(seen, 95), seen_max=max(seen or [0]),
                                   service_peak=peak_per_second(requests), api_load=report_load(fleet))
                        results["runs"].append(run)
                        log("  wall %.1fs cpu %.1fs run polls/ticket %s seen p50/p95 %s/%s s, peak %s/s, other load "
                            "%.2f cores" % (run["wall"], run["cpu"], run["run_polls"], _f(run["seen_p50"], "%.2f"),
                                            _f(run["seen_p95"], "%.2f"), run["service_peak"], run["others_cores"]))
                    finally:
                        fleet.stop()
                    with open(os.path.join(workroot, "results.json"), "w") as handle:
                        json.dump(results, handle, indent=1)
    return results


def duration_tables(results):
    """Medians per (D, N, schedule): polls per run ticket, detection, wall, CPU, the peak rate."""
    runs = [r for r in results["runs"] if r["kind"] == "durations" and r["rc"] == 0]
    lines = ["| D s | N | schedule | runs | run-phase polls per ticket | detection p50 / p95 s (run tickets) "
             "| completion→return p95 s | wall s | CPU-s | API calls per site | peak requests/s (service) "
             "| other load, cores (max) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for d in sorted({r["d"] for r in runs}):
        for n in sorted({r["n"] for r in runs}):
            for variant in VARIANTS:
                mine = [r for r in runs if r["d"] == d and r["n"] == n and r["variant"] == variant]
                if not mine:
                    continue

                def med(key):
                    return median([r[key] for r in mine])
                lines.append("| %g | %d | %s | %d | %s | %s / %s | %s | %.1f | %.1f | %.1f | %s | %.2f |" % (
                    d, n, variant, len(mine), _f(med("run_polls"), "%.1f"), _f(med("seen_p50"), "%.2f"),
                    _f(med("seen_p95"), "%.2f"), _f(med("delay_run_p95"), "%.2f"), med("wall"), med("cpu"),
                    (med("reads") + med("writes")) / n, _f(med("service_peak"), "%d"),
                    max(r["others_cores"] for r in mine)))
    return "\n".join(lines)


def versions_table(results):
    """--versions: medians per version and N (interleaved runs), every run's load average beside them."""
    lines = ["| version (commit) | N | runs | wall s | wall − limit s | CPU-s | CPU-s per site | detection p50 / p95 s "
             "| completion→return p95 s | starts' spread / last end→its poll / that poll→return s (phases pooled) "
             "| API calls per site r / w | load average at start, per run | other load, cores (max) | re-run: wall s, writes |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, path, sizes, git in results["versions"]:
        for n in sorted({r["n"] for r in results["runs"] if r.get("version") == name}):
            mine = [r for r in results["runs"] if r.get("version") == name and r["n"] == n and r["kind"] == "collection"
                    and r["rc"] == 0]
            again = [r for r in results["runs"] if r.get("version") == name and r["n"] == n and r["kind"] == "rerun"]
            if not mine:
                continue

            def med(key):
                return median([r[key] for r in mine])

            def phase(key):
                return _f(median([p[key] for r in mine for p in r.get("phases", {}).values()]), "%.2f")
            cells = (name, git.split(" ")[0], n, len(mine), med("wall"), med("wall") - results["limit"], med("cpu"),
                     med("cpu") / n, _f(med("seen_p50"), "%.2f"), _f(med("seen_p95"), "%.2f"), _f(med("delay_p95"), "%.2f"),
                     phase("spread"), phase("last_seen"), phase("return"), med("reads") / n, med("writes") / n,
                     ", ".join(r.get("loadavg_start", "?") for r in mine), max(r["others_cores"] for r in mine),
                     ", ".join("%.1f s, %d" % (r["wall"], r["writes"]) for r in again) or "–")
            lines.append("| %s (%s) | %d | %d | %.1f | %+.1f | %.1f | %.3f | %s / %s | %s | %s / %s / %s | %.1f / %.1f | %s "
                         "| %.2f | %s |" % cells)
    return "\n".join(lines)


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def scale_tables(results):
    """Issue 17's figures from interleaved repeats: medians per N, overhead in seconds against the limit."""
    runs = [r for r in results["runs"] if r["kind"] == "collection" and r["rc"] == 0]
    sizes = sorted({r["n"] for r in runs})
    lim = results["limit"]

    def med(n, key):
        return median([r[key] for r in runs if r["n"] == n])
    lines = ["| N | runs | wall s (median) | wall − limit s | wall − N=1 wall s | CPU-s (median) | CPU-s per site "
             "| p95 completion→return s | API calls per site r / w | polls per ticket (minimum) "
             "| other load, cores (max) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    one = med(1, "wall") if 1 in sizes else None
    # The fewest summary polls a ticket can take at 1 s granularity: one per second of its life after the
    # 202 window, plus the one that sees it end.
    minimum = ((args_ceil(results["accept_delay"] + results["preflight"]) + 1)
               + (args_ceil(results["accept_delay"] + results["run"]) + 1)) / 2.0
    for n in sizes:
        mine = [r for r in runs if r["n"] == n]
        polls = median([r["by_endpoint"].get("ticket.summary", 0) / float(max(1, r["tickets"])) for r in mine])
        lines.append("| %d | %d | %.1f | %+.1f | %s | %.1f | %.3f | %s | %.1f / %.1f | %.1f (%.1f) | %.2f |" % (
            n, len(mine), med(n, "wall"), med(n, "wall") - lim,
            "–" if one is None or n == 1 else "%+.1f" % (med(n, "wall") - one), med(n, "cpu"),
            med(n, "cpu") / n, _f(med(n, "delay_p95"), "%.2f"), med(n, "reads") / n, med(n, "writes") / n,
            polls, minimum, max(r["others_cores"] for r in mine)))
    big = [n for n in sizes if n >= 100]
    added = "–"
    if len(big) >= 2:
        lo, hi = big[0], big[-1]
        added = "%.3f CPU-s per added site (N=%d to %d)" % ((med(hi, "cpu") - med(lo, "cpu")) / (hi - lo), lo, hi)
    reruns = ["N=%d: %d writes, %.1f reads per site, %.1f s"
              % (r["n"], r["writes"], r["reads"] / float(r["n"]), r["wall"])
              for r in results["runs"] if r["kind"] == "rerun"]
    return "\n".join(lines) + "\n\nController CPU: %s. Re-runs (refresh false): %s." % (added, "; ".join(reruns) or "–")


def args_ceil(value):
    return int(-(-value // 1))


# ------------------------------------------------------------------------------------------ report

def _f(value, fmt="%.1f"):
    return "–" if value is None else fmt % value


def tables(results):
    runs = results["runs"]

    def get(kind, n):
        return next((r for r in runs if r["kind"] == kind and r["n"] == n), None)
    sizes = sorted({r["n"] for r in runs})
    lim = results["limit"]
    lines = ["| N | collection wall s | baseline wall s | limit s | collection / limit | baseline / collection "
             "| CPU-s per site (coll. / base.) | API calls per site r/w (coll. / base.) "
             "| p95 completion→return s (coll. / base.) | re-run writes (wall s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in sizes:
        c, b, rr = get("collection", n), get("baseline", n), get("rerun", n)
        lines.append("| %d | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s / %s | %s |" % (
            n, _f(c and c["wall"]), _f(b and b["wall"]), _f(lim),
            _f(c and c["wall"] / lim, "%.2f"), _f(b and c and b["wall"] / c["wall"], "%.1fx"),
            _f(c and c["cpu"] / n, "%.2f"), _f(b and b["cpu"] / n, "%.2f"),
            "%.1f/%.1f" % (c["reads"] / n, c["writes"] / n) if c else "–",
            "%.1f/%.1f" % (b["reads"] / n, b["writes"] / n) if b else "–",
            _f(c and c["delay_p95"], "%.2f"), _f(b and b["delay_p95"], "%.2f"),
            "%d (%.1f)" % (rr["writes"], rr["wall"]) if rr else "–"))
    detail = ["| run | N | rc | wall s | CPU s (user+sys) | CPU-s / site | max RSS MiB | reads / writes "
              "| delay p50 / p95 / max s | preflight / run p95 s | runs succeeded | emulator CPU s | other load (cores) |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    order = {"collection": 0, "rerun": 1, "baseline": 2}
    for r in sorted(runs, key=lambda r: (order[r["kind"]], r["n"])):
        detail.append("| %s | %d | %d | %.1f | %.1f (%.1f+%.1f) | %.2f | %.0f | %d / %d | %s / %s / %s | %s / %s | %s | %s | %s |" % (
            r["kind"] + (" " + r["version"] if r.get("version") else ""), r["n"], r["rc"], r["wall"], r["cpu"], r["cpu_user"], r["cpu_sys"], r["cpu"] / r["n"],
            r["maxrss_mib"], r["reads"], r["writes"], _f(r["delay_p50"], "%.2f"), _f(r["delay_p95"], "%.2f"),
            _f(r["delay_max"], "%.2f"), _f(r["delay_preflight_p95"], "%.2f"), _f(r["delay_run_p95"], "%.2f"),
            "%d/%d" % (r["run_ok"], r["n"]) if r["kind"] != "rerun" else "–", _f(r["emulator_cpu"]),
            _f(r.get("others_cores"), "%.2f")))
    return "\n".join(lines), "\n".join(detail)


def targets(results):
    runs = results["runs"]

    def get(kind, n):
        return next((r for r in runs if r["kind"] == kind and r["n"] == n), None)
    c1, c100, b100, rr100 = get("collection", 1), get("collection", 100), get("baseline", 100), get("rerun", 100)
    rows = ["| target (N=100, reported, not asserted) | measured | met |", "| --- | --- | --- |"]

    def row(text, value, ok):
        rows.append("| %s | %s | %s |" % (text, value, "–" if ok is None else ("yes" if ok else "**no**")))
    if c1 and c100:
        ratio = c100["wall"] / c1["wall"]
        row("wall ≤ 1.5 × single-site wall", "%.1f s / %.1f s = %.2f×" % (c100["wall"], c1["wall"], ratio), ratio <= 1.5)
    if c100 and b100:
        ratio = b100["wall"] / c100["wall"]
        row("≥ 5× faster than the uri baseline (same forks)", "%.1f s vs %.1f s = %.1f×" % (b100["wall"], c100["wall"], ratio),
            ratio >= 5)
    if c100:
        row("controller CPU ≤ 0.5 CPU-s per site", "%.2f CPU-s" % (c100["cpu"] / 100), c100["cpu"] / 100 <= 0.5)
        row("p95 completion→return ≤ 1.2 s", "%.2f s" % c100["delay_p95"], c100["delay_p95"] <= 1.2)
    if rr100:
        row("re-run of the completed fleet: 0 writes", "%d writes, %d reads" % (rr100["writes"], rr100["reads"]),
            rr100["writes"] == 0)
    return "\n".join(rows)


def render(results):
    if results.get("golive"):
        head = ("Generated by `%s` on %s (collection at %s): forks %d, preflight %gs, run %gs, accept delay %gs, poll "
                "interval %gs, the emulator's domain job 0.2 + 1.0 s and backups 1.0 s (its defaults); sizes "
                "interleaved, %d repeats, medians." % (
                    " ".join(["tests/benchmarks/fleet/run.py"] + results["argv"]), results["started"],
                    results.get("git", "unknown"), results["forks"], results["preflight"], results["run"],
                    results["accept_delay"], results["poll"], results["repeats"]))
        return "\n\n".join([head, golive_tables(results)])
    if results.get("durations"):
        head = ("Generated by `%s` on %s (collection at %s): forks %d, preflight %gs, run D s, accept delay %gs, "
                "poll interval %gs; schedules interleaved (today = poll_max_interval %g, after = the default), "
                "%d repeats (D >= 300: %d), medians." % (
                    " ".join(["tests/benchmarks/fleet/run.py"] + results["argv"]), results["started"],
                    results.get("git", "unknown"), results["forks"], results["preflight"], results["accept_delay"],
                    results["poll"], results["poll"], results["repeats"], results.get("long_repeats", 1)))
        return "\n\n".join([head, duration_tables(results)])
    summary, detail = tables(results)
    if results.get("versions") and results["versions"][0][0]:
        head = ("Generated by `%s` on %s: forks %d, preflight %gs, run %gs, accept delay %gs, poll interval %gs; limit "
                "%gs; versions and sizes interleaved, %d repeats, medians." % (
                    " ".join(["tests/benchmarks/fleet/run.py"] + results["argv"]), results["started"], results["forks"],
                    results["preflight"], results["run"], results["accept_delay"], results["poll"], results["limit"],
                    results["repeats"]))
        return "\n\n".join([head, versions_table(results), "Every run:", detail])
    if results.get("repeats", 1) > 1:
        head = ("Generated by `%s` on %s (collection at %s): forks %d, preflight %gs, run %gs, accept delay %gs, poll "
                "interval %gs; limit %gs; %d interleaved repeats, medians." % (
                    " ".join(["tests/benchmarks/fleet/run.py"] + results["argv"]), results["started"],
                    results.get("git", "unknown"), results["forks"], results["preflight"], results["run"],
                    results["accept_delay"], results["poll"], results["limit"], results["repeats"]))
        return "\n\n".join([head, scale_tables(results), "Every run:", detail])
    head = ("Generated by `%s` on %s (collection at %s): forks %d, preflight %gs, run %gs, accept delay (202 window) %gs, "
            "poll interval %gs; limit = 2 × (accept delay + poll interval) + preflight + run = %gs." % (
                " ".join(["tests/benchmarks/fleet/run.py"] + results["argv"]), results["started"],
                results.get("git", "unknown"), results["forks"],
                results["preflight"], results["run"], results["accept_delay"], results["poll"], results["limit"]))
    return "\n\n".join([head, summary, "Targets:", targets(results), "Every run:", detail])


def update_doc(text, markers=(START, END)):
    start, end = markers
    with open(DOC, encoding="utf-8") as handle:
        doc = handle.read()
    if start not in doc or end not in doc:
        raise SystemExit("%s has no %s ... %s markers" % (DOC, start, end))
    before, rest = doc.split(start, 1)
    after = rest.split(end, 1)[1]
    with open(DOC, "w", encoding="utf-8") as handle:
        handle.write(before + start + "\n" + text + "\n" + end + after)


def plot(results_path, out=PLOT):
    if not os.path.exists(BENCH_PY):
        log("no %s: plot skipped (python3.12 -m venv .venv-bench && .venv-bench/bin/pip install -r "
            "tests/benchmarks/fleet/requirements.txt)" % BENCH_PY)
        return
    subprocess.run([BENCH_PY, os.path.join(HERE, "plot.py"), results_path, out], check=True)
    log("plot: %s" % out)


# ------------------------------------------------------------------------------------------ profile

def profile(args, workroot):
    """The collection at N under py-spy (all processes: the controller and its forks)."""
    pyspy = os.path.join(ROOT, ".venv-bench", "bin", "py-spy")
    if not os.path.exists(pyspy):
        raise SystemExit("profile needs py-spy in .venv-bench (tests/benchmarks/fleet/requirements.txt)")
    n = args.profile
    fleet = Fleet(os.path.join(workroot, "n%d-profile" % n), n, args)
    raw = os.path.join(workroot, "profile-n%d.txt" % n)
    try:
        # --gil: only the thread that holds the GIL, i.e. Python on the CPU. Without it the modules'
        # waiting threads (16 per list task, blocked in SSL reads) pass py-spy's idle filter.
        log("N=%d collection under py-spy (--subprocesses --gil, %d Hz)" % (n, args.profile_rate))
        run = fleet.play("profile", os.path.join(args.collection, "playbooks", "migrate_site.yml"),
                         wrap=[pyspy, "record", "--subprocesses", "--gil", "--rate", str(args.profile_rate),
                               "--format", "raw", "--output", raw, "--"])
    finally:
        fleet.stop()
    log("  wall %.1fs cpu %.1fs (profiled; not comparable with the table)" % (run["wall"], run["cpu"]))
    summary = summarize_profile(raw)
    with open(os.path.join(workroot, "profile-n%d.md" % n), "w") as handle:
        handle.write(summary + "\n")
    print(summary)


# Leaf functions that are blocked, not computing: py-spy's idle detection lets some through (thread-pool
# workers waiting on their queue, condition waits, pipe/socket reads); shown apart, not as CPU.
BLOCKING_LEAVES = re.compile(r"^(?:_worker \(concurrent/futures/thread|Condition\.wait |Event\.wait |"
                             r"Connection\._recv |Connection\.poll|socket\.accept |SSLSocket\.read |SSLSocket\.recv|"
                             r"select |poll |_poll |wait \(|sleep |_wait_for_tstate_lock |Queue\.get |SimpleQueue\.get)")

CATEGORIES = [  # first match on the stack, from the leaf up, names the category of a sample
    ("TLS / HTTP (requests, urllib3, ssl, http.client)",
     re.compile(r"\((?:requests|urllib3|ssl|http/client)[/.]|/(?:requests|urllib3)/|/ssl\.py|http/client\.py")),
    ("Jinja2 templating (ansible _internal/_templating, jinja2)", re.compile(r"/jinja2/|_templating/|/template/")),
    ("module arg validation (ArgumentSpecValidator)", re.compile(r"module_utils/common/(?:arg_spec|parameters|validation)")),
    ("collection module logic (module_utils of wpcloud)", re.compile(r"wpcloud/hosting/plugins/module_utils")),
    ("variable manager (get_vars, hostvars)", re.compile(r"ansible/vars/")),
    ("worker process start / fork / IPC (multiprocessing, queues)",
     re.compile(r"multiprocessing/|executor/process/|_internal/_.*queue|worker")),
    ("callbacks / display", re.compile(r"plugins/callback/|utils/display")),
    ("strategy / task queue manager", re.compile(r"plugins/strategy/|executor/task_queue_manager")),
    ("task executor", re.compile(r"executor/task_executor")),
    ("plugin loading / imports", re.compile(r"plugins/loader|<frozen importlib")),
    ("playbook / inventory parsing", re.compile(r"ansible/playbook/|ansible/inventory/|ansible/parsing/")),
]


def summarize_profile(raw):  # noqa: C901
    """Self and category totals from py-spy's raw (collapsed) output."""
    total = 0
    self_time, categories, processes, by_proc = {}, {}, {}, {}
    frame_re = re.compile(r"^(.*) \((.*?)(?::\d+)?\)$")
    with open(raw, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, dummy, count = line.rpartition(" ")
            try:
                count = int(count)
            except ValueError:
                continue
            frames = stack.split(";")
            total += count
            depth = sum(1 for f in frames if f.startswith("process "))
            kind = {1: "ansible-playbook main process", 2: "forked workers (one per host and task)"}.get(
                depth, "module processes and other descendants")
            frames = [f for f in frames if not f.startswith("process ")] or ["?"]
            leaf = frames[-1]
            match = frame_re.match(leaf)
            name = "%s (%s)" % (match.group(1), _short(match.group(2))) if match else leaf
            self_time[name] = self_time.get(name, 0) + count
            if BLOCKING_LEAVES.match(leaf):
                label = "(blocked in a wait or read: not CPU; py-spy idle detection let it through)"
            else:
                label = next((cat for f in reversed(frames) for cat, pattern in CATEGORIES if pattern.search(f)), "other")
            categories[label] = categories.get(label, 0) + count
            if not label.startswith("(blocked"):
                processes[kind] = processes.get(kind, 0) + count
                by_proc.setdefault(kind, {})
                by_proc[kind][label] = by_proc[kind].get(label, 0) + count
    out = ["py-spy samples (on-CPU): %d" % total, "",
           "| where (first matching frame, leaf first) | share of on-CPU samples |", "| --- | --- |"]
    for label, count in sorted(categories.items(), key=lambda kv: -kv[1]):
        out.append("| %s | %.1f %% |" % (label, 100.0 * count / max(total, 1)))
    busy = sum(processes.values())
    out += ["", "| process (blocked samples left out) | share of CPU samples | its top categories |", "| --- | --- | --- |"]
    for label, count in sorted(processes.items(), key=lambda kv: -kv[1]):
        top = sorted(by_proc[label].items(), key=lambda kv: -kv[1])[:4]
        out.append("| %s | %.1f %% | %s |" % (label, 100.0 * count / max(busy, 1), "; ".join(
            "%s %.0f %%" % (cat.split(" (")[0], 100.0 * n / count) for cat, n in top)))
    out += ["", "| top self time (function, file) | share |", "| --- | --- |"]
    for label, count in sorted(self_time.items(), key=lambda kv: -kv[1])[:20]:
        out.append("| `%s` | %.1f %% |" % (label, 100.0 * count / max(total, 1)))
    return "\n".join(out)


def _short(path):
    for marker in ("site-packages/", "ansible_collections/", "lib/python3.12/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


# ------------------------------------------------------------------------------------------ main

def versions_arg(text):
    versions = []
    for item in text.split(","):
        name, path = item.split("=", 1)
        path, dummy, sizes = path.partition("@")
        versions.append((name, os.path.abspath(path), [int(x) for x in sizes.split("+")] if sizes else None))
    return versions


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])

    def ints(text):
        return [int(x) for x in text.split(",") if x.strip()]
    parser.add_argument("--sizes", type=ints, default=[1, 10, 50, 100, 200], help="fleet sizes N (default 1,10,50,100,200)")
    parser.add_argument("--forks", type=int, default=5, help="ansible-playbook -f for both playbooks (default 5)")
    parser.add_argument("--preflight", type=float, default=2.0, help="server-side preflight duration s (default 2)")
    parser.add_argument("--run", type=float, default=10.0, help="server-side run duration s (default 10)")
    parser.add_argument("--accept-delay", type=float, default=1.0, help="the emulator's 202 window s (default 1)")
    parser.add_argument("--baseline-max", type=int, default=100,
                        help="run the uri baseline only for N <= this (default 100; 200 takes ~12 min more)")
    parser.add_argument("--rerun-sizes", type=ints, default=None,
                        help="sizes that get the refresh=false re-run (default: every size)")
    parser.add_argument("--timeout", type=float, default=1800, help="per playbook run, s")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run the sizes in turn this many times, interleaved (1, N, 1, N ...), and report medians "
                             "(no baseline); the re-runs follow the last repeat")
    parser.add_argument("--durations", type=lambda text: [float(x) for x in text.split(",") if x.strip()],
                        help="run durations D (s) to compare today's fixed 1 s polls with the adaptive schedule "
                             "(issue 26), e.g. 10,60,300; with --sizes 1,100")
    parser.add_argument("--golive", action="store_true",
                        help="going live (issue 37): N sites cut over in one run, the cutover again, and go_live; "
                             "with --sizes 1,100 --repeats 3")
    parser.add_argument("--long-repeats", type=int, default=1,
                        help="with --durations: repeats of the runs of D >= 300 s (default 1)")
    parser.add_argument("--workdir", help="default tests/benchmarks/fleet/work/<timestamp> (gitignored)")
    parser.add_argument("--docs", action="store_true",
                        help="write the tables into docs/performance.md and the plot into docs/performance-fleet.png")
    parser.add_argument("--profile", type=int, metavar="N",
                        help="instead of the benchmark: run the collection at N under py-spy and summarize")
    parser.add_argument("--profile-rate", type=int, default=200, help="py-spy samples per second (default 200)")
    parser.add_argument("--collection", default=ROOT,
                        help="collection root to benchmark (default: this checkout; e.g. a patched copy)")
    parser.add_argument("--versions", type=versions_arg, default=None,
                        help="with --repeats: collections to compare, interleaved per size, as NAME=PATH[@N+N...] "
                             "(the sizes that version runs at; default all), e.g. base=/tmp/base,branch=.")
    parser.add_argument("--report", metavar="RESULTS_JSON", help="only render (and with --docs, write) a results.json")
    args = parser.parse_args(argv)
    args.collection = os.path.abspath(args.collection)
    if args.rerun_sizes is None:
        args.rerun_sizes = args.sizes
    workroot = os.path.abspath(args.workdir or os.path.join(HERE, "work", time.strftime("%Y%m%dT%H%M%S")))
    if args.report:
        with open(args.report) as handle:
            results = json.load(handle)
        results_path = args.report
    else:
        os.makedirs(workroot, exist_ok=True)
        log("work directory %s" % workroot)
        if args.profile:
            profile(args, workroot)
            return 0
        results = bench(args, workroot)
        results_path = os.path.join(workroot, "results.json")
    text = render(results)
    print()
    print(text)
    if args.docs and results.get("golive"):
        update_doc(text, GOLIVE_MARKERS)
        log("updated %s" % DOC)
    elif args.docs:
        polling = bool(results.get("durations"))
        update_doc(text, POLLING_MARKERS if polling else (START, END))
        plot(results_path, POLLING_PLOT if polling else PLOT)
        log("updated %s" % DOC)
    return 0 if all(r["rc"] == 0 for r in results["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
