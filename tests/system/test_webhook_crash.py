"""Crash tests.

- The sample rulebook with acknowledgements (the issue's test, two repetitions here; twenty in
  tests/reliability/test_rel_webhook_crash.py): a burst of deliveries, slow playbooks, SIGKILL of the
  whole process tree at a random point, restart: every accepted delivery's playbook runs to its
  acknowledgement.
- With acknowledgements off (ack_timeout: 0): SIGKILL ansible-rulebook while signed events are being
  delivered; after a restart every event that was answered 200 is emitted at least once, each with
  its stable delivery id.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import sys
import time

import pytest

from webhook_harness import (CrashExperiment, Rulebook, collection_tree, delivery_id_of, free_port, get_json,
                             read_runs, rulebook_bin, tls, wait_for)

from webhooks import build_body  # noqa: E402  (tests/support/emulator on sys.path)

aiohttp = pytest.importorskip("aiohttp")

KEY = "crash-test-key-4c1d8e2f9a7b3c6d5e4f"
TOTAL = 2000          # bounded load
CONCURRENCY = 16
KILL_AFTER = 500      # acknowledged events before the SIGKILL

RULEBOOK = """
- name: crash test
  hosts: all
  sources:
    - wpcloud.hosting.webhook:
        host: 127.0.0.1
        port: %(port)d
        certfile: %(cert)s
        keyfile: %(key)s
        spool_dir: %(spool)s
        ack_timeout: 0
  rules:
    - name: every event
      condition: event.payload.event is defined
      action:
        debug:
          msg: "EMITTED {{ event.meta.delivery_id }} {{ event.payload.atomic_site_id }}"
"""


async def deliver(url, ca, bodies, results, on_ack=None):
    """POST each body once; results[i] = HTTP status or None (connection failure)."""
    ctx = ssl.create_default_context(cafile=ca)
    queue = asyncio.Queue()
    for i in bodies:
        queue.put_nowait(i)
    connector = aiohttp.TCPConnector(limit=CONCURRENCY, ssl=ctx)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=10)) as session:
        async def worker():
            while not queue.empty():
                i = queue.get_nowait()
                try:
                    async with session.post(url, data=bodies[i], headers={"Content-Type": "application/json"}) as resp:
                        await resp.read()
                        results[i] = resp.status
                except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
                    results[i] = None
                if on_ack and results[i] == 200:
                    on_ack()
        await asyncio.gather(*(worker() for _i in range(CONCURRENCY)))


def test_sample_rulebook_sigkill_of_the_tree_loses_no_accepted_event(tmp_path):
    """The issue's measurement with the sample rulebook and its playbooks: 8 signed deliveries, all
    answered 200; the whole process tree killed 1.5 s after the first playbook started; a restart.
    Before acknowledgements, 7 of the 8 never got their playbook run. Now every one runs to its
    webhook_ack task. Then one repetition with the kill at a random point."""
    rulebook_bin()
    experiment = CrashExperiment(tmp_path, KEY, burst=8, slow=0.1, gap=0.0, kill_window=10.0, seed=16,
                                 kinds=("site_provisioned",)).start()
    try:
        results = [experiment.repetition(kill_after_first_run=1.5)]
        experiment.burst, experiment.kinds = 4, CrashExperiment.KINDS
        results.append(experiment.repetition())
    finally:
        experiment.stop()
    summary = experiment.summary()
    sys.stderr.write("sample rulebook crash test: %s\n%s\n" % (results, summary))
    assert results[0]["accepted_before_kill"] == 8 and results[0]["phase"].startswith("in a playbook"), results[0]
    assert all(r["recover_s"] is not None for r in results), results
    assert not summary["lost_any_repetition"] and not summary["never_run"], summary
    assert summary["accepted"] == 12, summary       # every delivery was answered 200 at last (the retries)


def test_a_kill_after_the_acknowledgement_is_written_runs_nothing_again(tmp_path):
    """The narrowest window of the twenty kills, landed on purpose: the playbook's webhook_ack task has
    written the acknowledgement and the tree dies before the task ends (the callback holds its line for
    20 s). The delivery is processed: after the restart it is neither emitted nor run again, and the
    wait for recovery does not hang on the line the kill took (a CI run once did, 19 x 240 s)."""
    rulebook_bin()
    experiment = CrashExperiment(tmp_path, KEY, burst=1, slow=0.0, gap=0.0, seed=16, ack_pause=20.0,
                                 kinds=("site_provisioned",)).start()
    try:
        result = experiment.repetition(kill_after_first_ack=True)
        time.sleep(5)           # room for a wrong second run to start before the runs are counted
    finally:
        experiment.stop()
    runs, summary = read_runs(experiment.runs_log), experiment.summary()
    sys.stderr.write("kill after the acknowledgement: %s\n%s\n%s\n" % (result, summary, runs))
    assert len(experiment.accepted) == 1, experiment.accepted
    delivery = next(iter(experiment.accepted))
    assert summary["acked_unlogged"] == [delivery], summary       # the kill landed in the window
    assert result["lost"] == [] and result["recover_s"] is not None, result
    assert len(runs[delivery]["starts"]) == 1 and runs[delivery]["acked"] == 0, runs


def test_sigkill_during_delivery_loses_no_acknowledged_event(tmp_path):
    tree = collection_tree(tmp_path)
    tls_files = tls(tmp_path / "tls")
    ca, cert, key = tls_files["ca"], tls_files["cert"], tls_files["key"]
    port = free_port()
    url = "https://127.0.0.1:%d" % port
    (tmp_path / "rb.yml").write_text(RULEBOOK % {"port": port, "cert": cert, "key": key,
                                                 "spool": tmp_path / "spool"})
    (tmp_path / "inventory.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: %s\n" % sys.executable)
    rb = Rulebook(tmp_path, ["-r", "rb.yml", "-i", "inventory.yml"],
                  {"ANSIBLE_COLLECTIONS_PATH": str(tree), "WPCLOUD_WEBHOOK_HMAC_KEYS": KEY, "ANSIBLE_NOCOLOR": "1"})
    bodies = {i: build_body("crash_%d" % (i % 3), 100000 + i, {"n": i}, KEY) for i in range(TOTAL)}
    ids = {i: delivery_id_of(bodies[i]) for i in bodies}
    results = {}
    try:
        rb.start()
        rb.wait_ready(url, ca)
        acked = [0]

        def on_ack():
            acked[0] += 1
            if acked[0] == KILL_AFTER:
                rb.kill()                                        # SIGKILL while deliveries continue
        asyncio.run(deliver(url + "/hook", ca, bodies, results, on_ack))
        assert rb.proc.returncode == -9
        first_acked = {i for i, status in results.items() if status == 200}
        failed = [i for i in bodies if results.get(i) != 200]
        assert len(first_acked) >= KILL_AFTER and failed, "the kill must interrupt the delivery"

        rb.start()
        health = rb.wait_ready(url, ca)
        assert health["recovered"] > 0          # stored, unemitted events were found in the spool
        # the service retries what was not answered 200
        retry_results = {}
        asyncio.run(deliver(url + "/hook", ca, {i: bodies[i] for i in failed}, retry_results))
        # redeliveries of acknowledged events are answered 200 and not emitted again
        redeliver = sorted(first_acked)[:50]
        again = {}
        asyncio.run(deliver(url + "/hook", ca, {i: bodies[i] for i in redeliver}, again))
        assert set(again.values()) == {200}
        acked_all = first_acked | {i for i, status in retry_results.items() if status == 200}
        assert len(acked_all) == TOTAL

        def emitted():
            return set(re.findall(r"EMITTED (sig-[0-9a-f]{32}) ", rb.output()))
        wait_for(lambda: {ids[i] for i in acked_all} <= emitted(), 120, 0.5, "every acknowledged event",
                 progress=lambda: len(emitted()), detail=rb.tail)
        counters = get_json(url + "/healthz", ca)
    finally:
        rb.stop()

    out = rb.output()
    printed = re.findall(r"EMITTED (sig-[0-9a-f]{32}) (\d+)", out)
    # each emitted event carries its own stable delivery id (and the right body)
    by_id = {}
    for delivery_id, site in printed:
        by_id.setdefault(delivery_id, set()).add(int(site))
    for i in acked_all:
        assert by_id[ids[i]] == {100000 + i}
    assert set(by_id) <= set(ids.values())
    # at least once; duplicates only for events handed over just before the kill
    duplicates = len(printed) - len(by_id)
    assert duplicates <= KILL_AFTER
    assert counters["duplicates"] >= len(redeliver)   # plus stored-but-unanswered ones retried
    sys.stderr.write("crash test: first run acked %d, recovered after restart %d, emitted twice %d\n"
                     % (len(first_acked), health.get("recovered", 0), duplicates))
