"""The one webhook test harness: the system, reliability and benchmark tests import it.

- the event source in-process (:class:`Source`: ``main(queue, args)`` loaded with runpy, as
  ansible-rulebook does, in a background event loop; its receiver child runs as under the
  rulebook), :func:`startup_error` for option checks;
- ansible-rulebook runs (:class:`Rulebook`, :func:`run_rulebook`; the collection tree is playbooks.py's);
- signed bodies (the emulator's sender, ``tests/support/emulator/webhooks.py``: the service's exact
  format), TLS material made with ``cryptography``, plain HTTPS clients, and the documented
  delivery id computed here with hashlib (never with the code under test).

``tests/support`` is put on ``sys.path`` by tests/system/conftest.py and
tests/reliability/reliability_support.py; the benchmark adds it itself. Everything binds 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import runpy
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE_FILE = REPO / "extensions" / "eda" / "plugins" / "event_source" / "webhook.py"
EMULATOR_DIR = REPO / "tests" / "support" / "emulator"
BIN = Path(sys.executable).parent
if str(EMULATOR_DIR) not in sys.path:
    sys.path.insert(0, str(EMULATOR_DIR))

from certs import make_tls_files  # noqa: E402  pylint: disable=wrong-import-position
from playbooks import CALLBACK_DIR, collection_tree  # noqa: E402,F401  pylint: disable=wrong-import-position
from webhooks import build_body  # noqa: E402  pylint: disable=wrong-import-position

_PLUGIN = {}


def plugin(source_file=SOURCE_FILE):
    """The event source's module namespace (loaded once per process, with runpy as ansible-rulebook does)."""
    key = str(source_file)
    if key not in _PLUGIN:
        _PLUGIN[key] = runpy.run_path(key)
    return _PLUGIN[key]


# ------------------------------------------------------------------------------------ bodies, TLS, HTTP

def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tls(directory):
    """A local CA and a server certificate for 127.0.0.1/localhost: {"ca", "cert", "key"} paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_path, cert_path, key_path = make_tls_files(str(directory))
    return {"ca": ca_path, "cert": cert_path, "key": key_path}


def signed(key, event, site=None, data=None, in_data=False, ts=None, salt=None):
    """A body as the service sends it, signed with ``key`` (bytes)."""
    return build_body(event, site, data, key, signature_in_data=in_data, ts=ts, salt=salt)


def ref_digest(key, event, ts, salt):
    return hmac.new(key.encode(), ("%s:%s:%s" % (event, ts, salt)).encode(), hashlib.sha256).hexdigest()


def delivery_id_of(body):
    """The documented delivery id of a signed body (docs/webhooks.md), computed here from the body."""
    payload = json.loads(body, parse_int=str)
    sig = payload.get("signature") or payload["data"]["signature"]
    return "sig-" + hashlib.sha256(("%s:%s" % (sig["timestamp"], sig["salt"])).encode()).hexdigest()[:32]


def source_args(spool_dir, tls_files, port, keys, **extra):
    """Options of the source over HTTPS on 127.0.0.1, for tests of the receiver: acknowledgements off
    (ack_timeout 0: an event is done once emitted) and emit_confirm_delay 0 (marks at once). Tests of
    acknowledgements pass ack_timeout (and read events with :meth:`Source.ack`)."""
    args = {"host": "127.0.0.1", "port": port, "certfile": tls_files["cert"], "keyfile": tls_files["key"],
            "hmac_secret": keys, "spool_dir": str(spool_dir), "emit_confirm_delay": 0, "ack_timeout": 0}
    args.update(extra)
    return args


def _context(ca_path):
    return ssl.create_default_context(cafile=ca_path) if ca_path else None


def post(url, body, ca_path=None, content_type="application/json", headers=None, timeout=15):
    """POST ``body``; (status, text). ``content_type=None`` sends no Content-Type header."""
    data = body if isinstance(body, bytes) else body.encode()
    hdrs = {"Content-Type": content_type} if content_type is not None else {}
    hdrs.update(headers or {})
    req = urllib.request.Request(url, data=data, method="POST", headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=_context(ca_path)) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def get_json(url, ca_path=None, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout, context=_context(ca_path)) as resp:
        return json.loads(resp.read())


def wait_for(predicate, timeout, interval=0.05, what="condition", progress=None, detail=None):
    """Poll ``predicate`` until it is true; fail after ``timeout`` seconds. With ``progress`` (a function
    whose value changes as the awaited work advances, e.g. the set of acknowledged deliveries), ``timeout``
    is the longest wait WITHOUT progress: a test that waits for seven playbooks must not fail because a
    loaded machine runs each one slower, only because one of them stopped advancing. ``detail`` (a
    function returning text, e.g. the tail of the rulebook's output) is added to the failure, so a
    timeout says what the waited-on process was doing rather than only that it took too long."""
    deadline = time.monotonic() + timeout
    seen = progress() if progress is not None else None
    while True:
        value = predicate()
        if value:
            return value
        if progress is not None:
            now_seen = progress()
            if now_seen != seen:
                seen, deadline = now_seen, time.monotonic() + timeout
        if time.monotonic() >= deadline:
            message = "timed out after %ss %swaiting for %s" % (
                timeout, "without progress " if progress is not None else "", what)
            if progress is not None:
                message += " (last progress: %r)" % (seen,)
            if detail is not None:
                message += "\n" + detail()
            raise AssertionError(message)
        time.sleep(interval)


def healthz(base_url, ca_path=None):
    """The receiver's counters (GET /healthz)."""
    return get_json(base_url + "/healthz", ca_path)


# ------------------------------------------------------------------------------------ in-process source

class Source:
    """Runs the source's ``main(queue, args)`` in a background event loop; emitted events land in
    ``events``. ``queue_size`` is the rulebook queue's size; ``pause`` (an Event) stalls the
    consumer, as a busy rule engine would. ``stderr_path``: the receiver child inherits file
    descriptor 2 when it starts; it is pointed at this file meanwhile, so the child's log is kept."""

    # ready_timeout only runs out for a source that hangs (one that fails ends the wait at once): four full
    # test runs at once on 2 cores (load 35-40) once took longer than 20 s to start the receiver child
    def __init__(self, args, queue_size=1, stderr_path=None, ready_timeout=120, source_file=SOURCE_FILE):
        self.args = args
        self.events = []
        self.error = None
        self.queue_size = queue_size
        self.stderr_path = stderr_path
        self.ready_timeout = ready_timeout
        self.main = plugin(source_file)["main"]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = threading.Event()
        self.pause = threading.Event()
        self.task = None
        self.queue = None

    @property
    def url(self):
        return "%s://127.0.0.1:%s" % ("https" if self.args.get("certfile") else "http", self.args["port"])

    def _run(self):
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
        finally:
            self.started.set()

    async def _main(self):
        self.queue = asyncio.Queue(self.queue_size)
        self.task = asyncio.ensure_future(self.main(self.queue, self.args))
        consumer = asyncio.ensure_future(self._consume())
        self.started.set()
        try:
            await self.task
        finally:
            consumer.cancel()

    async def _consume(self):
        while True:
            while self.pause.is_set():
                await asyncio.sleep(0.01)
            self.events.append(await self.queue.get())

    def start(self, wait_ready=True):
        saved = None
        if self.stderr_path is not None:
            saved = os.dup(2)
            handle = os.open(str(self.stderr_path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(handle, 2)
            os.close(handle)
        try:
            self.thread.start()
            self.started.wait(10)
            if wait_ready:
                self.wait_ready()
        finally:
            if saved is not None:
                os.dup2(saved, 2)
                os.close(saved)
        return self

    def wait_ready(self):
        """Until GET /healthz answers 200 (a probe: the certificate is not checked here)."""
        deadline = time.monotonic() + self.ready_timeout
        ctx = None
        if self.args.get("certfile"):
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        while time.monotonic() < deadline:
            if self.error is not None or (self.task is not None and self.task.done()):
                raise RuntimeError("event source stopped: %r" % (self.error or self.task.exception()))
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=5, context=ctx) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("event source not listening after %ss" % self.ready_timeout)

    def wait_events(self, count, timeout=10):
        wait_for(lambda: len(self.events) >= count, timeout, 0.02, "%d emitted event(s)" % count)

    def stop(self):
        if self.thread.is_alive() and self.task is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)
            self.thread.join(15)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class _Listening(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.seen = threading.Event()

    def emit(self, record):
        if "listening on" in record.getMessage():
            self.seen.set()


def startup_error(args, timeout=20):
    """Start the source with ``args``; return the exception text it fails with, or None if it listens."""
    root = logging.getLogger()
    handler, level = _Listening(), root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    source = Source(args, ready_timeout=timeout)
    try:
        source.thread.start()
        source.started.wait(10)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if source.error is not None:
                return "%s: %s" % (type(source.error).__name__, source.error)
            if source.task is not None and source.task.done():
                exc = source.task.exception() if not source.task.cancelled() else None
                return "%s: %s" % (type(exc).__name__, exc) if exc else "stopped"
            if handler.seen.is_set():
                return None
            time.sleep(0.05)
        return None if source.thread.is_alive() else "stopped"
    finally:
        source.stop()
        root.removeHandler(handler)
        root.setLevel(level)


# ------------------------------------------------------------------------------------ ansible-rulebook

def rulebook_bin():
    """ansible-rulebook next to the running interpreter (the project venv), with java on PATH."""
    import pytest  # pylint: disable=import-outside-toplevel
    exe = BIN / "ansible-rulebook"
    if not exe.exists() or not (BIN / "ansible-galaxy").exists():
        pytest.skip("ansible-rulebook and ansible-core must be installed in the test venv")
    if not shutil.which("java"):
        pytest.skip("ansible-rulebook needs a JDK (java on PATH)")
    return str(exe)


class Rulebook:
    """One ansible-rulebook process; stdout/stderr to files (one per start); stopped by PID."""

    def __init__(self, workdir, args, env_extra, name="rulebook", env=None, prefix=None):
        self.workdir = Path(workdir)
        self.args = args
        self.env_extra = env_extra
        self.env = env
        self.name = name
        self.prefix = list(prefix or [])      # a command to run ansible-rulebook under (unshare ...)
        self.proc = None
        self.runs = 0

    @property
    def out_path(self):
        return self.workdir / ("%s-%d.out" % (self.name, self.runs))

    def start(self):
        self.runs += 1
        env = dict(os.environ if self.env is None else self.env)
        env.update(self.env_extra)
        env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("ANSIBLE_HOME", str(self.workdir / ".ansible"))
        env.setdefault("ANSIBLE_LOCAL_TEMP", str(self.workdir / ".ansible" / "tmp"))
        with open(self.out_path, "wb") as out:
            # its own process group (and session): kill_tree() ends the group and every descendant
            self.proc = subprocess.Popen(self.prefix + [rulebook_bin()] + self.args, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(self.workdir),
                                         env=env, start_new_session=True)
        return self

    def output(self):
        text = ""
        for run in range(1, self.runs + 1):
            path = self.workdir / ("%s-%d.out" % (self.name, run))
            if path.exists():
                text += path.read_text(errors="replace")
        return text

    def tail(self, chars=4000):
        """The end of the output, for a failure message (a timed-out wait says what the rulebook did)."""
        return "--- ansible-rulebook output (last %d characters) ---\n%s" % (chars, self.output()[-chars:])

    def wait_ready(self, url, ca_path, timeout=60):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError("ansible-rulebook exited %s:\n%s" % (self.proc.returncode, self.output()[-3000:]))
            try:
                return healthz(url, ca_path)
            except OSError:
                return None
        return wait_for(ready, timeout, 0.2, "the webhook source to listen")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def kill_tree(self):
        """SIGKILL the rulebook's process group and every descendant (ansible-runner starts
        ansible-playbook in a session of its own), all stopped first so none acts after another died."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        pids = kill_tree(self.proc.pid)
        self.proc.wait(10)
        return pids

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def write_rulebook_inputs(out, tls_files, port):
    """inventory.yml and vars.yml for the collection's sample rulebook (wpcloud.hosting.webhooks);
    returns the directory its playbooks record into."""
    out = Path(out)
    records = out / "records"
    (out / "inventory.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: %s\n" % (BIN / "python"))
    (out / "vars.yml").write_text(json.dumps({
        "wpcloud_webhook_host": "127.0.0.1", "wpcloud_webhook_port": port,
        "wpcloud_webhook_certfile": tls_files["cert"], "wpcloud_webhook_keyfile": tls_files["key"],
        "wpcloud_webhook_spool_dir": str(out / "spool"), "wpcloud_webhook_record_dir": str(records)}))
    return records


def run_rulebook(out, tls_files, port, key, env, headers=None, timeout=90):
    """ansible-rulebook -vv with the collection's sample rulebook and the key in its environment;
    one signed delivery (with ``headers``), then a forged one, a reused signature with another body
    and a redelivery. Returns the four statuses and the records of the playbook the rule ran.
    Everything it writes stays under ``out``; ``env`` is the whole environment."""
    out = Path(out)
    records = write_rulebook_inputs(out, tls_files, port)
    rb = Rulebook(out, ["-r", "wpcloud.hosting.webhooks", "-i", "inventory.yml", "--vars", "vars.yml", "-vv"],
                  {"WPCLOUD_WEBHOOK_HMAC_KEYS": key}, env=env)
    url = "https://127.0.0.1:%d" % port
    statuses = []
    try:
        rb.start()
        rb.wait_ready(url, tls_files["ca"])
        good = signed(key, "site_provisioned", 8101)
        statuses.append(post(url + "/wpcloud", good, tls_files["ca"], headers=headers)[0])
        statuses.append(post(url + "/wpcloud", signed("forged-" + key, "site_provisioned", 8102),
                             tls_files["ca"])[0])
        statuses.append(post(url + "/wpcloud", good.replace(b"8101", b"8103"), tls_files["ca"])[0])
        statuses.append(post(url + "/wpcloud", good, tls_files["ca"])[0])
        wait_for(lambda: (records / "site_provisioned").is_dir()
                 and list((records / "site_provisioned").glob("*.json"))
                 and "provisioned" in rb.output(), timeout, 0.3, "the rule to fire")
    finally:
        rb.stop()
    return {"statuses": statuses, "records": sorted(p.name for p in (records / "site_provisioned").glob("*.json"))}


# ------------------------------------------------------------------------------------ crashes

def _children_by_parent():
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def process_tree(root):
    """``root`` and every descendant pid."""
    children = _children_by_parent()
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def kill_tree(root):
    """Freeze ``root``'s process group and every descendant (until no new one appears), then SIGKILL
    them all: as a machine or container dying at that instant. Returns the pids killed."""
    frozen = set()
    for _round in range(20):
        tree = set(process_tree(root)) - frozen
        if not tree:
            break
        for pid in tree:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        frozen |= tree
    try:
        os.killpg(root, signal.SIGKILL)       # the rulebook's own group (started with start_new_session)
    except ProcessLookupError:
        pass
    for pid in frozen:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return sorted(frozen)


def runs_callback(log_path, slow=0.0, ack_pause=0.0):
    """The environment that loads the webhook_runs callback (tests/support/callback_plugins) into the
    playbooks: each run's start and acknowledgement logged to ``log_path``, every task ``slow``."""
    return {"ANSIBLE_CALLBACK_PLUGINS": str(CALLBACK_DIR), "ANSIBLE_CALLBACKS_ENABLED": "webhook_runs",
            "WEBHOOK_RUNS_LOG": str(log_path), "WEBHOOK_RUNS_SLOW": str(slow),
            "WEBHOOK_RUNS_ACK_PAUSE": str(ack_pause)}


ACTION_STALL = """# Loaded into ansible-rulebook by the crash tests (sitecustomize, on PYTHONPATH): once the file
# WEBHOOK_STALL_FLAG exists, the next debug action waits WEBHOOK_STALL_SECONDS, says so (FLAG.over) and then
# holds until the test kills the process. The rule engine falls behind the source's hand-over with its loop
# free (hand-overs and marks go on): the lag a loaded machine can put there, made certain.
import asyncio
import os

if os.environ.get("WEBHOOK_STALL_FLAG"):
    from ansible_rulebook.action import debug as _debug

    _run = _debug.Debug.__call__

    async def _stalled(self):
        flag = os.environ["WEBHOOK_STALL_FLAG"]
        if os.path.exists(flag) and not os.path.exists(flag + ".started"):
            open(flag + ".started", "w").close()
            await asyncio.sleep(float(os.environ["WEBHOOK_STALL_SECONDS"]))
            open(flag + ".over", "w").close()
            await asyncio.Event().wait()
        return await _run(self)

    _debug.Debug.__call__ = _stalled
"""


def action_stall(directory, flag, seconds):
    """The environment that loads ACTION_STALL (written under ``directory``) into ansible-rulebook."""
    site = Path(directory) / "stall_site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(ACTION_STALL)
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
            "WEBHOOK_STALL_FLAG": str(flag), "WEBHOOK_STALL_SECONDS": str(seconds)}


def read_runs(log_path):
    """{delivery_id: {"starts": [attempt, ...], "acked": n}} from the callback's log."""
    runs = {}
    path = Path(log_path)
    for line in (path.read_text().splitlines() if path.exists() else []):
        parts = line.split()
        if len(parts) != 5:
            continue
        item = runs.setdefault(parts[2], {"starts": [], "acked": 0})
        if parts[1] == "start":
            item["starts"].append(parts[3])
        elif parts[1] == "acked":
            item["acked"] += 1
    return runs


def processed_ids(runs, acknowledged):
    """The deliveries whose playbook ran to its webhook_ack task: an ``ack`` line in the spool (only that
    task writes one, and it is the playbook's last) for a delivery whose run started. The callback's own
    ``acked`` line is NOT required: a SIGKILL that lands after the acknowledgement is written and before
    the callback's line takes the line, not the acknowledgement, and the source rightly never emits that
    delivery again (a CI run waited 19 x 240 s for such a line: the test's race, not a lost event)."""
    return {d for d in acknowledged if runs.get(d, {}).get("starts")}


def acknowledged_ids(spool_dir):
    """Delivery ids with an ``ack`` line in the spool's processing.log (read here, not with the code under test)."""
    path = Path(spool_dir) / "processing.log"
    if not path.exists():
        return set()
    return {line.split()[1] for line in path.read_text().splitlines() if line.startswith("ack ") and
            len(line.split()) == 6}


def emitted_mark(spool_dir):
    """The spool's mark (emitted.log, its highest whole line; 0 when none): every stored record up to it
    is done. Read here, not with the code under test."""
    path = Path(spool_dir) / "emitted.log"
    if not path.exists():
        return 0
    return max((int(line) for line in path.read_bytes().split(b"\n")[:-1] if line.strip().isdigit()), default=0)


def stored_seqs(spool_dir):
    """Delivery id -> seq of every record in spool.log.1 and spool.log (``seq<TAB>delivery_id<TAB>...``)."""
    seqs = {}
    for name in ("spool.log.1", "spool.log"):
        path = Path(spool_dir) / name
        if path.exists():
            for line in path.read_bytes().split(b"\n")[:-1]:
                fields = line.split(b"\t", 2)
                if len(fields) == 3 and fields[0].isdigit():
                    seqs[fields[1].decode()] = int(fields[0])
    return seqs


class CrashExperiment:
    """The issue's crash test, shared by tests/system (one or two repetitions) and tests/reliability
    (twenty): the collection's sample rulebook (wpcloud.hosting.webhooks) under ansible-rulebook with
    acknowledgements on, and repetitions of

    1. a burst of signed deliveries (site_provisioned and other events, ``gap`` seconds apart);
    2. slow actions (every task of their playbooks sleeps ``slow`` seconds: the webhook_runs callback);
    3. SIGKILL of the whole process tree (rulebook, JVM, receiver, ansible-runner's playbooks) at a
       random point within ``kill_window`` seconds of the burst's start;
    4. a restart, and the service's retries of the deliveries that were not answered 200;
    5. the wait until every accepted delivery's playbook has run to its acknowledgement.

    Each repetition starts from the recovered state of the one before (the restarted process).
    """

    KINDS = ("site_provisioned", "site_provisioned", "response_ticket_updated", "over_quota")

    def __init__(self, workdir, key, burst=6, slow=0.25, gap=0.15, kill_window=12.0, seed=None,
                 ack_timeout=600, recover_timeout=240, kinds=KINDS, repo=REPO, ack_pause=0.0):
        import random  # pylint: disable=import-outside-toplevel
        self.workdir = Path(workdir)
        self.key = key
        self.burst, self.slow, self.gap, self.kill_window = burst, slow, gap, kill_window
        self.recover_timeout = recover_timeout
        self.kinds = kinds
        self.rng = random.Random(seed)
        self.tls = tls(self.workdir / "tls")
        self.port = free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.records = write_rulebook_inputs(self.workdir, self.tls, self.port)
        rulebook_vars = json.loads((self.workdir / "vars.yml").read_text())
        rulebook_vars.update(wpcloud_webhook_ack_timeout=ack_timeout)
        (self.workdir / "vars.yml").write_text(json.dumps(rulebook_vars))
        self.spool = Path(rulebook_vars["wpcloud_webhook_spool_dir"])
        self.runs_log = self.workdir / "runs.log"
        env = {"ANSIBLE_COLLECTIONS_PATH": str(collection_tree(self.workdir, repo)), "ANSIBLE_NOCOLOR": "1",
               "WPCLOUD_WEBHOOK_HMAC_KEYS": key}
        env.update(runs_callback(self.runs_log, slow, ack_pause))
        self.rb = Rulebook(self.workdir, ["-r", "wpcloud.hosting.webhooks", "-i", "inventory.yml",
                                          "--vars", "vars.yml"], env)
        self.accepted = {}          # delivery id -> repetition that got its 200
        self.results = []
        self.counter = 0

    def start(self):
        self.rb.start()
        self.rb.wait_ready(self.url, self.tls["ca"], timeout=120)
        return self

    def stop(self):
        self.rb.stop()

    def _bodies(self):
        bodies = []
        for _i in range(self.burst):
            self.counter += 1
            kind = self.kinds[self.counter % len(self.kinds)]
            data = {"response-ticket-id": "t.%d" % self.counter, "status": "success"} if kind != "site_provisioned" else []
            bodies.append(signed(self.key, kind, 700000 + self.counter, data))
        return bodies

    def record_path(self, delivery_id):
        """The record on_site_provisioned writes for a site_provisioned delivery (before its acknowledgement)."""
        return self.records / "site_provisioned" / ("%s.json" % delivery_id)

    def playbooks_running(self):
        """How many ansible-playbook processes the rulebook's tree holds now."""
        count = 0
        for pid in process_tree(self.rb.proc.pid):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as handle:
                    count += b"ansible-playbook" in handle.read()
            except OSError:
                pass
        return count

    def _phase(self, sender):
        """What the kill interrupts: a playbook run (an ansible-playbook process in the tree), the
        deliveries, or neither (the rule engine between actions, or idle)."""
        if self.playbooks_running():
            return "in a playbook" + (" while deliveries arrive" if sender.is_alive() else "")
        return "during deliveries" if sender.is_alive() else "between actions"

    def repetition(self, kill_after_first_run=None, kill_at=None, kill_after_first_ack=False, kill_when=None):
        """One repetition; the kill comes ``kill_at`` seconds after the burst started (default: a random
        point of kill_window), or ``kill_after_first_run`` seconds after the first playbook of the burst
        started (the issue's measurement: 1.5), or with ``kill_after_first_ack`` as soon as the spool holds
        an acknowledgement of the burst that the callback has not logged yet (with ``ack_pause``: inside
        the window between the acknowledgement's write and the end of its task), or as soon as
        ``kill_when(ids, statuses)`` is true (the burst's delivery ids, and {position: HTTP status} of the
        deliveries answered so far): a kill point named by the predicate's docstring."""
        index = len(self.results) + 1
        runs_before = sum(len(r["starts"]) for r in read_runs(self.runs_log).values())
        bodies = self._bodies()
        ids = [delivery_id_of(b) for b in bodies]
        statuses = {}

        def send():
            for position, body in enumerate(bodies):
                try:
                    statuses[position] = post(self.url + "/wpcloud", body, self.tls["ca"], timeout=10)[0]
                except OSError:
                    statuses[position] = None
                time.sleep(self.gap)
        sender = threading.Thread(target=send, daemon=True)
        kill_at = self.rng.uniform(0.0, self.kill_window) if kill_at is None else kill_at
        started = time.monotonic()
        sender.start()
        if kill_after_first_ack:
            def first_unlogged_ack():
                runs = read_runs(self.runs_log)
                return [d for d in acknowledged_ids(self.spool) & set(ids) if not runs.get(d, {}).get("acked")]
            wait_for(first_unlogged_ack, 120, 0.02, "the burst's first acknowledgement",
                     detail=self.rb.tail)
            kill_at = time.monotonic() - started
        elif kill_when is not None:
            wait_for(lambda: kill_when(ids, statuses), 120, 0.02, (kill_when.__doc__ or "the kill point").strip(),
                     detail=self.rb.tail)
            kill_at = time.monotonic() - started
        elif kill_after_first_run is None:
            time.sleep(kill_at)
        else:
            wait_for(lambda: sum(len(r["starts"]) for r in read_runs(self.runs_log).values()) > runs_before,
                     120, 0.05, "the first playbook of the burst")
            time.sleep(kill_after_first_run)
            kill_at = time.monotonic() - started
        phase = self._phase(sender)
        self.rb.kill_tree()
        sender.join(30)
        first = {p for p, status in statuses.items() if status == 200}

        restarted = time.monotonic()
        self.rb.start()
        self.rb.wait_ready(self.url, self.tls["ca"], timeout=120)
        # the service retries what was not answered 200 (twice more at most)
        for position, body in enumerate(bodies):
            for _attempt in range(2):
                if statuses.get(position) == 200:
                    break
                try:
                    statuses[position] = post(self.url + "/wpcloud", body, self.tls["ca"], timeout=10)[0]
                except OSError:
                    statuses[position] = None
        for position, status in statuses.items():
            if status == 200:
                self.accepted.setdefault(ids[position], index)
        wanted = {d for d, rep in self.accepted.items() if rep <= index}

        def recovered():
            return wanted <= processed_ids(read_runs(self.runs_log), acknowledged_ids(self.spool))
        try:
            wait_for(recovered, self.recover_timeout, 0.2, "every accepted delivery's playbook to acknowledge it",
                     progress=lambda: len(acknowledged_ids(self.spool)))
            recover_s = time.monotonic() - restarted
        except AssertionError:
            recover_s = None
        processed = processed_ids(read_runs(self.runs_log), acknowledged_ids(self.spool))
        result = {
            "repetition": index, "kill_at_s": round(kill_at, 2), "phase": phase,
            "accepted_before_kill": len(first), "accepted": sum(1 for s in statuses.values() if s == 200),
            "lost": sorted(wanted - processed),
            "recover_s": None if recover_s is None else round(recover_s, 2),
            "elapsed_s": round(time.monotonic() - started, 2),
        }
        self.results.append(result)
        return result

    def summary(self):
        """Read after the last repetition (and best after stop()): only then is a missing callback line
        one that a kill took, not one still being written."""
        runs = read_runs(self.runs_log)
        extra = {d: len(runs.get(d, {}).get("starts", [])) - 1 for d in self.accepted}
        recover = sorted(r["recover_s"] for r in self.results if r["recover_s"] is not None)
        phases = {}
        for r in self.results:
            phases[r["phase"]] = phases.get(r["phase"], 0) + 1
        return {
            "repetitions": len(self.results), "accepted": len(self.accepted),
            "lost": sum(len(r["lost"]) for r in self.results if r["repetition"] == len(self.results))
            if self.results else 0,
            "lost_any_repetition": sorted({d for r in self.results for d in r["lost"]}),
            "playbook_runs": sum(len(r["starts"]) for r in runs.values()),
            "duplicate_runs": sum(n for n in extra.values() if n > 0),
            "deliveries_run_twice_or_more": sum(1 for n in extra.values() if n > 0),
            "never_run": sorted(d for d, n in extra.items() if n < 0),
            "recover_median_s": recover[len(recover) // 2] if recover else None,
            "recover_max_s": recover[-1] if recover else None,
            "phases": phases,
            # acknowledged, but a kill took the callback's line: processed, and not run again
            "acked_unlogged": sorted(d for d in processed_ids(runs, acknowledged_ids(self.spool))
                                     if not runs[d]["acked"]),
        }
