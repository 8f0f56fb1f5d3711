# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""wpcloud.hosting.webhook: receive signed WP Cloud webhooks, store them durably, emit them."""

from __future__ import annotations

DOCUMENTATION = r"""
---
short_description: Receive signed WP Cloud webhooks over HTTPS, store them durably, emit them until processed.
description:
  - An ansible-rulebook event source that receives the webhooks a WP Cloud client account sends to
    its C(webhook_url), verifies the HMAC-SHA256 signature carried in the body
    (C({event}:{signature.timestamp}:{signature.salt}) keyed with the C(webhook_hmac_key)),
    and puts each accepted event on the rulebook queue.
  - An event is answered with exactly HTTP 200 only after it has been appended to a spool file and
    the file has been synced to disk (requests that arrive together share one fsync). Events are
    then emitted in order.
  - An event is done only when its processing is done (at least once, keyed by C(meta.delivery_id));
    the rulebook's action acknowledges it last, with M(wpcloud.hosting.webhook_ack) (the sample
    playbooks do). An event not acknowledged within O(ack_timeout) seconds, or not acknowledged
    before a crash or restart, is emitted again with the same C(meta.delivery_id) and a higher
    C(meta.attempt); after O(max_attempts) it is given up (a dead letter, logged as an error) and
    waits for the operator. Actions must therefore be idempotent. O(ack_timeout=0) turns this off, and
    an event is then done once it was handed to the rulebook (and confirmed, O(emit_confirm_delay)).
  - The operator command C(python webhook.py events list|replay|ack --spool-dir DIR) (or the playbook
    C(wpcloud.hosting.webhook_events)) lists stored deliveries by time range, state or delivery id,
    hands them over again, or marks them done.
  - The HTTPS listener runs in a child process of the rulebook (same Python), so acknowledging
    deliveries never waits for the rule engine; the child ends with the rulebook. The keys reach
    it through a pipe, never through the command line or the environment. The source removes
    C(WPCLOUD_WEBHOOK_HMAC_KEYS), C(WPCLOUD_WEBHOOK_HMAC_KEY) and C(WPCLOUD_WEBHOOK_ACK_TOKEN) from the
    rulebook's environment once it has read them, so the playbooks and modules the rulebook runs
    (which inherit that environment) never see them.
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
    C(payload) and C(event), C(endpoint), C(headers), C(delivery_id), C(signature) (C(verified), C(key_index),
    C(location)), C(received_at) and C(uuid) in C(meta); with acknowledgements on also C(attempt)
    (1 the first time) and C(ack) (C(spool_dir) and C(url), where M(wpcloud.hosting.webhook_ack) records
    the acknowledgement).
    Authorization, cookie, token and signature headers are never copied into C(meta.headers).
  - C(meta.event) is the normalised event name, hyphens turned into underscores (the owner's panel
    does the same, so the service may send C(site-provisioned) for C(site_provisioned)); match rules
    on it. C(payload.event) stays as sent: the signature is checked over that exact text.
  - C(GET /healthz) answers 200 with counters (no secrets), including C(key_count) and
    C(verified_by_key), the deliveries stored per matching key position (used to check a key rotation).
  - Bodies larger than O(max_body_size) get 413; a body that is not a JSON object (malformed, nested
    too deeply to parse, an array) gets 400, whatever its C(Content-Type) (the service promises only
    "a JSON body"; a missing, C(text/plain) or form-encoded type is accepted when the body is a JSON
    object). A full disk under the spool gets 503 (the service retries), never a 200 without a store.
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
    description:
      - Restrict the accepted request content types (media type only; C(+json) suffixes also match
        C(application/json)); others get 415. Not set (the default), a delivery is judged by its body
        alone, whatever its C(Content-Type).
    type: list
    elements: str
  emit_confirm_delay:
    description:
      - With O(ack_timeout=0) only. Seconds after an event was handed to the rulebook before its
        emitted position is recorded. Events handed over in that window before a crash are emitted
        again after the restart (at least once, with the same C(meta.delivery_id)).
    type: float
    default: 1.0
  ack_timeout:
    description:
      - Seconds an emitted event may wait for its acknowledgement (M(wpcloud.hosting.webhook_ack)) before
        it is emitted again. Keep it above the time the rulebook needs for O(max_unacked) events'
        actions (they queue behind each other with the default sequential execution).
      - C(0) turns acknowledgements off; an event is then done once it was handed to the rulebook,
        whether or not an action ran (a crash while actions queue loses those events).
    type: float
    default: 600
  max_unacked:
    description:
      - How many emitted events may wait for their acknowledgement at once; the source emits the
        next one when one is acknowledged. It bounds the rule engine's queue of actions, and so the
        work repeated after a crash.
    type: int
    default: 32
  max_attempts:
    description:
      - How many times an event is emitted (the first time, after each O(ack_timeout), after each
        restart) before it is given up as a dead letter. Dead letters stay in C(dead.log) and in the
        operator command's C(list --state dead) until the operator replays or dismisses them.
    type: int
    default: 5
  ack_token:
    description:
      - Enables the receiver's acknowledgement endpoint C(POST /_wpcloud/ack) for actions that run on
        another node (an AAP job template). They send a JSON object with their C(delivery_id) and the header
        C(Authorization) set to C(Bearer) and the token. At least 32 characters, 10 of them distinct.
      - When not set, the environment variable C(WPCLOUD_WEBHOOK_ACK_TOKEN) is read. Without either
        the endpoint answers 404 and acknowledgements go into O(spool_dir) directly.
    type: str
  ack_url:
    description:
      - The URL of this receiver's acknowledgement endpoint as the actions reach it (for example
        C(https://eda.example.com:8443/_wpcloud/ack)); put into each event's C(meta.ack.url), where
        M(wpcloud.hosting.webhook_ack) finds it.
    type: str
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
        ack_timeout: 900      # the longest action, times the actions that may queue ahead of it
  rules:
    - name: site provisioned
      condition: event.meta.event == "site_provisioned"     # normalised: site-provisioned matches too
      action:
        run_playbook:
          name: wpcloud.hosting.on_site_provisioned   # its last task: wpcloud.hosting.webhook_ack
"""

# The plugin is one file, as Event-Driven Ansible requires. Its two halves run in two processes:
#
#   rulebook side (section 4: main(), Emitter, AckingEmitter, ReceiverProcess), inside
#       ansible-rulebook: checks the options, starts the receiver, reads stored events from the
#       spool and hands them to the rulebook queue in order, hands over again what is not
#       acknowledged (processing.log), and records what is done (emitted.log);
#   receiver process (section 3: Receiver, SpoolWriter), a child started with --receiver: HTTPS,
#       the request checks (aiohttp middlewares, one per check), the duplicate memory and the
#       durable spool. It never waits for the rule engine.
#
# They share only what section 2 defines: the options, the spool's file format (the seam between
# "stored" and "emitted"; _webhook_spool.py) and the pipe messages. Section 5 is the operator
# command (list, replay, ack), which works on the spool directory's files alone. Signature, key and delivery-id rules come from
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

try:
    from aiohttp import web
except ImportError:  # pragma: no cover - the operator command (section 5) needs only the standard library
    web = None

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
spoolfmt = _load_module_util("_webhook_spool")      # the spool directory's files, the processing journal


# =============================================================================================
# 2. Both sides: options and keys, the spool's file format, the pipe between the processes
# =============================================================================================
ENV_KEYS = ("WPCLOUD_WEBHOOK_HMAC_KEYS", "WPCLOUD_WEBHOOK_HMAC_KEY")
ENV_ACK_TOKEN = "WPCLOUD_WEBHOOK_ACK_TOKEN"
ENV_SPOOL = "WPCLOUD_WEBHOOK_SPOOL_DIR"
# The receiver's acknowledgement endpoint (POST, bearer ack_token): actions that run on another
# node (an AAP job template) acknowledge a delivery there; see the webhook_ack module.
ACK_PATH = "/_wpcloud/ack"
ACK_MAX_BODY = 4096
# Acknowledgements: the defaults of ack_timeout, max_unacked and max_attempts.
ACK_TIMEOUT = 600.0
MAX_UNACKED = 32
MAX_ATTEMPTS = 5
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
    number("ack_timeout", float, 0, "a number of seconds (0: acknowledgements off)")
    number("max_unacked", int, 1, "a positive integer")
    number("max_attempts", int, 1, "a positive integer")
    if "ack_url" in args and not re.match(r"^https?://[^/\s]+/\S*$", str(args["ack_url"])):
        raise ValueError("ack_url must be the URL actions reach this receiver's acknowledgement endpoint at, "
                         "for example https://eda.example.com:8443%s; got %r" % (ACK_PATH, args["ack_url"]))
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


def _ack_token_from_args(args: dict[str, Any]) -> str | None:
    """ack_token, else WPCLOUD_WEBHOOK_ACK_TOKEN; None: no acknowledgements over HTTPS."""
    token = args.get("ack_token")
    if token is None:
        token = os.environ.get(ENV_ACK_TOKEN) or None
    if token is None:
        return None
    token = str(token).strip()
    if not sig.key_is_strong(token):
        raise ValueError("ack_token (or WPCLOUD_WEBHOOK_ACK_TOKEN) is too weak: it needs at least %d characters, "
                         "%d of them distinct (openssl rand -hex 32)" % (sig.MIN_KEY_LENGTH, sig.MIN_KEY_DISTINCT))
    return token


def _forget_secrets_in_environment() -> list[str]:
    """Take the keys and the ack token out of this process's environment once they are read.

    ansible-rulebook runs every run_playbook and run_module action with its own environment
    (ansible-runner copies os.environ), and the receiver child inherits it too: left there, any
    playbook could read the signing key with lookup('env', ...). Returns the names removed.
    """
    removed = []
    for name in ENV_KEYS + (ENV_ACK_TOKEN,):
        if name in os.environ:
            del os.environ[name]      # os.environ's deletion also unsets it for child processes
            removed.append(name)
    return removed


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


# The spool directory's files and formats (spool.log, spool.log.1, emitted.log, processing.log,
# dead.log, lock) are defined once in plugins/module_utils/_webhook_spool.py: the receiver writes
# spool.log (and acknowledgements over HTTPS into processing.log), the rulebook side emitted.log,
# processing.log and dead.log, the webhook_ack module and the operator command processing.log.
SPOOL_FILE = spoolfmt.SPOOL_FILE
OLD_SPOOL_FILE = spoolfmt.OLD_SPOOL_FILE
EMITTED_FILE = spoolfmt.EMITTED_FILE
JOURNAL_FILE = spoolfmt.JOURNAL_FILE
DEAD_FILE = spoolfmt.DEAD_FILE
LOCK_FILE = spoolfmt.LOCK_FILE
_record = spoolfmt.record
_read_records = spoolfmt.read_records
_sync = spoolfmt.sync
_sync_dir = spoolfmt.sync_dir


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
        self.stats = {"stored": 0, "duplicates": 0, "conflicts": 0, "rejected": 0, "fsyncs": 0, "acks": 0}
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
_middleware = web.middleware if web is not None else (lambda function: function)


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
    check_content_type   (with ``content_types``) a content type not in that list          415
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

    def __init__(self, args: dict[str, Any], spool: SpoolWriter, keys: list[str], recovered: int = 0,
                 ack_token: str | None = None) -> None:
        self.spool = spool
        self.keys = keys
        self.recovered = recovered
        self.token = str(args["token"]).encode() if args.get("token") is not None else None
        self.ack_token = ack_token.encode() if ack_token else None
        self.max_body = int(args.get("max_body_size", 1048576))
        # The spec says only "a JSON body": a delivery is judged by its body, whatever its
        # Content-Type (a missing or other type would make the service retry and then drop the event).
        # content_types, when set, restricts the types (415 for the others).
        types = args.get("content_types") or []
        if isinstance(types, str):
            types = [t.strip() for t in types.split(",")]
        self.content_types = {t.lower() for t in types if t}
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
        if self.content_types:
            checks.append(self.check_content_type)
        checks += [self.read_json, self.verify_signature, self.drop_duplicates]
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
        app.router.add_post(ACK_PATH, self.acknowledge)          # before the catch-all delivery route
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
    @_middleware
    async def check_size(self, request: web.Request, handler) -> web.StreamResponse:
        if request.content_length is not None and request.content_length > self.max_body:
            return self._reject(413, "body too large")
        return await handler(request)

    @_middleware
    async def check_token(self, request: web.Request, handler) -> web.StreamResponse:
        scheme, _sep, value = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(value.strip().encode(), self.token):
            return self._reject(401, "invalid authorization")
        return await handler(request)

    @_middleware
    async def check_content_type(self, request: web.Request, handler) -> web.StreamResponse:
        media = _media_type(request.headers.get("Content-Type"))
        if media not in self.content_types and not (media.endswith("+json")
                                                    and "application/json" in self.content_types):
            return self._reject(415, "content type must be one of %s" % ", ".join(sorted(self.content_types)))
        return await handler(request)

    @_middleware
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

    @_middleware
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

    @_middleware
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

    @_middleware
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

    async def acknowledge(self, request: web.Request) -> web.Response:
        """POST ACK_PATH ``{"delivery_id": ...}`` with ``Authorization: Bearer <ack_token>``: an action
        that ran on another node says the delivery was processed (recorded in processing.log)."""
        if self.ack_token is None:
            return self._reply(404, "acknowledgements over HTTPS are off (no ack_token)")
        scheme, _sep, value = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(value.strip().encode(), self.ack_token):
            return self._reject(401, "invalid authorization")
        if request.content_length is not None and request.content_length > ACK_MAX_BODY:
            return self._reject(413, "body too large")
        try:
            body = await asyncio.wait_for(request.content.read(ACK_MAX_BODY + 1), REQUEST_DEADLINE)
        except asyncio.TimeoutError:
            response = self._reject(408, "request body not received within %gs" % REQUEST_DEADLINE)
            response.force_close()
            return response
        if len(body) > ACK_MAX_BODY:
            return self._reject(413, "body too large")
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            payload = None
        delivery_id = payload.get("delivery_id") if isinstance(payload, dict) else None
        if not isinstance(delivery_id, str) or not sig.is_delivery_id(delivery_id):
            return self._reject(400, 'body must be {"delivery_id": "sig-<32 hex digits>"}')
        if delivery_id not in self.spool.memory:
            return self._reply(404, "unknown delivery id %s" % delivery_id)
        try:
            recorded = await asyncio.get_running_loop().run_in_executor(
                None, spoolfmt.acknowledge, self.spool.dir, delivery_id, "http")
        except OSError as exc:
            logger.error("wpcloud.hosting.webhook: cannot record an acknowledgement: %s", exc)
            return self._reply(503, "could not record the acknowledgement")
        self.spool.stats["acks"] += 1
        return web.json_response({"delivery_id": delivery_id, "recorded": recorded})

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


class _BoundedSite(web.TCPSite if web is not None else object):
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
        receiver = Receiver(args, spool, keys, recovered=int(config.get("recovered", 0)),
                            ack_token=config.get("ack_token"))
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
def _for_rulebook(raw: bytes) -> dict:
    """A stored event as the rulebook gets it: ``meta.event`` holds the normalised event name that
    rules match on (``site-provisioned`` arrives as ``site_provisioned``); ``payload.event`` stays as
    sent, which is what the signature covers. Set at hand-over, so events stored before an upgrade
    get it too."""
    event = json.loads(raw)
    payload = event.get("payload")
    if isinstance(payload, dict):
        meta = event.get("meta")
        if not isinstance(meta, dict):
            meta = event["meta"] = {}
        meta["event"] = sig.event_name(payload.get("event"))
    return event


class Emitter:
    """Reads durable records from the spool and hands them to the rulebook queue, in seq order.

    This is the emitter with acknowledgements off (``ack_timeout: 0``): an event is done once it
    was handed over. ``emitted.log``: one line per mark, the highest seq handed over at least
    ``confirm_delay`` seconds ago (so an event taken by the rulebook but not acted on before a crash
    comes again). An operator's replay (a ``redo`` line in processing.log) is handed over once more
    and then recorded as done (``ack ... handover``).
    """

    journal_interval = 0.5        # seconds between two looks at processing.log for operator requests

    def __init__(self, directory: str, confirm_delay: float) -> None:
        self.dir = directory
        self.path = os.path.join(directory, SPOOL_FILE)
        self.old_path = os.path.join(directory, OLD_SPOOL_FILE)
        self.emitted_path = os.path.join(directory, EMITTED_FILE)
        self.journal_path = os.path.join(directory, JOURNAL_FILE)
        self.dead_path = os.path.join(directory, DEAD_FILE)
        self.confirm_delay = max(0.0, float(confirm_delay))
        self.durable_seq = 0
        self.durable_offset = 0
        self.emitted_seq = 0
        self.marked_seq = 0
        self.read_offset = 0
        self.recovered = 0
        self.carry: deque = deque()           # (seq, delivery_id, None, event bytes) to read before spool.log
        self.replays: deque = deque()         # (seq, delivery_id, event bytes) the operator asked for again
        self.wake = asyncio.Event()
        self.on_mark = None
        self.journal_offset = 0
        self._batch: deque = deque()
        self._put_times: deque = deque()
        self._mark_task: asyncio.Task | None = None
        self._emitted_fd = -1
        self._stopping = False

    # -- start ---------------------------------------------------------------------------------
    def read_mark(self) -> int:
        value = spoolfmt.read_mark(self.dir)
        self.emitted_seq = self.marked_seq = value
        return value

    def recover(self) -> None:
        """Before the receiver starts: find what is stored but not done yet (a torn tail ends the scan)."""
        hw = self.marked_seq
        entries, self.journal_offset = spoolfmt.read_journal(self.journal_path)
        states = spoolfmt.fold_journal(entries)
        self._recovered_states(states)
        redo = {d for d, state in states.items() if state.verb == spoolfmt.REDO}
        ahead = []
        durable_offset = _read_records(self.path)[1]
        durable_seq = 0
        pending = 0

        def not_emitted(seq, delivery_id, event) -> bool:
            """Sort one stored record, the same way in the rotated and the current file: past the
            mark it is still to be emitted (a replay asked for it is settled as it goes); before
            the mark only a replay asked for brings it back."""
            nonlocal pending
            if seq > hw:
                pending += self._counts_as_pending(delivery_id)
                if delivery_id in redo:
                    ahead.append(delivery_id)
                    redo.discard(delivery_id)
                return True
            if delivery_id in redo:
                self.replays.append((seq, delivery_id, event))
                redo.discard(delivery_id)
            return False

        for seq, delivery_id, _fp, _end, event in _read_records(self.old_path)[0]:
            if not_emitted(seq, delivery_id, event):
                self.carry.append((seq, delivery_id, None, event))
        self.read_offset = durable_offset
        start = 0
        first = True
        for seq, delivery_id, _fp, end, event in _read_records(self.path, 0, durable_offset)[0]:
            durable_seq = seq
            if not_emitted(seq, delivery_id, event) and first:
                self.read_offset = start
                first = False
            start = end
        if redo:                  # given up and rotated out of the spool: the copy in dead.log
            for seq, delivery_id, _fp, _end, event in _read_records(self.dead_path)[0]:
                if delivery_id in redo:
                    self.replays.append((seq, delivery_id, event))
                    redo.discard(delivery_id)
        for delivery_id in redo:
            logger.error("wpcloud.hosting.webhook: a replay of %s was asked for, but its record is no longer "
                         "in the spool or dead.log", delivery_id)
        self.durable_seq = max(durable_seq, hw)
        self.durable_offset = durable_offset
        self.recovered = pending + len(self.replays)
        self._emitted_fd = os.open(self.emitted_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._redo_ahead(ahead)

    def _recovered_states(self, states: dict) -> None:
        """What the journal says, for a subclass that keeps it."""

    def _redo_ahead(self, delivery_ids: list) -> None:
        """Replays asked for of records not emitted yet: they are handed over as they come, so the
        request is settled (with acknowledgements off, handed over is done)."""
        if delivery_ids:
            spoolfmt.record_acks(self.dir, delivery_ids, "handover")

    def _counts_as_pending(self, delivery_id: str) -> int:  # pylint: disable=unused-argument
        return 1

    # -- the receiver's news -------------------------------------------------------------------
    def durable(self, seq: int, offset: int) -> None:
        self.durable_seq = max(self.durable_seq, seq)
        self.durable_offset = offset
        self.wake.set()

    def rotated(self) -> None:
        """The receiver renamed spool.log (only when everything was done and marked)."""
        self.read_offset = 0
        self.durable_offset = 0
        self._batch.clear()
        tmp = self.emitted_path + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(b"%d\n" % self.marked_seq)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.emitted_path)
        os.close(self._emitted_fd)
        self._emitted_fd = os.open(self.emitted_path, os.O_WRONLY | os.O_APPEND, 0o600)

    # -- reading the spool -----------------------------------------------------------------------
    def _next_record(self):
        """The next stored record in seq order, (seq, delivery_id, end offset or None, event bytes), or None."""
        if self.carry:
            return self.carry.popleft()
        if not self._batch and self.durable_offset > self.read_offset:
            records, _pos = _read_records(self.path, self.read_offset, self.durable_offset, 512, 1 << 18)
            self._batch.extend((seq, delivery_id, end, event) for seq, delivery_id, _fp, end, event in records)
        if self._batch:
            item = self._batch.popleft()
            self.read_offset = item[2]
            return item
        return None

    async def run(self, queue: asyncio.Queue) -> None:
        watcher = asyncio.get_running_loop().create_task(self._watch_journal())
        try:
            while True:
                if self.replays:
                    seq, delivery_id, raw = self.replays.popleft()
                    await queue.put(_for_rulebook(raw))
                    await asyncio.get_running_loop().run_in_executor(
                        None, spoolfmt.record_acks, self.dir, [delivery_id], "handover")
                    continue
                item = self._next_record()
                if item is None:
                    self.wake.clear()
                    await self.wake.wait()
                    continue
                seq, _delivery_id, _end, raw = item
                if seq <= self.emitted_seq:
                    continue
                await queue.put(_for_rulebook(raw))
                self.emitted_seq = seq
                self._put_times.append((seq, time.monotonic()))
                if self._mark_task is None or self._mark_task.done():
                    self._mark_task = asyncio.get_running_loop().create_task(self._mark_loop())
        finally:
            watcher.cancel()

    # -- operator requests -------------------------------------------------------------------------
    async def _watch_journal(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.journal_interval)
            try:
                entries, self.journal_offset = await loop.run_in_executor(
                    None, spoolfmt.read_journal, self.journal_path, self.journal_offset)
                wanted = [d for verb, d, _s, _a, _t, _v in entries if verb == spoolfmt.REDO]
                if wanted:
                    found = await loop.run_in_executor(None, spoolfmt.find_records, self.dir, wanted)
                    self._queue_replays(wanted, found)
            except OSError as exc:
                logger.error("wpcloud.hosting.webhook: cannot read %s: %s", JOURNAL_FILE, exc)

    def _queue_replays(self, wanted: list, found: dict) -> None:
        for delivery_id in dict.fromkeys(wanted):
            if delivery_id not in found:
                logger.error("wpcloud.hosting.webhook: a replay of %s was asked for, but its record is not "
                             "in the spool or dead.log", delivery_id)
                continue
            seq, raw = found[delivery_id]
            self.replays.append((seq, delivery_id, raw))
            logger.info("wpcloud.hosting.webhook: %s will be handed over again (operator)", delivery_id)
        self.wake.set()

    # -- marks -------------------------------------------------------------------------------------
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


class _Slot:
    """A delivery handed to the rulebook and not acknowledged yet."""

    __slots__ = ("seq", "delivery_id", "raw", "attempt", "deadline", "entry", "due")

    def __init__(self, seq: int, delivery_id: str, raw: bytes, attempt: int, entry) -> None:
        self.seq = seq
        self.delivery_id = delivery_id
        self.raw = raw
        self.attempt = attempt        # hand-overs so far (the journal's count survives restarts)
        self.deadline = None          # monotonic time after which it is handed over again
        self.entry = entry            # its [seq, delivery_id, done] in AckingEmitter.order; None for a replay
        self.due = False


class AckingEmitter(Emitter):
    """The emitter with acknowledgements on (``ack_timeout`` > 0): an event is done only when an
    action acknowledged it (an ``ack`` line in processing.log: the webhook_ack module, directly or
    through the receiver's ACK_PATH) or when it was given up.

    - At most ``max_unacked`` events are handed over and not acknowledged at a time (the rule
      engine takes events while earlier actions queue; this bounds that queue, so an event's wait
      for its acknowledgement is bounded by the actions ahead of it).
    - An event not acknowledged ``ack_timeout`` seconds after it was handed over is handed over
      again; so is every event not acknowledged before a restart. Each hand-over is an attempt
      (``meta.attempt``), counted in the journal across restarts; after ``max_attempts`` the event is
      given up: a ``dead`` line, its record copied to dead.log, an error logged; the operator
      command lists and replays it.
    - The mark (emitted.log) is the highest seq below which every event is done, so a restart
      reads the spool from there and skips what the journal says is done.
    """

    journal_interval = 0.1

    def __init__(self, directory: str, ack_timeout: float, max_unacked: int = MAX_UNACKED,
                 max_attempts: int = MAX_ATTEMPTS, ack_url: str | None = None) -> None:
        super().__init__(directory, 0.0)
        self.ack_timeout = float(ack_timeout)
        self.max_unacked = max(1, int(max_unacked))
        self.max_attempts = max(1, int(max_attempts))
        self.ack_meta = {"spool_dir": directory, "url": ack_url}
        self.slots: dict[str, _Slot] = {}     # handed over, not acknowledged; in hand-over order
        self.order: deque = deque()           # [seq, delivery_id, done] of records past the mark, in order
        self.states: dict = {}                # the journal's word on deliveries not read or not in a slot
        self.due: deque = deque()             # slots to hand over again (timed out, or the operator's redo)
        self.dead: dict = {}                  # delivery_id -> (seq, attempts) of the dead letters, kept on compaction
        self.counts = {"handed_over": 0, "acknowledged": 0, "handed_over_again": 0, "given_up": 0, "replayed": 0}
        self._journal_fd = -1
        self._mark_due = False

    def _recovered_states(self, states: dict) -> None:
        self.states = states
        self.dead = {d: (s.seq, s.attempt) for d, s in states.items() if s.verb == spoolfmt.DEAD}

    def _redo_ahead(self, delivery_ids: list) -> None:
        """Handed over as they come (their state says redo: attempts from 0), acknowledged as any."""

    def _counts_as_pending(self, delivery_id: str) -> int:
        state = self.states.get(delivery_id)
        return 0 if state is not None and state.verb in (spoolfmt.ACK, spoolfmt.DEAD) else 1

    def recover(self) -> None:
        super().recover()
        self._open_journal()

    def _open_journal(self) -> None:
        if self._journal_fd >= 0:
            os.close(self._journal_fd)
        self._journal_fd = os.open(self.journal_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        if not spoolfmt._ends_a_line(self._journal_fd):      # a line torn by a power loss ends here
            os.write(self._journal_fd, b"\n")

    def _journal(self, line: bytes) -> None:
        """An emit line: appended without a lock and without a sync (one small write is atomic for
        O_APPEND; only this process rewrites the file, and a lost emit line only lowers a count)."""
        try:
            os.write(self._journal_fd, line)
        except OSError as exc:
            logger.error("wpcloud.hosting.webhook: cannot write %s: %s", JOURNAL_FILE, exc)

    # -- handing over --------------------------------------------------------------------------------
    def _next_slot(self):
        """The next slot to hand over, or None: first the due ones, then (with room in the window)
        the operator's replays, then stored records in order."""
        while self.due:
            slot = self.due.popleft()
            slot.due = False
            if self.slots.get(slot.delivery_id) is slot:
                return slot
        while len(self.slots) < self.max_unacked:
            if self.replays:
                seq, delivery_id, raw = self.replays.popleft()
                if delivery_id in self.slots:
                    continue
                state = self.states.pop(delivery_id, None)
                self.counts["replayed"] += 1
                return _Slot(seq, delivery_id, raw, state.attempt if state else 0, None)
            item = self._next_record()
            if item is None:
                return None
            seq, delivery_id, _end, raw = item
            if seq <= self.emitted_seq:
                continue
            self.emitted_seq = seq
            entry = [seq, delivery_id, False]
            self.order.append(entry)
            state = self.states.pop(delivery_id, None)
            if state is not None and state.verb in (spoolfmt.ACK, spoolfmt.DEAD):
                entry[2] = True         # acknowledged or given up before a restart
                self._advance()
                continue
            if delivery_id in self.slots:     # a replay of it is out: its acknowledgement settles both
                self.slots[delivery_id].entry = entry
                continue
            return _Slot(seq, delivery_id, raw, state.attempt if state else 0, entry)
        return None

    async def run(self, queue: asyncio.Queue) -> None:
        watcher = asyncio.get_running_loop().create_task(self._watch_journal())
        try:
            while True:
                slot = self._next_slot()
                if slot is None:
                    self.wake.clear()
                    await self.wake.wait()
                    continue
                await self._hand_over(queue, slot)
        finally:
            watcher.cancel()

    async def _hand_over(self, queue: asyncio.Queue, slot: _Slot) -> None:
        self.slots[slot.delivery_id] = slot
        slot.deadline = None
        if slot.attempt >= self.max_attempts:
            await self._give_up(slot)
            return
        slot.attempt += 1
        event = _for_rulebook(slot.raw)
        meta = event.get("meta")
        if not isinstance(meta, dict):
            meta = event["meta"] = {}
        meta["attempt"] = slot.attempt
        meta["ack"] = self.ack_meta
        self._journal(spoolfmt.journal_line(spoolfmt.EMIT, slot.delivery_id, slot.seq, slot.attempt))
        self.counts["handed_over"] += 1
        if slot.attempt > 1:
            self.counts["handed_over_again"] += 1
        await queue.put(event)
        if self.slots.get(slot.delivery_id) is slot:
            slot.deadline = time.monotonic() + self.ack_timeout

    async def _give_up(self, slot: _Slot) -> None:
        logger.error("wpcloud.hosting.webhook: %s was handed over %d time(s) without an acknowledgement; given up "
                     "(dead letter). List it with: webhook.py events list --spool-dir %s --state dead",
                     slot.delivery_id, slot.attempt, self.dir)

        def write():
            with open(self.dead_path, "ab") as handle:
                handle.write(b"%d\t%s\t-\t%s\n" % (slot.seq, slot.delivery_id.encode(), slot.raw))
                handle.flush()
                _sync(handle.fileno())
            spoolfmt.append_journal(self.journal_path, spoolfmt.journal_line(
                spoolfmt.DEAD, slot.delivery_id, slot.seq, slot.attempt, via="source"))
        try:
            await asyncio.get_running_loop().run_in_executor(None, write)
        except OSError as exc:
            # not recorded: it stays out, and is handed over again after the next timeout
            logger.error("wpcloud.hosting.webhook: cannot record %s as given up: %s", slot.delivery_id, exc)
            slot.deadline = time.monotonic() + self.ack_timeout
            return
        self.counts["given_up"] += 1
        self._settle(slot.delivery_id)

    # -- settling ------------------------------------------------------------------------------------
    def _settle(self, delivery_id: str) -> bool:
        slot = self.slots.pop(delivery_id, None)
        if slot is None:
            return False
        if slot.entry is not None:
            slot.entry[2] = True
            self._advance()
        self.wake.set()
        return True

    def _advance(self) -> None:
        seq = None
        while self.order and self.order[0][2]:
            seq = self.order.popleft()[0]
        if seq is not None and seq > self.marked_seq:
            self.marked_seq = seq
            self._mark_due = True

    async def _watch_journal(self) -> None:
        """Every journal_interval: acknowledgements and operator requests from processing.log, due
        slots, and the mark."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.journal_interval)
            try:
                entries, self.journal_offset = await loop.run_in_executor(
                    None, spoolfmt.read_journal, self.journal_path, self.journal_offset)
            except OSError as exc:
                logger.error("wpcloud.hosting.webhook: cannot read %s: %s", JOURNAL_FILE, exc)
                entries = []
            redo = []
            for verb, delivery_id, seq, attempt, _when, _via in entries:
                if verb == spoolfmt.ACK:
                    self.dead.pop(delivery_id, None)
                    if self._settle(delivery_id):
                        self.counts["acknowledged"] += 1
                    else:                 # not handed over yet (the operator), or a late duplicate
                        state = self.states.setdefault(delivery_id, spoolfmt.DeliveryState())
                        state.verb = spoolfmt.ACK
                elif verb == spoolfmt.REDO:
                    self.dead.pop(delivery_id, None)
                    redo.append(delivery_id)
                elif verb == spoolfmt.DEAD:
                    self.dead[delivery_id] = (seq, attempt)
            if redo:
                await self._redo(redo)
            now = time.monotonic()
            for slot in self.slots.values():
                if slot.deadline is not None and now >= slot.deadline and not slot.due:
                    logger.warning("wpcloud.hosting.webhook: %s not acknowledged within %gs (attempt %d of %d)",
                                   slot.delivery_id, self.ack_timeout, slot.attempt, self.max_attempts)
                    slot.due = True
                    slot.deadline = None
                    self.due.append(slot)
                    self.wake.set()
            if self._mark_due and not self._stopping:
                self._mark_due = False
                seq = self.marked_seq
                try:
                    await loop.run_in_executor(None, self._write_mark, seq)
                except OSError as exc:
                    logger.error("wpcloud.hosting.webhook: cannot record the done position: %s", exc)
                    self._mark_due = True
                    continue
                if self.on_mark is not None:
                    self.on_mark(seq)

    async def _redo(self, delivery_ids: list) -> None:
        """The operator's replay: a slot out is handed over again now; anything else is looked up."""
        lookup = []
        for delivery_id in dict.fromkeys(delivery_ids):
            slot = self.slots.get(delivery_id)
            if slot is not None:
                slot.attempt = 0
                if not slot.due:
                    slot.due = True
                    slot.deadline = None
                    self.due.append(slot)
                continue
            state = self.states.setdefault(delivery_id, spoolfmt.DeliveryState())
            state.verb, state.attempt = spoolfmt.REDO, 0
            lookup.append(delivery_id)
        if lookup:
            try:
                found = await asyncio.get_running_loop().run_in_executor(None, spoolfmt.find_records, self.dir, lookup)
            except OSError as exc:
                logger.error("wpcloud.hosting.webhook: cannot look the replays up: %s", exc)
                return
            later = [d for d in lookup if d in found and found[d][0] > self.emitted_seq]
            # not read yet: handed over when the reader gets there (its state says redo)
            self._queue_replays([d for d in lookup if d not in later], found)
        self.wake.set()

    def rotated(self) -> None:
        """Besides the mark: the journal keeps only what is still open (replays out, dead letters,
        replays asked for); lines appended since the last read are kept as they are."""
        super().rotated()
        keep = []
        for delivery_id, slot in self.slots.items():
            keep.append(spoolfmt.journal_line(spoolfmt.REDO, delivery_id, slot.seq, via="compaction"))
            if slot.attempt:
                keep.append(spoolfmt.journal_line(spoolfmt.EMIT, delivery_id, slot.seq, slot.attempt))
        for delivery_id, (seq, attempts) in self.dead.items():
            if delivery_id not in self.slots:
                keep.append(spoolfmt.journal_line(spoolfmt.DEAD, delivery_id, seq, attempts, via="compaction"))
        for delivery_id, state in list(self.states.items()):
            if state.verb == spoolfmt.REDO and delivery_id not in self.slots:
                keep.append(spoolfmt.journal_line(spoolfmt.REDO, delivery_id, state.seq, via="compaction"))
            else:
                del self.states[delivery_id]        # acknowledged: nothing left to wait for
        head = b"".join(keep)
        offset = self.journal_offset

        def rewrite(data: bytes):
            return head, data[offset:] if len(data) >= offset else b""
        self.journal_offset = spoolfmt.rewrite_journal(self.journal_path, rewrite)
        self._open_journal()

    async def stop(self) -> None:
        self._stopping = True
        await super().stop()
        if self._journal_fd >= 0:
            os.close(self._journal_fd)
            self._journal_fd = -1


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


def _receiver_config(args: dict[str, Any], keys: list[str], spool_dir: str, emitter: Emitter,
                     ack_token: str | None = None) -> dict[str, Any]:
    """What the receiver process is given on its stdin (never argv or the environment: it holds the keys)."""
    child_args = {k: v for k, v in args.items() if k not in ("hmac_secret", "token", "ack_token")}
    if args.get("hmac_secret") is not None:
        child_args.pop("hmac_secret_file", None)  # explicit keys win; the file is not watched
    if args.get("token") is not None:
        child_args["token"] = str(args["token"])
    log_level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    if not isinstance(log_level, str) or log_level.startswith("Level"):
        log_level = "WARNING"
    return {"args": child_args, "keys": keys, "spool_dir": spool_dir, "marked_seq": emitter.marked_seq,
            "recovered": emitter.recovered, "log_level": log_level, "ack_token": ack_token}


def _emitter(args: dict[str, Any], spool_dir: str) -> Emitter:
    """AckingEmitter unless ack_timeout is 0 (then an event is done once it was handed over)."""
    ack_timeout = float(args.get("ack_timeout", ACK_TIMEOUT))
    if ack_timeout <= 0:
        return Emitter(spool_dir, float(args.get("emit_confirm_delay", 1.0)))
    return AckingEmitter(spool_dir, ack_timeout, int(args.get("max_unacked", MAX_UNACKED)),
                         int(args.get("max_attempts", MAX_ATTEMPTS)), args.get("ack_url"))


async def main(queue: asyncio.Queue, args: dict[str, Any]) -> None:
    """Receive WP Cloud webhooks (see DOCUMENTATION)."""
    args = _clean_args(args)
    try:
        _check_args(args)
        keys = _keys_from_args(args)
        ack_token = _ack_token_from_args(args)
    finally:
        # read once; the actions ansible-rulebook runs (and the receiver child) inherit this environment
        removed = _forget_secrets_in_environment()
    if removed:
        logger.info("wpcloud.hosting.webhook: %s read and removed from the environment of the actions",
                    ", ".join(removed))
    _check_keys(keys, _bool(args.get("allow_unsigned", False)))
    if _ssl_context(args) is None:
        logger.warning("wpcloud.hosting.webhook: listening on plain HTTP (allow_insecure_http)")
    spool_dir = os.path.abspath(args.get("spool_dir") or _default_spool_dir(args["port"]))
    os.makedirs(spool_dir, mode=0o700, exist_ok=True)
    emitter = _emitter(args, spool_dir)
    emitter.read_mark()
    emitter.recover()
    receiver = ReceiverProcess(emitter)
    watcher = emitter_task = None
    try:
        await receiver.start(_receiver_config(args, keys, spool_dir, emitter, ack_token))
        emitter.on_mark = receiver.mark
        if emitter.recovered:
            logger.info("wpcloud.hosting.webhook: %d stored event(s) not yet done will be emitted",
                        emitter.recovered)
        logger.info("wpcloud.hosting.webhook listening on %s:%s (%s, %d key(s), %s)", args.get("host") or "0.0.0.0",
                    args["port"], "https" if args.get("certfile") else "http", len(keys),
                    "acknowledgements within %gs" % emitter.ack_timeout if isinstance(emitter, AckingEmitter)
                    else "acknowledgements off")
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


# =============================================================================================
# 5. The operator command: list stored deliveries, replay them, mark them done.
#    python webhook.py events list|replay|ack --spool-dir DIR [selectors]
#    (or ansible-playbook wpcloud.hosting.webhook_events, which runs it)
# =============================================================================================
def _operator_parser():
    import argparse  # pylint: disable=import-outside-toplevel
    parser = argparse.ArgumentParser(
        prog="webhook.py events",
        description="List the WP Cloud webhook deliveries a wpcloud.hosting.webhook spool holds, hand them "
                    "to the rulebook again (replay) or mark them done (ack). Works while the rulebook runs "
                    "(it picks requests up within a second) or not (at its next start).")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("list", "list deliveries (oldest first)"),
                       ("replay", "hand the selected deliveries to the rulebook again (attempts start over)"),
                       ("ack", "mark the selected deliveries done without running anything (dismiss)")):
        command = commands.add_parser(name, help=text, description=text)
        where = command.add_mutually_exclusive_group(required=True)
        where.add_argument("--spool-dir", help="the source's spool_dir")
        where.add_argument("--port", type=int, help="the source's port, when spool_dir was left to its default")
        command.add_argument("--id", dest="ids", action="append", default=[], metavar="DELIVERY_ID",
                             help="a delivery id (repeat for several)")
        command.add_argument("--since", help="received at or after: ISO 8601 (2026-11-23T10:00Z) or an age (2h)")
        command.add_argument("--until", help="received before: ISO 8601 or an age")
        command.add_argument("--state", dest="states", action="append", default=[], choices=spoolfmt.STATES,
                             help="only deliveries in this state (repeat for several)")
        command.add_argument("--event", dest="events", action="append", default=[], metavar="NAME",
                             help="only this event name (repeat for several)")
        command.add_argument("--json", action="store_true", help="one JSON object per line")
        if name != "list":
            command.add_argument("--all", action="store_true", help="every delivery (no selector needed)")
    return parser


def _operator_main(argv: list[str]) -> int:
    parser = _operator_parser()
    opts = parser.parse_args(argv)
    directory = os.path.abspath(opts.spool_dir or _default_spool_dir(opts.port))
    if not os.path.isfile(os.path.join(directory, SPOOL_FILE)):
        parser.error("%s holds no %s: not the spool_dir of a wpcloud.hosting.webhook source" % (directory, SPOOL_FILE))
    bad = [i for i in opts.ids if not sig.is_delivery_id(i)]
    if bad:
        parser.error("--id %s is not a delivery id (sig- or body- and 32 hex digits)" % bad[0])
    try:
        since = spoolfmt.parse_time(opts.since) if opts.since else None
        until = spoolfmt.parse_time(opts.until) if opts.until else None
    except ValueError as exc:
        parser.error("--since/--until: %s" % exc)
    chosen = spoolfmt.select(spoolfmt.list_deliveries(directory), opts.ids, since, until, opts.states)
    if opts.events:           # either spelling of a name matches (site-provisioned is site_provisioned)
        wanted = {sig.event_name(name) for name in opts.events}
        chosen = [item for item in chosen if sig.event_name(item["event"]) in wanted]
    if opts.command != "list" and not (opts.all or opts.ids or opts.since or opts.until or opts.states
                                       or opts.events):
        parser.error("%s needs a selector (--id, --since, --until, --state, --event) or --all" % opts.command)
    missing = sorted(set(opts.ids) - {item["delivery_id"] for item in chosen})
    if opts.command == "replay" and chosen:
        spoolfmt.request_redo(directory, [item["delivery_id"] for item in chosen])
    elif opts.command == "ack":
        chosen = [item for item in chosen if item["state"] != spoolfmt.DONE]
        spoolfmt.record_acks(directory, [item["delivery_id"] for item in chosen])
    for item in chosen:
        if opts.json:
            sys.stdout.write(json.dumps({k: v for k, v in item.items() if k not in ("raw", "received_epoch")}) + "\n")
        else:
            sys.stdout.write("%-6s %-27s %-37s %-8s %-3s %-26s %s\n" % (
                item["seq"], item["received_at"], item["delivery_id"], item["state"], item["attempts"],
                item["event"], "" if item["atomic_site_id"] is None else item["atomic_site_id"]))
    counts = {}
    for item in chosen:
        counts[item["state"]] = counts.get(item["state"], 0) + 1
    summary = ", ".join("%d %s" % (n, state) for state, n in sorted(counts.items())) or "none"
    verb = {"list": "listed", "replay": "asked to be handed over again", "ack": "marked done"}[opts.command]
    sys.stderr.write("%d deliver%s %s (%s)\n" % (len(chosen), "y" if len(chosen) == 1 else "ies", verb, summary))
    for delivery_id in missing:
        sys.stderr.write("not in the spool: %s\n" % delivery_id)
    if opts.command != "list" and (missing or not chosen):
        return 1
    return 0


if __name__ == "__main__":
    if "--receiver" in sys.argv[1:]:
        sys.exit(asyncio.run(_receiver_main()))
    if sys.argv[1:2] == ["events"]:
        sys.exit(_operator_main(sys.argv[2:]))

    class MockQueue(asyncio.Queue):
        """Writes events to stdout instead of a rulebook."""

        async def put(self, item: Any) -> None:
            sys.stdout.write(json.dumps(item) + "\n")
            sys.stdout.flush()

    asyncio.run(main(MockQueue(), {"port": 5000, "host": "127.0.0.1", "allow_insecure_http": True,
                                   "allow_unsigned": True, "spool_dir": "./webhook-spool", "ack_timeout": 0}))
