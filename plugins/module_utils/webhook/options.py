# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The wpcloud.hosting.webhook event source's options: their defaults, the checks that refuse a bad one
by name before anything starts, the keys and the ack token (option, file or environment), TLS.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import logging
import os
import re
import ssl
from typing import Any

from . import signature

logger = logging.getLogger(__name__)


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


def as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y")
    return bool(value)


def clean_args(args: dict[str, Any]) -> dict[str, Any]:
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


def check_args(args: dict[str, Any]) -> None:
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
            ssl_context(args)
        except (ssl.SSLError, OSError) as exc:
            raise ValueError("certfile and keyfile could not be loaded as a certificate and its private key "
                             "(%s): check that keyfile belongs to certfile and password opens it"
                             % exc.__class__.__name__) from None


def ssl_context(args: dict[str, Any]) -> ssl.SSLContext | None:
    certfile = args.get("certfile")
    if not certfile:
        if as_bool(args.get("allow_insecure_http", False)):
            return None
        raise ValueError("certfile is required (HTTPS); set allow_insecure_http: true only behind a TLS proxy")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile, args.get("keyfile"), args.get("password"))
    if args.get("cafile") or args.get("capath"):
        context.load_verify_locations(args.get("cafile"), args.get("capath"))
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def keys_from_args(args: dict[str, Any]) -> list[str]:
    """The active keys: hmac_secret (a list or a comma-separated string), else the keys of
    hmac_secret_file, else WPCLOUD_WEBHOOK_HMAC_KEYS / WPCLOUD_WEBHOOK_HMAC_KEY."""
    raw = args.get("hmac_secret")
    if isinstance(raw, str) and not raw.strip():
        raw = None  # "{{ var | default('') }}" in a rulebook: fall back to the file, then the environment
    if raw is None and args.get("hmac_secret_file"):
        return signature.read_key_file(str(args["hmac_secret_file"]))
    if raw is None:
        raw = next((os.environ[name] for name in ENV_KEYS if os.environ.get(name)), None)
    return signature.parse_keys(raw, split_commas=True)


def ack_token_from_args(args: dict[str, Any]) -> str | None:
    """ack_token, else WPCLOUD_WEBHOOK_ACK_TOKEN; None: no acknowledgements over HTTPS."""
    token = args.get("ack_token")
    if token is None:
        token = os.environ.get(ENV_ACK_TOKEN) or None
    if token is None:
        return None
    token = str(token).strip()
    if not signature.key_is_strong(token):
        raise ValueError("ack_token (or WPCLOUD_WEBHOOK_ACK_TOKEN) is too weak: it needs at least %d characters, "
                         "%d of them distinct (openssl rand -hex 32)" % (signature.MIN_KEY_LENGTH, signature.MIN_KEY_DISTINCT))
    return token


def forget_secrets_in_environment() -> list[str]:
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


def check_keys(keys: list[str], allow_unsigned: bool) -> None:
    if not keys and not allow_unsigned:
        raise ValueError("no hmac_secret, hmac_secret_file or WPCLOUD_WEBHOOK_HMAC_KEYS configured; "
                         "set allow_unsigned: true to accept unsigned deliveries")
    weak = signature.weak_keys(keys)
    if weak:
        raise ValueError("hmac_secret (or hmac_secret_file, WPCLOUD_WEBHOOK_HMAC_KEYS): %s too weak. %s"
                         % (weak, signature.KEY_RULE))


def default_spool_dir(port: Any) -> str:
    if os.environ.get(ENV_SPOOL):
        return os.environ[ENV_SPOOL]
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "wpcloud.hosting", "webhook-%s" % port)


# The spool directory's files and formats (spool.log, spool.log.1, emitted.log, processing.log,


def read(args: dict[str, Any]) -> tuple[dict[str, Any], list[str], str | None]:
    """The source's options as it uses them: ``(args, keys, ack_token)``, the options cleaned and
    checked, the keys and the ack token read. The secrets are taken out of this process's environment
    once read, also when a check refuses to start (the actions and the receiver child inherit it)."""
    args = clean_args(args)
    try:
        check_args(args)
        keys = keys_from_args(args)
        ack_token = ack_token_from_args(args)
    finally:
        removed = forget_secrets_in_environment()
    if removed:
        logger.info("wpcloud.hosting.webhook: %s read and removed from the environment of the actions",
                    ", ".join(removed))
    check_keys(keys, as_bool(args.get("allow_unsigned", False)))
    return args, keys, ack_token


def spool_dir_of(args: dict[str, Any]) -> str:
    """The spool directory (spool_dir, else its default), made if missing."""
    directory = os.path.abspath(args.get("spool_dir") or default_spool_dir(args["port"]))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    return directory
