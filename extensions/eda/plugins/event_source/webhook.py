# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""wpcloud.hosting.webhook: receive signed WP Cloud webhooks, store them durably, emit them."""

from __future__ import annotations

DOCUMENTATION = r"""
---
short_description: Receive signed WP Cloud webhooks over HTTPS, store them durably, emit them once.
description:
  - An ansible-rulebook event source that receives the webhooks a WP Cloud client account sends to
    its C(webhook_url), verifies the HMAC-SHA256 signature carried in the body
    (C({event}:{signature.timestamp}:{signature.salt}) keyed with the C(webhook_hmac_key)),
    and puts each accepted event on the rulebook queue.
  - An event is answered with exactly HTTP 200 only after it has been appended to a spool file and
    the file has been synced to disk (requests that arrive together share one fsync). Events are
    then emitted in order; the highest emitted position is recorded in a second append-only file,
    so after a crash or restart every stored event not yet emitted is emitted (at least once).
  - The HTTPS listener runs in a child process of the rulebook (same Python), so acknowledging
    deliveries never waits for the rule engine; the child ends with the rulebook. The keys reach
    it through a pipe, never through the command line or the environment.
  - Each event carries a stable delivery id in C(meta.delivery_id), C(sig-) and the first 32 hex
    digits of the SHA-256 of C({signature.timestamp}:{signature.salt}) (the C(delivery_id) the
    C(wpcloud.hosting.webhook_verify) filter returns), or, for an unsigned delivery, C(body-) and the
    first 32 hex digits of the SHA-256 of the body. A redelivery of a stored
    event (the service retries up to two more times after a non-200 answer) is answered 200 and
    not emitted again. The same signature with a different body is answered 409 and never emitted
    (the signature does not cover C(data) or C(atomic_site_id)).
  - With keys configured, unsigned or badly signed deliveries get 401 and are never stored or
    emitted. Without a key the source refuses to start unless O(allow_unsigned=true).
  - Unknown event types and unknown fields pass through untouched. The event has the body in
    C(payload) and C(endpoint), C(headers), C(delivery_id), C(signature) (C(verified), C(key_index),
    C(location)), C(received_at) and C(uuid) in C(meta).
    Authorization, cookie, token and signature headers are never copied into C(meta.headers).
  - C(GET /healthz) answers 200 with counters (no secrets), including C(key_count) and
    C(verified_by_key), the deliveries stored per matching key position (used to check a key rotation).
  - Bodies larger than O(max_body_size) get 413, malformed JSON 400, a content type other than
    O(content_types) 415.
  - Slow or idle clients are disconnected, 10 seconds each for the TLS handshake, a request's headers
    (also between two requests of a connection) and its body (408); at most 512 connections are
    served at once, more are closed when accepted.
  - Option names follow C(eda.builtin.webhook) where they mean the same (host, port, token,
    certfile, keyfile, password, cafile, capath, hmac_secret).
options:
  host:
    description: The address to listen on.
    type: str
    default: "0.0.0.0"
  port:
    description: The TCP port to listen on.
    type: int
    required: true
  certfile:
    description:
      - Path to the server certificate (PEM, chain allowed). Required unless
        O(allow_insecure_http=true).
    type: str
  keyfile:
    description: Path to the private key of O(certfile) (when not inside O(certfile)).
    type: str
  password:
    description: Password of O(keyfile).
    type: str
  cafile:
    description:
      - CA certificates used to require and validate client certificates (mutual TLS), as in
        C(eda.builtin.webhook). WP Cloud itself does not send a client certificate; use this only
        behind a proxy that does.
    type: str
  capath:
    description: Directory of CA certificates for client-certificate validation (mutual TLS).
    type: str
  allow_insecure_http:
    description:
      - Listen on plain HTTP when no O(certfile) is given. Only for a receiver behind a TLS
        terminating proxy or for local tests; WP Cloud requires an HTTPS C(webhook_url).
    type: bool
    default: false
  hmac_secret:
    description:
      - The client account's C(webhook_hmac_key). A list, or a comma-separated string, gives
        several active keys during a rotation; the matching position is in
        C(meta.signature.key_index). Entries are stripped of surrounding blanks.
      - Every key must be strong, as M(wpcloud.hosting.client_meta) requires of a C(webhook_hmac_key),
        that is at least 32 characters, 10 of them distinct. The source refuses to start with a weaker one
        (a short key can be guessed offline from one signed delivery); a changed O(hmac_secret_file)
        with one is ignored with a warning.
      - When not set or blank, the environment variable C(WPCLOUD_WEBHOOK_HMAC_KEYS) (or
        C(WPCLOUD_WEBHOOK_HMAC_KEY)) is read, so the key need not appear in the rulebook.
    type: list
    elements: str
  hmac_secret_file:
    description:
      - A file with the active key(s), one per line (blank lines and lines starting with C(#) are
        ignored), used when O(hmac_secret) is not set. The receiver re-reads it when it changes
        (checked at most once a second), so a key rotation needs no restart; see
        C(playbooks/rotate_webhook_key.yml). Keep it mode 0600.
    type: path
  allow_unsigned:
    description:
      - Start without any key and accept unsigned deliveries (delivery id = body hash). Never for
        production.
    type: bool
    default: false
  token:
    description:
      - Optional bearer token expected in the C(Authorization) header (compared in constant time),
        for a proxy that adds one. WP Cloud does not send one.
    type: str
  spool_dir:
    description:
      - Directory of the spool (C(spool.log), C(spool.log.1), C(emitted.log), C(lock)). One
        receiver per directory (it is locked).
      - Default C(WPCLOUD_WEBHOOK_SPOOL_DIR), else C($XDG_STATE_HOME/wpcloud.hosting/webhook-<port>)
        (C(~/.local/state/...)).
    type: str
  spool_max_bytes:
    description:
      - Size after which the spool file is rotated to C(spool.log.1) (when every stored event has
        been emitted). Two segments are kept; they also rebuild the duplicate memory on restart.
    type: int
    default: 67108864
  dedupe_size:
    description: How many delivery ids are remembered to answer redeliveries without emitting twice.
    type: int
    default: 100000
  max_age:
    description:
      - Optional freshness window in seconds. The unit of the signature timestamp is not
        documented, so it is never compared with the clock; a delivery is refused (401, reason
        stale) when its signature timestamp is lower than the highest one this receiver had
        already seen O(max_age) seconds earlier. Keep it above the service's retry delays.
    type: int
  max_body_size:
    description: Largest accepted body in bytes (413 above).
    type: int
    default: 1048576
  content_types:
    description: Accepted request content types (media type only; C(+json) suffixes also match C(application/json)).
    type: list
    elements: str
    default: ["application/json"]
  emit_confirm_delay:
    description:
      - Seconds after an event was handed to the rulebook before its emitted position is recorded.
        Events handed over in that window before a crash are emitted again after the restart
        (at least once, with the same C(meta.delivery_id)); rules should be idempotent on it.
    type: float
    default: 1.0
"""

EXAMPLES = r"""
- name: WP Cloud webhooks
  hosts: localhost
  sources:
    - wpcloud.hosting.webhook:
        host: 0.0.0.0
        port: 8443
        certfile: /etc/eda/tls/webhook.crt
        keyfile: /etc/eda/tls/webhook.key
        # hmac_secret omitted: read from WPCLOUD_WEBHOOK_HMAC_KEYS (credential type injects it)
        spool_dir: /var/lib/eda/wpcloud-webhook
  rules:
    - name: site provisioned
      condition: event.payload.event == "site_provisioned"
      action:
        run_playbook:
          name: wpcloud.hosting.on_site_provisioned
"""

# The plugin is one file, as Event-Driven Ansible requires. Its two halves run in two processes:
#
#   rulebook side (section 4: main(), Emitter, ReceiverProcess), inside ansible-rulebook: checks the
#       options, starts the receiver, reads stored events from the spool and hands them to the
#       rulebook queue in order, and records what it handed over (emitted.log);
#   receiver process (section 3: Receiver, SpoolWriter), a child started with --receiver: HTTPS,
#       the request checks (aiohttp middlewares, one per check), the duplicate memory and the
#       durable spool. It never waits for the rule engine.
#
# They share only what section 2 defines: the options, the spool's file format (the seam between
# "stored" and "emitted") and the pipe messages. Signature, key and delivery-id rules come from
# plugins/module_utils/_webhook_signature.py, duplicate and freshness rules from _webhook_replay.py,
# the same code the webhook_verify filter uses (section 1).

import asyncio
import hashlib
import hmac
import importlib
import importlib.util
import json
import logging
import os
import re
import signal
import ssl
import sys
import time
import uuid
from collections import deque
from datetime import datetime, timezone
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None

from aiohttp import web

logger = logging.getLogger(__name__)


# =============================================================================================
# 1. The collection's shared code
# =============================================================================================
def _load_module_util(name: str):
    """plugins/module_utils/<name>.py of this collection.

    ansible-rulebook runs source plugins with runpy and does not install Ansible's collection
    loader, so ``ansible_collections.wpcloud.hosting...`` is usually not importable here. The
    file is loaded by its path in the (fixed) collection layout; the import is a fallback. The
    files loaded this way import nothing from each other.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "plugins", "module_utils", name + ".py"))
    if os.path.isfile(path):
        spec = importlib.util.spec_from_file_location("_wpcloud_hosting" + name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return importlib.import_module("ansible_collections.wpcloud.hosting.plugins.module_utils." + name)


sig = _load_module_util("_webhook_signature")       # verification, keys, delivery ids, fingerprints
replay = _load_module_util("_webhook_replay")       # duplicate rule and memory, freshness window


# =============================================================================================
# 2. Both sides: options and keys, the spool's file format, the pipe between the processes
# =============================================================================================
ENV_KEYS = ("WPCLOUD_WEBHOOK_HMAC_KEYS", "WPCLOUD_WEBHOOK_HMAC_KEY")
ENV_SPOOL = "WPCLOUD_WEBHOOK_SPOOL_DIR"
# Bounds against slow or idle clients (slowloris): the TLS handshake, a request's headers (and the
# idle time between two requests of a connection) and its body each get this many seconds. A valid
# delivery is a small JSON body sent at once; the service retries a delivery that failed.
REQUEST_DEADLINE = 10.0
# Connections served at once; more are closed as soon as they are accepted.
MAX_CONNECTIONS = 512


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y")
    return bool(value)


def _clean_args(args: dict[str, Any]) -> dict[str, Any]:
    """Drop options rendered empty by a rulebook ("{{ var | default('') }}" means not set)."""
    out = {}
    for name, value in (args or {}).items():
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        out[name] = value
    try:
        if "max_age" in out and float(out["max_age"]) <= 0:
            del out["max_age"]
    except (TypeError, ValueError):
        raise ValueError("max_age must be a number of seconds, got %r" % out["max_age"]) from None
    return out


def _check_args(args: dict[str, Any]) -> None:
    """Refuse bad options with a message that names the option and the rule, before anything starts."""
    def number(name, kind, low, rule):
        if name not in args:
            return
        try:
            value = kind(args[name])
        except (TypeError, ValueError):
            raise ValueError("%s must be %s, got %r" % (name, rule, args[name])) from None
        if isinstance(args[name], bool) or value < low:
            raise ValueError("%s must be %s, got %r" % (name, rule, args[name]))
    if "port" not in args:
        raise ValueError("Missing required argument: port")
    number("port", int, 1, "an integer from 1 to 65535")
    if int(args["port"]) > 65535:
        raise ValueError("port must be an integer from 1 to 65535, got %r" % args["port"])
    number("max_body_size", int, 1, "a positive number of bytes")
    number("spool_max_bytes", int, 1, "a positive number of bytes")
    number("dedupe_size", int, 1, "a positive integer")
    number("max_age", float, 0, "a number of seconds")
    number("emit_confirm_delay", float, 0, "a number of seconds")
    for name in ("certfile", "keyfile", "cafile", "hmac_secret_file"):
        if name in args and not os.path.isfile(str(args[name])):
            raise ValueError("%s must be a readable file; %s does not exist or is not a file" % (name, args[name]))
    if "capath" in args and not os.path.isdir(str(args["capath"])):
        raise ValueError("capath must be a directory; %s is not one" % args["capath"])
    if "spool_dir" in args and os.path.exists(str(args["spool_dir"])) and not os.path.isdir(str(args["spool_dir"])):
        raise ValueError("spool_dir must be a directory; %s exists and is not one" % args["spool_dir"])
    if "certfile" in args:
        try:
            _ssl_context(args)
        except (ssl.SSLError, OSError) as exc:
            raise ValueError("certfile and keyfile could not be loaded as a certificate and its private key "
                             "(%s): check that keyfile belongs to certfile and password opens it"
                             % exc.__class__.__name__) from None


def _ssl_context(args: dict[str, Any]) -> ssl.SSLContext | None:
    certfile = args.get("certfile")
    if not certfile:
        if _bool(args.get("allow_insecure_http", False)):
            return None
        raise ValueError("certfile is required (HTTPS); set allow_insecure_http: true only behind a TLS proxy")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile, args.get("keyfile"), args.get("password"))
    if args.get("cafile") or args.get("capath"):
        context.load_verify_locations(args.get("cafile"), args.get("capath"))
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _keys_from_args(args: dict[str, Any]) -> list[str]:
    """The active keys: hmac_secret (a list or a comma-separated string), else the keys of
    hmac_secret_file, else WPCLOUD_WEBHOOK_HMAC_KEYS / WPCLOUD_WEBHOOK_HMAC_KEY."""
    raw = args.get("hmac_secret")
    if isinstance(raw, str) and not raw.strip():
        raw = None  # "{{ var | default('') }}" in a rulebook: fall back to the file, then the environment
    if raw is None and args.get("hmac_secret_file"):
        return sig.read_key_file(str(args["hmac_secret_file"]))
    if raw is None:
        raw = next((os.environ[name] for name in ENV_KEYS if os.environ.get(name)), None)
    return sig.parse_keys(raw, split_commas=True)


def _check_keys(keys: list[str], allow_unsigned: bool) -> None:
    if not keys and not allow_unsigned:
        raise ValueError("no hmac_secret, hmac_secret_file or WPCLOUD_WEBHOOK_HMAC_KEYS configured; "
                         "set allow_unsigned: true to accept unsigned deliveries")
    weak = sig.weak_keys(keys)
    if weak:
        raise ValueError("hmac_secret (or hmac_secret_file, WPCLOUD_WEBHOOK_HMAC_KEYS): %s too weak. %s"
                         % (weak, sig.KEY_RULE))


def _default_spool_dir(port: Any) -> str:
    if os.environ.get(ENV_SPOOL):
        return os.environ[ENV_SPOOL]
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "wpcloud.hosting", "webhook-%s" % port)


# The spool directory. spool.log: one record per stored event, appended and synced before the 200
# ("seq<TAB>delivery_id<TAB>body fingerprint<TAB>event JSON<LF>"); spool.log.1: the previous
# segment; emitted.log: one line per mark, the highest seq handed to the rulebook (and confirmed);
# lock: held by the one receiver of the directory. Written by the receiver (spool.log, lock) and by
# the rulebook side (emitted.log); read by both.
SPOOL_FILE = "spool.log"
OLD_SPOOL_FILE = SPOOL_FILE + ".1"
EMITTED_FILE = "emitted.log"
LOCK_FILE = "lock"


def _record(seq: int, delivery_id: str, fingerprint: str, event: dict) -> bytes:
    return b"%d\t%s\t%s\t%s\n" % (seq, delivery_id.encode(), fingerprint.encode(),
                                  json.dumps(event, separators=(",", ":")).encode("utf-8"))


def _read_records(path: str, start: int = 0, end: int | None = None, limit: int | None = None,
                  window: int | None = None):
    """Complete records of a spool file: (seq, delivery_id, fingerprint, end_offset, event bytes).

    ``window`` bounds the bytes read (a record larger than it is read whole on its own). A record
    without its newline (a write cut by a crash) ends the list; the offset returned is where the
    complete records end.
    """
    size = -1 if end is None else max(0, end - start)
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            data = handle.read(size if window is None or 0 <= size <= window else window)
            if window is not None and b"\n" not in data and len(data) == window:
                data += handle.readline()
    except FileNotFoundError:
        return [], start
    records = []
    pos = 0
    while limit is None or len(records) < limit:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        parts = data[pos:nl].split(b"\t", 3)
        if len(parts) != 4 or not parts[0].isdigit():
            break
        records.append((int(parts[0]), parts[1].decode(), parts[2].decode(), start + nl + 1, parts[3]))
        pos = nl + 1
    return records, start + pos


def _sync(fd: int) -> None:
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # pragma: no cover
        os.fsync(fd)


def _sync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# The pipe between the two processes, one line per message.
#   rulebook -> receiver (the receiver's stdin): the config as one JSON line; then "M <seq>": every
#       event up to seq was emitted and its mark recorded (the spool may rotate past it). EOF: stop.
#   receiver -> rulebook (its stdout): "READY <seq> <offset>" (listening; the spool is durable up to
#       there) or "E <JSON message>" (it could not start); then "D <seq> <offset>" (durable up to
#       there) and "R" (spool.log was renamed to spool.log.1).
MSG_READY = b"READY "
MSG_ERROR = b"E "
MSG_DURABLE = b"D "
MSG_ROTATED = b"R"
MSG_MARKED = b"M "


# =============================================================================================
# 3. Receiver process: HTTP, the request checks, duplicate memory, spool writes with grouped fsync.
# It runs in its own process so that acknowledging deliveries never waits for the rule engine,
# which shares the rulebook's event loop and Python thread.
# =============================================================================================
_HIDDEN_HEADER = re.compile(r"auth|cookie|token|secret|signature|api-key|apikey|hmac|password", re.I)


class SpoolWriter:
    """Append-only spool.log with group commit, and the memory of the deliveries it holds.

    Requests that arrive together share one write and one fsync. The duplicate memory (delivery id
    -> body fingerprint) is rebuilt from the two spool segments when the receiver starts.
    """

    def __init__(self, directory: str, max_bytes: int, dedupe_size: int, notify) -> None:
        self.dir = directory
        self.path = os.path.join(directory, SPOOL_FILE)
        self.old_path = os.path.join(directory, OLD_SPOOL_FILE)
        self.max_bytes = max_bytes
        self.notify = notify                      # Notifier: progress messages to the rulebook side
        self.memory = replay.DedupeMemory(dedupe_size)
        self.inflight: dict[str, tuple[str, asyncio.Future]] = {}
        self.next_seq = 1
        self.durable_seq = 0
        self.durable_offset = 0
        self.marked_seq = 0                       # told by the rulebook side: emitted and confirmed
        self.stats = {"stored": 0, "duplicates": 0, "conflicts": 0, "rejected": 0, "fsyncs": 0}
        self._fd = -1
        self._lock_fd = -1
        self._pending: list = []
        self._writer: asyncio.Task | None = None

    def open(self, lock_timeout: float = 15.0) -> None:
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self._lock_fd = os.open(os.path.join(self.dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
        if fcntl is not None:
            deadline = time.monotonic() + lock_timeout   # a previous receiver may still be exiting
            while True:
                try:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("spool directory %s is used by another receiver" % self.dir) from None
                    time.sleep(0.1)
        max_seq = 0
        for seq, delivery_id, fingerprint, _end, _event in _read_records(self.old_path)[0]:
            self.memory.remember(delivery_id, fingerprint)
            max_seq = max(max_seq, seq)
        records, good = _read_records(self.path)
        for seq, delivery_id, fingerprint, _end, _event in records:
            self.memory.remember(delivery_id, fingerprint)
            max_seq = max(max_seq, seq)
        size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
        if good < size:
            logger.warning("wpcloud.hosting.webhook: cutting %d byte(s) of an unfinished record", size - good)
            with open(self.path, "r+b") as handle:
                handle.truncate(good)
                handle.flush()
                os.fsync(handle.fileno())
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        _sync_dir(self.dir)
        # never reuse a position the rulebook side has already recorded as emitted
        max_seq = max(max_seq, self.marked_seq)
        self.next_seq = max_seq + 1
        self.durable_seq = max_seq
        self.durable_offset = good

    def check(self, delivery_id: str, fingerprint: str):
        """(answer, pending): ``new``, or ``duplicate``/``conflict`` by the one duplicate rule;
        ``pending`` is the future of a store of that delivery still in flight (else None)."""
        inflight = self.inflight.get(delivery_id)
        if inflight is not None:
            return replay.judge(inflight[0], fingerprint), inflight[1]
        return self.memory.check(delivery_id, fingerprint), None

    async def store(self, delivery_id: str, fingerprint: str, event: dict) -> None:
        """Return once the event is on disk (fsync); raise on a storage error."""
        loop = asyncio.get_running_loop()
        seq = self.next_seq
        self.next_seq += 1
        future = loop.create_future()
        self.inflight[delivery_id] = (fingerprint, future)
        self._pending.append((seq, _record(seq, delivery_id, fingerprint, event), delivery_id, fingerprint, future))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_loop())
        try:
            await asyncio.shield(future)
        finally:
            self.inflight.pop(delivery_id, None)

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            batch, self._pending = self._pending, []
            data = b"".join(item[1] for item in batch)
            try:
                if self.durable_offset > self.max_bytes and self.marked_seq >= self.durable_seq:
                    await loop.run_in_executor(None, self._rotate)
                    self.notify.rotated()
                await loop.run_in_executor(None, self._append, data)
            except Exception as exc:  # pylint: disable=broad-except
                logger.error("wpcloud.hosting.webhook: spool write failed: %s", exc)
                for item in batch:
                    if not item[4].done():
                        item[4].set_exception(exc)
                continue
            self.stats["fsyncs"] += 1
            for _seq, _line, delivery_id, fingerprint, _future in batch:
                self.memory.remember(delivery_id, fingerprint)
            self.durable_seq = batch[-1][0]
            self.durable_offset += len(data)
            self.stats["stored"] += len(batch)
            self.notify.durable(self.durable_seq, self.durable_offset)
            for item in batch:
                if not item[4].done():
                    item[4].set_result(None)

    def _append(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            _sync(self._fd)
        except OSError:
            try:       # never leave half a record in front of the next batch
                os.ftruncate(self._fd, self.durable_offset)
            except OSError:
                pass
            raise

    def _rotate(self) -> None:
        os.close(self._fd)
        os.replace(self.path, self.old_path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        _sync_dir(self.dir)
        self.durable_offset = 0

    async def close(self, timeout: float = 5.0) -> None:
        """After the listener stopped: let a write in flight finish its fsync, then close the files."""
        if self._writer is not None:
            try:
                await asyncio.wait_for(self._writer, timeout)
            except Exception:  # pylint: disable=broad-except
                pass
        self.close_files()

    def close_files(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = self._lock_fd = -1


_UUID_NAMESPACE = uuid.NAMESPACE_URL.bytes


def _event_uuid(delivery_id: str) -> str:
    """``str(uuid.uuid5(uuid.NAMESPACE_URL, "wpcloud-webhook:" + delivery_id))``, the event's
    ``meta.uuid``, computed without the uuid module's checks (a third of the time, same value)."""
    digest = bytearray(hashlib.sha1(_UUID_NAMESPACE + b"wpcloud-webhook:" + delivery_id.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50        # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80        # RFC 4122 variant
    text = digest.hex()
    return "%s-%s-%s-%s-%s" % (text[:8], text[8:12], text[12:16], text[16:20], text[20:])


class Delivery:
    """What the request checks learn about one delivery, kept on the request (``request[DELIVERY]``)."""

    __slots__ = ("body", "payload", "delivery_id", "fingerprint", "signature", "timestamp", "key_index", "stored")

    def __init__(self, body: bytes, payload: dict) -> None:
        self.body = body
        self.payload = payload
        self.delivery_id = ""
        self.fingerprint = ""
        self.signature: dict[str, Any] = {"verified": False}
        self.timestamp = None
        self.key_index = None
        self.stored = False


DELIVERY = web.RequestKey("wpcloud_delivery", Delivery) if hasattr(web, "RequestKey") else "wpcloud_delivery"


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


def _chained(middleware, handler):
    """``middleware(request, handler)`` as a handler of its own, as aiohttp chains middlewares."""
    def chained(request):
        return middleware(request, handler)
    return chained


class Receiver:
    """The receiver's HTTP side: a delivery (a POST to any path) passes the checks below in this
    order, each an aiohttp middleware; the first that fails answers. Then :meth:`store` spools it.

    ===================  ==============================================================  ======
    check                refuses                                                         status
    ===================  ==============================================================  ======
    check_size           a Content-Length above max_body_size                            413
    check_token          (with ``token``) a missing or wrong ``Authorization: Bearer``   401
    check_content_type   a content type other than content_types                         415
    read_json            a body above max_body_size or not sent within REQUEST_DEADLINE  413/408
                         a body that is not a JSON object (or is nested too deeply)      400
    verify_signature     (with keys) a missing, malformed or wrong signature             401
    drop_duplicates      a known delivery id: same body 200 (not stored again),          200/409
                         another body 409
    check_freshness      (with ``max_age``) a signature older than the window            401
    ===================  ==============================================================  ======

    aiohttp applies an application's middlewares to every route, and looks the chain up for each
    request; these checks belong to the delivery route only (``GET /healthz`` has none), so
    :meth:`app` composes them around that route's handler once, at start.
    """

    def __init__(self, args: dict[str, Any], spool: SpoolWriter, keys: list[str], recovered: int = 0) -> None:
        self.spool = spool
        self.keys = keys
        self.recovered = recovered
        self.token = str(args["token"]).encode() if args.get("token") is not None else None
        self.max_body = int(args.get("max_body_size", 1048576))
        types = args.get("content_types") or ["application/json"]
        if isinstance(types, str):
            types = [t.strip() for t in types.split(",")]
        self.content_types = {t.lower() for t in types}
        max_age = args.get("max_age")
        self.freshness = replay.FreshnessWindow(float(max_age)) if max_age else None
        # Stored deliveries per matching key position: a key rotation checks that the new key (0) is in use.
        self.verified_by_key = [0] * len(keys)
        self.keys_file = args.get("hmac_secret_file")
        self._keys_mtime = os.stat(self.keys_file).st_mtime_ns if self.keys_file else None
        self._keys_checked = time.monotonic()
        self._deliver = self.store

    def checks(self) -> list:
        """The middlewares of a delivery, outermost first (options that are not set add none)."""
        checks = [self.check_size]
        if self.token is not None:
            checks.append(self.check_token)
        checks += [self.check_content_type, self.read_json, self.verify_signature, self.drop_duplicates]
        if self.freshness is not None:
            checks.append(self.check_freshness)
        return checks

    def app(self) -> web.Application:
        handler = self.store
        for check in reversed(self.checks()):
            handler = _chained(check, handler)
        self._deliver = handler
        app = web.Application(client_max_size=self.max_body)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_post(r"/{endpoint:.*}", self.deliver)
        return app

    async def deliver(self, request: web.Request) -> web.StreamResponse:
        """The delivery route's handler: the checks, then :meth:`store`."""
        return await self._deliver(request)

    # -- answers ---------------------------------------------------------------------------
    @staticmethod
    def _reply(status: int, text: str) -> web.Response:
        return web.Response(status=status, text=text + "\n")

    def _reject(self, status: int, text: str) -> web.Response:
        self.spool.stats["rejected"] += 1
        return self._reply(status, text)

    # -- the checks, outermost first -------------------------------------------------------
    @web.middleware
    async def check_size(self, request: web.Request, handler) -> web.StreamResponse:
        if request.content_length is not None and request.content_length > self.max_body:
            return self._reject(413, "body too large")
        return await handler(request)

    @web.middleware
    async def check_token(self, request: web.Request, handler) -> web.StreamResponse:
        scheme, _sep, value = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(value.strip().encode(), self.token):
            return self._reject(401, "invalid authorization")
        return await handler(request)

    @web.middleware
    async def check_content_type(self, request: web.Request, handler) -> web.StreamResponse:
        media = _media_type(request.headers.get("Content-Type"))
        if media not in self.content_types and not (media.endswith("+json")
                                                    and "application/json" in self.content_types):
            return self._reject(415, "content type must be application/json")
        return await handler(request)

    @web.middleware
    async def read_json(self, request: web.Request, handler) -> web.StreamResponse:
        try:
            body = await asyncio.wait_for(request.read(), REQUEST_DEADLINE)
        except web.HTTPRequestEntityTooLarge:
            return self._reject(413, "body too large")
        except asyncio.TimeoutError:
            response = self._reject(408, "request body not received within %gs" % REQUEST_DEADLINE)
            response.force_close()
            return response
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):    # RecursionError: nested too deeply
            return self._reject(400, "body is not valid JSON")
        if not isinstance(payload, dict):
            return self._reject(400, "body is not a JSON object")
        request[DELIVERY] = Delivery(body, payload)
        return await handler(request)

    @web.middleware
    async def verify_signature(self, request: web.Request, handler) -> web.StreamResponse:
        delivery = request[DELIVERY]
        self._reload_keys()
        if not self.keys:        # allow_unsigned without a key
            delivery.delivery_id = sig.unsigned_delivery_id(delivery.body)
            delivery.fingerprint = sig.body_fingerprint(delivery.body)
            return await handler(request)
        result = sig.verify_signature(sig.exact_payload(delivery.body, delivery.payload), self.keys)
        if not result.valid:
            logger.warning("wpcloud.hosting.webhook: rejected delivery (%s) for event %r", result.reason, result.event)
            return self._reject(401, "signature %s" % result.reason)
        delivery.fingerprint = sig.body_fingerprint(delivery.body)
        delivery.delivery_id = result.delivery_id
        delivery.timestamp = result.timestamp
        delivery.key_index = result.key_index
        delivery.signature = {"verified": True, "key_index": result.key_index, "location": result.location}
        keys = self.keys
        response = await handler(request)
        if delivery.stored and keys is self.keys:       # not counted across a key reload
            self.verified_by_key[result.key_index] += 1
        return response

    @web.middleware
    async def drop_duplicates(self, request: web.Request, handler) -> web.StreamResponse:
        delivery = request[DELIVERY]
        answer, pending = self.spool.check(delivery.delivery_id, delivery.fingerprint)
        if answer == replay.NEW:
            return await handler(request)
        if answer == replay.CONFLICT:
            self.spool.stats["conflicts"] += 1
            logger.warning("wpcloud.hosting.webhook: signature reused with another body (%s)", delivery.delivery_id)
            return self._reply(409, "signature already used for another body")
        if pending is not None:         # the first copy is still being stored: answer as it will be
            try:
                await asyncio.shield(pending)
            except Exception:  # pylint: disable=broad-except
                return self._reply(503, "not stored")
        self.spool.stats["duplicates"] += 1
        return self._reply(200, "OK (duplicate)")

    @web.middleware
    async def check_freshness(self, request: web.Request, handler) -> web.StreamResponse:
        delivery = request[DELIVERY]
        if self.freshness.is_stale(delivery.timestamp):
            return self._reject(401, "signature stale")
        response = await handler(request)
        if delivery.stored:
            self.freshness.observe(delivery.timestamp)
        return response

    # -- handlers --------------------------------------------------------------------------
    async def store(self, request: web.Request) -> web.Response:
        """A delivery that passed every check: answered 200 once it is durably spooled."""
        delivery = request[DELIVERY]
        headers = {k: v for k, v in request.headers.items() if not _HIDDEN_HEADER.search(k)}
        event = {
            "payload": delivery.payload,
            "meta": {
                "endpoint": request.match_info.get("endpoint", ""),
                "headers": headers,
                "delivery_id": delivery.delivery_id,
                "signature": delivery.signature,
                "received_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
                "uuid": _event_uuid(delivery.delivery_id),
            },
        }
        try:
            await self.spool.store(delivery.delivery_id, delivery.fingerprint, event)
        except Exception:  # pylint: disable=broad-except
            return self._reply(503, "could not store the event")
        delivery.stored = True
        return self._reply(200, "OK")

    async def healthz(self, request: web.Request) -> web.Response:  # pylint: disable=unused-argument
        self._reload_keys()
        body = dict(self.spool.stats)
        body.update(status="ok", backlog=self.spool.durable_seq - self.spool.marked_seq,
                    recovered=self.recovered, key_count=len(self.keys),
                    verified_by_key=list(self.verified_by_key))
        return web.json_response(body)

    def _reload_keys(self) -> None:
        """Pick up a changed hmac_secret_file (at most one stat a second)."""
        now = time.monotonic()
        if self.keys_file is None or now - self._keys_checked < 1.0:
            return
        self._keys_checked = now
        try:
            mtime = os.stat(self.keys_file).st_mtime_ns
            if mtime == self._keys_mtime:
                return
            keys = sig.read_key_file(self.keys_file)
        except OSError as exc:
            logger.warning("wpcloud.hosting.webhook: keeping the current keys; hmac_secret_file unreadable (%s)",
                           exc.__class__.__name__)
            return
        if not keys:
            logger.warning("wpcloud.hosting.webhook: keeping the current keys; hmac_secret_file is empty")
            return
        weak = sig.weak_keys(keys)
        if weak:
            logger.warning("wpcloud.hosting.webhook: keeping the current keys; in hmac_secret_file %s too weak. %s",
                           weak, sig.KEY_RULE)
            return
        self.keys, self._keys_mtime = keys, mtime
        self.verified_by_key = [0] * len(keys)
        logger.info("wpcloud.hosting.webhook: %d key(s) loaded from hmac_secret_file", len(keys))


class Notifier:
    """Messages to the rulebook side over a non-blocking pipe.

    Only the latest durable position matters, so while the pipe is busy (the rulebook's event loop
    is running rules) positions are coalesced instead of blocking the receiver.
    """

    def __init__(self, transport) -> None:
        self.transport = transport
        self.pending: tuple[int, int] | None = None
        self.scheduled = False

    def _write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    def flush(self) -> None:
        self.scheduled = False
        if self.pending is None:
            return
        if self.transport.get_write_buffer_size() == 0:
            seq, offset = self.pending
            self.pending = None
            self._write(MSG_DURABLE + b"%d %d\n" % (seq, offset))
        else:
            self.scheduled = True
            asyncio.get_running_loop().call_later(0.002, self.flush)

    def durable(self, seq: int, offset: int) -> None:
        self.pending = (seq, offset)
        if not self.scheduled:
            self.flush()

    def rotated(self) -> None:
        if self.pending is not None:
            seq, offset = self.pending
            self.pending = None
            self._write(MSG_DURABLE + b"%d %d\n" % (seq, offset))
        self._write(MSG_ROTATED + b"\n")

    def ready(self, seq: int, offset: int) -> None:
        self._write(MSG_READY + b"%d %d\n" % (seq, offset))

    def failed(self, message: str) -> None:
        self._write(MSG_ERROR + json.dumps(message).encode() + b"\n")

    async def drain(self, timeout: float = 2.0) -> None:
        deadline = time.monotonic() + timeout
        while self.transport.get_write_buffer_size() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)


def _die_with_parent() -> None:
    """Linux: get SIGKILL when the rulebook process dies (stdin EOF is the portable signal)."""
    try:
        import ctypes  # pylint: disable=import-outside-toplevel
        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))   # PR_SET_PDEATHSIG
    except (OSError, AttributeError, ImportError):
        pass


class _Refused(asyncio.Protocol):
    """What a connection over MAX_CONNECTIONS gets: closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


class _BoundedSite(web.TCPSite):
    """web.TCPSite with the bounds aiohttp leaves open: a TLS handshake deadline and a connection cap."""

    __slots__ = ()

    async def start(self) -> None:
        await super(web.TCPSite, self).start()        # web.BaseSite: registers the site with the runner
        server = self._runner.server

        def protocol():
            return _Refused() if len(server.connections) >= MAX_CONNECTIONS else server()

        bounds = {"ssl_handshake_timeout": REQUEST_DEADLINE} if self._ssl_context else {}
        self._server = await asyncio.get_running_loop().create_server(
            protocol, self._host, self._port, ssl=self._ssl_context, backlog=self._backlog, **bounds)
        self._bound_port = self._server.sockets[0].getsockname()[1] if self._server.sockets else self._port


async def _receiver_main() -> int:
    """Entry point of the receiver process: the config on the first stdin line, then "M" lines."""
    ppid = os.getppid()
    _die_with_parent()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, _protocol = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout)
    notify = Notifier(transport)

    if os.getppid() != ppid:
        return 1
    config = json.loads(await reader.readline())
    args, keys = config["args"], config["keys"]
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, config.get("log_level", "WARNING")),
                        format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
    spool = SpoolWriter(config["spool_dir"], int(args.get("spool_max_bytes", 64 << 20)),
                        int(args.get("dedupe_size", 100000)), notify)
    spool.marked_seq = int(config.get("marked_seq", 0))
    runner = None
    stop = asyncio.Event()
    try:
        # Ctrl-C reaches the whole process group: the rulebook side decides when the receiver stops
        loop.add_signal_handler(signal.SIGINT, lambda: None)
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - non-POSIX
        pass
    try:
        ssl_context = _ssl_context(args)
        spool.open()
        receiver = Receiver(args, spool, keys, recovered=int(config.get("recovered", 0)))
        # keepalive_timeout: aiohttp closes a connection that has not sent a whole request's headers
        # within it (from its start, or since its last response).
        runner = web.AppRunner(receiver.app(), access_log=None, keepalive_timeout=REQUEST_DEADLINE)
        await runner.setup()
        site = _BoundedSite(runner, args.get("host") or "0.0.0.0", int(args["port"]),  # nosec B104
                            ssl_context=ssl_context, backlog=1024)
        await site.start()
    except Exception as exc:  # pylint: disable=broad-except
        notify.failed(str(exc))
        if runner is not None:
            await runner.cleanup()
        spool.close_files()
        await notify.drain()
        return 1
    notify.ready(spool.durable_seq, spool.durable_offset)
    stopper = loop.create_task(stop.wait())
    try:
        while True:
            reading = loop.create_task(reader.readline())
            await asyncio.wait({reading, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():
                reading.cancel()
                break                     # SIGTERM
            line = reading.result()
            if not line:                  # the rulebook is gone or stopping
                break
            if line.startswith(MSG_MARKED):
                spool.marked_seq = max(spool.marked_seq, int(line[len(MSG_MARKED):]))
    finally:
        stopper.cancel()
        await runner.cleanup()          # stops accepting; in-flight requests finish their fsync
        await spool.close()
    return 0


# =============================================================================================
# 4. Rulebook side: start the receiver process, emit stored events in order, record marks.
# =============================================================================================
class Emitter:
    """Reads durable records from the spool and hands them to the rulebook queue, in seq order.

    ``emitted.log``: one line per mark, the highest seq handed over at least ``confirm_delay``
    seconds ago (so an event taken by the rulebook but not acted on before a crash comes again).
    """

    def __init__(self, directory: str, confirm_delay: float) -> None:
        self.dir = directory
        self.path = os.path.join(directory, SPOOL_FILE)
        self.old_path = os.path.join(directory, OLD_SPOOL_FILE)
        self.emitted_path = os.path.join(directory, EMITTED_FILE)
        self.confirm_delay = max(0.0, float(confirm_delay))
        self.durable_seq = 0
        self.durable_offset = 0
        self.emitted_seq = 0
        self.marked_seq = 0
        self.read_offset = 0
        self.recovered = 0
        self.carry: deque = deque()
        self.wake = asyncio.Event()
        self.on_mark = None
        self._put_times: deque = deque()
        self._mark_task: asyncio.Task | None = None
        self._emitted_fd = -1
        self._stopping = False

    def read_mark(self) -> int:
        try:
            with open(self.emitted_path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return 0
        value = 0
        for line in data.split(b"\n")[:-1]:      # the part after the last newline may be torn
            if line.isdigit():
                value = max(value, int(line))
        self.emitted_seq = self.marked_seq = value
        return value

    def recover(self) -> None:
        """Before the receiver starts: find what is stored but not emitted yet (a torn tail ends the scan)."""
        hw = self.marked_seq
        durable_offset = _read_records(self.path)[1]
        durable_seq = 0
        for seq, _id, _fp, _end, event in _read_records(self.old_path)[0]:
            if seq > hw:
                self.carry.append((seq, None, event))
        self.read_offset = durable_offset
        start = 0
        pending = 0
        for seq, _id, _fp, end, _event in _read_records(self.path, 0, durable_offset)[0]:
            durable_seq = seq
            if seq > hw:
                if not pending:
                    self.read_offset = start
                pending += 1
            start = end
        self.durable_seq = max(durable_seq, hw)
        self.durable_offset = durable_offset
        self.recovered = len(self.carry) + pending
        self._emitted_fd = os.open(self.emitted_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def durable(self, seq: int, offset: int) -> None:
        self.durable_seq = max(self.durable_seq, seq)
        self.durable_offset = offset
        self.wake.set()

    def rotated(self) -> None:
        """The receiver renamed spool.log (only when everything was emitted and marked)."""
        self.read_offset = 0
        self.durable_offset = 0
        tmp = self.emitted_path + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(b"%d\n" % self.marked_seq)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.emitted_path)
        os.close(self._emitted_fd)
        self._emitted_fd = os.open(self.emitted_path, os.O_WRONLY | os.O_APPEND, 0o600)

    async def next_events(self) -> list:
        while True:
            if self.carry:
                return [self.carry.popleft()]
            if self.durable_offset > self.read_offset:
                records, _pos = _read_records(self.path, self.read_offset, self.durable_offset, 512, 1 << 18)
                if records:
                    return [(seq, end, event) for seq, _id, _fp, end, event in records]
            self.wake.clear()
            await self.wake.wait()

    async def run(self, queue: asyncio.Queue) -> None:
        while True:
            for seq, end, raw in await self.next_events():
                if end is not None:
                    self.read_offset = end
                if seq <= self.emitted_seq:
                    continue
                await queue.put(json.loads(raw))
                self.emitted_seq = seq
                self._put_times.append((seq, time.monotonic()))
                if self._mark_task is None or self._mark_task.done():
                    self._mark_task = asyncio.get_running_loop().create_task(self._mark_loop())

    async def _mark_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._put_times and not self._stopping:
            await asyncio.sleep(min(0.05, self.confirm_delay) if self.confirm_delay else 0.005)
            limit = time.monotonic() - self.confirm_delay
            seq = None
            while self._put_times and self._put_times[0][1] <= limit:
                seq = self._put_times.popleft()[0]
            if seq is None or seq <= self.marked_seq:
                continue
            try:
                await loop.run_in_executor(None, self._write_mark, seq)
            except Exception as exc:  # pylint: disable=broad-except
                logger.error("wpcloud.hosting.webhook: cannot record emitted position: %s", exc)
                return
            self.marked_seq = max(self.marked_seq, seq)
            if self.on_mark is not None:
                self.on_mark(self.marked_seq)

    def _write_mark(self, seq: int) -> None:
        os.write(self._emitted_fd, b"%d\n" % seq)
        _sync(self._emitted_fd)

    async def stop(self) -> None:
        """Stop recording marks (recent, unconfirmed events are emitted again next start)."""
        self._stopping = True
        if self._mark_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._mark_task), 2)
            except Exception:  # pylint: disable=broad-except
                pass
        if self._emitted_fd >= 0:
            os.close(self._emitted_fd)
            self._emitted_fd = -1


class ReceiverProcess:
    """The receiver process seen from the rulebook side: started with its config on the pipe, it
    reports durable positions and rotations to the :class:`Emitter` and is told the marks."""

    def __init__(self, emitter: Emitter) -> None:
        self.emitter = emitter
        self.proc = None

    async def start(self, config: dict[str, Any], timeout: float = 60) -> None:
        """Start the child and wait until it listens; raise with its reason when it cannot."""
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, os.path.abspath(__file__), "--receiver",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 20)
        self.proc.stdin.write(json.dumps(config).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line.startswith(MSG_READY):
            detail = json.loads(line[len(MSG_ERROR):]) if line.startswith(MSG_ERROR) \
                else "exited %s" % await self.proc.wait()
            raise RuntimeError("wpcloud.hosting.webhook receiver did not start: %s" % detail)
        seq, offset = line[len(MSG_READY):].split()
        self.emitter.durable(int(seq), int(offset))

    def mark(self, seq: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.stdin.write(MSG_MARKED + b"%d\n" % seq)

    async def watch(self) -> None:
        """Follow the receiver's messages; raise when it exits."""
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError("wpcloud.hosting.webhook: the receiver process exited (%s)" % await self.proc.wait())
            if line.startswith(MSG_DURABLE):
                seq, offset = line[len(MSG_DURABLE):].split()
                self.emitter.durable(int(seq), int(offset))
            elif line.startswith(MSG_ROTATED):
                self.emitter.rotated()

    async def stop(self) -> None:
        """EOF on its stdin stops the receiver (in-flight requests finish); killed after 10 s."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        try:
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 10)
        except Exception:  # pylint: disable=broad-except
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


def _receiver_config(args: dict[str, Any], keys: list[str], spool_dir: str, emitter: Emitter) -> dict[str, Any]:
    """What the receiver process is given on its stdin (never argv or the environment: it holds the keys)."""
    child_args = {k: v for k, v in args.items() if k not in ("hmac_secret", "token")}
    if args.get("hmac_secret") is not None:
        child_args.pop("hmac_secret_file", None)  # explicit keys win; the file is not watched
    if args.get("token") is not None:
        child_args["token"] = str(args["token"])
    log_level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    if not isinstance(log_level, str) or log_level.startswith("Level"):
        log_level = "WARNING"
    return {"args": child_args, "keys": keys, "spool_dir": spool_dir, "marked_seq": emitter.marked_seq,
            "recovered": emitter.recovered, "log_level": log_level}


async def main(queue: asyncio.Queue, args: dict[str, Any]) -> None:
    """Receive WP Cloud webhooks (see DOCUMENTATION)."""
    args = _clean_args(args)
    _check_args(args)
    keys = _keys_from_args(args)
    _check_keys(keys, _bool(args.get("allow_unsigned", False)))
    if _ssl_context(args) is None:
        logger.warning("wpcloud.hosting.webhook: listening on plain HTTP (allow_insecure_http)")
    spool_dir = os.path.abspath(args.get("spool_dir") or _default_spool_dir(args["port"]))
    os.makedirs(spool_dir, mode=0o700, exist_ok=True)
    emitter = Emitter(spool_dir, float(args.get("emit_confirm_delay", 1.0)))
    emitter.read_mark()
    emitter.recover()
    receiver = ReceiverProcess(emitter)
    watcher = emitter_task = None
    try:
        await receiver.start(_receiver_config(args, keys, spool_dir, emitter))
        emitter.on_mark = receiver.mark
        if emitter.recovered:
            logger.info("wpcloud.hosting.webhook: %d stored event(s) not yet emitted will be emitted",
                        emitter.recovered)
        logger.info("wpcloud.hosting.webhook listening on %s:%s (%s, %d key(s))", args.get("host") or "0.0.0.0",
                    args["port"], "https" if args.get("certfile") else "http", len(keys))
        loop = asyncio.get_running_loop()
        watcher = loop.create_task(receiver.watch())
        emitter_task = loop.create_task(emitter.run(queue))
        done, _pending = await asyncio.wait({watcher, emitter_task}, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    except asyncio.CancelledError:
        logger.info("wpcloud.hosting.webhook cancelled")
        raise
    finally:
        for task in (watcher, emitter_task):
            if task is not None:
                task.cancel()
        await emitter.stop()
        await receiver.stop()


if __name__ == "__main__":
    if "--receiver" in sys.argv[1:]:
        sys.exit(asyncio.run(_receiver_main()))

    class MockQueue(asyncio.Queue):
        """Writes events to stdout instead of a rulebook."""

        async def put(self, item: Any) -> None:
            sys.stdout.write(json.dumps(item) + "\n")
            sys.stdout.flush()

    asyncio.run(main(MockQueue(), {"port": 5000, "host": "127.0.0.1", "allow_insecure_http": True,
                                   "allow_unsigned": True, "spool_dir": "./webhook-spool"}))
