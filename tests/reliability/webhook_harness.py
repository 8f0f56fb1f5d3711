"""The wpcloud.hosting.webhook event source in-process (loaded with runpy, as ansible-rulebook does),
plus signed bodies, raw HTTPS clients and an ansible-rulebook runner for the reliability suite."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import runpy
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import reliability_support as rs
from certs import make_tls_files  # tests/emulator
from webhooks import build_body   # tests/emulator: the service's exact body format

_PLUGIN = None


def plugin():
    global _PLUGIN
    if _PLUGIN is None:
        _PLUGIN = runpy.run_path(str(rs.SOURCE_FILE))
    return _PLUGIN


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tls(directory):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_path, cert_path, key_path = make_tls_files(str(directory))
    return {"ca": ca_path, "cert": cert_path, "key": key_path}


def source_args(spool_dir, tls_files, port, keys, **extra):
    args = {"host": "127.0.0.1", "port": port, "certfile": tls_files["cert"], "keyfile": tls_files["key"],
            "hmac_secret": keys, "spool_dir": str(spool_dir), "emit_confirm_delay": 0}
    args.update(extra)
    return args


def signed(key, event, site=None, data=None, in_data=False, ts=None, salt=None):
    return build_body(event, site, data, key, signature_in_data=in_data, ts=ts, salt=salt)


def post(url, body, ca_path, content_type="application/json", headers=None, timeout=15):
    data = body if isinstance(body, bytes) else body.encode()
    hdrs = {"Content-Type": content_type} if content_type is not None else {}
    hdrs.update(headers or {})
    req = urllib.request.Request(url, data=data, method="POST", headers=hdrs)
    ctx = ssl.create_default_context(cafile=ca_path)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def get_json(url, ca_path, timeout=5):
    ctx = ssl.create_default_context(cafile=ca_path)
    with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:
        return json.loads(resp.read())


class Source:
    """Runs main(queue, args) in a background event loop; every emitted event lands in ``events``.

    ``stderr_path``: the receiver child process inherits file descriptor 2 at start; it is pointed at
    this file while the child starts, so the child's log is kept."""

    def __init__(self, args, stderr_path=None, ready_timeout=20):
        self.args = args
        self.events = []
        self.error = None
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = threading.Event()
        self.stderr_path = stderr_path
        self.ready_timeout = ready_timeout
        self.task = None

    def _run(self):
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
        finally:
            self.started.set()

    async def _main(self):
        self.queue = asyncio.Queue(1)
        self.task = asyncio.ensure_future(plugin()["main"](self.queue, self.args))
        consumer = asyncio.ensure_future(self._consume())
        self.started.set()
        try:
            await self.task
        finally:
            consumer.cancel()

    async def _consume(self):
        while True:
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
        deadline = time.monotonic() + self.ready_timeout
        url = "%s://127.0.0.1:%s/healthz" % ("https" if self.args.get("certfile") else "http", self.args["port"])
        ctx = ssl.create_default_context(cafile=self.args.get("_ca")) if self.args.get("certfile") else None
        if ctx is not None:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        while time.monotonic() < deadline:
            if self.error is not None or (self.task is not None and self.task.done()):
                raise RuntimeError("event source stopped: %r" % (self.error or self.task.exception()))
            try:
                with urllib.request.urlopen(url, timeout=1, context=ctx) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("event source not listening after %ss" % self.ready_timeout)

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


def _listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


# ------------------------------------------------------------------------------------- rulebook

def run_rulebook(base, out, tls_files, port, key, canaries, timeout=90):
    """ansible-rulebook -vv with the collection's rulebook; signed, forged, conflicting and duplicate
    deliveries; returns the statuses. Everything it writes stays under ``out``."""
    out = Path(out)
    (out / "inventory.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: %s\n" % (rs.BIN / "python"))
    records = out / "records"
    (out / "vars.yml").write_text(json.dumps({
        "wpcloud_webhook_host": "127.0.0.1", "wpcloud_webhook_port": port,
        "wpcloud_webhook_certfile": tls_files["cert"], "wpcloud_webhook_keyfile": tls_files["key"],
        "wpcloud_webhook_spool_dir": str(out / "spool"), "wpcloud_webhook_record_dir": str(records)}))
    env = rs.ansible_env(base, out, "rulebook")
    env.update({"WPCLOUD_WEBHOOK_HMAC_KEYS": key, "PYTHONUNBUFFERED": "1"})
    log = open(out / "rulebook.out", "wb")
    proc = subprocess.Popen([str(rs.BIN / "ansible-rulebook"), "-r", "wpcloud.hosting.webhooks", "-i", "inventory.yml",
                             "--vars", "vars.yml", "-vv"], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=str(out), env=env)
    url = "https://127.0.0.1:%d" % port
    statuses = []
    try:
        def ready():
            if proc.poll() is not None:
                raise AssertionError("ansible-rulebook exited %s" % proc.returncode)
            try:
                return get_json(url + "/healthz", tls_files["ca"])
            except OSError:
                return None
        rs.wait_for(ready, 60, 0.2, "ansible-rulebook to listen")
        good = signed(key, "site_provisioned", 8101)
        statuses.append(post(url + "/wpcloud", good, tls_files["ca"], headers={"X-Api-Key": canaries.api_key})[0])
        statuses.append(post(url + "/wpcloud", signed("forged-" + key, "site_provisioned", 8102),
                             tls_files["ca"])[0])
        statuses.append(post(url + "/wpcloud", good.replace(b"8101", b"8103"), tls_files["ca"])[0])
        statuses.append(post(url + "/wpcloud", good, tls_files["ca"])[0])
        rs.wait_for(lambda: (records / "site_provisioned").is_dir()
                    and list((records / "site_provisioned").glob("*.json"))
                    and b"provisioned" in (out / "rulebook.out").read_bytes(), timeout, 0.3, "the rule to fire")
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        log.close()
    return {"statuses": statuses, "records": sorted(p.name for p in (records / "site_provisioned").glob("*.json"))}
