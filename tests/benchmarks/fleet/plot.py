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


def main(results_path, out):
    with open(results_path) as handle:
        results = json.load(handle)
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
