# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Destination sites: reading allow_site_migration, and the logic of site_allow_migration and site_info.

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
    ALLOW_SITE_MIGRATION,
    SITE_CREDENTIAL_FIELDS,
    SITES_PAGE_MAX,
    as_int_or_str,
)


def read_allow_site_migration(client, site):
    """Return (enabled, migration_id) for a destination site; fail clearly on an unknown site."""
    try:
        resp = client.call("site_meta.get", accept_status=(404,), site=site, key=ALLOW_SITE_MIGRATION)
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading allow_site_migration of site %s" % site)
    if resp.status == 404:
        raise ModuleFailure("site %s was not found (HTTP 404): check the site ID or domain." % site,
                            failure={"status": 404, "operation": "site_meta.get", "message": resp.message})
    return allow_value(resp.data)


def allow_value(value):
    """(enabled, migration_id) of an allow_site_migration value: off, on, or the ID of the migration."""
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


# -- site_info ----------------------------------------------------------------------------------------------

def public_site(record):
    """A site record fit to return: every credential field of the service's record left out."""
    return dict((k, v) for k, v in (record or {}).items() if k not in SITE_CREDENTIAL_FIELDS)


def run_info(params, ctx):
    if params.get("site") is not None:
        return _read_site(ctx.client(), validate_site(params["site"]))
    return _list_sites(ctx.client(), params)


def _read_site(client, site):
    try:
        resp = client.call("site.get", accept_status=(404,), site=site)
    except WPCloudAPIError as exc:
        if exc.status == 403:
            raise ModuleFailure("site %s belongs to another client (HTTP 403): check site and the API key."
                                % site, failure=exc.to_dict())
        raise api_failure(exc, "Reading site %s" % site)
    if resp.status == 404:
        return dict(changed=False, exists=False, site=site)
    record = public_site(resp.data if isinstance(resp.data, dict) else {})
    enabled, migration_id = read_allow_site_migration(client, site)
    return dict(changed=False, exists=True, site=site, site_id=as_int_or_str(record.get("atomic_site_id")),
                domain=record.get("domain_name"), allow_site_migration=enabled, migration_id=migration_id,
                record=record)


def _listed(entry):
    enabled, migration_id = allow_value(entry.get(ALLOW_SITE_MIGRATION))
    listed = {"site_id": as_int_or_str(entry.get("atomic_site_id")), "domain": entry.get("domain_name"),
              "allow_site_migration": enabled, "migration_id": migration_id}
    listed.update((k, v) for k, v in public_site(entry).items()
                  if k not in ("atomic_site_id", "domain_name", ALLOW_SITE_MIGRATION))
    return listed


def _list_sites(client, params):
    """Every site of the client, page after page (``after``: the last site ID of the page before)."""
    if not params["client"].strip():
        raise ModuleFailure("client is empty: give the client identifier of the partner account (lowercase).")
    limit = params["page_size"]
    if not 1 <= limit <= SITES_PAGE_MAX:
        raise ModuleFailure("page_size must be between 1 and %d (the service's cap per page)." % SITES_PAGE_MAX)
    sites, after, pages = [], None, 0
    while True:
        query = {"limit": limit}
        if after is not None:
            query["after"] = after
        try:
            resp = client.call("site.list", params=query, client=params["client"], key=ALLOW_SITE_MIGRATION)
        except WPCloudAPIError as exc:
            if exc.status == 403:
                raise ModuleFailure("client %s is not the client of this API key (HTTP 403): check client."
                                    % params["client"], failure=exc.to_dict())
            raise api_failure(exc, "Listing the sites of client %s" % params["client"])
        page = [entry for entry in (resp.data if isinstance(resp.data, list) else []) if isinstance(entry, dict)]
        pages += 1
        sites.extend(_listed(entry) for entry in page)
        # Only an empty page ends the list: a short page is no proof of the end (docs/api-choices.md).
        if not page or page[-1].get("atomic_site_id") in (None, after):
            break
        after = page[-1]["atomic_site_id"]
    return dict(changed=False, client=params["client"], sites=sites, count=len(sites), pages=pages)
