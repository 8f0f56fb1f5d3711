#!/usr/bin/env python
"""Client CPU and wall of 1,000 starts (migration.preflight) sent on 16 threads, as migration_preflight's
migration_ids form sends them, through requests' write session (d06faec; still the path behind a proxy) and
through the starts' urllib3 pool (HOT_STARTS), interleaved, with the emulator's CPU beside them
(docs/performance.md, "Detection at a thousand sites"): how far apart a fleet's tickets begin, and so end.

    make tree && .venv/bin/python tests/benchmarks/fleet/starts.py [--sites 1000] [--repeats 3] [WORKDIR]
"""
import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support", "emulator"))
sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))
import launcher  # noqa: E402
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import CONCURRENT_CALLS, WPCloudClient  # noqa: E402


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one(workdir, sites, variant):
    """(wall s, client CPU s, emulator CPU s) of ``sites`` starts on a fresh emulator."""
    emu = launcher.start_emulator(workdir, extra_args=["--log-level", "WARNING"])
    try:
        emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 60}}})
        emu._hook("POST", "sites", {"sites": [{"id": 300001 + i, "domain": "s%04d.example" % i, "allow_migration": True}
                                              for i in range(sites)]})
        setup = WPCloudClient(api_url=emu.url, api_key=emu.api_key, ca_path=emu.ca_path)

        def create(i):
            data = setup.call("migration.create", params={"remote-host": "h.example", "remote-user": "u",
                                                          "auth": "generated"}, site=str(300001 + i)).data
            return data.get("migration-id") if isinstance(data, dict) else data
        with ThreadPoolExecutor(CONCURRENT_CALLS) as pool:
            ids = list(pool.map(create, range(sites)))
        client = WPCloudClient(api_url=emu.url, api_key=emu.api_key, ca_path=emu.ca_path)
        if variant == "requests":
            client._hot_start_pool = lambda: None      # the starts through requests' write session, as before
        emu0, cpu0, wall0 = proc_cpu(emu.proc.pid), time.process_time(), time.monotonic()
        with ThreadPoolExecutor(CONCURRENT_CALLS) as pool:
            list(pool.map(lambda m: client.call("migration.preflight", migration_id=m), ids))
        return time.monotonic() - wall0, time.process_time() - cpu0, proc_cpu(emu.proc.pid) - emu0
    finally:
        emu.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sites", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("workdir", nargs="?", default="/tmp/wpcloud-starts")
    args = parser.parse_args()
    print("load average before", open("/proc/loadavg").read().split()[:3])
    for repeat in range(args.repeats):
        for variant in ("requests", "pool"):
            wall, cpu, emu = one(os.path.join(args.workdir, "%s-%d" % (variant, repeat)), args.sites, variant)
            print("%-8s %d starts: wall %.2f s, client CPU %.2f s, emulator CPU %.2f s, load average %s"
                  % (variant, args.sites, wall, cpu, emu, open("/proc/loadavg").read().split()[0]), flush=True)


if __name__ == "__main__":
    main()
