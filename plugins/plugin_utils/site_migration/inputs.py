# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Each site's inputs checked and resolved: the line-up of the fleet at the start of the role (filter
``site_migration_lineup``), and the destinations left to their site_provisioned webhook (filter
``site_migration_waiting``).

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import MIN_POLL_INTERVAL
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    CHECK_MODE_CREATED_SITES_FACT,
    SITE_VALUE_RULES,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import (
    ALL_CREDENTIALS,
    CREDENTIALS,
    DONE,
    EMPTY_HINTS,
    NEW_SITE,
    PREFIX,
    converted,
    role_value,
)


def source_host_vars(hostvars, name, cache):
    """(known, {host, port, user}) of a source inventory host, read once per source for the fleet."""
    if name not in cache:
        known = hostvars is not None and name in hostvars
        found = {}
        if known:
            host_vars = hostvars[name]
            for key in ("ansible_host", "ansible_port", "ansible_user"):
                try:
                    value = host_vars[key] if key in host_vars else None
                except Exception:  # pylint: disable=broad-exception-caught
                    value = None   # an undefined or failing template: treated as unset
                found[key] = None if value is None or str(value).strip() == "" else value
        cache[name] = (known, found)
    return cache[name]


def site_problems(params, given, hostvars, sources):
    """(problems, resolved) of one site: each problem names the role variable and the fix."""
    empty = [name for name in EMPTY_HINTS if isinstance(given.get(PREFIX + name), str)
             and not given[PREFIX + name].strip()]
    problems = ["%s%s is empty: %s" % (PREFIX, name, EMPTY_HINTS[name]) for name in empty]

    auth = role_value(params, "auth")
    install_key = converted(bool, role_value(params, "install_key"))
    confirm = converted(bool, role_value(params, "confirm_overwrite"))
    if confirm is False:
        problems.append("site_migration_confirm_overwrite must be true: every run replaces the destination's files "
                        "and database (it is false)")

    source = None if "source_host" in empty else role_value(params, "source_host")
    known, found = (False, {}) if source is None else source_host_vars(hostvars, str(source), sources)
    # A source host that is not in this run's inventory (in an AWX sliced job, one in another slice: a
    # slice holds the variables of its own hosts only) is reached at the site's own remote host and user.
    if source is not None and not known and (role_value(params, "remote_host") is None
                                             or role_value(params, "remote_user") is None):
        problems.append("site_migration_source_host (%s) is not an inventory host of this run (group "
                        "wpcloud_sources; in an AWX sliced job, a source host in another slice is not): set "
                        "site_migration_remote_host and site_migration_remote_user on the site or its group, so "
                        "that the role reaches the source without its inventory entry, or add the host" % source)
    installs = auth == "generated" and install_key is not False
    if source is None and installs and "source_host" not in empty:
        problems.append("site_migration_source_host is needed to install the generated key "
                        "(site_migration_auth=generated with site_migration_install_key true): name the source's "
                        "inventory host, or set site_migration_install_key: false and add the key yourself")

    remote_host = role_value(params, "remote_host")
    if remote_host is None and known:
        remote_host = found["ansible_host"] or source
    if remote_host is None and "remote_host" not in empty:
        problems.append("the remote host must resolve: set site_migration_remote_host (or site_migration_source_host "
                        "with its ansible_host)")
    remote_user = role_value(params, "remote_user")
    if remote_user is None and known:
        remote_user = found["ansible_user"]
    if remote_user is None and "remote_user" not in empty:
        problems.append("the remote user must resolve: set ansible_user on the source host or "
                        "site_migration_remote_user")
    remote_port = role_value(params, "remote_port")
    if remote_port is None:
        # Unset and no ansible_port: not sent, so an update keeps the stored port and a create
        # takes the service's default (22).
        remote_port = found.get("ansible_port")
        if remote_port is not None and converted(int, remote_port) is None:
            problems.append("ansible_port of the source host %s is not a number (%s): fix it, or set "
                            "site_migration_remote_port" % (source, remote_port))
    become = converted(bool, role_value(params, "install_become"))
    if become is None:
        # A source not in the inventory: Ansible's login there (the Machine credential) is not known here.
        become = remote_user != found["ansible_user"] if known else source is not None

    if auth == "password" and role_value(params, "remote_pass") is None:
        problems.append("site_migration_auth=password needs site_migration_remote_pass")
    if auth == "key" and role_value(params, "ssh_id") is None:
        problems.append("site_migration_auth=key needs site_migration_ssh_id (plus site_migration_ssh_id_pass for "
                        "a protected key)")
    if auth in CREDENTIALS:
        for variable in sorted(set(ALL_CREDENTIALS) - set(CREDENTIALS[auth])):
            if given.get(variable) is not None:
                owner = next(a for a, variables in CREDENTIALS.items() if variable in variables)
                problems.append("%s is only for site_migration_auth=%s (it is %s): remove it" % (variable, owner, auth))
    poll = converted(float, role_value(params, "poll_interval"))
    if poll is not None and poll < MIN_POLL_INTERVAL:
        problems.append("site_migration_poll_interval must be at least %g (second; it is %s)" % (MIN_POLL_INTERVAL, poll))
    poll_max = converted(float, role_value(params, "poll_max_interval"))
    if poll_max is not None and poll_max < max(poll or MIN_POLL_INTERVAL, MIN_POLL_INTERVAL):
        problems.append("site_migration_poll_max_interval must be at least site_migration_poll_interval (it is %s, "
                        "the interval %s): set them equal for a fixed rhythm" % (poll_max, poll or MIN_POLL_INTERVAL))
    for name in ("create_timeout", "preflight_timeout", "run_timeout"):
        value = converted(int, role_value(params, name))
        if value is not None and value <= 0:
            problems.append("site_migration_%s must be a positive number of seconds (it is %s)" % (name, value))
    problems += new_site_problems(params, empty)
    resolved = {"source_host": source or "", "source_known": known,
                "remote_host": remote_host, "remote_port": None if remote_port is None else converted(int, remote_port),
                "remote_user": remote_user, "auth": auth, "install_key": bool(installs),
                "install_become": become, "client": role_value(params, "client"),
                "create_wait": converted(bool, role_value(params, "create_wait")) is not False}
    return problems, resolved


def new_site_problems(params, empty):
    """What keeps the role from creating a missing destination site: site_migration_client asks for it,
    and then the new site's administrator is needed; the new-site values are nothing without it."""
    problems = []
    given = dict((name, role_value(params, name)) for name in NEW_SITE if role_value(params, name) is not None)
    if "client" in empty:
        return problems
    if role_value(params, "client") is not None:
        for name in ("admin_user", "admin_email"):
            if name not in given and name not in empty:
                problems.append("site_migration_client is set, so a destination site that does not exist is created: "
                                "set %s%s too (or unset site_migration_client to migrate into existing sites only)"
                                % (PREFIX, name))
    else:
        problems += ["%s%s describes a destination site the role creates: set site_migration_client too, or "
                     "remove it" % (PREFIX, name) for name in NEW_SITE if name in given]
    for name, (pattern, fix) in SITE_VALUE_RULES.items():
        if name in given and name not in empty and not pattern.match(str(given[name]).strip()):
            problems.append("%s%s %s" % (PREFIX, name, fix))
    return problems


def secret_texts(value):
    """Every text a value of a no_log variable could show up as (a wrong type is quoted whole)."""
    if value is None or value == "":
        return set()
    found = {str(value)}
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found |= secret_texts(item)
    return found


def created_in_check_mode(hosts, hostvars):
    """The domains that earlier tasks of a check-mode run said they would create (wpcloud.hosting.site's
    fact): set on the host that ran the task (a site, every site after run_once, or localhost)."""
    found = set()
    for host in list(hosts) + ["localhost"]:
        try:
            facts = hostvars[host]["ansible_facts"] if hostvars is not None and host in hostvars else {}
            domains = facts.get(CHECK_MODE_CREATED_SITES_FACT) if isinstance(facts, Mapping) else None
        except Exception:  # pylint: disable=broad-exception-caught
            domains = None        # no such host, or no facts: nothing it said
        found.update(str(d).strip().lower() for d in domains or [])
    return found


def lineup(inputs, hosts, spec, hostvars=None, check_mode=False, fleet_problems=()):
    """The fleet at the start: one entry per site of the batch, in play order (see the module doc).
    ``inputs``: each site's role variables as wpcloud.hosting.fleet_vars read them (null: unset);
    ``fleet_problems``: what stops every site (the play's connection), said in each site's message."""
    inputs, hosts = list(inputs or []), list(hosts or [])
    for index, given in enumerate(inputs):
        if given is not None and not isinstance(given, Mapping):
            raise AnsibleFilterError("site_migration_lineup: item %d is a %s, not a dict of variables"
                                     % (index, type(given).__name__))
    # Read only in check mode: a real run finds the sites that the earlier tasks really created.
    about_to_exist = created_in_check_mode(hosts, hostvars) if converted(bool, check_mode) else set()
    if len(inputs) != len(hosts):
        raise AnsibleFilterError("site_migration_lineup: %d inputs for %d hosts" % (len(inputs), len(hosts)))
    options = spec.get("options", spec) if isinstance(spec, Mapping) else None
    if not options:
        raise AnsibleFilterError("site_migration_lineup: the role's argument spec has no options")
    validator = ArgumentSpecValidator(dict((k, dict(v)) for k, v in options.items()))
    fleet, sources, owners = [], {}, {}
    for index, (host, given) in enumerate(zip(hosts, inputs)):
        given = dict((str(k), v) for k, v in (given or {}).items() if v is not None)
        secrets = set()
        for name, option in options.items():
            if option.get("no_log"):
                secrets.update(secret_texts(given.get(name)))
        checked = validator.validate(given)
        params = checked.validated_parameters
        # A message of the spec check may quote a value; never a secret one.
        problems = [remove_values(msg, secrets) for msg in checked.error_messages]
        more, resolved = site_problems(params, given, hostvars, sources)
        problems += more + list(fleet_problems)
        site = str(params.get("site_migration_site") if params.get("site_migration_site") is not None else host)
        key = site.strip().lower()
        if key:
            owners.setdefault(key, []).append(index)
        refresh = converted(bool, params.get("site_migration_refresh"))
        # A site named by domain is looked for first when the role may create it (site_migration_client).
        after_find = "info" if refresh is False else "check"
        creatable = resolved["client"] is not None and not site.strip().isdigit()
        fleet.append(dict(
            resolved,
            host=str(host), index=index, site=site,
            source_user="%s@%s" % (resolved["remote_user"], resolved["source_host"]),
            preflight_timeout=converted(int, params.get("site_migration_preflight_timeout")),
            run_timeout=converted(int, params.get("site_migration_run_timeout")),
            create_timeout=converted(int, params.get("site_migration_create_timeout")),
            poll_interval=converted(float, params.get("site_migration_poll_interval")),
            poll_max_interval=converted(float, params.get("site_migration_poll_max_interval")),
            after_find=after_find,
            # Check mode: an earlier task said it would create this site, so its 404 means "not yet".
            about_to_exist=key in about_to_exist,
            stage=DONE if problems else ("find" if creatable else after_find),
            result="invalid_input" if problems else None,
            problems=problems,
        ))
    # Two hosts for one destination would race each other into two migrations.
    for indexes in owners.values():
        if len(indexes) > 1:
            for index in indexes:
                others = ", ".join(fleet[i]["host"] for i in indexes if i != index)
                fleet[index]["problems"].append("site_migration_site %s is also the destination of host %s: give each "
                                                "destination site one inventory host" % (fleet[index]["site"], others))
                fleet[index].update(stage=DONE, result="invalid_input")
    # The play's API key belongs to one client account: every site the role may create is created there.
    clients = sorted(set(str(entry["client"]) for entry in fleet if entry["client"] is not None))
    if len(clients) > 1:
        for entry in fleet:
            if entry["client"] is not None:
                entry["problems"].append("site_migration_client differs between the sites of this play (%s): the "
                                         "play's API key belongs to one client account; give every site the same "
                                         "one, or run one play per client" % ", ".join(clients))
                entry.update(stage=DONE, result="invalid_input")
    for entry in fleet:
        problems = entry.pop("problems")
        entry["message"] = ("site %s: invalid inputs: %s" % (entry["site"] or entry["host"], "; ".join(problems))
                            if problems else "")
    return fleet


def waiting(hosts, hostvars, site=None):
    """The inventory hosts whose destination waits for its site_provisioned webhook (see the doc):
    each ``{host, site}``; given the provisioned site (``site_id``, ``domain``), only the hosts that name it."""
    found = []
    for host in hosts or []:
        host_vars = hostvars[host] if hostvars is not None and host in hostvars else {}
        wait = host_vars.get(PREFIX + "create_wait") if hasattr(host_vars, "get") else None
        if wait is None or converted(bool, wait) is not False:
            continue
        name = host_vars.get(PREFIX + "site")
        found.append({"host": str(host), "site": str(host if name is None else name).strip()})
    if site is None:
        return found
    if not isinstance(site, Mapping):
        raise AnsibleFilterError("site_migration_waiting: site must be a site_info result (site_id, domain)")
    names = set(str(site.get(k)).strip().lower() for k in ("site_id", "domain") if site.get(k) is not None)
    return [entry for entry in found if entry["site"].lower() in names]
