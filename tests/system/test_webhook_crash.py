"""Crash tests.

- The sample rulebook with acknowledgements: a kill after a playbook's acknowledgement is written and
  before its task ends (the other kill points: tests/reliability/test_rel_webhook_crash.py; the issue's
  burst of 8 and twenty kills at random points: `make soak`).
- With acknowledgements off (ack_timeout: 0): SIGKILL ansible-rulebook while signed events are being
  delivered; after a restart every event that was answered 200 is emitted at least once, each with
  its stable delivery id, and none the source had marked done is emitted again.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import sys
import threading
import time

import pytest

from webhook_harness import (CrashExperiment, Rulebook, acknowledged_ids, action_stall, collection_tree, delivery_id_of,
                             emitted_mark, free_port, get_json, post, read_runs, rulebook_bin, signed, stored_seqs,
                             tls, wait_for)

from webhooks import build_body  # noqa: E402  (tests/support/emulator on sys.path)

aiohttp = pytest.importorskip("aiohttp")

KEY = "crash-test-key-4c1d8e2f9a7b3c6d5e4f"
TOTAL = 2000          # bounded load
CONCURRENCY = 16
KILL_AFTER = 500      # acknowledged events before the SIGKILL
# With acknowledgements off an event is done once handed to the rule engine and emit_confirm_delay has
# passed; its action may come later (docs/webhooks.md: "a crash while actions queue loses those events").
# The test proves nothing is lost by the debug line each event prints, so the delay must be longer than
# the rule engine can lag behind the hand-over, by a margin that does not depend on the machine's load:
# the default 1 s was not (measured under load 17-31 on 2 cores: up to 0.98 s for the one debug action;
# an engine 2 s behind failed the test: test_a_rule_engine_behind_the_hand_over_loses_nothing).
CONFIRM_DELAY = 5.0
MARKED = 100          # events marked done before the kill

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
        emit_confirm_delay: %(confirm)s
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
        # then a later delivery, acknowledged by its own run: the rule engine runs actions one at a time,
        # in order, so a wrong second run of the first (handed over again at the restart, ahead of this
        # one) has started by then. A fixed 5 s wait could end before a loaded machine started one.
        later = signed(KEY, "site_provisioned", 799999, [])
        assert post(experiment.url + "/wpcloud", later, experiment.tls["ca"], timeout=30)[0] == 200
        wait_for(lambda: delivery_id_of(later) in acknowledged_ids(experiment.spool), 120, 0.2,
                 "a later delivery's acknowledgement", detail=experiment.rb.tail)
    finally:
        experiment.rb.kill_tree()       # the later run's callback holds its line 20 s: ends it too
        experiment.stop()
    runs, summary = read_runs(experiment.runs_log), experiment.summary()
    sys.stderr.write("kill after the acknowledgement: %s\n%s\n%s\n" % (result, summary, runs))
    assert len(experiment.accepted) == 1, experiment.accepted
    delivery = next(iter(experiment.accepted))
    assert delivery in summary["acked_unlogged"], summary         # the kill landed in the window
    assert result["lost"] == [] and result["recover_s"] is not None, result
    assert len(runs[delivery]["starts"]) == 1 and runs[delivery]["acked"] == 0, runs


def test_sigkill_during_delivery_loses_no_acknowledged_event(tmp_path):
    """2000 signed deliveries, 16 at a time; SIGKILL of ansible-rulebook after the 500th answer, once the
    source has marked 100 events done (the sender slowed down meanwhile); a restart and the service's retries. Every answered delivery is
    printed by its action, each with its own body; the ones marked done at the kill were printed
    before it and never again; the others (handed over within CONFIRM_DELAY of the kill, or not yet)
    come after the restart: the only duplicates."""
    sys.stderr.write("crash test: %s\n" % crash_during_delivery(tmp_path))


def test_a_rule_engine_behind_the_hand_over_loses_nothing(tmp_path):
    """The same, with the rule engine 2 s behind the source at the kill: after the 100th mark, the next
    action waits 2 s (its loop free: hand-overs and marks go on), then the kill. The lag a loaded
    machine can put between the hand-over and the action, made certain. Nothing is lost while the lag
    is shorter than the confirm delay; with the default 1 s this failed (events marked done at the kill
    whose action had not run: never emitted again)."""
    result = crash_during_delivery(tmp_path, stall=2.0)
    sys.stderr.write("crash test, rule engine 2 s behind: %s\n" % result)


def printed_ids(out_path):
    """The delivery ids one run's debug action printed, in order."""
    return re.findall(r"EMITTED (sig-[0-9a-f]{32}) ", out_path.read_text())


def crash_during_delivery(tmp_path, confirm_delay=CONFIRM_DELAY, stall=0.0):
    """The acks-off crash test; with ``stall``, the rule engine's actions stop that long before the kill
    (ACTION_STALL). Returns its figures."""
    tree = collection_tree(tmp_path)
    tls_files = tls(tmp_path / "tls")
    ca, cert, key = tls_files["ca"], tls_files["cert"], tls_files["key"]
    port = free_port()
    url = "https://127.0.0.1:%d" % port
    spool = tmp_path / "spool"
    (tmp_path / "rb.yml").write_text(RULEBOOK % {"port": port, "cert": cert, "key": key, "spool": spool,
                                                 "confirm": confirm_delay})
    (tmp_path / "inventory.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: %s\n" % sys.executable)
    env = {"ANSIBLE_COLLECTIONS_PATH": str(tree), "WPCLOUD_WEBHOOK_HMAC_KEYS": KEY, "ANSIBLE_NOCOLOR": "1"}
    flag = tmp_path / "stall"
    if stall:
        env.update(action_stall(tmp_path, flag, stall))
    rb = Rulebook(tmp_path, ["-r", "rb.yml", "-i", "inventory.yml"], env)
    bodies = {i: build_body("crash_%d" % (i % 3), 100000 + i, {"n": i}, KEY) for i in range(TOTAL)}
    ids = {i: delivery_id_of(bodies[i]) for i in bodies}
    results = {}
    try:
        rb.start()
        rb.wait_ready(url, ca)
        acked = [0]

        def kill():
            # once MARKED events are marked done, so that the kill finds events done as well as events not
            wait_for(lambda: emitted_mark(spool) >= MARKED, 120, 0.05, "the source's mark to pass %d" % MARKED,
                     progress=lambda: emitted_mark(spool), detail=rb.tail)
            if stall:
                flag.touch()        # the next action waits; deliveries go on, so there is a next one
                wait_for((tmp_path / "stall.over").exists, 120, 0.02, "the stalled action", detail=rb.tail)
            rb.kill()                                            # SIGKILL while deliveries continue
        killer = threading.Thread(target=kill)

        def on_ack():
            acked[0] += 1
            if acked[0] == KILL_AFTER:
                killer.start()
            elif killer.is_alive():
                time.sleep(0.05)    # the sender slows down (20 answers a second) until the kill
        asyncio.run(deliver(url + "/hook", ca, bodies, results, on_ack))
        killer.join()
        assert rb.proc.returncode == -9
        # the documented contract with acknowledgements off, event by event. The mark at the kill covers
        # events handed over at least confirm_delay before it: their action has run (printed) ...
        mark = emitted_mark(spool)
        marked = {d for d, seq in stored_seqs(spool).items() if seq <= mark}
        first = printed_ids(tmp_path / "rulebook-1.out")
        assert len(marked) >= MARKED, mark
        unprinted = sorted(marked - set(first))
        assert not unprinted, ("marked done at the kill (mark %d) but their action had not run: lost for good; "
                               "the rule engine lagged more than emit_confirm_delay %ss: %s"
                               % (mark, confirm_delay, unprinted[:10]))
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

    printed = re.findall(r"EMITTED (sig-[0-9a-f]{32}) (\d+)", rb.output())
    # each emitted event carries its own stable delivery id (and the right body)
    by_id = {}
    for delivery_id, site in printed:
        by_id.setdefault(delivery_id, set()).add(int(site))
    for i in acked_all:
        assert by_id[ids[i]] == {100000 + i}
    assert set(by_id) <= set(ids.values())
    # ... and they are done: not emitted again after the restart ...
    after_restart = set(printed_ids(tmp_path / "rulebook-2.out"))
    assert not marked & after_restart, sorted(marked & after_restart)[:10]
    assert all(first.count(d) == 1 for d in marked)
    # ... and every other accepted event comes after the restart, printed before the kill or not: the
    # only duplicates are events handed over within confirm_delay of the kill
    assert {ids[i] for i in acked_all} - marked <= after_restart
    duplicates = len(printed) - len(by_id)
    assert duplicates == len(set(first) & after_restart), (duplicates, len(set(first) & after_restart))
    assert counters["duplicates"] >= len(redeliver)   # plus stored-but-unanswered ones retried
    return {"first_run_acked": len(first_acked), "mark_at_kill": mark, "marked_at_kill": len(marked),
            "printed_before_kill": len(first), "recovered": health.get("recovered", 0), "duplicates": duplicates}
