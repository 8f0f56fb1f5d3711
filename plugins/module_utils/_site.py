# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Destination sites: reading allow_site_migration, and the site_allow_migration module logic.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils._args import validate_site
from ansible_collections.wpcloud.hosting.plugins.module_utils._client import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils._context import list_result, run_for_each
from ansible_collections.wpcloud.hosting.plugins.module_utils._failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils._uncertain import write_once
from ansible_collections.wpcloud.hosting.plugins.module_utils._vocabulary import (
    ALLOW_FLAG_VALUES,
    ALLOW_OFF_VALUES,
    as_int_or_str,
)


def read_allow_site_migration(client, site):
    """Return (enabled, migration_id) for a destination site; fail clearly on an unknown site."""
    try:
        resp = client.call("site_meta.get", accept_status=(404,), site=site, key="allow_site_migration")
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading allow_site_migration of site %s" % site)
    if resp.status == 404:
        raise ModuleFailure("site %s was not found (HTTP 404): check the site ID or domain." % site,
                            failure={"status": 404, "operation": "site_meta.get", "message": resp.message})
    value = resp.data
    if value is None or isinstance(value, (list, dict)) and not value or value is False:
        return False, None
    if value is True:
        return True, None
    text = str(value).strip()
    if text.lower() in ALLOW_OFF_VALUES:
        return False, None
    if text.lower() in ALLOW_FLAG_VALUES:
        return True, None
    return True, as_int_or_str(text)


def run_allow(params, ctx):
    if params.get("sites") is not None:
        return _run_allow_sites(params, ctx)
    site = validate_site(params["site"])
    if not params["confirm_overwrite"]:
        raise ModuleFailure(
            "confirm_overwrite must be true: allowing an incoming migration accepts that every later run of a "
            "migration replaces the files and database of site %s, and this cannot be undone. Set "
            "confirm_overwrite: true once you are sure this is the right destination." % site)
    client = ctx.client()
    enabled, migration_id = read_allow_site_migration(client, site)
    result = dict(changed=False, site=site, ready=enabled and migration_id is None, migration_id=migration_id)
    if not enabled:
        result["changed"] = True
        result["ready"] = True
        if not ctx.check_mode:
            uncertain = []

            def send():
                resp = client.call("site.allow_migration", site=site)
                return resp.data if isinstance(resp.data, dict) else {}

            def happened():
                now_enabled, attached = read_allow_site_migration(client, site)
                return {"ready_for_migration": attached is None} if now_enabled else None

            try:
                data = write_once("site.allow_migration", send, happened, uncertain,
                                  "allow_site_migration of site %s" % site)
            except WPCloudAPIError as exc:
                failure = api_failure(exc, "Allowing a migration into site %s" % site)
                failure.details["uncertain"] = uncertain
                raise failure
            if uncertain:
                result["uncertain"] = uncertain
            result["ready"] = bool(data.get("ready_for_migration", True))
            if not result["ready"]:
                # The service says a migration is attached already: report which one.
                result["changed"] = False
                result["migration_id"] = read_allow_site_migration(client, site)[1]
    if ctx.diff:
        result["diff"] = {
            "before": {"allow_site_migration": "enabled" if enabled else "disabled"},
            "after": {"allow_site_migration": "enabled"},
        }
    return result


def _run_allow_sites(params, ctx):
    """The list form: every site of ``sites`` at once, on one client."""
    if not params["confirm_overwrite"]:
        raise ModuleFailure(
            "confirm_overwrite must be true: allowing incoming migrations accepts that every later run of a "
            "migration replaces the files and database of each site in sites, and this cannot be undone. Set "
            "confirm_overwrite: true once you are sure these are the right destinations.")
    ctx.client()  # a connection problem fails the task once, not each site
    results = run_for_each(params["sites"], lambda site: run_allow(dict(params, site=site, sites=None), ctx))
    for given, result in zip(params["sites"], results):
        result.setdefault("site", given)
    return list_result(results, "sites", lambda r: "site %s" % r["site"])
