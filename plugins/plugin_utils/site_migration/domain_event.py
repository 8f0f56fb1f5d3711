# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a ``domain_name_changed`` webhook event says of the role's sites (filter ``site_migration_domain_event``, for
the playbook wpcloud.hosting.on_domain_name_changed that the sample rulebook runs): which change it is, which
inventory site it concerns, whether it confirms that site's cutover, and whether WordPress's own settings follow.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

The event's data (spec 6.2; docs/api-choices.md "Going live"): ``passed_old`` and ``passed_new`` (the primary domain
before and after; for an alias change one of them is empty), ``then_api_current`` (the primary domain the service
names now) and ``then_db_siteurl`` (the host WordPress's siteurl names: the service does not rewrite the database, so
after a switch it may still be the old host).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import PREFIX


def _host(value):
    """A host name from the event's text: lower case, without a scheme, path or trailing dot ('' when empty)."""
    text = str(value or "").strip().lower()
    if "://" in text:
        text = urlsplit(text).hostname or ""
    return text.split("/", 1)[0].rstrip(".")


def _var(hostvars, host, name):
    try:
        value = hostvars[host].get(PREFIX + name)
    except Exception:  # pylint: disable=broad-exception-caught
        value = None        # no such host, or a variable that does not template: not this site's
    return value


def domain_event(payload, hosts=None, hostvars=None):
    """{kind, site_id, old, new, current, siteurl, host, confirmed, siteurl_follows, message} of a domain_name_changed
    payload (the event's ``payload``), against the role's inventory hosts (see the module doc)."""
    if not isinstance(payload, Mapping):
        raise AnsibleFilterError("site_migration_domain_event: give the event's payload (ansible_eda.event.payload)")
    data = payload.get("data") if isinstance(payload.get("data"), Mapping) else {}
    old, new = _host(data.get("passed_old")), _host(data.get("passed_new"))
    current, siteurl = _host(data.get("then_api_current")), _host(data.get("then_db_siteurl"))
    kind = "primary" if old and new else ("alias_added" if new else ("alias_removed" if old else "unknown"))
    site_id = payload.get("atomic_site_id")
    found = None
    for host in hosts or []:
        production = _host(_var(hostvars or {}, host, "production_domain"))
        site = _host(_var(hostvars or {}, host, "site") or host)
        if (kind == "primary" and new and production == new) or site in (str(site_id), old, new):
            found = str(host)
            break
    confirmed = kind == "primary" and current == new
    follows = bool(siteurl) and siteurl == current
    who = "site %s%s" % (site_id, " (inventory host %s)" % found if found else "")
    if kind == "primary":
        said = "%s: the primary domain is %s (was %s)%s" % (who, new, old, "" if confirmed else (
            "; the service names %s as current" % (current or "nothing")))
        if found and confirmed:
            said += ": its cutover is confirmed by the service"
    elif kind == "alias_added":
        said = "%s: alias %s added; the primary domain is %s" % (who, new, current or "unknown")
    elif kind == "alias_removed":
        said = "%s: alias %s removed; the primary domain is %s" % (who, old, current or "unknown")
    else:
        said = "%s: a domain change without the domains (data %s)" % (who, dict(data))
    if siteurl and not follows:
        said += ". WordPress's siteurl still names %s, not %s: update the site's siteurl and home options" % (
            siteurl, current or new)
    return {"kind": kind, "site_id": site_id, "old": old, "new": new, "current": current, "siteurl": siteurl,
            "host": found, "confirmed": confirmed, "siteurl_follows": follows, "message": said}
