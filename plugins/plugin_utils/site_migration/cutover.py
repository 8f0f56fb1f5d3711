# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The cutover (step "cutover", after a successful run): the site's primary domain switched to its production
domain, the old one kept as an alias when asked, the service's job waited for, and each domain's certificate
reported (issued, or pending with the DNS records to set); in a rollback, the same step switches the domain back.
Which sites take it, the site_domain arguments, what its result does to each site, the site's diff entry and what
the play recap says of it.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

Never in check mode (site_domain previews it: what would switch, the DNS records to set); a site whose production
domain is primary already writes nothing (site_domain reads first).
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import MIN_POLL_INTERVAL
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import DONE, role_message

DEFAULT_TIMEOUT = 1800
# The cutover states a site's report shows (``cutover.state``).
SWITCHED = "switched"            # the primary domain changed in this run
ALREADY = "already"              # it was the production domain already: nothing written
WOULD_SWITCH = "would_switch"    # check mode: the preview
FAILED = "failed"
NOT_CONFIRMED = "not_confirmed"  # a production domain without site_migration_confirm_cutover
NOT_REACHED = "not_reached"      # the site stopped before its cutover


def switch_target(entry):
    """(domain, keep_old_domain) the step switches the site to: its production domain, or in a rollback the domain its
    state file recorded it had before the cutover (the production domain released)."""
    if entry.get("workflow") == "rollback":
        cutover = (entry.get("recorded") or {}).get("cutover") or {}
        return cutover.get("previous_domain"), False
    return entry.get("production_domain"), bool(entry.get("keep_old_domain_as_alias"))


def cutover_arguments(sites):
    """The site_domain arguments (list form) for the sites of the step, one wait for every switch."""
    items = []
    for s in sites:
        domain, keep = switch_target(s)
        items.append({"site": s["target"], "domain": domain, "keep_old_domain": keep})
    return {"client": sites[0]["client"], "sites": items,
            "wait_timeout": max(s.get("cutover_timeout") or DEFAULT_TIMEOUT for s in sites),
            "poll_interval": min(s.get("poll_interval") or MIN_POLL_INTERVAL for s in sites)}


def ssl_summary(domains):
    """Each domain of the site with its role and certificate state, the primary first."""
    return [{"domain": d.get("domain"), "role": d.get("role"), "ssl": d.get("ssl")}
            for d in domains or [] if isinstance(d, dict)]


def outcome_of_cutover(s, r, check_mode=False):
    """The entry keys a site gets from its site_domain result (``cutover``: state, domains, certificates, DNS records);
    a failed cutover stops the site (its migration stays a success: the report says both)."""
    domain, keep = switch_target(s)
    seen = {"domain": domain, "previous_domain": r.get("previous_domain") or s.get("primary"),
            "old_domain_kept": keep if r.get("previous_domain") else None, "job_id": r.get("job_id"),
            "domains": ssl_summary(r.get("domains")), "dns_records": list(r.get("dns_records") or []),
            "actions": list(r.get("actions") or [])}
    rollback = s.get("workflow") == "rollback"
    if r.get("failed"):
        seen["state"] = FAILED
        what = "switching the primary domain back to %s" % domain if rollback else "the cutover to %s" % domain
        return {"stage": DONE, "result": "rollback_failed" if rollback else "cutover_failed", "cutover": seen,
                "message": "site %s: %s failed: %s" % (s["site"], what, role_message(r.get("msg"), "cutover"))}
    switched = r.get("domain_switch") == "switched"
    seen["state"] = (WOULD_SWITCH if check_mode else SWITCHED) if switched else ALREADY
    outcome = {"stage": DONE, "cutover": seen}
    if rollback and not check_mode:
        outcome["result"] = "rolled_back"
    return outcome


def pending_ssl(cutover):
    """The domains of a cutover whose certificate is not issued yet."""
    return [d for d in cutover.get("domains") or [] if d.get("ssl") != "issued"]


def recap_words(entry, quiet=True):
    """What the site's line of the play recap says of its cutover (None: nothing to say). ``quiet``: a site that was
    live already with every certificate issued, or whose cutover was not asked for, says nothing (a re-run that changed
    nothing is quiet); the report's summary says it all the same (``quiet=False``)."""
    cutover = entry.get("cutover") or {}
    state = cutover.get("state")
    if state is None:
        return None
    if state in (NOT_REACHED, NOT_CONFIRMED):
        if quiet:
            return None
        return ("not cut over: set site_migration_confirm_cutover: true to switch to %s" if state == NOT_CONFIRMED
                else "not cut over to %s: the site stopped before its cutover") % cutover.get("domain")
    words = {SWITCHED: "cut over to %s" % cutover.get("domain"),
             WOULD_SWITCH: "check mode: would cut over to %s" % cutover.get("domain"),
             ALREADY: "live on %s" % cutover.get("domain"),
             FAILED: "the cutover to %s failed" % cutover.get("domain")}[state]
    if entry.get("workflow") == "rollback" and state in (SWITCHED, WOULD_SWITCH, FAILED):
        words = {SWITCHED: "switched back to %s", WOULD_SWITCH: "check mode: would switch back to %s",
                 FAILED: "the switch back to %s failed"}[state] % cutover.get("domain")
    if state in (SWITCHED, WOULD_SWITCH) and cutover.get("old_domain_kept"):
        words += " (%s kept as an alias)" % cutover.get("previous_domain")
    pending = pending_ssl(cutover)
    if not pending:
        if state == FAILED or not cutover.get("domains"):
            return words
        return None if state == ALREADY and quiet else words + "; SSL issued"
    records = ", ".join("%s %s %s" % (r.get("type"), r.get("name"), r.get("value"))
                        for r in cutover.get("dns_records") or [])
    states = {"pending": "pending", "failed": "not issued yet: its last attempt failed, the service retries",
              "unknown": "unknown to the service"}
    said = "; ".join("SSL of %s %s" % (d["domain"], states.get(str(d["ssl"]), d["ssl"])) for d in pending)
    return "%s; %s%s" % (words, said, ("; DNS records to set: %s" % records) if records else "")


def planned_diff(entry):
    """The domain change of the site's one diff (the setup's, setup_phase.py ``site_diffs``): ``(before, after)`` of its
    primary domain, when the run cuts it over after a successful run (or would, in check mode), or switches it back in
    a rollback. None when nothing changes."""
    domain, keep = switch_target(entry)
    primary = entry.get("primary")
    if not domain or not primary or domain == primary:
        return None
    after = {"primary_domain": domain}
    if keep:
        after["kept_as_alias"] = primary
    return {"primary_domain": primary}, after
