"""Scripted executor: outcomes and durations per remote host, no network.

Configuration (config file key ``executor`` and ``POST /_emulator/executor``)::

    {"default": {"preflight": {"outcome": "success", "duration": 0.5},
                 "run": {"outcome": "success", "duration": 1.0}},
     "hosts": {"src1.example": {"preflight": {"outcome": "auth_failed", "duration": 2}},
               "src2.example": {"accept": {"password": "the-right-one", "keys": ["SHA256:..."]}}}}

A host entry overrides the default per operation; missing fields fall back to the default. The
messages mimic what a real SSH/rsync/WP-CLI pull prints, so clients can be tested on telling the
failure kinds apart from the ticket text (spec 4.5 step 4); the texts come from messages.py,
shared with the SSH executor.

A host entry with ``accept`` judges the migration's credentials as the source's sshd would, before its
outcome: the password it accepts, and the public keys (OpenSSH lines or ``SHA256:`` fingerprints) its
authorized_keys holds. Any other password, a key it does not hold (the generated identity included), or
a key that its ssh-id-pass does not open is refused with the auth_failed lines, in a preflight and in a
run. So a test fails when a client reuses a stale credential, not only because an outcome was switched.
The accepted password is never shown back (the configuration's answers mask it).
"""

import base64
import copy
import hashlib
import hmac
import os
import shutil
import threading
import time

from executors import messages as M
from executors.base import Executor

try:
    from cryptography.hazmat.primitives import serialization
except ImportError:  # pragma: no cover - the emulator's CA needs it too (certs.py)
    serialization = None

PREFLIGHT_OUTCOMES = ("success", "auth_failed", "docroot_missing", "wp_cli_missing", "rsync_missing")
RUN_OUTCOMES = ("success", "failure")

DEFAULT_CONFIG = {
    "default": {"preflight": {"outcome": "success", "duration": 0.5},
                "run": {"outcome": "success", "duration": 1.0}},
    "hosts": {},
}


# A held run that no one releases ends after this many seconds anyway.
HOLD_LIMIT = 600
# What the configuration's answers show instead of an accepted password.
MASK = "********"


def public_key_fingerprint(line):
    """The SHA256 fingerprint of an OpenSSH public key line (``ssh-ed25519 AAAA... comment``)."""
    try:
        blob = base64.b64decode(line.split()[1], validate=True)
    except (IndexError, ValueError):
        raise ValueError("not an OpenSSH public key or a SHA256: fingerprint") from None
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


def private_key_fingerprint(text, passphrase):
    """The fingerprint of a private key's public half; ValueError with OpenSSH's reason when it cannot
    be loaded (a wrong or missing passphrase, an unreadable key)."""
    data = (text or "").encode("utf-8")
    load = serialization.load_ssh_private_key if b"BEGIN OPENSSH PRIVATE KEY" in data \
        else serialization.load_pem_private_key
    try:
        key = load(data, password=None)             # OpenSSH ignores a passphrase for a plain key
    except TypeError:                               # encrypted
        try:
            key = load(data, password=passphrase.encode("utf-8") if passphrase else None)
        except (TypeError, ValueError):
            raise ValueError("incorrect passphrase supplied to decrypt private key") from None
    except ValueError:
        raise ValueError("invalid format") from None
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return public_key_fingerprint(public.decode("ascii"))


def _validate_accept(value, where):
    """An ``accept`` entry, with its keys as fingerprints."""
    if not isinstance(value, dict) or set(value) - {"password", "keys"}:
        raise ValueError("%s.accept takes only 'password' and 'keys'" % where)
    password = value.get("password")
    if password is not None and (not isinstance(password, str) or not password):
        raise ValueError("%s.accept.password must be a non-empty string" % where)
    keys = value.get("keys", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ValueError("%s.accept.keys must be a list of public keys or SHA256: fingerprints" % where)
    accepted = {"keys": []}
    for key in keys:
        try:
            accepted["keys"].append(key.strip() if key.strip().startswith("SHA256:") else public_key_fingerprint(key))
        except ValueError as exc:
            raise ValueError("%s.accept.keys: %s" % (where, exc)) from None
    if password is not None:
        accepted["password"] = password
    return accepted


def shown(config):
    """A configuration as its answers show it: an accepted password masked."""
    config = copy.deepcopy(config)
    for entry in config.get("hosts", {}).values():
        if "password" in entry.get("accept", {}):
            entry["accept"]["password"] = MASK
    return config


def _validate_op(op, value, where):
    if not isinstance(value, dict):
        raise ValueError("%s.%s must be an object" % (where, op))
    allowed = PREFLIGHT_OUTCOMES if op == "preflight" else RUN_OUTCOMES
    unknown = set(value) - {"outcome", "duration", "hold"}
    if unknown:
        raise ValueError("%s.%s: unknown fields %s" % (where, op, ", ".join(sorted(unknown))))
    if "outcome" in value and value["outcome"] not in allowed:
        raise ValueError("%s.%s.outcome must be one of %s" % (where, op, ", ".join(allowed)))
    if "hold" in value and (op != "run" or not isinstance(value["hold"], bool)):
        raise ValueError("%s.%s.hold must be true or false (runs only)" % (where, op))
    if "duration" in value:
        duration = value["duration"]
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration < 0:
            raise ValueError("%s.%s.duration must be a number of seconds >= 0" % (where, op))


def normalize_config(config):
    """Validate a scripted configuration and fill in the defaults; raises ValueError."""
    config = copy.deepcopy(config or {})
    if not isinstance(config, dict) or set(config) - {"default", "hosts"}:
        raise ValueError("executor configuration takes only 'default' and 'hosts'")
    result = copy.deepcopy(DEFAULT_CONFIG)
    default = config.get("default") or {}
    if not isinstance(default, dict) or set(default) - {"preflight", "run"}:
        raise ValueError("'default' takes only 'preflight' and 'run'")
    for op, value in default.items():
        _validate_op(op, value, "default")
        result["default"][op].update(value)
    hosts = config.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise ValueError("'hosts' must be an object keyed by remote host")
    for host, entry in hosts.items():
        if not isinstance(entry, dict) or set(entry) - {"preflight", "run", "accept"}:
            raise ValueError("hosts.%s takes only 'preflight', 'run' and 'accept'" % host)
        entry = copy.deepcopy(entry)
        for op, value in entry.items():
            if op == "accept":
                entry[op] = _validate_accept(value, "hosts.%s" % host)
            else:
                _validate_op(op, value, "hosts.%s" % host)
        result["hosts"][host.lower()] = entry
    return result


class ScriptedExecutor(Executor):
    """Plays back canned message sequences spread evenly over the configured duration."""

    def __init__(self, options=None):
        super().__init__(options)
        self._lock = threading.Lock()
        self._config = normalize_config(self.options.get("config"))
        # Runs planned with "hold" end only when a test releases them (POST /_emulator/executor/release).
        self._released = threading.Event()

    def configure(self, config):
        config = normalize_config(config)
        with self._lock:
            self._config = config
            self._released = threading.Event()
        return shown(config)

    def release(self):
        with self._lock:
            self._released.set()

    @property
    def config(self):
        with self._lock:
            return shown(self._config)

    def _refused(self, migration):
        """The lines of a login the host's ``accept`` refuses, or [] (accepted, or nothing to judge)."""
        args = migration["args"]
        host, user = args["remote-host"], args["remote-user"]
        with self._lock:
            accept = copy.deepcopy(self._config["hosts"].get((host or "").lower(), {}).get("accept"))
        if accept is None:
            return []
        denied = [M.permission_denied(user, host), M.auth_failed(host, user)]
        auth = migration.get("auth")
        if auth == "password":
            given, wanted = args.get("remote-pass"), accept.get("password")
            same = given is not None and wanted is not None and hmac.compare_digest(given.encode(), wanted.encode())
            return [] if same else denied
        if auth == "generated":
            fingerprint = public_key_fingerprint(migration.get("ssh-id-pub") or "")
        else:
            try:
                fingerprint = private_key_fingerprint(args.get("ssh-id"), args.get("ssh-id-pass"))
            except ValueError as exc:
                return [M.key_not_loaded(str(exc))] + denied
        return [] if fingerprint in accept["keys"] else denied

    def _plan(self, host, op):
        with self._lock:
            plan = dict(self._config["default"][op])
            plan.update(self._config["hosts"].get((host or "").lower(), {}).get(op, {}))
        return plan["outcome"], float(plan["duration"])

    def _hold(self, host):
        with self._lock:
            plan = dict(self._config["default"]["run"])
            plan.update(self._config["hosts"].get((host or "").lower(), {}).get("run", {}))
            released = self._released
        if plan.get("hold"):
            released.wait(HOLD_LIMIT)

    @staticmethod
    def _play(ticket, lines, duration):
        # Spread the lines over the duration so pollers see response_count grow. Each line is due at an
        # absolute time from the start, so a run takes its duration, not the duration plus every sleep's
        # overshoot (which piled up past the client's whole-second poll and cost a second per phase).
        pause = duration / len(lines) if lines else 0
        start = time.monotonic()
        for number, line in enumerate(lines, 1):
            time.sleep(max(0.0, start + number * pause - time.monotonic()))
            ticket.add_message(line)

    def preflight(self, migration, ticket):
        args = migration["args"]
        host, user, port = args["remote-host"], args["remote-user"], args.get("remote-port", 22)
        outcome, duration = self._plan(host, "preflight")
        method = "password" if migration.get("auth") == "password" else "publickey"
        where = args.get("remote-docroot") or M.COMMON_DOCROOTS_TEXT
        lines = [M.connecting(user, host, port)]
        refused = self._refused(migration)
        if refused:
            self._play(ticket, lines + refused, duration)
            return False
        if outcome == "auth_failed":
            lines += [M.permission_denied(user, host), M.auth_failed(host, user)]
        else:
            lines += [M.authenticated(host, port, method), M.looking_for(where)]
            if outcome == "docroot_missing":
                lines += [M.docroot_missing(where), M.DOCROOT_MISSING_HINT]
            else:
                lines.append(M.docroot_found(args.get("remote-docroot") or "public_html"))
                if outcome == "wp_cli_missing":
                    lines += [M.WP_NOT_FOUND, M.WP_CLI_MISSING]
                else:
                    lines.append(M.wp_cli_found("2.11.0", "6.8.3"))
                    if outcome == "rsync_missing":
                        lines += [M.RSYNC_NOT_FOUND, M.RSYNC_MISSING]
                    else:
                        lines += ["rsync  version 3.2.7  protocol version 31", M.PREFLIGHT_PASSED]
        self._play(ticket, lines, duration)
        return outcome == "success"

    def run(self, migration, site, ticket):
        args = migration["args"]
        host, user = args["remote-host"], args["remote-user"]
        outcome, duration = self._plan(host, "run")
        refused = self._refused(migration)
        if refused:
            self._play(ticket, [M.connecting(user, host, args.get("remote-port", 22))] + refused, duration)
            return False
        lines = [M.starting(user, host, args.get("remote-docroot") or "public_html", site["id"], site["domain"]),
                 M.exporting(host), M.export_complete(12, "1.2 MB"), M.syncing(25), M.syncing(50)]
        if outcome == "failure":
            lines += ["rsync: [receiver] write failed on \"wp-content/uploads/2024/archive.zip\": "
                      "No space left on device (28)",
                      "rsync error: error in file IO (code 11) at receiver.c(381) [receiver=3.2.7]",
                      M.FILE_COPY_FAILED]
            self._play(ticket, lines, duration)
            return False
        lines += [M.syncing(75), M.syncing(100), M.IMPORTING]
        if args.get("remote-domain"):
            lines.append(M.replacing(args["remote-domain"], site["domain"]))
        self._play(ticket, lines, duration)
        self._hold(host)
        self._write_storage(migration, site)
        ticket.add_message(M.MIGRATION_COMPLETE)
        return True

    @staticmethod
    def _write_storage(migration, site):
        # A run overwrites the destination entirely (spec 4.5 step 6): not incremental.
        storage = site["storage"]
        files = os.path.join(storage, "files")
        shutil.rmtree(files, ignore_errors=True)
        os.makedirs(files, exist_ok=True)
        args = migration["args"]
        with open(os.path.join(files, "index.php"), "w", encoding="utf-8") as handle:
            handle.write("<?php\n// Scripted copy of %s\nrequire __DIR__ . '/wp-blog-header.php';\n"
                         % args["remote-host"])
        with open(os.path.join(files, "wp-config.php"), "w", encoding="utf-8") as handle:
            handle.write("<?php\n// migrated by the scripted executor (migration %s)\n" % migration["id"])
        with open(os.path.join(storage, "db.sql"), "w", encoding="utf-8") as handle:
            handle.write("-- scripted export of %s, migration %s\nCREATE TABLE wp_options (option_name "
                         "varchar(191), option_value longtext);\n" % (args["remote-host"], migration["id"]))
