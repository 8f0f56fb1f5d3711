# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The options every module shares and the checks of their values: the connection options (doc fragment
wpcloud.hosting.api), the wait contract (wpcloud.hosting.api.WAIT), and the site and host values that
several modules take.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

A module's own options are in its file, plugins/modules/<name>.py, next to their DOCUMENTATION.
"""

from __future__ import annotations

import re

from ansible.module_utils.common.parameters import env_fallback

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.defaults import (
    DEFAULT_API_URL,
    DEFAULT_RETRIES,
    DEFAULT_RETRY_TIMEOUT,
    DEFAULT_TIMEOUT,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import MISSING_KEY
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure

# -- the wait contract: its defaults, and the service's own minimum between polls ---------------------------

DEFAULT_WAIT_TIMEOUT = 1800
DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_PROGRESS_INTERVAL = 15.0
# The service asks for one second between polls of a pending ticket (spec 4.3, 7).
MIN_POLL_INTERVAL = 1.0
# The longest gap of the adaptive wait (service/poller.py poll_gap, docs/api-choices.md) when
# poll_max_interval is unset: it keeps a 1,000-site wave under 100 requests a second once every run is past
# about five minutes, and a 5-minute run under 60 polls; at 1 s, a 10 s run (its end at age 11 s, after
# the 202 window) is seen as before.
DEFAULT_POLL_MAX_INTERVAL = 12.0

API_ARGUMENT_SPEC = dict(
    api_url=dict(type="str", default=DEFAULT_API_URL, fallback=(env_fallback, ["WPCLOUD_API_URL"])),
    # Not required=True: the spec's "missing required arguments: api_key" would not mention the environment
    # variable; validate_connection_options says both ways to give it.
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["WPCLOUD_API_KEY"])),
    validate_certs=dict(type="bool", default=True, fallback=(env_fallback, ["WPCLOUD_VALIDATE_CERTS"])),
    ca_path=dict(type="path", fallback=(env_fallback, ["WPCLOUD_CA_PATH"])),
    timeout=dict(type="int", default=DEFAULT_TIMEOUT),
    retries=dict(type="int", default=DEFAULT_RETRIES),
    retry_timeout=dict(type="int", default=DEFAULT_RETRY_TIMEOUT),
    rate_limit=dict(type="float", default=0, fallback=(env_fallback, ["WPCLOUD_RATE_LIMIT"])),
)

# The wait contract of the modules that start or wait on response tickets.
WAIT_ARGUMENT_SPEC = dict(
    wait=dict(type="bool", default=True),
    wait_timeout=dict(type="int", default=DEFAULT_WAIT_TIMEOUT),
    poll_interval=dict(type="float", default=DEFAULT_POLL_INTERVAL),
    # No default in the spec: unset, it is DEFAULT_POLL_MAX_INTERVAL, or poll_interval when that is longer.
    poll_max_interval=dict(type="float", fallback=(env_fallback, ["WPCLOUD_POLL_MAX_INTERVAL"])),
    progress_interval=dict(type="float", default=DEFAULT_PROGRESS_INTERVAL),
    messages=dict(type="str", default="on_failure", choices=["on_failure", "always", "never"]),
)

# The wait of the modules whose jobs are the service's own (a site's creation, a domain switch, a backup): no
# response ticket, so no ticket messages to show.
JOB_WAIT_ARGUMENT_SPEC = dict((k, v) for k, v in WAIT_ARGUMENT_SPEC.items() if k != "messages")

# migration_preflight and migration_ready start a preflight or a run of one migration, or of many at once,
# and wait for it.
START_ARGUMENT_SPEC = dict(WAIT_ARGUMENT_SPEC, migration_id=dict(type="int"), migration_ids=dict(type="list", elements="int"))
START_RULES = dict(mutually_exclusive=[("migration_id", "migration_ids")],
                   required_one_of=[("migration_id", "migration_ids")])

# site_allow_migration and migration_info serve one site, or a fleet's sites at once.
SITE_ARGUMENT_SPEC = dict(site=dict(type="str"), sites=dict(type="list", elements="str"))

# An option given as null (``migration_id: "{{ created.migration_id }}"`` after a check-mode create).
# Accepted in check mode only, where it stands for what the earlier task would have returned.
NULL_ID_MSG = ("%s is null: pass the ID of an existing migration. A null ID usually comes from an earlier task "
               "that ran in check mode and only pretended to create it; outside check mode it is an error.")

_DOMAIN_RE = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9-]{2,63}$")
_HOST_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


def api_spec_with(spec):
    """The module's own options plus the shared connection options."""
    merged = dict(API_ARGUMENT_SPEC)
    merged.update(spec)
    return merged


def list_form_options(one_site):
    """The options of one entry of a module's list form (``sites``): the single form's, without their defaults, so
    that an entry's unset option is the task's (its own default applies only there)."""
    return dict((name, dict(option, default=None)) for name, option in one_site.items())


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
    if re.search(r"/api/v1\.0/*$", url):
        # Every path would be /api/v1.0/api/v1.0/...: a 404 that a read of something optional takes for "absent".
        raise ModuleFailure("api_url ends in /api/v1.0, which the collection adds itself: give the service's base URL, "
                            "such as %s." % re.sub(r"/api/v1\.0/*$", "", url))
    if url.startswith("http://") and params.get("validate_certs", True):
        raise ModuleFailure("api_url uses plain http://: the API key would travel unencrypted. Use https://.")
    for name in ("timeout", "retry_timeout"):
        if params.get(name) is not None and params[name] <= 0:
            raise ModuleFailure("%s must be a positive number of seconds." % name)
    if params.get("retries") is not None and not 0 <= params["retries"] <= 20:
        raise ModuleFailure("retries must be between 0 (no retries) and 20.")
    if params.get("rate_limit") is not None and params["rate_limit"] < 0:
        raise ModuleFailure("rate_limit must be a number of requests per second, or 0 for no ceiling.")


def wait_options(params):
    """The wait options, checked once for every module that waits."""
    if params.get("wait_timeout") is not None and params["wait_timeout"] <= 0:
        raise ModuleFailure("wait_timeout must be a positive number of seconds.")
    if params.get("progress_interval") is not None and params["progress_interval"] < 0:
        raise ModuleFailure("progress_interval must be a number of seconds, or 0 to show no progress lines.")
    if params.get("poll_interval") is not None and params["poll_interval"] < MIN_POLL_INTERVAL:
        raise ModuleFailure("poll_interval must be at least %g second: the service asks clients to "
                            "wait one second between polls of a ticket." % MIN_POLL_INTERVAL)
    poll_max = params.get("poll_max_interval")
    if poll_max is not None and poll_max < params["poll_interval"]:
        raise ModuleFailure("poll_max_interval (%g) must be at least poll_interval (%g): it is the longest gap "
                            "between two polls of a long wait. Set it equal to poll_interval to poll at a fixed "
                            "rhythm." % (poll_max, params["poll_interval"]))
    if poll_max is None:
        poll_max = max(DEFAULT_POLL_MAX_INTERVAL, params["poll_interval"])
    return dict(wait=params.get("wait", True), wait_timeout=params["wait_timeout"],
                poll_interval=params["poll_interval"], poll_max_interval=poll_max,
                progress_interval=params.get("progress_interval", 0))


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
