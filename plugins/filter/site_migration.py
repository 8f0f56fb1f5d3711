# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The workflow decisions of the role wpcloud.hosting.site_migration, for every site of a play.

The role (roles/site_migration/tasks/main.yml) runs one task per step of spec 4.5 for the whole
fleet and registers its result; these filters decide, from the sites' inputs and the results so
far, which sites take the next step with which arguments, why a site stopped, and what the report
says. Each filter is documented in the .yml file of its name next to this one.

* ``site_migration_inputs``: each site's resolved values named by their role variables, unset ones left out.
* ``site_migration_lineup``: every site's inputs checked (the role's argument spec, empty values,
  the rules between variables) and resolved against its source host; one entry per site, no secret.
* ``site_migration_step``: the arguments of one step's module call for the sites that take it, with
  the fleet advanced through the registered results of the steps before it.
* ``site_migration_report``: the report of the run (one entry per host of the play).
* ``site_migration_report_name``: the name of a run's report file and artifact, unique to the run: the
  controller job (``awx_job_id``, one per slice of a sliced job) or the play's hosts, never a random number.
* ``site_migration_report_merge``: one fleet report from the reports of runs over parts of it (AWX
  job slices), refusing a host that two of them report.
* ``site_migration_waiting``: the destinations the role created and left to their ``site_provisioned``
  webhook (``site_migration_create_wait: false``), for the playbook that event runs.

A site's stage is the next step it takes (``STEPS``) or ``done``, with a ``result`` and a message that
names the site, the role variable (never the module option) and the fix.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    CHECK_MODE_CREATED_SITES_FACT,
    FAILED_STATES,
    MIGRATION_SUCCEEDED,
    MIN_POLL_INTERVAL,
    RUN_TERMINAL_STATES,
    RUNNING_STATES,
    SECRET_FIELDS,
    SECRET_PARAMS,
    SITE_VALUE_RULES,
    TICKET_TERMINAL,
)

# The steps of the workflow, in order; a site at stage S takes step S next. "find" and "new" are
# spec 4.5 rule 1's preferred path: a destination named by domain that the client does not have yet
# is created with allow_site_migration (so it skips "allow", the irreversible call).
STEPS = ("find", "new", "info", "check", "allow", "create", "key", "preflight", "run")
DONE = "done"
# Results of a site that is not stopped at the end of the play ("awaiting_provisioning": created, its
# migration left to the site_provisioned webhook, playbooks/on_site_provisioned.yml).
FINE_RESULTS = frozenset(["succeeded", "left_alone", "checked", "awaiting_provisioning"])
# The fine results that changed the site (or, "checked", would in a real run): the site's line of the play
# recap says "changed"; a site left alone is "ok".
CHANGED_RESULTS = frozenset(["succeeded", "checked", "awaiting_provisioning"])
# How a site came to be a destination (the report's "destination").
CREATED = "created"
EXISTING = "existing"

PREFIX = "site_migration_"
# The migration module's options and the role variables that give them. Every message a site gets
# names the role variable: module messages are translated with this table.
ROLE_VARIABLES = {
    "remote_host": "site_migration_remote_host",
    "remote_port": "site_migration_remote_port",
    "remote_user": "site_migration_remote_user",
    "remote_pass": "site_migration_remote_pass",
    "ssh_id": "site_migration_ssh_id",
    "ssh_id_pass": "site_migration_ssh_id_pass",
    "remote_docroot": "site_migration_docroot",
    "remote_domain": "site_migration_source_domain",
    "update_secret": "site_migration_update_secret",
    "poll_interval": "site_migration_poll_interval",
    "poll_max_interval": "site_migration_poll_max_interval",
    # A new destination site's values (the site module's options).
    "admin_user": "site_migration_admin_user",
    "admin_email": "site_migration_admin_email",
    "admin_pass": "site_migration_admin_pass",
    "php_version": "site_migration_php_version",
    # The connection options, which the role takes from these variables (tasks/main.yml).
    "api_url": "wpcloud_api_url",
    "api_key": "wpcloud_api_key",
    "ca_path": "wpcloud_ca_path",
    "validate_certs": "wpcloud_validate_certs",
}
# The wait of each step ends after the role's timeout variable of that step.
STEP_TIMEOUT = {"new": "site_migration_create_timeout", "preflight": "site_migration_preflight_timeout",
                "run": "site_migration_run_timeout"}
# The role variables that describe a site to create, by the site module's option.
NEW_SITE = ("admin_user", "admin_email", "admin_pass", "php_version")
# The steps that start a ticket and wait for it: what the messages call it, what to do after a timeout,
# and what check mode would start.
WAITED = {"preflight": ("preflight of migration %s", "Run the role again to retry.", "preflight"),
          "run": ("the run of migration %s", "Run the role again: it waits for the run.", "the run")}
# The role's credentials, per site_migration_auth (each is the module option of the same name).
CREDENTIALS = {"password": ("remote_pass",), "key": ("ssh_id", "ssh_id_pass"), "generated": ()}

# What an explicitly empty (or blank) value would have to mean, and why it cannot; ``source_domain``
# is the one variable whose empty value means something (the destination's default domain).
EMPTY_HINTS = {
    "site": "set the destination site's ID or domain, or leave it unset for the inventory hostname",
    "source_host": "name the source server's inventory host, or leave it unset when the role installs no key",
    "remote_host": "set the source's host name or address as the service sees it, or leave it unset (undefined "
                   "or null) to take ansible_host of site_migration_source_host",
    "remote_user": "set the SSH user on the source, or leave it unset (undefined or null) to take ansible_user of "
                   "site_migration_source_host",
    "remote_pass": "set the SSH password of the remote user (from the vault)",
    "ssh_id": "set the text of the SSH private key (from the vault)",
    "ssh_id_pass": "leave it unset for a key without a passphrase",
    "docroot": "set the source's document root, or leave it unset to let the service try the common paths",
    "state_dir": "set a directory on the controller, or leave it unset for the default",
    "report_dir": "set a directory on the controller, or leave it unset for the default",
    "client": "set the client account's identifier to create missing destination sites, or leave it unset to "
              "migrate into existing sites only",
    "admin_user": "set the new site's WordPress administrator user name",
    "admin_email": "set the new site's WordPress administrator e-mail address",
    "admin_pass": "leave it unset to have the service generate the administrator's password",
    "php_version": "leave it unset for the service's default PHP version",
}

_OPTION_RE = re.compile(r"(?<![\w.-])(%s)(?![\w-])" % "|".join(sorted(ROLE_VARIABLES, key=len, reverse=True)))
_SITE_OPTION_RE = re.compile(r"^site (?=must |is )")
_STATE_FILE_RE = re.compile(r"(?<![\w.-])state_file (\S+)")


def role_message(text, step=None):
    """A module's message in the role's words: each module option becomes the role variable."""
    if text is None:
        return None
    text = _SITE_OPTION_RE.sub("site_migration_site ", str(text))
    text = _STATE_FILE_RE.sub(r"the state file \1 (in site_migration_state_dir)", text)
    text = _OPTION_RE.sub(lambda m: ROLE_VARIABLES[m.group(1)], text)
    if step in STEP_TIMEOUT:
        text = re.sub(r"(?<![\w.-])wait_timeout(?![\w-])", STEP_TIMEOUT[step], text)
    return text


# ----------------------------------------------------------------------------------------- lineup

def _value(params, name):
    return params.get(PREFIX + name)


def _as(kind, value):
    """value converted as the argument spec would, or None when it cannot be (already reported)."""
    if value is None:
        return None
    try:
        return boolean(value, strict=True) if kind is bool else kind(value)
    except (TypeError, ValueError):
        return None


def _source_vars(hostvars, name, cache):
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


def _problems(params, given, hostvars, sources):
    """(problems, resolved) of one site: each problem names the role variable and the fix."""
    empty = [name for name in EMPTY_HINTS if isinstance(given.get(PREFIX + name), str)
             and not given[PREFIX + name].strip()]
    problems = ["%s%s is empty: %s" % (PREFIX, name, EMPTY_HINTS[name]) for name in empty]

    auth = _value(params, "auth")
    install_key = _as(bool, _value(params, "install_key"))
    confirm = _as(bool, _value(params, "confirm_overwrite"))
    if confirm is False:
        problems.append("site_migration_confirm_overwrite must be true: every run replaces the destination's files "
                        "and database (it is false)")

    source = None if "source_host" in empty else _value(params, "source_host")
    known, found = (False, {}) if source is None else _source_vars(hostvars, str(source), sources)
    # A source host that is not in this run's inventory (in an AWX sliced job, one in another slice: a
    # slice holds the variables of its own hosts only) is reached at the site's own remote host and user.
    if source is not None and not known and (_value(params, "remote_host") is None
                                             or _value(params, "remote_user") is None):
        problems.append("site_migration_source_host (%s) is not an inventory host of this run (group "
                        "wpcloud_sources; in an AWX sliced job, a source host in another slice is not): set "
                        "site_migration_remote_host and site_migration_remote_user on the site or its group, so "
                        "that the role reaches the source without its inventory entry, or add the host" % source)
    installs = auth == "generated" and install_key is not False
    if source is None and installs and "source_host" not in empty:
        problems.append("site_migration_source_host is needed to install the generated key "
                        "(site_migration_auth=generated with site_migration_install_key true): name the source's "
                        "inventory host, or set site_migration_install_key: false and add the key yourself")

    remote_host = _value(params, "remote_host")
    if remote_host is None and known:
        remote_host = found["ansible_host"] or source
    if remote_host is None and "remote_host" not in empty:
        problems.append("the remote host must resolve: set site_migration_remote_host (or site_migration_source_host "
                        "with its ansible_host)")
    remote_user = _value(params, "remote_user")
    if remote_user is None and known:
        remote_user = found["ansible_user"]
    if remote_user is None and "remote_user" not in empty:
        problems.append("the remote user must resolve: set ansible_user on the source host or "
                        "site_migration_remote_user")
    remote_port = _value(params, "remote_port")
    if remote_port is None:
        # Unset and no ansible_port: not sent, so an update keeps the stored port and a create
        # takes the service's default (22).
        remote_port = found.get("ansible_port")
        if remote_port is not None and _as(int, remote_port) is None:
            problems.append("ansible_port of the source host %s is not a number (%s): fix it, or set "
                            "site_migration_remote_port" % (source, remote_port))
    become = _as(bool, _value(params, "install_become"))
    if become is None:
        # A source not in the inventory: Ansible's login there (the Machine credential) is not known here.
        become = remote_user != found["ansible_user"] if known else source is not None

    if auth == "password" and _value(params, "remote_pass") is None:
        problems.append("site_migration_auth=password needs site_migration_remote_pass")
    if auth == "key" and _value(params, "ssh_id") is None:
        problems.append("site_migration_auth=key needs site_migration_ssh_id (plus site_migration_ssh_id_pass for "
                        "a protected key)")
    if auth in CREDENTIALS:
        for option in sorted(set(SECRET_FIELDS) - set(CREDENTIALS[auth])):
            if given.get(ROLE_VARIABLES[option]) is not None:
                owner = next(a for a, fields in CREDENTIALS.items() if option in fields)
                problems.append("%s is only for site_migration_auth=%s (it is %s): remove it"
                                % (ROLE_VARIABLES[option], owner, auth))
    poll = _as(float, _value(params, "poll_interval"))
    if poll is not None and poll < MIN_POLL_INTERVAL:
        problems.append("site_migration_poll_interval must be at least %g (second; it is %s)" % (MIN_POLL_INTERVAL, poll))
    poll_max = _as(float, _value(params, "poll_max_interval"))
    if poll_max is not None and poll_max < max(poll or MIN_POLL_INTERVAL, MIN_POLL_INTERVAL):
        problems.append("site_migration_poll_max_interval must be at least site_migration_poll_interval (it is %s, "
                        "the interval %s): set them equal for a fixed rhythm" % (poll_max, poll or MIN_POLL_INTERVAL))
    for name in ("create_timeout", "preflight_timeout", "run_timeout"):
        value = _as(int, _value(params, name))
        if value is not None and value <= 0:
            problems.append("site_migration_%s must be a positive number of seconds (it is %s)" % (name, value))
    problems += _new_site_problems(params, empty)
    resolved = {"source_host": source or "", "source_known": known,
                "remote_host": remote_host, "remote_port": None if remote_port is None else _as(int, remote_port),
                "remote_user": remote_user, "auth": auth, "install_key": bool(installs),
                "install_become": become, "client": _value(params, "client"),
                "create_wait": _as(bool, _value(params, "create_wait")) is not False}
    return problems, resolved


def _new_site_problems(params, empty):
    """What keeps the role from creating a missing destination site: site_migration_client asks for it,
    and then the new site's administrator is needed; the new-site values are nothing without it."""
    problems = []
    given = dict((name, _value(params, name)) for name in NEW_SITE if _value(params, name) is not None)
    if "client" in empty:
        return problems
    if _value(params, "client") is not None:
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


def _texts(value):
    """Every text a value of a no_log variable could show up as (a wrong type is quoted whole)."""
    if value is None or value == "":
        return set()
    found = {str(value)}
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found |= _texts(item)
    return found


def inputs_of(host_vars, options):
    """Each site's inputs from what "Read every site's inputs" (wpcloud.hosting.fleet_vars) gave, one dict
    per site: the role variables of ``options`` with a value; undefined and null mean unset."""
    options = list(options or [])
    found = []
    for index, site_vars in enumerate(host_vars or []):
        if not isinstance(site_vars, Mapping):
            raise AnsibleFilterError("site_migration_inputs: item %d is a %s, not a dict of variables"
                                     % (index, type(site_vars).__name__))
        found.append(dict((name, site_vars[name]) for name in options
                          if name in site_vars and site_vars[name] is not None))
    return found


def _check_mode_created(hosts, hostvars):
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


def lineup(inputs, hosts, spec, hostvars=None, check_mode=False):
    """The fleet at the start: one entry per site of the batch, in play order (see the module doc)."""
    inputs, hosts = list(inputs or []), list(hosts or [])
    # Read only in check mode: a real run finds the sites that the earlier tasks really created.
    about_to_exist = _check_mode_created(hosts, hostvars) if _as(bool, check_mode) else set()
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
                secrets.update(_texts(given.get(name)))
        checked = validator.validate(given)
        params = checked.validated_parameters
        # A message of the spec check may quote a value; never a secret one.
        problems = [remove_values(msg, secrets) for msg in checked.error_messages]
        more, resolved = _problems(params, given, hostvars, sources)
        problems += more
        site = str(params.get("site_migration_site") if params.get("site_migration_site") is not None else host)
        key = site.strip().lower()
        if key:
            owners.setdefault(key, []).append(index)
        refresh = _as(bool, params.get("site_migration_refresh"))
        # A site named by domain is looked for first when the role may create it (site_migration_client).
        after_find = "info" if refresh is False else "check"
        creatable = resolved["client"] is not None and not site.strip().isdigit()
        fleet.append(dict(
            resolved,
            host=str(host), index=index, site=site,
            source_user="%s@%s" % (resolved["remote_user"], resolved["source_host"]),
            preflight_timeout=_as(int, params.get("site_migration_preflight_timeout")),
            run_timeout=_as(int, params.get("site_migration_run_timeout")),
            create_timeout=_as(int, params.get("site_migration_create_timeout")),
            poll_interval=_as(float, params.get("site_migration_poll_interval")),
            poll_max_interval=_as(float, params.get("site_migration_poll_max_interval")),
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


# ----------------------------------------------------------------------------------------- advance

def _key(step, result):
    """The identity a step's result carries: the site, the migration, or the loop item's site."""
    if not isinstance(result, Mapping):
        return None
    if step == "new":
        value = result.get("domain")
    elif step == "key":
        item = result.get("item")
        value = item.get("site") if isinstance(item, Mapping) else None
    elif step in ("preflight", "run"):
        value = result.get("migration_id")
    else:
        value = result.get("site")
    return None if value is None else str(value).strip().lower()


def _site_key(step, entry):
    value = entry.get("migration_id") if step in ("preflight", "run") else entry.get("site")
    return None if value is None else str(value).strip().lower()


def _pair(step, sites, registered):
    """Each site of the step with its own result: by identity, else (no or ambiguous identity) by
    position, which the list forms and loops keep. A step that failed as a whole gives every site
    its message."""
    whole = registered if isinstance(registered, Mapping) else {}
    items = [r for r in whole.get("results") or [] if isinstance(r, Mapping)]
    keys = [_key(step, r) for r in items]
    wanted = [_site_key(step, s) for s in sites]
    by_key = dict(zip(keys, items))
    identity = None not in keys and len(by_key) == len(items) and all(k in by_key for k in wanted)
    missing = {"failed": True, "msg": whole.get("msg") or "the step returned no result for this site"}
    if identity:
        return [(s, by_key[k]) for s, k in zip(sites, wanted)]
    return [(s, items[i] if i < len(items) else missing) for i, s in enumerate(sites)]


def _redacted_args(record):
    args = record.get("args") if isinstance(record, Mapping) else None
    return dict((k, v) for k, v in (args or {}).items() if k not in SECRET_PARAMS)


def _ticket_seen(r, resumed=None):
    ticket = r.get("ticket") if isinstance(r.get("ticket"), Mapping) else {}
    seen = {"ticket_id": r.get("ticket_id"),
            "state": ticket.get("state") if not resumed else r.get("state"),
            "elapsed": ticket.get("elapsed"), "response_count": ticket.get("response_count")}
    if resumed is not None:
        seen["already_running"] = resumed
    seen["diagnosis"] = _diagnosis(ticket.get("diagnosis"))
    return ticket, seen


def _diagnosis(diagnosis):
    if not isinstance(diagnosis, Mapping):
        return None
    diagnosis = dict(diagnosis)
    if diagnosis.get("hint"):
        diagnosis["hint"] = role_message(diagnosis["hint"])
    return diagnosis


def _ticket_failed(r, ticket, about, diagnosis):
    return (about + " failed (%s): %s Messages: %s" % (
        (diagnosis or {}).get("code", "unknown"), (diagnosis or {}).get("hint", ""),
        " | ".join(str(m) for m in ticket.get("messages") or [])))


def _found(sites, registered):
    """Step "find": the client's listing says which destinations exist; the others are created."""
    r = registered if isinstance(registered, Mapping) else {}
    listed = set(str(e.get("domain") or "").strip().lower() for e in r.get("sites") or [] if isinstance(e, Mapping))
    for s in sites:
        if r.get("failed") or "sites" not in r:
            msg = role_message(r.get("msg")) or "no listing returned"
            where = "listing the sites of site_migration_client %s" % s["client"]
            # A refused key leads the message, as in every module (issue 23).
            text = ("%s (%s)" % (msg, where) if (r.get("failure") or {}).get("status") in (401, 403)
                    else "%s failed: %s" % (where, msg))
            s.update(stage=DONE, result="error", message="site %s: %s" % (s["site"], text))
        elif s["site"].strip().lower() in listed:
            s.update(stage=s["after_find"], destination=EXISTING)
        else:
            s.update(stage="new")


def _created(s, r, failed, msg, who):
    """Step "new": the destination site created with allow_site_migration (or found after all)."""
    job = r.get("job") if isinstance(r.get("job"), Mapping) else None
    seen = {"site_id": r.get("site_id"), "job_id": r.get("job_id"),
            "job_status": (job or {}).get("status"), "elapsed": (job or {}).get("elapsed")}
    if failed:
        return {"stage": DONE, "result": "error", "new_site": seen,
                "message": who + "creating the destination site failed: %s" % msg}
    if r.get("operation") != "create":
        # It exists after all (created meanwhile, or the service knows it by this domain): today's path.
        return {"stage": s["after_find"], "destination": EXISTING}
    if r.get("site_id") is None:
        return {"stage": DONE, "result": "checked", "destination": CREATED, "new_site": seen,
                "message": "check mode: the site would be created (allow_site_migration at creation), then migrated"}
    if not s["create_wait"]:
        return {"stage": DONE, "result": "awaiting_provisioning", "destination": CREATED, "new_site": seen,
                "message": "created as site %s; its site_provisioned webhook starts the migration "
                           "(wpcloud.hosting.on_site_provisioned)" % r["site_id"]}
    if r.get("allow_site_migration") is False:
        # Read back after the job: the service did not keep meta[allow_site_migration], so the site goes
        # through the allow step like an existing one before its migration is created.
        return {"stage": "check", "destination": CREATED, "new_site": seen, "needs_allow": True}
    return {"stage": "check", "destination": CREATED, "new_site": seen}


def _not_yet(s, r):
    """A check-mode site that an earlier task would create, which the service does not know yet (404)."""
    failure = r.get("failure") if isinstance(r.get("failure"), Mapping) else {}
    return bool(s.get("about_to_exist")) and failure.get("status") == 404 and failure.get("operation") == "site_meta.get"


def _next(step, s, r):
    """The entry keys a site gets from its result of a step."""
    failed = bool(r.get("failed") or r.get("unreachable"))
    msg = role_message(r.get("msg"), step)
    who = "site %s: " % s["site"]
    if step == "new":
        return _created(s, r, failed, msg, who)
    if failed and _not_yet(s, r):
        if step == "info":        # no migration yet; its inputs are still checked
            return {"stage": "check"}
        return {"stage": DONE, "result": "checked",
                "message": "check mode: an earlier task would create site %s; its migration would then be created "
                           "and run" % s["site"]}
    if step == "info":
        info = {"site_id": r.get("site_id"), "migration_id": r.get("migration_id"), "record": r.get("record") or {}}
        if failed:
            return {"stage": DONE, "result": "error", "message": who + "reading its migration failed: %s" % msg}
        if r.get("state") == MIGRATION_SUCCEEDED:
            return {"stage": DONE, "result": "left_alone", "info": info, "destination": s.get("destination") or EXISTING,
                    "message": "migration succeeded earlier; site_migration_refresh is false"}
        return {"stage": "check", "info": info, "destination": s.get("destination") or EXISTING}
    if step == "check":
        if failed:
            return {"stage": DONE, "result": "invalid_input", "message": who + msg}
        # A site created with allow_site_migration needs no call to the irreversible allow endpoint,
        # unless the service was seen not to keep the flag.
        return {"stage": "create" if s.get("destination") == CREATED and not s.get("needs_allow") else "allow"}
    if step == "allow":
        if failed:
            return {"stage": DONE, "result": "error", "message": who + "allowing a migration failed: %s" % msg}
        return {"stage": "create", "destination": s.get("destination") or EXISTING}
    if step == "create":
        record = r.get("record") if isinstance(r.get("record"), Mapping) else {}
        migration = {"migration_id": r.get("migration_id"), "site_id": r.get("site_id"),
                     "operation": r.get("operation"), "updated_fields": list(r.get("updated_fields") or []),
                     "auth": record.get("auth"), "remote": _redacted_args(record)}
        if failed:
            return {"stage": DONE, "result": "error", "migration": migration,
                    "message": who + "the migration could not be created or updated: %s" % msg}
        if r.get("migration_id") is None:
            return {"stage": DONE, "result": "checked", "migration": migration,
                    "message": "check mode: the migration would be created"}
        running = r.get("state") in RUNNING_STATES
        key = r.get("ssh_id_pub") or ""
        return {"migration": migration, "migration_id": r["migration_id"], "running": running, "ssh_id_pub": key,
                "stage": "key" if s["install_key"] and key else ("run" if running else "preflight")}
    if step == "key":
        if failed:
            # the shell's own words ("Permission denied") rather than its "non-zero return code"
            detail = str(r.get("stderr") or "").strip() or msg or "unreachable"
            return {"stage": DONE, "result": "error", "key_installed": False,
                    "message": who + "installing the generated key on %s failed: %s" % (s["source_host"], detail)}
        return {"stage": "run" if s.get("running") else "preflight", "key_installed": bool(r.get("changed"))}
    return _waited(step, s, r, msg, who + WAITED[step][0] % s.get("migration_id"))


def run_ended_before_its_start(step, s, r):
    """The resume race: a run that an earlier step of this play saw running (an interrupted play
    started it) has ended by the time migration_ready reads the migration, and migration_ready refused
    to start another one; its result carries the ended state."""
    return step == "run" and bool(s.get("running")) and bool(r.get("failed")) and \
        not r.get("ticket_id") and r.get("state") in RUN_TERMINAL_STATES


def _waited(step, s, r, msg, about):
    """The outcome of a preflight or run: its ticket started and waited for (or a run that was
    already active, followed by its migration's state)."""
    if run_ended_before_its_start(step, s, r):
        # Seen running by the create step, ended before migration_ready read it (whose partner rule
        # then refuses a new run): that run's end is the site's outcome, as if it had been followed.
        msg = "the run seen running earlier had ended when it was to be followed"
        r = dict(r, failed=r["state"] != MIGRATION_SUCCEEDED, already_running=True)
    failed = bool(r.get("failed"))
    # Followed by the migration's state instead of a ticket: a run that was already active, or a
    # start whose answer was lost and that a read showed had taken effect.
    resumed = bool(r.get("already_running")) if step == "run" or r.get("already_running") else None
    ticket, seen = _ticket_seen(r, resumed)
    if failed and resumed:
        return {"stage": DONE, "result": step + ("_failed" if r.get("state") in FAILED_STATES else "_unfinished"),
                step: seen, "message": about + " (followed by its migration's state) ended in state %s: %s"
                % (r.get("state") or "unknown", msg)}
    if failed and r.get("ticket_state") in TICKET_TERMINAL:     # the ticket ended, and not in success
        return {"stage": DONE, "result": step + "_failed", step: seen, "diagnosis": seen["diagnosis"],
                "message": _ticket_failed(r, ticket, about, seen["diagnosis"])}
    if failed and r.get("timed_out"):
        return {"stage": DONE, "result": step + "_unfinished", step: seen,
                "message": about + " did not finish (ticket %s is %s after %s=%ss). %s" % (
                    r.get("ticket_id"), ticket.get("state") or "unknown", STEP_TIMEOUT[step],
                    s[step + "_timeout"], WAITED[step][1])}
    if failed:
        return {"stage": DONE, "result": "error", step: seen if seen["ticket_id"] or resumed else None,
                "message": about + ": %s" % msg}
    if not r.get("ticket_id") and not resumed:
        return {"stage": DONE, "result": "checked", "message": "check mode: %s would be started" % WAITED[step][2]}
    if step == "preflight":
        return {"stage": "run", "preflight": seen}
    return {"stage": DONE, "result": "succeeded", "run": seen,
            "message": "resumed: the run was already active; it ended in state %s" % r.get("state") if resumed else ""}


def advance(fleet, results, upto=None):
    """The fleet after every step before ``upto`` (all steps when None), from the registered results."""
    fleet = [dict(entry) for entry in fleet or []]
    results = results or {}
    for step in STEPS:
        if step == upto:
            break
        sites = [s for s in fleet if s.get("stage") == step]
        if not sites:
            continue     # the step was skipped; a result left from an earlier play is not this run's
        if results.get(step) is None:
            break        # the play ended before this step: its sites were not reached
        if step == "find":
            _found(sites, results[step])
            continue
        for site, result in _pair(step, sites, results.get(step)):
            site.update(_next(step, site, result))
            if isinstance(result, Mapping) and result.get("uncertain"):
                # Writes whose answer was lost, and how a read settled them (module_utils/api/uncertain_writes.py).
                site["uncertain"] = list(site.get("uncertain") or []) + [
                    dict(entry, step=step) for entry in result["uncertain"] if isinstance(entry, Mapping)]
    return fleet


# ----------------------------------------------------------------------------------------- step

def _with_inputs(sites, inputs, steps):
    """Each site with its inputs (the steps whose arguments carry credentials need them)."""
    if inputs is None:
        raise AnsibleFilterError("site_migration_step: the %s need the sites' inputs" % steps)
    inputs = list(inputs)
    return [(s, inputs[s["index"]]) for s in sites]


def _migrations(sites, inputs):
    """The migration module's ``migrations`` for the sites (holds credentials: no_log tasks only)."""
    items = []
    for s, given in _with_inputs(sites, inputs, "check and create steps"):
        item = {"site": s["site"], "remote_host": s["remote_host"], "remote_port": s["remote_port"],
                "remote_user": s["remote_user"],
                "state_file": "%s/%s.json" % (given.get("site_migration_state_dir"), s["site"]),
                "remote_docroot": given.get("site_migration_docroot"),
                "remote_domain": given.get("site_migration_source_domain"),
                "update_secret": given.get("site_migration_update_secret")}
        for option in CREDENTIALS.get(s["auth"], ()):
            item[option] = given.get(ROLE_VARIABLES[option])
        items.append(dict((k, v) for k, v in item.items() if v is not None))
    return items


def _new_sites(sites, inputs):
    """The site module's arguments for the destinations to create (admin_pass: no_log tasks only)."""
    items = []
    for s, given in _with_inputs(sites, inputs, "new step"):
        item = {"domain": s["site"].strip()}
        item.update((name, given[PREFIX + name]) for name in NEW_SITE if given.get(PREFIX + name) is not None)
        items.append(item)
    return {"client": sites[0]["client"], "sites": items,
            # One wait for all: it waits when any site migrates in this run, as long as the longest timeout.
            "wait": any(s["create_wait"] for s in sites),
            "wait_timeout": max(s["create_timeout"] or 1 for s in sites),
            "poll_interval": min(s["poll_interval"] or MIN_POLL_INTERVAL for s in sites),
            "poll_max_interval": _poll_max(sites)}


def step(fleet, name, results=None, inputs=None):
    """What step ``name`` does: its module arguments for the sites at that stage (see the doc)."""
    if name not in STEPS + ("stop",):
        raise AnsibleFilterError("site_migration_step: unknown step %r (one of %s, stop)" % (name, ", ".join(STEPS)))
    fleet = advance(fleet, results, upto=None if name == "stop" else name)
    if name == "stop":
        return {"hosts": dict((s["host"], s["message"]) for s in fleet if s.get("result") not in FINE_RESULTS),
                "changed": dict((s["host"], True) for s in fleet if s.get("result") in CHANGED_RESULTS)}
    sites = [s for s in fleet if s.get("stage") == name]
    todo = {"count": len(sites)}
    if name == "find":
        todo["client"] = sites[0]["client"] if sites else None
    elif name == "new":
        todo.update(_new_sites(sites, inputs) if sites else {"client": None, "sites": []})
    elif name in ("info", "allow"):
        todo["sites"] = [s["site"] for s in sites]
    elif name in ("check", "create"):
        todo["migrations"] = _migrations(sites, inputs) if sites else []
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
        todo["poll_max_interval"] = _poll_max(sites)
    return todo


def _poll_max(sites):
    """The wait's longest gap between polls: the shortest of the sites' (None: the module's default)."""
    given = [s["poll_max_interval"] for s in sites if s.get("poll_max_interval") is not None]
    return min(given) if given else None


# ----------------------------------------------------------------------------------------- report

def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def report(fleet, hosts, results=None, refresh=True, generated=None):
    """The report of the run: one entry per host of the play, stopped ones included (see the doc)."""
    by_host = dict((s.get("host"), s) for s in advance(fleet, results))
    # A source host that the key install added to the inventory (one of another AWX slice) is not a site,
    # though Ansible counts it among the play's hosts from then on.
    added = set(s.get("source_host") for s in fleet or [] if s.get("source_known") is False) - set(by_host)
    sites = []
    for host in [h for h in hosts or [] if h not in added]:
        s = by_host.get(host, {})
        m = s.get("migration") or {}
        info = s.get("info") or {}
        record = info.get("record") or {}
        pf, run = s.get("preflight"), s.get("run")
        result = s.get("result") or "not_reached"
        message = s.get("message") or ("" if result == "succeeded" else "stopped before the fleet steps: see the "
                                                                        "play output")
        sites.append({
            "host": host,
            "site": s.get("site", host),
            # How the destination came to be: created by this run (rule 1's preferred path), or existing.
            "destination": s.get("destination"),
            "new_site": s.get("new_site"),
            "site_id": m["site_id"] if "site_id" in m else info.get("site_id"),
            "migration_id": m.get("migration_id") or info.get("migration_id"),
            "operation": m.get("operation"),
            "updated_fields": m.get("updated_fields") or [],
            "auth": m.get("auth") or record.get("auth"),
            "remote": m.get("remote") or _redacted_args(record),
            "key_installed": s.get("key_installed", False),
            "preflight": pf,
            "run": run,
            "duration": round(float((pf or {}).get("elapsed") or 0) + float((run or {}).get("elapsed") or 0), 3),
            "result": result,
            "diagnosis": s.get("diagnosis"),
            "uncertain": s.get("uncertain") or [],
            "message": message,
        })
    counts, destinations = {}, {}
    for entry in sites:
        counts[entry["result"]] = counts.get(entry["result"], 0) + 1
        if entry["destination"]:
            destinations[entry["destination"]] = destinations.get(entry["destination"], 0) + 1

    def longest(phase):
        return max([e[phase]["elapsed"] for e in sites if e[phase] and e[phase].get("elapsed")] or [0])
    return {
        "generated": generated or _utc_now(),
        "sites_total": len(sites),
        "counts": dict(sorted(counts.items())),
        "destinations": dict(sorted(destinations.items())),
        "preflight_wait_seconds": longest("preflight"),
        "run_wait_seconds": longest("run"),
        "api_load": _api_load(results),
        "refresh": bool(_as(bool, refresh)),
        "sites": sites,
    }


def report_name(hosts, job_id=None, now=None):
    """The stem of a run's report file and artifact name, unique to the run (see the doc): its UTC time,
    then the controller job that ran it (every slice of a sliced job template is a job of its own) or,
    outside a controller, a digest of the play's hosts (slices cover disjoint hosts)."""
    hosts = sorted(set(str(h) for h in hosts or []))
    if not hosts:
        raise AnsibleFilterError("site_migration_report_name: the play has no hosts")
    stamp = now or datetime.datetime.now(datetime.timezone.utc)
    if job_id is not None and str(job_id).strip():
        if not str(job_id).strip().isdigit():
            raise AnsibleFilterError("site_migration_report_name: job_id must be the controller's job number "
                                     "(awx_job_id), not %r" % (job_id,))
        who = "job%s" % str(job_id).strip()
    else:
        # Microseconds keep two runs over the same hosts apart; the digest keeps slices apart.
        who = "%s-hosts-%s" % (stamp.strftime("%f"),
                               hashlib.sha256("\n".join(hosts).encode("utf-8")).hexdigest()[:16])
    return "site-migration-%s-%s" % (stamp.strftime("%Y%m%dT%H%M%S"), who)


def _api_load(results):
    """The load the run's waiting tasks put on the service (their results' api_load): calls summed, the
    highest peak (the tasks run one after the other), and each step's own."""
    steps = dict((name, dict(r["api_load"])) for name, r in sorted((results or {}).items())
                 if isinstance(r, Mapping) and isinstance(r.get("api_load"), Mapping))
    return {"calls": sum(int(load.get("calls") or 0) for load in steps.values()),
            "peak_per_second": max([int(load.get("peak_per_second") or 0) for load in steps.values()] or [0]),
            "steps": steps}


def merge_reports(reports, generated=None):
    """One fleet report from the reports of runs over disjoint parts of the fleet (see the doc)."""
    if isinstance(reports, Mapping):
        reports = [v for k, v in sorted(reports.items())]       # set_stats artifacts: name -> report
    reports = list(reports or [])
    if not reports:
        raise AnsibleFilterError("site_migration_report_merge: no report to merge")
    sites, owner, counts, destinations = [], {}, {}, {}
    for number, rep in enumerate(reports, 1):
        if not isinstance(rep, Mapping) or not isinstance(rep.get("sites"), list):
            raise AnsibleFilterError("site_migration_report_merge: item %d is not a site_migration report" % number)
        for entry in rep["sites"]:
            host = entry.get("host")
            if host in owner:
                raise AnsibleFilterError("site_migration_report_merge: host %s is in reports %d and %d: each run "
                                         "(slice) must cover its own hosts" % (host, owner[host], number))
            owner[host] = number
            sites.append(entry)
        for total, part in ((counts, rep.get("counts") or {}), (destinations, rep.get("destinations") or {})):
            for key, value in part.items():
                total[key] = total.get(key, 0) + int(value)
    refresh = sorted(set(bool(rep.get("refresh")) for rep in reports))
    return {
        "generated": generated or _utc_now(),
        "merged_from": [rep.get("generated") for rep in reports],
        "sites_total": len(sites),
        "counts": dict(sorted(counts.items())),
        "destinations": dict(sorted(destinations.items())),
        "preflight_wait_seconds": max(float(rep.get("preflight_wait_seconds") or 0) for rep in reports),
        "run_wait_seconds": max(float(rep.get("run_wait_seconds") or 0) for rep in reports),
        # Slices run at the same time: their peaks add up (at most; they need not coincide).
        "api_load": {"calls": sum(int((rep.get("api_load") or {}).get("calls") or 0) for rep in reports),
                     "peak_per_second": sum(int((rep.get("api_load") or {}).get("peak_per_second") or 0)
                                            for rep in reports)},
        "refresh": refresh[0] if len(refresh) == 1 else refresh,
        "sites": sorted(sites, key=lambda e: str(e.get("host"))),
    }


# ----------------------------------------------------------------------------------------- webhook

def waiting(hosts, hostvars, site=None):
    """The inventory hosts whose destination waits for its site_provisioned webhook (see the doc):
    each ``{host, site}``; given the provisioned site (``site_id``, ``domain``), only the hosts that name it."""
    found = []
    for host in hosts or []:
        host_vars = hostvars[host] if hostvars is not None and host in hostvars else {}
        wait = host_vars.get(PREFIX + "create_wait") if hasattr(host_vars, "get") else None
        if wait is None or _as(bool, wait) is not False:
            continue
        name = host_vars.get(PREFIX + "site")
        found.append({"host": str(host), "site": str(host if name is None else name).strip()})
    if site is None:
        return found
    if not isinstance(site, Mapping):
        raise AnsibleFilterError("site_migration_waiting: site must be a site_info result (site_id, domain)")
    names = set(str(site.get(k)).strip().lower() for k in ("site_id", "domain") if site.get(k) is not None)
    return [entry for entry in found if entry["site"].lower() in names]


class FilterModule:
    """The workflow of the role wpcloud.hosting.site_migration."""

    def filters(self):
        return {
            "site_migration_inputs": inputs_of,
            "site_migration_lineup": lineup,
            "site_migration_step": step,
            "site_migration_report": report,
            "site_migration_report_merge": merge_reports,
            "site_migration_report_name": report_name,
            "site_migration_waiting": waiting,
        }
