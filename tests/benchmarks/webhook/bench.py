"""Side-by-side benchmark: wpcloud.hosting.webhook vs ansible-rulebook's eda.builtin.webhook (HMAC on).

Not part of the test run. Usage (from the repository root, a venv with ansible-rulebook, ansible-core,
aiohttp and cryptography first on PATH, a JDK 17 on PATH):

    python tests/benchmarks/webhook/bench.py [--burst 20000] [--rate 500] [--seconds 10] [--runs 1]
                                             [--repo LABEL=PATH ...]

Before/after a change: ``--repo before=/path/to/old-checkout --repo after=. --runs 6`` measures each
variant of each checkout in turn (before, after, then after, before, ...: interleaved and in
alternating order, so a drift of the machine's speed and whatever one run leaves behind hit both
alike) with this one load generator, and ends with a table of medians.

Each variant runs in a fresh ansible-rulebook process (rule action ``none``; a sentinel event
triggers ``shutdown``) on 127.0.0.1; the load generator is a lean asyncio HTTP/1.1 client with
keep-alive connections in this process. Phases per run:

1. warm-up: 1,000 events, then 1.5 s pause; RSS baseline (VmRSS of the rulebook process, JVM included,
   plus its child processes: our source's receiver);
2. latency: open loop at --rate events/s for --seconds s, one request per tick on a free
   connection (no coordinated omission: latency counts from the scheduled send time); p50/p99;
3. burst: --burst events over 32 connections as fast as they are acknowledged
   (acknowledged events/s); then a sentinel event; end-to-end events/s = burst / (time until
   the rulebook has processed the sentinel, i.e. every event before it);
4. checks: Drools ``eventsProcessed`` == events acknowledged + 1; RSS growth = peak VmRSS
   sampled every 50 ms during phases 2-3 minus the baseline;
5. "CPU ms/ack during burst": CPU time of the receiving side per acknowledged event during the burst
   (ours: the receiver process; builtin: the whole rulebook process, where it receives and runs the
   rules in one thread), a figure that stays meaningful on a busy machine; the 1-minute load average
   at the end of the burst is printed next to it.

Bodies: unique signed WP Cloud bodies (300-400 bytes) for our source; for the builtin the same
bodies with ``X-Hub-Signature-256: sha256=<hex HMAC of the body>``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "support"))
import webhook_harness as wh  # noqa: E402  (tests/support: TLS material, signed bodies, collection trees)

KEY = "bench-hmac-key-0123456789abcdef0123"

WRAPPER = """
import logging, sys
from ansible_rulebook.cli import main
logging.getLogger("ansible_rulebook.rule_set_runner").setLevel(logging.INFO)
sys.exit(main(sys.argv[1:]))
"""

RULES = """
  rules:
    - name: stop
      condition: event.payload.stop == true
      action:
        shutdown:
          kind: now
    - name: every event
      condition: event.payload.event is defined
      action:
        none: {}
"""


def _children(pid):
    out = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as handle:
                out += [int(x) for x in handle.read().split()]
    except OSError:
        pass
    return out


def cpu_s(pids):
    """utime + stime (all threads) of the given processes, in seconds."""
    total = 0.0
    for proc in pids:
        try:
            with open("/proc/%d/stat" % proc) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    return total


def rss_kb(pid, field="VmRSS"):
    """VmRSS of the rulebook process plus its children (our source's receiver process)."""
    total = 0
    for proc in [pid] + _children(pid):
        try:
            with open("/proc/%d/status" % proc) as handle:
                for line in handle:
                    if line.startswith(field + ":"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total or None


class Conn:
    """One keep-alive HTTP/1.1 connection (TLS optional)."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port, ctx):
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx,
                                                       server_hostname="127.0.0.1" if ctx else None)
        return cls(reader, writer)

    async def request(self, raw):
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        match = re.search(rb"(?i)content-length:\s*(\d+)", head)
        if match:
            await self.reader.readexactly(int(match.group(1)))
        return status


def make_request(port, body, extra_headers=b""):
    return (b"POST /hook HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n%s\r\n" % (port, len(body), extra_headers)) + body


class Variant:
    def __init__(self, name, workdir, tls, builtin, env):
        self.name, self.workdir, self.tls, self.builtin, self.env = name, Path(workdir), tls, builtin, env
        self.port = wh.free_port()
        self.ctx = ssl.create_default_context(cafile=tls["ca"]) if (tls and not builtin and name.endswith("https")) else None
        self.counter = 0

    def rulebook(self):
        if self.builtin:
            src = ("    - eda.builtin.webhook:\n        host: 127.0.0.1\n        port: %d\n"
                   "        hmac_secret: %s\n        hmac_algo: sha256\n        hmac_header: x-hub-signature-256\n"
                   "        hmac_format: hex\n" % (self.port, KEY))
        else:
            # ack_timeout 0: the rules' action is none, which cannot acknowledge (docs/webhooks.md, 3.)
            src = ("    - wpcloud.hosting.webhook:\n        host: 127.0.0.1\n        port: %d\n"
                   "        spool_dir: %s\n        ack_timeout: 0\n" % (self.port, self.workdir / ("spool-" + self.name)))
            if self.ctx:
                src += "        certfile: %s\n        keyfile: %s\n" % (self.tls["cert"], self.tls["key"])
            else:
                src += "        allow_insecure_http: true\n"
        return "- name: bench %s\n  hosts: all\n  sources:\n%s%s" % (self.name, src, RULES)

    def body_request(self, stop=False):
        self.counter += 1
        if stop:
            body = wh.signed(KEY, "bench_stop", None, {})
            payload = json.loads(body)
            payload["stop"] = True
            # the stop flag is outside the signed string, so the signature stays valid
            body = json.dumps(payload, separators=(",", ":")).encode()
        else:
            body = wh.signed(KEY, "migration_status", 100000 + self.counter,
                             {"migration-id": self.counter, "state": "migration-running",
                              "remote-host": "src%d.example" % (self.counter % 50)})
        extra = b""
        if self.builtin:
            extra = b"X-Hub-Signature-256: sha256=%s\r\n" % hmac.new(KEY.encode(), body, hashlib.sha256).hexdigest().encode()
        return make_request(self.port, body, extra)

    def start(self):
        rb = self.workdir / ("rb-%s.yml" % self.name)
        rb.write_text(self.rulebook())
        self.out = open(self.workdir / ("out-%s.txt" % self.name), "wb")
        self.proc = subprocess.Popen([sys.executable, str(self.workdir / "wrapper.py"), "-r", str(rb),
                                      "-i", str(self.workdir / "inventory.yml")],
                                     stdout=self.out, stderr=subprocess.STDOUT, env=self.env,
                                     cwd=str(self.workdir))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("%s exited: %s" % (self.name, self.output()[-2000:]))
                time.sleep(0.1)
        raise RuntimeError("%s did not start" % self.name)

    def output(self):
        self.out.flush()
        return (self.workdir / ("out-%s.txt" % self.name)).read_text(errors="replace")


async def closed_loop(variant, requests, concurrency):
    conns = [await Conn.open(variant.port, variant.ctx) for _i in range(concurrency)]
    it = iter(requests)
    statuses = []

    async def worker(conn):
        for raw in it:
            statuses.append(await conn.request(raw))
    t0 = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - t0
    for c in conns:
        c.writer.close()
    return statuses, elapsed


async def open_loop(variant, requests, rate):
    """Send at a fixed rate; latency from the scheduled time (coordinated omission avoided)."""
    pool = asyncio.Queue()
    for _i in range(64):
        pool.put_nowait(await Conn.open(variant.port, variant.ctx))
    latencies, statuses, tasks = [], [], []
    start = time.perf_counter() + 0.05

    async def one(raw, scheduled):
        conn = await pool.get()
        status = await conn.request(raw)
        latencies.append(time.perf_counter() - scheduled)
        statuses.append(status)
        pool.put_nowait(conn)
    for i, raw in enumerate(requests):
        scheduled = start + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(raw, scheduled)))
    await asyncio.gather(*tasks)
    while not pool.empty():
        pool.get_nowait().writer.close()
    return statuses, latencies


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run_variant(variant, args):
    variant.start()
    pid = variant.proc.pid
    result = {"variant": variant.name}
    try:
        warm = [variant.body_request() for _i in range(1000)]
        statuses, _elapsed = asyncio.run(closed_loop(variant, warm, 8))
        assert set(statuses) == {200}, statuses[:5]
        time.sleep(1.5)
        base = rss_kb(pid)
        peak = [base]
        sampling = [True]

        def sample():
            while sampling[0]:
                value = rss_kb(pid)
                if value:
                    peak[0] = max(peak[0], value)
                time.sleep(0.05)
        import threading
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        lat_reqs = [variant.body_request() for _i in range(int(args.rate * args.seconds))]
        statuses, latencies = asyncio.run(open_loop(variant, lat_reqs, args.rate))
        assert set(statuses) == {200}, set(statuses)
        result["p50_ms"] = percentile(latencies, 0.50) * 1000
        result["p99_ms"] = percentile(latencies, 0.99) * 1000
        time.sleep(2)

        burst = [variant.body_request() for _i in range(args.burst)]
        stop = variant.body_request(stop=True)
        kids = _children(pid)
        cpu0_main, cpu0_kids = cpu_s([pid]), cpu_s(kids)
        t0 = time.perf_counter()
        statuses, elapsed = asyncio.run(closed_loop(variant, burst, 32))
        ok = sum(1 for s in statuses if s == 200)
        result["burst_acked_per_s"] = ok / elapsed
        result["receiver_cpu_ms"] = ((cpu_s(kids) - cpu0_kids) if kids else (cpu_s([pid]) - cpu0_main)) / ok * 1000
        result["loadavg"] = os.getloadavg()[0]
        stop_status, _elapsed2 = asyncio.run(closed_loop(variant, [stop], 1))
        variant.proc.wait(600)
        t_end = time.perf_counter()
        sampling[0] = False
        sampler.join()
        result["e2e_per_s"] = args.burst / (t_end - t0)
        result["rss_base_mb"] = base / 1024
        result["rss_growth_mb"] = (peak[0] - base) / 1024
        out = variant.output()
        processed = re.findall(r"'eventsProcessed': (\d+)", out)
        result["events_processed"] = int(processed[-1]) if processed else None
        result["events_acked"] = 1000 + len(lat_reqs) + ok + (1 if stop_status == [200] else 0)
        result["all_processed"] = result["events_processed"] == result["events_acked"]
    finally:
        if variant.proc.poll() is None:
            variant.proc.send_signal(signal.SIGKILL)
            variant.proc.wait()
        variant.out.close()
    return result


COLUMNS = ("burst_acked_per_s", "p50_ms", "p99_ms", "e2e_per_s", "rss_base_mb", "rss_growth_mb",
           "receiver_cpu_ms", "loadavg")


def print_table(results, args):
    print("| variant | burst acked events/s | p50 ms @%d/s | p99 ms @%d/s | end-to-end events/s | "
          "all acked processed | RSS base MB | RSS growth MB | CPU ms/ack during burst | load avg |"
          % (args.rate, args.rate))
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print("| %s | %.0f | %.2f | %.2f | %.0f | %s (%s/%s) | %.0f | %.1f | %.3f | %.1f |" % (
            r["variant"], r["burst_acked_per_s"], r["p50_ms"], r["p99_ms"], r["e2e_per_s"],
            "yes" if r["all_processed"] else "NO", r["events_processed"], r["events_acked"],
            r["rss_base_mb"], r["rss_growth_mb"], r["receiver_cpu_ms"], r["loadavg"]))


def print_medians(results, args):
    """One row per variant and checkout: the median of its runs, and how many runs processed all."""
    groups = {}
    for r in results:
        groups.setdefault(r["group"], []).append(r)
    print()
    print("Medians of %d run(s) each (runs interleaved):" % args.runs)
    print()
    print("| variant | runs | burst acked events/s | p50 ms @%d/s | p99 ms @%d/s | end-to-end events/s | "
          "all acked processed | RSS base MB | RSS growth MB | CPU ms/ack during burst | load avg |"
          % (args.rate, args.rate))
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for group, rows in groups.items():
        med = {c: statistics.median(r[c] for r in rows) for c in COLUMNS}
        print("| %s | %d | %.0f | %.2f | %.2f | %.0f | %d of %d | %.0f | %.1f | %.3f | %.1f |" % (
            group, len(rows), med["burst_acked_per_s"], med["p50_ms"], med["p99_ms"], med["e2e_per_s"],
            sum(1 for r in rows if r["all_processed"]), len(rows), med["rss_base_mb"], med["rss_growth_mb"],
            med["receiver_cpu_ms"], med["loadavg"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--burst", type=int, default=20000)
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--variants", default="wpcloud-https,wpcloud-http,builtin-hmac-http")
    parser.add_argument("--repo", action="append", default=[], metavar="LABEL=PATH",
                        help="a checkout of the collection to measure (repeat to compare; default: this one)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if not shutil.which("ansible-rulebook") or not shutil.which("java"):
        sys.exit("ansible-rulebook (venv bin first on PATH) and java are required")
    repos = [tuple(item.split("=", 1)) for item in args.repo] or [("", str(REPO))]
    workdir = Path(tempfile.mkdtemp(prefix="wpcloud-webhook-bench-"))
    tls = wh.tls(workdir / "tls")
    (workdir / "wrapper.py").write_text(WRAPPER)
    (workdir / "inventory.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    envs = {}
    for label, path in repos:
        tree = wh.collection_tree(workdir, repo=Path(path).resolve(), name="collections-" + (label or "this"))
        envs[label] = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tree), ANSIBLE_HOME=str(workdir / ".ansible"),
                           WPCLOUD_WEBHOOK_HMAC_KEYS=KEY)
    results = []
    for run in range(args.runs):
        # A B, then B A: neither checkout always runs right after the other (what a run leaves
        # behind, the machine's drift) - give an even --runs
        order = repos if run % 2 == 0 else repos[::-1]
        for name in args.variants.split(","):
            for label, _path in order:
                if name.startswith("builtin") and label != order[0][0]:
                    continue                      # ansible-rulebook's own source: the same in every checkout
                group = name + ("@" + label if label and not name.startswith("builtin") else "")
                variant = Variant(group, workdir, tls, name.startswith("builtin"), envs[label])
                if not variant.builtin and name.endswith("https"):
                    variant.ctx = ssl.create_default_context(cafile=tls["ca"])
                variant.name = group if args.runs == 1 else "%s-%d" % (group, run + 1)
                sys.stderr.write("running %s ...\n" % variant.name)
                result = run_variant(variant, args)
                result["group"] = group
                results.append(result)
                sys.stderr.write(json.dumps(results[-1]) + "\n")
    print_table(results, args)
    if args.runs > 1:
        print_medians(results, args)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print("work directory: %s" % workdir)


if __name__ == "__main__":
    main()
