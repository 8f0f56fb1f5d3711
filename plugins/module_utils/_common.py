# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Shared pieces of every module: argument spec, failure type, context, input checks.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.common.parameters import env_fallback

from ansible_collections.wpcloud.hosting.plugins.module_utils._client import (
    DEFAULT_API_URL,
    MISSING_KEY,
    WPCloudAPIError,
    WPCloudClient,
)

API_ARGUMENT_SPEC = dict(
    api_url=dict(type="str", default=DEFAULT_API_URL, fallback=(env_fallback, ["WPCLOUD_API_URL"])),
    # Not required=True: the spec's "missing required arguments: api_key" would not mention the environment
    # variable; validate_connection_options says both ways to give it.
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["WPCLOUD_API_KEY"])),
    validate_certs=dict(type="bool", default=True, fallback=(env_fallback, ["WPCLOUD_VALIDATE_CERTS"])),
    ca_path=dict(type="path", fallback=(env_fallback, ["WPCLOUD_CA_PATH"])),
    timeout=dict(type="int", default=30),
    retries=dict(type="int", default=5),
    retry_timeout=dict(type="int", default=120),
)

WAIT_ARGUMENT_SPEC = dict(
    wait=dict(type="bool", default=True),
    wait_timeout=dict(type="int", default=1800),
    poll_interval=dict(type="float", default=1.0),
    progress_interval=dict(type="float", default=15.0),
)

# The service asks for one second between polls of a pending ticket.
MIN_POLL_INTERVAL = 1.0

# The list forms (sites, migrations, migration_ids) call the API for this many items at once, on the
# task's one client: a fleet's calls then take about as long as its slowest call, not the sum.
MAX_CONCURRENT_CALLS = 16

# An option given as null (``migration_id: "{{ created.migration_id }}"`` after a check-mode create).
# Accepted in check mode only, where it stands for what the earlier task would have returned.
NULL_ID_MSG = ("%s is null: pass the ID of an existing migration. A null ID usually comes from an earlier task "
               "that ran in check mode and only pretended to create it; outside check mode it is an error.")

_DOMAIN_RE = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9-]{2,63}$")
_HOST_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


class ModuleFailure(Exception):
    """A failure the module reports with ``msg`` and structured details (never a secret)."""

    def __init__(self, msg, **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


def api_spec_with(spec):
    """The module's own options plus the shared connection options."""
    merged = dict(API_ARGUMENT_SPEC)
    merged.update(spec)
    return merged


class ModuleContext(object):
    """What module logic may use from its runner (AnsibleModule or the controller action)."""

    def __init__(self, params, check_mode=False, diff=False, warn=None, progress=None):
        self.params = params
        self.check_mode = check_mode
        self.diff = diff
        # progress(line): shows a line while the task runs (None: the runner cannot, e.g. a module process)
        self.progress = progress
        self.warnings = []
        self.no_log_values = set()
        self._warn = warn
        self._client = None

    def add_no_log(self, value):
        """Mask a value in everything the task returns, as if it came from a no_log option."""
        if value:
            self.no_log_values.add(str(value))

    def warn(self, message):
        if self._warn is not None:
            self._warn(message)
        else:
            self.warnings.append(message)

    def client(self):
        if self._client is None:
            p = self.params
            validate_connection_options(p)
            try:
                self._client = WPCloudClient(
                    api_url=p["api_url"], api_key=p["api_key"], validate_certs=p["validate_certs"],
                    ca_path=p.get("ca_path"), timeout=p["timeout"], retries=p["retries"],
                    retry_timeout=p["retry_timeout"], on_retry=self.warn)
            except WPCloudAPIError as exc:
                raise ModuleFailure(exc.message)
        return self._client

    def close(self):
        if self._client is not None:
            self._client.close()


def validate_connection_options(params):
    if params.get("api_key") is None:
        raise ModuleFailure(MISSING_KEY)
    if not params["api_key"].strip():
        raise ModuleFailure("api_key is empty: it is required; pass the partner API key (from a vaulted variable), "
                            "or leave api_key out to use the WPCLOUD_API_KEY environment variable.")
    url = params.get("api_url") or ""
    if not re.match(r"^https?://[^/\s?#]+", url):
        raise ModuleFailure("api_url must be an absolute URL such as https://atomic-api.wordpress.com "
                            "(the /api/v1.0 prefix is added by the collection).")
    if url.startswith("http://") and params.get("validate_certs", True):
        raise ModuleFailure("api_url uses plain http://: the API key would travel unencrypted. Use https://.")
    for name in ("timeout", "retry_timeout"):
        if params.get(name) is not None and params[name] <= 0:
            raise ModuleFailure("%s must be a positive number of seconds." % name)
    if params.get("retries") is not None and not 0 <= params["retries"] <= 20:
        raise ModuleFailure("retries must be between 0 (no retries) and 20.")


def api_failure(exc, what=None):
    """Turn a client error into a ModuleFailure with a machine-readable ``failure`` detail."""
    msg = exc.message if not what else "%s: %s" % (what, exc.message)
    return ModuleFailure(msg, failure=exc.to_dict())


def validate_site(value, option="site"):
    """A site is a numeric site ID or a domain name; nothing that could change the URL path."""
    text = str(value).strip() if value is not None else ""
    if not text:
        raise ModuleFailure("%s must be a numeric site ID or a domain name; it is empty." % option)
    if text.isdigit():
        if int(text) <= 0:
            raise ModuleFailure("%s must be a positive site ID, got %s." % (option, text))
        return text
    if not _DOMAIN_RE.match(text):
        raise ModuleFailure(
            "%s must be a numeric site ID or a domain name like example.com (letters, digits, "
            "hyphens and dots only; no scheme, path, port or spaces)." % option)
    return text.lower()


def validate_host(value, option):
    text = "" if value is None else str(value)
    if text != text.strip() or not text or not _HOST_RE.match(text):
        raise ModuleFailure("%s must be a host name or IP address (letters, digits, dots and hyphens), "
                            "got an invalid value." % option)
    return text


def validate_poll(params):
    if params.get("wait_timeout") is not None and params["wait_timeout"] <= 0:
        raise ModuleFailure("wait_timeout must be a positive number of seconds.")
    if params.get("progress_interval") is not None and params["progress_interval"] < 0:
        raise ModuleFailure("progress_interval must be a number of seconds, or 0 to show no progress lines.")
    if params.get("poll_interval") is not None and params["poll_interval"] < MIN_POLL_INTERVAL:
        raise ModuleFailure("poll_interval must be at least %g second: the service asks clients to "
                            "wait one second between polls of a ticket." % MIN_POLL_INTERVAL)


def as_int_or_str(value):
    """The API mixes '5678' and 5678 for IDs; return an int when it is one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


# -- list forms: one task for a whole fleet ---------------------------------------------------------------

def run_for_each(items, logic):
    """Run ``logic(item)`` for every item, MAX_CONCURRENT_CALLS at a time; results in input order.

    Each result is the item's own result dict with ``failed`` added; a ModuleFailure becomes that
    item's result (its details, ``failed: true`` and ``msg``), so one bad item never stops the others.
    """
    def one(item):
        try:
            result = logic(item)
            result["failed"] = False
        except ModuleFailure as failure:
            result = dict(failure.details)
            result.update(failed=True, msg=failure.msg)
        return result

    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_CONCURRENT_CALLS, len(items))) as pool:
        return list(pool.map(one, items))


def list_result(results, noun, label):
    """The result of a list form: ``results``, ``changed`` when any item changed, ``failed_count``.

    Item diffs are gathered into one ``diff`` list (one entry per item, headed by ``label(result)``).
    Raises ModuleFailure naming the first failed items when any item failed.
    """
    diffs = []
    for result in results:
        diff = result.pop("diff", None)
        if diff:
            name = label(result)
            diffs.append(dict(diff, before_header=name, after_header=name))
    failed = [r for r in results if r.get("failed")]
    outcome = dict(changed=any(r.get("changed") for r in results), results=results, failed_count=len(failed))
    if diffs:
        outcome["diff"] = diffs
    if failed:
        named = "; ".join("%s: %s" % (label(r), r.get("msg")) for r in failed[:5])
        if len(failed) > 5:
            named += " (and %d more)" % (len(failed) - 5)
        raise ModuleFailure("%d of %d %s failed: %s" % (len(failed), len(results), noun, named), **outcome)
    return outcome
