# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The arguments of one step of the role for the sites that take it (filter ``site_migration_step``),
and what the play recap shows of every site at the end.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import MIN_POLL_INTERVAL
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    ROLE_FIELDS,
    ROLE_VARIABLES,
    SECRET_PARAMS,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.backup_first import backup_arguments
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.cutover import (
    cutover_arguments,
    recap_words,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.outcomes import advance
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.rollback import restore_arguments
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.state_records import (
    backup_records,
    final_records,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import (
    CHANGED_RESULTS,
    ALL_CREDENTIALS,
    CREDENTIALS,
    FINE_RESULTS,
    NEW_SITE,
    PREFIX,
    STEPS,
)

# The module arguments of the going-live steps, for the sites at their stage.
GOING_LIVE_ARGUMENTS = {"backup": backup_arguments, "restore": restore_arguments, "cutover": cutover_arguments}
# The fields' variables that the line-up resolves (from the source host when unset): a site of the fleet holds
# each under the variable's name without the prefix.
LINED_UP = ("remote_host", "remote_port", "remote_user")


def sites_with_inputs(sites, inputs, steps):
    """Each site with its inputs (the steps whose arguments carry credentials need them)."""
    if inputs is None:
        raise AnsibleFilterError("site_migration_step: the %s need the sites' inputs" % steps)
    inputs = list(inputs)
    return [(s, inputs[s["index"]]) for s in sites]


def migration_arguments(sites, inputs):
    """The migration logic's ``migrations`` for the sites, each migration field under the service's name
    (holds credentials: no_log tasks only; run by the migration module's FIELD_SPEC and FIELD_LOGIC). A role
    variable's value goes straight under the field ROLE_FIELDS names for it; the host, user and port are the
    line-up's (resolved from the source host when unset; the fleet holds them under the variable's name
    without the prefix). Only the credentials of the site's site_migration_auth are taken."""
    items = []
    for s, given in sites_with_inputs(sites, inputs, "check and create steps"):
        # (target: the site's ID when the name it is given has left it at its cutover, else that name)
        item = {"site": s.get("target") or s["site"], "update_secret": given.get(ROLE_VARIABLES["update_secret"]),
                "state_file": "%s/%s.json" % (given.get(PREFIX + "state_dir"), s["site"])}
        for variable, field in ROLE_FIELDS.items():
            if variable[len(PREFIX):] in LINED_UP:
                item[field] = s[variable[len(PREFIX):]]
            elif variable not in ALL_CREDENTIALS or variable in CREDENTIALS.get(s["auth"], ()):
                item[field] = given.get(variable)
        items.append(dict((k, v) for k, v in item.items() if v is not None))
    return items


def new_site_arguments(sites, inputs):
    """The site module's arguments for the destinations to create (admin_pass: no_log tasks only)."""
    items = []
    for s, given in sites_with_inputs(sites, inputs, "new step"):
        item = {"domain": s["site"].strip()}
        item.update((name, given[PREFIX + name]) for name in NEW_SITE if given.get(PREFIX + name) is not None)
        items.append(item)
    return {"client": sites[0]["client"], "sites": items,
            # One wait for all: it waits when any site migrates in this run, as long as the longest timeout.
            "wait": any(s["create_wait"] for s in sites),
            "wait_timeout": max(s["create_timeout"] or 1 for s in sites),
            "poll_interval": min(s["poll_interval"] or MIN_POLL_INTERVAL for s in sites),
            "poll_max_interval": shortest_poll_max_interval(sites)}


def step_arguments(fleet, name, results=None, inputs=None):
    """What step ``name`` does: its module arguments for the sites at that stage, and ``fleet``, the fleet
    that took in the results of the steps before (see the doc). Given the ``fleet`` of the step before,
    only that step's result is new to it: no result is taken in twice."""
    if name not in STEPS + ("stop", "record"):
        raise AnsibleFilterError("site_migration_step: unknown step %r (one of %s, stop, record)"
                                 % (name, ", ".join(STEPS)))
    fleet = advance(fleet, results, upto=None if name in ("stop", "record") else name)
    if name == "stop":
        return recap(fleet)
    if name == "record":
        # What the state files keep of this run's going-live steps (none in check mode).
        return {"records": final_records(fleet, any(s.get("check_mode") for s in fleet))}
    sites = [s for s in fleet if s.get("stage") == name]
    todo = {"count": len(sites), "fleet": fleet}
    if name == "run":
        # The backups just taken, recorded before the run overwrites the sites (the rollback point).
        todo["records"] = backup_records(fleet, any(s.get("check_mode") for s in fleet))
    if name in GOING_LIVE_ARGUMENTS:
        todo.update(GOING_LIVE_ARGUMENTS[name](sites) if sites else {"client": None, "sites": []})
        return todo
    if name == "find":
        todo["client"] = sites[0]["client"] if sites else None
    elif name == "new":
        todo.update(new_site_arguments(sites, inputs) if sites else {"client": None, "sites": []})
        todo["holds_secrets"] = any("admin_pass" in item for item in todo["sites"])
    elif name in ("info", "allow"):
        todo["sites"] = [s.get("target") or s["site"] for s in sites]
    elif name in ("check", "create"):
        todo["migrations"] = migration_arguments(sites, inputs) if sites else []
        todo["holds_secrets"] = any(field in item for item in todo["migrations"] for field in SECRET_PARAMS)
    elif name == "key":
        todo["sites"] = [dict((k, s[k]) for k in ("site", "source_host", "remote_user", "ssh_id_pub", "install_become"))
                         for s in sites]
        users = {}
        for entry in todo["sites"]:
            users.setdefault((entry["source_host"], entry["remote_user"]), entry)
        todo["users"] = list(users.values())
        # Source hosts that this run's inventory lacks (another slice's), added to it at the site's address.
        absent = {}
        for s in sites:
            if not s["source_known"]:
                absent.setdefault(s["source_host"], {"source_host": s["source_host"], "remote_host": s["remote_host"],
                                                     "remote_port": s["remote_port"]})
        todo["absent_sources"] = list(absent.values())
    else:
        todo["migration_ids"] = [s["migration_id"] for s in sites]
        # One wait for every site: it lasts as long as the longest timeout and polls as often as the
        # site that asks for the shortest interval.
        todo["wait_timeout"] = max([s["%s_timeout" % name] for s in sites] or [1])
        todo["poll_interval"] = min([s["poll_interval"] for s in sites] or [MIN_POLL_INTERVAL])
        todo["poll_max_interval"] = shortest_poll_max_interval(sites)
    return todo


def recap(fleet):
    """What the play recap shows of each site (step "stop"): the hosts to stop, with their message, the hosts whose
    run changed them (or would, in check mode: a cutover too), and what each site's line says of its cutover."""
    said = dict((s["host"], recap_words(s)) for s in fleet)
    outcome = {"stopped": dict((s["host"], s["message"]) for s in fleet if s.get("result") not in FINE_RESULTS),
               "changed": dict((s["host"], True) for s in fleet if s.get("result") in CHANGED_RESULTS
                               or (s.get("cutover") or {}).get("state") in ("switched", "would_switch"))}
    if any(said.values()):
        outcome["cutover"] = dict((host, words) for host, words in said.items() if words)
    return outcome


def shortest_poll_max_interval(sites):
    """The wait's longest gap between polls: the shortest of the sites' (None: the module's default)."""
    given = [s["poll_max_interval"] for s in sites if s.get("poll_max_interval") is not None]
    return min(given) if given else None
