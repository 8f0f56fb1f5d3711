#!/usr/bin/env python
"""Plot wall time against fleet size N: collection, uri baseline, physical limit (docs/performance-fleet.png).

    .venv-bench/bin/python tests/benchmarks/fleet/plot.py RESULTS_JSON OUT_PNG

Run by run.py --docs; needs matplotlib (tests/benchmarks/fleet/requirements.txt, venv .venv-bench).
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def scale(results, out):
    """Interleaved repeats (run.py --repeats): median wall and controller CPU against N, the limit."""
    runs = [r for r in results["runs"] if r["kind"] == "collection" and r["rc"] == 0]
    sizes = sorted({r["n"] for r in runs})
    wall = [median([r["wall"] for r in runs if r["n"] == n]) for n in sizes]
    cpu = [median([r["cpu"] for r in runs if r["n"] == n]) for n in sizes]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    left.plot(sizes, wall, "o-", color="tab:blue", label="playbooks/migrate_site.yml (median of %d)" % results["repeats"])
    left.plot(sizes, [results["limit"]] * len(sizes), "k:", label="the service's limit %gs" % results["limit"])
    left.set_xscale("log")
    left.set_xlabel("destination sites (N)")
    left.set_ylabel("wall time (s)")
    left.set_ylim(bottom=0)
    left.grid(True, alpha=0.3)
    left.legend(fontsize=8, loc="upper left")
    right.plot(sizes, cpu, "o-", color="tab:orange", label="controller CPU-s (user+sys, all processes)")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("destination sites (N)")
    right.set_ylabel("CPU-s")
    right.grid(True, alpha=0.3)
    right.legend(fontsize=8, loc="upper left")
    fig.suptitle("Fleet migration: preflight %gs, run %gs per site, forks %d (emulator, 2 cores)"
                 % (results["preflight"], results["run"], results["forks"]))
    fig.tight_layout()
    fig.savefig(out)


def gap(age, interval=1.0, cap=12.0):
    """The adaptive schedule (plugins/module_utils/service/poller.py poll_gap, default options)."""
    return min(cap, interval + 0.65 * (age - 10.0) ** 0.5) if age > 10.0 else interval


def schedule_polls(d, accept=1.0, cap=12.0):
    """Summary polls of one run ticket that ends at d + the 202 window under the schedule (computed)."""
    age, polls = 0.0, 1
    while age < d + accept:
        age += gap(age, cap=cap)
        polls += 1
    return polls


def polling(results, out):
    """run.py --durations (issue 26): run-phase polls per ticket and detection p95 against D, both schedules."""
    runs = [r for r in results["runs"] if r["kind"] == "durations" and r["rc"] == 0]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    styles = {("today", 1): ("s--", "tab:red"), ("today", 100): ("s-", "tab:red"),
              ("after", 1): ("o--", "tab:blue"), ("after", 100): ("o-", "tab:blue")}
    for (variant, n), (style, color) in styles.items():
        ds = sorted({r["d"] for r in runs if r["variant"] == variant and r["n"] == n})
        if not ds:
            continue
        label = "%s, N=%d" % ("today (fixed 1 s)" if variant == "today" else "adaptive (cap 12 s)", n)
        left.plot(ds, [median([r["run_polls"] for r in runs if r["d"] == d and r["n"] == n and r["variant"] == variant])
                       for d in ds], style, color=color, label=label)
        right.plot(ds, [median([r["seen_p95"] for r in runs if r["d"] == d and r["n"] == n and r["variant"] == variant])
                        for d in ds], style, color=color, label=label)
    grid = [5 * k for k in range(1, 121)]
    left.plot(grid, [schedule_polls(d) for d in grid], ":", color="tab:blue", alpha=0.6, label="adaptive, computed")
    left.plot([60, 300], [30, 60], "k^", label="targets (at most)")
    right.plot([60, 300], [6, 15], "k^", label="targets (p95 at most)")
    for ax, ylabel in ((left, "summary polls per run ticket"), (right, "detection p95 (s): end -> the poll that saw it")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("run duration D (s)")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("Polls per ticket and detection delay against the run's duration (preflight %gs, emulator, 2 cores)"
                 % results["preflight"])
    fig.tight_layout()
    fig.savefig(out)


def main(results_path, out):
    with open(results_path) as handle:
        results = json.load(handle)
    if results.get("durations"):
        return polling(results, out)
    if results.get("repeats", 1) > 1:
        return scale(results, out)
    runs = results["runs"]

    def series(kind):
        pts = sorted((r["n"], r["wall"]) for r in runs if r["kind"] == kind and r["rc"] == 0)
        return [p[0] for p in pts], [p[1] for p in pts]

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    n_c, w_c = series("collection")
    n_b, w_b = series("baseline")
    n_r, w_r = series("rerun")
    sizes = sorted({r["n"] for r in runs})
    ax.plot(n_b, w_b, "o-", color="tab:red", label="baseline: ansible.builtin.uri + until/retries (forks %d)" % results["forks"])
    ax.plot(n_c, w_c, "o-", color="tab:blue", label="collection: playbooks/migrate_site.yml (forks %d)" % results["forks"])
    ax.plot(n_r, w_r, "s--", color="tab:cyan", label="collection re-run, refresh=false (0 writes)")
    ax.plot(sizes, [results["limit"]] * len(sizes), "k:", label="physical limit %gs (server-side durations + 202 window + 1 s polling)" % results["limit"])
    ax.set_xlabel("destination sites in the fleet (N)")
    ax.set_ylabel("wall time (s)")
    ax.set_title("Fleet migration wall time: preflight %gs, run %gs per site (emulator, 2 cores)"
                 % (results["preflight"], results["run"]))
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
