# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Logic of the client_meta module: one metadata key of a client account.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.uncertain_writes import module_write
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import WRITE_ONLY_KEYS
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.signature import (
    MIN_KEY_DISTINCT,
    MIN_KEY_LENGTH,
    key_is_strong,
)

MAX_URL_LENGTH = 2048
SECRET_HINT = ("Generate one with: openssl rand -hex 32   (or: python3 -c 'import secrets; "
               "print(secrets.token_hex(32))'), store it with ansible-vault, and pass it in secret_value.")

_CLIENT_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


def validate_webhook_url(url):
    """One HTTPS receiver per account: absolute https:// URL with a host."""
    rule = ("value for key webhook_url must be an absolute https:// URL with a host, such as "
            "https://hooks.example.com/wpcloud")
    if len(url) > MAX_URL_LENGTH:
        raise ModuleFailure(rule + "; it is longer than %d characters." % MAX_URL_LENGTH)
    if url != url.strip() or any(ch.isspace() for ch in url):
        raise ModuleFailure(rule + "; it contains white space.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ModuleFailure(rule + "; it could not be parsed.")
    if parts.scheme.lower() != "https":
        raise ModuleFailure(rule + "; got scheme %r (the service only delivers over HTTPS)." % (parts.scheme or "none"))
    if not parts.hostname:
        raise ModuleFailure(rule + "; it has no host.")
    if parts.username is not None or parts.password is not None:
        raise ModuleFailure(rule + "; it must not carry credentials (user:password@). Use webhook_hmac_key "
                            "to authenticate deliveries.")
    if port is not None and not 0 < port < 65536:
        raise ModuleFailure(rule + "; the port is out of range.")
    return url


def validate_secret(secret):
    if not key_is_strong(secret):
        raise ModuleFailure(
            "secret_value is too weak for webhook_hmac_key: it must be a strong random value of at least "
            "%d characters (with at least %d distinct characters and no surrounding spaces). %s"
            % (MIN_KEY_LENGTH, MIN_KEY_DISTINCT, SECRET_HINT))


def _validate(params, ctx):
    if not _CLIENT_RE.match(params["client"] or ""):
        raise ModuleFailure("client must be the lowercase client identifier of the partner account "
                            "(letters, digits, '.', '_' and '-'), got an invalid value.")
    key = params["key"]
    if not _KEY_RE.match(key or ""):
        raise ModuleFailure("key must be a metadata key name such as webhook_url (letters, digits, "
                            "'.', '_' and '-'), got an invalid value.")
    if params["state"] != "present":
        return
    if key in WRITE_ONLY_KEYS and params.get("value") is not None:
        ctx.add_no_log(params["value"])
        raise ModuleFailure("key %s is write-only and secret: pass it in secret_value (no_log) instead of value."
                            % key)
    desired = params["value"] if params.get("value") is not None else params["secret_value"]
    if desired is None or desired == "" or (params.get("value") is not None and not desired.strip()):
        raise ModuleFailure("%s must not be empty for state=present; use state=absent to remove the key."
                            % ("value" if params.get("value") is not None else "secret_value"))
    if key == "webhook_url":
        if params.get("secret_value") is not None:
            raise ModuleFailure("key webhook_url is not secret: pass it in value.")
        validate_webhook_url(desired)
    if key in WRITE_ONLY_KEYS:
        validate_secret(desired)


def _read(client, params):
    try:
        resp = client.call("client_meta.get", accept_status=(404,), client=params["client"], key=params["key"])
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading client metadata %s" % params["key"])
    if resp.status == 404:
        return False, None
    value = resp.data
    if isinstance(value, (list, dict)) and not value:
        value = None
    return True, value


def _write(client, params, exists, value, result):
    """add when absent, update when present; cope with either guess being wrong. A write whose effect
    is unknown is resolved by reading the key (module_write); the write-only key cannot be read back, so
    once it existed before, setting the same value again is the resolution (it is idempotent)."""
    path = dict(client=params["client"], key=params["key"])
    first, second = ("client_meta.update", "client_meta.add") if exists else ("client_meta.add", "client_meta.update")

    def send():
        resp = client.call(first, params={"value": value}, accept_status=(404, 409), **path)
        if resp.status in (404, 409):
            # add on an existing key (409) or update on a missing one (404): the other verb applies.
            client.call(second, params={"value": value}, **path)
            return second.split(".")[1]
        return first.split(".")[1]

    def happened():
        present, current = _read(client, params)
        if params["key"] in WRITE_ONLY_KEYS:
            return "add" if present and not exists else None
        return first.split(".")[1] if present and current == value else None

    return module_write(first, send, happened, "client metadata %s" % params["key"],
                        "Writing client metadata %s" % params["key"], result)


def _remove(client, params, result):
    def send():
        client.call("client_meta.remove", accept_status=(404,), client=params["client"], key=params["key"])
        return "remove"

    def happened():
        return "remove" if not _read(client, params)[0] else None

    return module_write("client_meta.remove", send, happened, "client metadata %s" % params["key"],
                        "Removing client metadata %s" % params["key"], result)


def run(params, ctx):
    _validate(params, ctx)
    key = params["key"]
    secret = key in WRITE_ONLY_KEYS or params.get("secret_value") is not None
    client = ctx.client()
    exists, current = _read(client, params)

    result = dict(changed=False, client=params["client"], key=key, state=params["state"], operation="none")
    if params["state"] == "present":
        desired = params["value"] if params.get("value") is not None else params["secret_value"]
        if key in WRITE_ONLY_KEYS:
            # The service cannot tell us the current value: the user's policy decides.
            send = not exists or params["update_secret"] == "always"
            if not send:
                ctx.warn("secret_value was given but not sent: %s is set already and cannot be read back to "
                         "compare, and update_secret is on_create. If the key changed, run this task once with "
                         "update_secret: always (to switch keys without losing deliveries, use the "
                         "wpcloud.hosting.rotate_webhook_key playbook)." % key)
        else:
            send = not exists or current != desired
        if send:
            result["changed"] = True
            result["operation"] = "update" if exists else "add"
            if not ctx.check_mode:
                result["operation"] = _write(client, params, exists, desired, result)
    elif exists:
        result["changed"] = True
        result["operation"] = "remove"
        if not ctx.check_mode:
            _remove(client, params, result)

    present_after = params["state"] == "present"
    if secret:
        result["secret_set"] = present_after
    else:
        result["value"] = (params["value"] if present_after else None)
    if ctx.diff:
        result["diff"] = _diff(key, secret, exists, current, params, result["changed"])
    return result


def _diff(key, secret, exists, current, params, changed):
    def shown(present, value, replaced=False):
        if not present:
            return {"state": "absent"}
        if secret:
            return {"state": "present", "value": "(write-only secret%s)" % (", replaced" if replaced else "")}
        return {"state": "present", "value": value}
    before = shown(exists, current)
    after = shown(params["state"] == "present", params.get("value"), replaced=changed and exists)
    return {"before_header": "client-meta %s" % key, "after_header": "client-meta %s" % key,
            "before": before, "after": after}
