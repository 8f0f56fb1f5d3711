# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A site's going-live inputs checked and resolved (its production domain, the cutover's confirmation, the backup
before a refresh, the consent to overwrite a live site, the workflow), and how the role knows that a site is live.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

**Live** (docs/go-live.md, "When a site is live"): the client's listing shows the site's primary domain equal to its
production domain (``site_migration_production_domain``), or to the domain its state file recorded at its cutover.
The service's word comes first, so a lost state file does not hide a live site whose production domain is set, and
a site whose domain was switched back (a rollback, the panel) is no longer live. A destination created by this run
is never live. The role refuses to migrate into a live site unless ``site_migration_overwrite_live`` names that
site's live domain (a consent that a group's value cannot give every site by accident), and then backs it up first.
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import (
    DONE,
    MIGRATING,
    PREFIX,
    converted,
    role_value,
)

# The variables that need the client's name: the service's domain and backup paths name it (with the site ID), and
# the live check reads the client's listing.
NEEDS_CLIENT = ("production_domain", "backup_before_refresh", "overwrite_live")
# Values of site_migration_overwrite_live that say yes without naming the site: refused (the consent names it).
_YES = frozenset(["true", "yes", "on", "1", "y"])


def checked_domain(value, variable):
    """(name, problem): a domain as the service takes it (lower case, no trailing dot, punycode), or the problem in
    words that name the variable (the site_domain module's own rules, module_utils/service/domain.py)."""
    # Imported here: the module_utils it pulls in are needed only when a site names a domain (the role's filters
    # import this file on every template).
    from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
    from ansible_collections.wpcloud.hosting.plugins.module_utils.service.domain import domain_name
    try:
        return domain_name(value, variable), None
    except ModuleFailure as failure:
        return None, failure.msg


def going_live_inputs(params, empty, check_mode):
    """(problems, resolved) of one site's going-live variables; each problem names the variable and the fix."""
    problems, resolved = [], {}
    workflow = role_value(params, "workflow") or "migrate"
    resolved["workflow"] = workflow
    domain = None
    if role_value(params, "production_domain") is not None and "production_domain" not in empty:
        domain, problem = checked_domain(role_value(params, "production_domain"), PREFIX + "production_domain")
        if problem:
            problems.append(problem)
    resolved["production_domain"] = domain
    consent = role_value(params, "overwrite_live")
    resolved["overwrite_live"] = None
    if consent is not None and "overwrite_live" not in empty:
        if str(consent).strip().lower() in _YES:
            problems.append("site_migration_overwrite_live must name the live domain the run may overwrite (for "
                            "example shop.example.com), not %s: the consent is given for one site, so that a group's "
                            "value cannot give it to every site" % consent)
        else:
            resolved["overwrite_live"], problem = checked_domain(consent, PREFIX + "overwrite_live")
            if problem:
                problems.append(problem)
    for name in ("keep_old_domain_as_alias", "confirm_cutover", "backup_before_refresh", "confirm_rollback"):
        resolved[name] = converted(bool, role_value(params, name)) is True
    for name in ("backup_timeout", "cutover_timeout"):
        value = converted(int, role_value(params, name))
        resolved[name] = value
        if value is not None and value <= 0:
            problems.append("%s%s must be a positive number of seconds (it is %s)" % (PREFIX, name, value))
    if role_value(params, "client") is None and "client" not in empty:
        wanting = [PREFIX + name for name in NEEDS_CLIENT if resolved.get(name) or role_value(params, name)]
        if workflow != "migrate":
            wanting.append("site_migration_workflow=%s" % workflow)
        if wanting:
            problems.append("%s needs site_migration_client, the client account that owns the site (the service's "
                            "domain and backup paths name it): set it for the site or its group" % wanting[0])
    if workflow in ("go_live", "cutover") and domain is None and "production_domain" not in empty:
        problems.append("site_migration_workflow=%s cuts every site over: set site_migration_production_domain, the "
                        "domain the site goes live on, or leave this site out of the play" % workflow)
    if workflow in ("go_live", "cutover") and domain is not None and not resolved["confirm_cutover"] \
            and not converted(bool, check_mode):
        problems.append("site_migration_confirm_cutover must be true with site_migration_workflow=%s: the run switches "
                        "the site's primary domain to %s. Set it for this run (-e site_migration_confirm_cutover=true), "
                        "or preview the run with --check first" % (workflow, domain))
    if workflow == "rollback" and not resolved["confirm_rollback"] and not converted(bool, check_mode):
        problems.append("site_migration_confirm_rollback must be true with site_migration_workflow=rollback: the "
                        "rollback replaces the site's files and database with the backup taken before its last refresh "
                        "and switches its primary domain back. Set it for this run (-e "
                        "site_migration_confirm_rollback=true), or preview it with --check first")
    return problems, resolved


def cutover_due(entry, check_mode):
    """Whether the site is cut over after a successful run: it names its production domain and the cutover is
    confirmed; in check mode, previewed when a real run would do it (go_live and cutover confirm it by running)."""
    if entry.get("workflow") == "rollback" or not entry.get("production_domain"):
        return False
    if entry.get("confirm_cutover"):
        return True
    return bool(converted(bool, check_mode)) and entry.get("workflow") in ("go_live", "cutover")


def may_go_live(entry):
    """Whether the site may take a going-live step in this run (a backup before its run, a restore, a cutover or
    its preview). Generous on purpose: the role leaves those steps out only when no site of the fleet may take
    one (each is a task the controller pays for, docs/performance.md), so a site counted in costs time, never a step."""
    return entry.get("workflow") not in (None, "migrate") or any(
        entry.get(name) for name in ("backup_before_refresh", "live_consented", "overwrite_live", "production_domain",
                                     "confirm_cutover", "backup_first", "backup", "cutover")) \
        or entry.get("stage") in ("backup", "restore", "cutover")


def needs_listing(entry):
    """Whether the site takes the step "find" (the client's listing) for its going-live state: where it is now (its
    site ID and primary domain), and whether it is live. Every site of a cutover or a rollback, and the sites of a
    migration that name a production domain or whose state file recorded a cutover."""
    if entry.get("client") is None:
        return False
    return entry.get("workflow") in ("cutover", "rollback") or bool(entry.get("production_domain")) \
        or bool(recorded_cutover_domain(entry))


def recorded_cutover_domain(entry):
    cutover = (entry.get("recorded") or {}).get("cutover")
    return str(cutover.get("domain") or "").lower() or None if isinstance(cutover, dict) else None


def listing_index(listed):
    """The client's listing (site_info ``sites``) by site ID and by domain."""
    by_id, by_domain = {}, {}
    for entry in listed or []:
        if not isinstance(entry, dict):
            continue
        if entry.get("site_id") is not None:
            by_id[str(entry["site_id"])] = entry
        if entry.get("domain"):
            by_domain[str(entry["domain"]).strip().lower()] = entry
    return by_id, by_domain


def find_in_listing(entry, by_id, by_domain):
    """(listed, how) of a site in the client's listing: by its name (ID or domain), else by its production domain or
    the one its state file recorded at a cutover (a site named by a domain that it left at its cutover); (None, None)
    when neither is listed."""
    name = entry["site"].strip().lower()
    found = by_id.get(name) if name.isdigit() else by_domain.get(name)
    if found is not None:
        return found, "name"
    if name.isdigit():
        return None, None
    for domain in (entry.get("production_domain"), recorded_cutover_domain(entry)):
        if domain and domain in by_domain:
            return by_domain[domain], "production"
    return None, None


def identity_problem(entry, listed):
    """A site found under its production domain must hold the migration its state file recorded (when both are
    known): another site of the account with that domain is not this one."""
    recorded = (entry.get("recorded") or {}).get("migration_id")
    holds = listed.get("migration_id")
    if recorded is None or holds is None or str(recorded) == str(holds):
        return None
    return ("site %s: site_migration_site %s is not in the account of site_migration_client %s, and its production "
            "domain %s is the primary domain of site %s, which holds migration %s, not migration %s of the state file "
            "%s: name the destination by its site ID (site_migration_site)" % (
                entry["site"], entry["site"], entry["client"], listed.get("domain"), listed.get("site_id"), holds,
                recorded, entry.get("state_file")))


def live_domain(entry, primary):
    """The live domain of a site whose primary domain is ``primary``, or None when it is not live."""
    primary = str(primary or "").strip().lower()
    if primary and primary in (entry.get("production_domain"), recorded_cutover_domain(entry)):
        return primary
    return None


def place(entry, listed, how):
    """The entry keys of a site found in the client's listing: where it is (``site_id``, ``primary``), what names it
    in the calls to come (``target``: its ID when the name it is given has left it), and whether it is ``live``."""
    site_id = listed.get("site_id")
    place = {"site_id": site_id, "primary": str(listed.get("domain") or "").lower() or None,
             "target": str(site_id) if how == "production" and site_id is not None else entry["site"]}
    place["live"] = live_domain(entry, place["primary"])
    place["live_consented"] = bool(place["live"]) and entry.get("overwrite_live") == place["live"]
    return place


def refusal(entry):
    """The outcome of a live site that a migration would overwrite without the consent for it."""
    why = ("its production domain (site_migration_production_domain)" if entry["live"] == entry.get("production_domain")
           else "the domain of the cutover recorded in the state file %s" % entry.get("state_file"))
    given = entry.get("overwrite_live")
    said = (" (site_migration_overwrite_live names %s, not the live domain)" % given) if given else ""
    return {"stage": DONE, "result": "refused_live",
            "message": "site %s is live: its primary domain is %s, %s. The role does not migrate into a live site, "
                       "where a run would overwrite it with an older source%s. To refresh it from the source anyway "
                       "(it is backed up first), set site_migration_overwrite_live: %s for this site (its host_vars, "
                       "or -e with --limit for one run); to cut it over again or read it, run the cutover workflow "
                       "(wpcloud.hosting.cutover)" % (entry["site"], entry["live"], why, said, entry["live"])}


def after_listing(entry, listed, how):
    """What the listing does to a site that takes it for its going-live state (see the module doc): where it is and
    whether it is live; a live site that this run would migrate without the consent is refused here, before any
    write; a site the listing does not show goes on as before (a later step says it is not found)."""
    if listed is None:
        return {}
    problem = identity_problem(entry, listed) if how == "production" else None
    if problem:
        return {"stage": DONE, "result": "invalid_input", "message": problem}
    found = place(entry, listed, how)
    merged = dict(entry, **found)
    if found["live"] and merged.get("workflow") in MIGRATING and not found["live_consented"] \
            and merged.get("after_find") != "info":
        # (refresh false: the info step leaves a site whose migration succeeded alone, and refuses the others)
        found.update(refusal(merged))
    return found
