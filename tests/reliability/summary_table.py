"""The reliability summary table (docs/reliability.md): its rows from the counts and figures of a run,
and the one table of a run made of parts (`make reliability` runs the webhook crash file beside the rest).

    python tests/reliability/summary_table.py PART.json [PART.json ...]   (RELIABILITY_SUMMARY_JSON files)
"""

from __future__ import annotations

import json
import sys


def rows(count, figures, wall):
    """The table's rows: (figure, value)."""
    s = figures

    def fig(value):
        return "not measured" if value is None else str(value)

    run = sum(count.values())
    return [
        ("cases run", str(run)),
        ("passed", str(count["passed"])),
        ("expected failures (findings, xfail strict)", str(count["xfailed"])),
        ("failed / errors / xpassed", "%d / %d / %d" % (count["failed"], count["error"], count["xpassed"])),
        ("skipped", str(count["skipped"])),
        ("hostile-input cases", str(s["hostile_cases"])),
        ("secret occurrences found", "%s (in %d files, %.1f MB scanned)" % (
            fig(s["secret_occurrences"]), s["secret_files_scanned"], s["secret_bytes_scanned"] / 1e6)),
        ("secret occurrences in known findings (xfail)", str(s["secret_occurrences_in_findings"])),
        ("duplicate migrations", fig(s["duplicate_migrations"])),
        ("writes repeated after an unknown effect", fig(s["repeated_unknown_writes"])),
        ("lost tickets", fig(s["lost_tickets"])),
        ("lost events", fig(s["lost_events"])),
        ("fleet: sites / playbook runs to converge", "%s / %s" % (fig(s["fleet_sites"]), fig(s["fleet_runs"]))),
        ("fleet: uncertain writes resolved by a read", ", ".join(
            "%s %s" % (k, v) for k, v in (s.get("fleet_uncertain_writes") or {}).items()) or "not measured"),
        ("valid delivery latency under attack (ms, max)", fig(s["attack_latency_ms"])),
        ("slow clients cut by the receiver (s)", fig(s.get("slow_clients_cut_s"))),
        ("wall time (s)", "%.0f" % wall),
    ]


def lines(table):
    width = max(len(r[0]) for r in table)
    return ["| %s | %s |" % ("figure".ljust(width), "value"), "| %s | %s |" % ("-" * width, "-----")] + [
        "| %s | %s |" % (name.ljust(width), value) for name, value in table]


def merge(parts):
    """One run's counts and figures from its parts: counts and numbers add up, a figure only one part
    measured is that part's; the wall time is the longest part's (they run side by side)."""
    count, figures = {}, {}
    for part in parts:
        for key, value in part["counts"].items():
            count[key] = count.get(key, 0) + value
        for key, value in part["figures"].items():
            if key not in figures:
                figures[key] = value
                continue
            mine = figures[key]
            if isinstance(mine, (int, float)) and isinstance(value, (int, float)):
                figures[key] = mine + value
            elif value is not None and (mine is None or mine == 0):
                figures[key] = value
    return count, figures, max(part.get("wall", 0) for part in parts)


def main(paths):
    parts = [json.loads(open(path, encoding="utf-8").read()) for path in paths]
    count, figures, wall = merge(parts)
    print("=" * 30 + " reliability summary (%d parts side by side) " % len(parts) + "=" * 30)
    print("\n".join(lines(rows(count, figures, wall))))


if __name__ == "__main__":
    main(sys.argv[1:])
