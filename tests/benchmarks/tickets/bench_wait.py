#!/usr/bin/env python
"""How fast the one poller returns after the last ticket completes (not a test: it prints figures).

    .venv/bin/python tests/benchmarks/tickets/bench_wait.py [--sizes 1,10,100] [--interval 1.0]

For N tickets that complete at known, staggered times (scripted preflights of 5.0 to 7.0 s after the
emulator's 202 window, so that all end after the wait has started), it runs the collection's wait (plugins/module_utils/service/poller.wait_for_tickets,
the code behind response_ticket_wait) against the emulator over HTTPS and prints: how long after the
last completion the wait returned, the summary calls made, and the calls a ticket-by-ticket wait would
make at the same interval. Completion times come from the fleet benchmark's traced emulator, which
records the moment each ticket's status is set.
"""

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support", "emulator"))

import launcher  # noqa: E402

launcher.SERVER = os.path.join(ROOT, "tests", "benchmarks", "fleet", "traced_emulator.py")


def collection_path():
    base = tempfile.mkdtemp(prefix="wpcloud-bench-coll-")
    link = os.path.join(base, "ansible_collections", "wpcloud", "hosting")
    os.makedirs(os.path.dirname(link))
    os.symlink(ROOT, link)
    sys.path.insert(0, base)


def run(size, interval, workdir):
    from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
    from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import wait_for_tickets

    emu = launcher.start_emulator(os.path.join(workdir, "emu-%d" % size), extra_args=["--accept-delay", "1.0"])
    try:
        hosts = {}
        for i in range(size):
            hosts["t%03d.example" % i] = {"preflight": {"outcome": "success", "duration": 5.0 + (i % 5) * 0.5}}
        emu.set_executor({"hosts": hosts})
        client = WPCloudClient(api_url=emu.url, api_key=emu.api_key, ca_path=emu.ca_path)
        tickets = []
        for i in range(size):
            site = 900000 + i
            emu.add_site(site, "bench-%d.example" % site, allow_migration=True)
            mid = client.call("migration.create", params={"remote-host": "t%03d.example" % i, "remote-user": "u"},
                              site=site).data["migration-id"]
            tickets.append(client.call("migration.preflight", migration_id=mid).data["response-ticket-id"])
        before = len(client.calls)
        started = time.time()
        done, timed_out = wait_for_tickets(client, tickets, 120, interval, messages="never")
        returned = time.time()
        summary_calls = sum(1 for op, _status in client.calls[before:] if op == "ticket.summary")
        assert not timed_out and all(t.status == "success" for t in done)
        completions = {}
        with open(os.path.join(emu.workdir, "ticket-completions.jsonl")) as handle:
            for line in handle:
                entry = json.loads(line)
                completions[entry["ticket_id"]] = entry["completed"]
        last = max(completions[t] for t in tickets)
        # The floor: one summary per ticket per interval until its completion is seen, plus the 202 window.
        floor = sum(int((completions[t] - started) // interval) + 1 for t in tickets)
        return {"n": size, "wait_s": returned - started, "after_last_s": returned - last,
                "summary_calls": summary_calls, "per_ticket": summary_calls / size, "floor_calls": floor}
    finally:
        emu.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,100")
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    collection_path()
    workdir = tempfile.mkdtemp(prefix="wpcloud-bench-wait-")
    rows = [run(int(n), args.interval, workdir) for n in args.sizes.split(",")]
    print("\n%6s %10s %22s %14s %12s %18s" % ("N", "wait s", "return after last s", "summary calls",
                                              "per ticket", "floor (1/interval)"))
    for r in rows:
        print("%6d %10.2f %22.3f %14d %12.1f %18d" % (r["n"], r["wait_s"], r["after_last_s"], r["summary_calls"],
                                                      r["per_ticket"], r["floor_calls"]))


if __name__ == "__main__":
    main()
