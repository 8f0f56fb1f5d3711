#!/usr/bin/env python
"""Client CPU per ticket.summary poll, three ways on one kept-alive connection to the emulator, single thread,
interleaved, three repeats (docs/performance.md): the collection's client through requests (its transport for
writes and ordinary reads), urllib3 directly (the floor), and the collection's client through its hot-read
transport (the urllib3 pool behind HOT_READS), each a whole call(): gate, retries, envelope.

    make tree && .venv/bin/python tests/benchmarks/fleet/percall.py [WORKDIR]

The figure behind the next step for the N=1,000 detection p95 (issue 26, item 4): a poll's CPU on the
controller, which bounds how fast a round of 1,000 polls can go in one process.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
WORKDIR = sys.argv[1] if len(sys.argv) > 1 else "/tmp/wpcloud-percall"
sys.path.insert(0, os.path.join(ROOT, "tests", "support", "emulator"))
sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))
import launcher  # noqa: E402
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient  # noqa: E402
import urllib3  # noqa: E402

emu = launcher.start_emulator(os.path.join(WORKDIR, "emulator"), extra_args=["--log-level", "WARNING"])
try:
    emu._hook("POST", "sites", {"sites": [{"id": 300001, "domain": "m.example", "allow_migration": True}]})
    client = WPCloudClient(api_url=emu.url, api_key=emu.api_key, ca_path=emu.ca_path)
    mid = client.call("migration.create", params={"remote-host": "h.example", "remote-user": "u", "auth": "generated"}, site="300001").data
    mid = mid.get("migration-id") if isinstance(mid, dict) else mid
    tid = client.call("migration.preflight", migration_id=mid).data["response-ticket-id"]
    url = emu.url.rstrip("/") + "/api/v1.0/response-ticket/get/summary"
    pool = urllib3.PoolManager(ca_certs=emu.ca_path, cert_reqs="CERT_REQUIRED", maxsize=4)
    headers = {"Auth": emu.api_key, "User-Agent": "x", "Accept": "application/json"}
    N = 1500

    plain = WPCloudClient(api_url=emu.url, api_key=emu.api_key, ca_path=emu.ca_path)
    plain._hot = (None,)   # hot reads through requests, as before the hot-read transport (or behind a proxy)

    def via_requests():
        for dummy in range(N):
            plain.call("ticket.summary", params={"response-ticket-id": tid})

    def via_client_pool():
        for dummy in range(N):
            client.call("ticket.summary", params={"response-ticket-id": tid})
        assert client._hot[0] is not None

    def via_urllib3():
        for dummy in range(N):
            r = pool.request("POST", url, fields={"response-ticket-id": tid}, headers=headers, encode_multipart=False,
                             timeout=30, retries=False, redirect=False)
            json.loads(r.data)
    out = {"requests": [], "urllib3": [], "client-pool": []}
    print("loadavg before", open("/proc/loadavg").read().split()[:3])
    for rep in range(3):
        for name, fn in (("requests", via_requests), ("urllib3", via_urllib3), ("client-pool", via_client_pool)):
            c0, w0 = time.process_time(), time.monotonic()
            fn()
            out[name].append(((time.process_time() - c0) / N * 1000, (time.monotonic() - w0) / N * 1000))
    for name, vals in out.items():
        print(name, "CPU ms/call", sorted(round(v[0], 3) for v in vals), "wall ms/call", sorted(round(v[1], 3) for v in vals))
    print("loadavg after", open("/proc/loadavg").read().split()[:3])
finally:
    emu.stop()
