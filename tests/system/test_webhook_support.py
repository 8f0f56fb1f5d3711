"""Shared helpers for the webhook system tests (no tests here).

Signed bodies come from the emulator's sender (tests/emulator/webhooks.py); reference digests in
these tests are computed with hmac/hashlib directly.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE_FILE = REPO / "extensions" / "eda" / "plugins" / "event_source" / "webhook.py"
EMULATOR_DIR = REPO / "tests" / "emulator"
if str(EMULATOR_DIR) not in sys.path:
    sys.path.insert(0, str(EMULATOR_DIR))

from certs import make_tls_files  # noqa: E402  pylint: disable=wrong-import-position


def ref_digest(key, event, ts, salt):
    return hmac.new(key.encode(), ("%s:%s:%s" % (event, ts, salt)).encode(), hashlib.sha256).hexdigest()


def delivery_id_of(body):
    """The receiver's documented delivery id, computed here from the body."""
    payload = json.loads(body, parse_int=str)
    sig = payload.get("signature") or payload["data"]["signature"]
    return "sig-" + hashlib.sha256(("%s:%s" % (sig["timestamp"], sig["salt"])).encode()).hexdigest()[:32]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tls_files(directory):
    """(ca_path, server pem with key) made with cryptography by the emulator's helper."""
    os.makedirs(str(directory), exist_ok=True)
    ca_path, cert_path, key_path = make_tls_files(str(directory))
    return ca_path, cert_path, key_path


def post(url, body, ca_path=None, content_type="application/json", headers=None, timeout=10):
    data = body if isinstance(body, bytes) else body.encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers=dict({"Content-Type": content_type}, **(headers or {})))
    ctx = ssl.create_default_context(cafile=ca_path) if ca_path else None
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def get_json(url, ca_path=None, timeout=5):
    ctx = ssl.create_default_context(cafile=ca_path) if ca_path else None
    with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:
        return json.loads(resp.read())


def wait_for(predicate, timeout, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


def rulebook_bin():
    """ansible-rulebook next to the running interpreter (the project venv), with java on PATH."""
    exe = Path(sys.executable).parent / "ansible-rulebook"
    if not exe.exists() or not (Path(sys.executable).parent / "ansible-galaxy").exists():
        pytest.skip("ansible-rulebook and ansible-core must be installed in the test venv")
    if not shutil.which("java"):
        pytest.skip("ansible-rulebook needs a JDK (java on PATH)")
    return str(exe)


def collection_tree(tmp_path):
    """A tree containing ansible_collections/wpcloud/hosting -> this repository."""
    root = tmp_path / "collections"
    parent = root / "ansible_collections" / "wpcloud"
    parent.mkdir(parents=True)
    (parent / "hosting").symlink_to(REPO, target_is_directory=True)
    return root


class Rulebook:
    """One ansible-rulebook process; stdout/stderr to files; stopped by PID."""

    def __init__(self, workdir, args, env_extra, name="rulebook"):
        self.workdir = Path(workdir)
        self.args = args
        self.env_extra = env_extra
        self.name = name
        self.proc = None
        self.runs = 0

    @property
    def out_path(self):
        return self.workdir / ("%s-%d.out" % (self.name, self.runs))

    def start(self):
        self.runs += 1
        bindir = str(Path(sys.executable).parent)
        env = dict(os.environ)
        env.update(self.env_extra)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("ANSIBLE_HOME", str(self.workdir / ".ansible"))
        env.setdefault("ANSIBLE_LOCAL_TEMP", str(self.workdir / ".ansible" / "tmp"))
        with open(self.out_path, "wb") as out:
            self.proc = subprocess.Popen([rulebook_bin()] + self.args, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=str(self.workdir), env=env)
        return self

    def output(self):
        text = ""
        for run in range(1, self.runs + 1):
            path = self.workdir / ("%s-%d.out" % (self.name, run))
            if path.exists():
                text += path.read_text(errors="replace")
        return text

    def wait_ready(self, url, ca_path, timeout=60):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError("ansible-rulebook exited %s:\n%s" % (self.proc.returncode, self.output()[-3000:]))
            try:
                return get_json(url + "/healthz", ca_path)
            except OSError:
                return None
        return wait_for(ready, timeout, 0.2, "the webhook source to listen")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Harness:
    """Runs main(queue, args) in a background event loop; a consumer collects emitted events."""

    def __init__(self, plugin, args, queue_size=1):
        self.plugin = plugin
        self.args = args
        self.events = []
        self.error = None
        self.loop = asyncio.new_event_loop()
        self.queue_size = queue_size
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = threading.Event()
        self.pause = threading.Event()

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
        self.task = asyncio.ensure_future(self.plugin["main"](self.queue, self.args))
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

    def start(self):
        self.thread.start()
        self.started.wait(10)
        return self

    def stop(self):
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.task.cancel)
            self.thread.join(10)


def ready(url, ca):
    """Wait until the source answers /healthz over HTTPS."""
    ctx = ssl.create_default_context(cafile=ca)

    def ok():
        try:
            with urllib.request.urlopen(url + "/healthz", context=ctx, timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False
    wait_for(ok, 15, 0.05, "the source to listen")
