# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Where the role's calls go and as whom: its connection, from three sources with one precedence.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

Each connection option of a module the role calls is taken, the first that gives it:

1. the role's variable (``wpcloud_api_url``, ``wpcloud_api_key``, ... : ``CONNECTION_VARIABLES``), the same for
   every site of the play;
2. the play's ``module_defaults`` for that module (``wpcloud.hosting.migration``), then for
   ``group/wpcloud.hosting.all``, as Ansible gives them to a task of the module;
3. the ``WPCLOUD_*`` environment variable on the controller, then the option's default.

That is a module task's own order with the role's variables in the place of the task's arguments (a task of
site_migration_setup outside the role may give them itself: they come first). The role makes all its calls to one
service as one partner: where the sources give the modules it calls different URLs, keys or CAs, or leave the
default address to them while the play's module_defaults name another for other modules of the collection, it
refuses before any call, naming the sources and the fix.
"""

from __future__ import annotations

import os
import re

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import (
    API_ARGUMENT_SPEC,
    validate_connection_options,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import CONNECTION_VARIABLES
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.module_defaults import GROUP_PREFIX, defaults_for

COLLECTION = "wpcloud.hosting"
GROUP = GROUP_PREFIX + COLLECTION + ".all"
# The modules whose calls the role makes: in its setup task (plugins/plugin_utils/site_migration/setup_phase.py
# PHASE), that task itself, and its preflight and run tasks.
ROLE_MODULES = ("site_info", "site", "migration_info", "migration", "site_allow_migration", "site_migration_setup",
                "migration_preflight", "migration_ready")
# The options that say where the calls go and as whom: one value for every call of the role.
IDENTITY = ("api_url", "api_key", "ca_path", "validate_certs")
# Where a value came from, besides a module_defaults entry (named by its key).
TASK, VARIABLE, DEFAULT = "task", "variable", "default"

ROLE_MISSING_KEY = ("the API key is not set: set wpcloud_api_key (a vaulted variable of the play or of its sites), "
                    "or api_key in the play's module_defaults for %s, or the WPCLOUD_API_KEY environment variable "
                    "on the controller" % GROUP)


def fqcn(module):
    return "%s.%s" % (COLLECTION, module)


def _environment(option):
    fallback = API_ARGUMENT_SPEC[option].get("fallback")
    return fallback[1][0] if fallback else None


def source_label(option, source):
    """A short name of the place ``option`` came from (``wpcloud_api_url``, ``module_defaults for group/...``)."""
    if source == TASK:
        return "the task"
    if source == VARIABLE:
        return CONNECTION_VARIABLES[option]
    if source == DEFAULT or source == _environment(option):
        return "the default" if source == DEFAULT else source
    return "module_defaults for %s" % source


def source_words(option, source):
    """How a message names the place ``option`` came from, so that the user knows what to change."""
    if source == TASK:
        return "the task's %s" % option
    if source == VARIABLE:
        return CONNECTION_VARIABLES[option]
    if source == DEFAULT:
        ways = [CONNECTION_VARIABLES[option]] if option in CONNECTION_VARIABLES else []
        ways.append("%s in the play's module_defaults for %s" % (option, GROUP))
        if _environment(option):
            ways.append(_environment(option))
        return "%s (unset, so the default; set %s)" % (option, ", or ".join(ways))
    if source == _environment(option):
        return source
    return "%s of the play's module_defaults for %s" % (option, source)


def _variables_of_the_fleet(inputs, hosts):
    """(values, problems): each connection variable that the play's sites set, the same for all of them."""
    values, problems = {}, []
    for option, variable in CONNECTION_VARIABLES.items():
        given = [(host, (site or {}).get(variable)) for host, site in zip(hosts, inputs)]
        distinct = []
        for _host, value in given:
            if value not in distinct:
                distinct.append(value)
        if len(distinct) == 1:
            if distinct[0] is not None:
                values[option] = distinct[0]
            continue
        secret = API_ARGUMENT_SPEC[option].get("no_log")
        groups = []
        for value in distinct:
            named = ", ".join(host for host, seen in given if seen == value)
            groups.append("%s for %s" % ("unset" if value is None else ("one value" if secret else repr(value)), named))
        problems.append("%s differs between the sites of this play (%s): the role makes every site's calls on one "
                        "connection; set it once for all of them (the play's vars, or group_vars of the sites' group)"
                        % (variable, "; ".join(groups)))
    return values, problems


class Connection(object):
    """The connection of every module the role calls (``resolve``): what to give each call, the problems that
    stop every site before any call, and words for messages."""

    def __init__(self, given, sources, resolved, problems):
        self._given = given            # module -> the options to pass it (the first three sources)
        self._sources = sources        # option -> where the value of the role's calls came from
        self.resolved = resolved       # module -> every connection option, as the module will see it
        self.problems = problems

    def args_for(self, module):
        return dict(self._given[module])

    def source(self, option):
        return self._sources.get(option, DEFAULT)

    def label(self, option):
        """A short name of where ``option`` came from (``source_label``)."""
        return source_label(option, self.source(option))

    def api_keys(self):
        """The API keys the role's calls would send (one, unless the problems say otherwise): for the masks."""
        return set(options["api_key"] for options in self.resolved.values() if options.get("api_key"))

    def words(self, text):
        """``text`` (a module's words, ``api_url``, or the role's, ``wpcloud_api_url``) naming each option of where the
        calls go (``IDENTITY``) by the place its value came from."""
        if not text:
            return text
        for option in IDENTITY:
            source = self.source(option)
            names = (option,) if source == VARIABLE else (option, CONNECTION_VARIABLES[option])
            pattern = r"(?<![\w.-])(%s)(?![\w-])" % "|".join(names)
            text = re.sub(pattern, lambda m, o=option, s=source: source_words(o, s), text)
        return text

    def describe(self):
        """One line: the API URL, and each connection option that is set with where it came from (the key's value
        never)."""
        parts = []
        for option in IDENTITY + ("timeout", "rate_limit"):
            source = self.source(option)
            if source != DEFAULT:
                value = "" if API_ARGUMENT_SPEC[option].get("no_log") else " %s" % (self._value(option),)
                parts.append("%s%s from %s" % (option, value, source_label(option, source)))
        said = "; ".join(parts) if parts else "no source sets api_url: the default"
        return "connection: API %s; %s" % (self._value("api_url"), said)

    def _value(self, option):
        for options in self.resolved.values():
            return options.get(option)
        return None


def _resolve_module(module, task_options, variables, defaults, groups):
    """(given, sources, validated, errors) of one module: its options from the first three sources, where each
    came from, every option as the module's spec makes it (environment and defaults), and the spec's errors."""
    module_defaults, entries = defaults_for(fqcn(module), defaults, groups)
    given, sources = {}, {}
    for option in API_ARGUMENT_SPEC:
        if option in task_options:
            given[option], sources[option] = task_options[option], TASK
        elif option in variables:
            given[option], sources[option] = variables[option], VARIABLE
        elif module_defaults.get(option) is not None:
            given[option], sources[option] = module_defaults[option], entries[option]
        elif _environment(option) and os.environ.get(_environment(option)) is not None:
            sources[option] = _environment(option)
    validation = ArgumentSpecValidator(API_ARGUMENT_SPEC).validate(given)
    return given, sources, validation.validated_parameters, validation.errors


def _differing(option, modules, resolved, sources):
    """The problem when the modules the role calls would get different values of ``option``."""
    by_value = []
    for module in modules:
        value = resolved[module].get(option)
        for entry in by_value:
            if entry[0] == value:
                entry[1].append(module)
                break
        else:
            by_value.append([value, [module]])
    if len(by_value) < 2:
        return None
    secret = API_ARGUMENT_SPEC[option].get("no_log")
    said = []
    for value, named in by_value:
        where = sorted(set(sources[m].get(option, DEFAULT) for m in named))
        said.append("%s%s for %s" % ("" if secret else "%s from " % (value if value is not None else "unset"),
                                     " and ".join(source_label(option, w) for w in where),
                                     ", ".join(fqcn(m) for m in named)))
    return ("the modules this role calls would get different %s values (%s): the role makes all its calls to one "
            "service as one partner; set %s once for the play, in module_defaults for %s, or set %s"
            % (option, "; ".join(said), option, GROUP, CONNECTION_VARIABLES[option]))


def _default_while_configured(option, value, source, defaults):
    """The problem when the role would use ``option``'s default while the play's module_defaults set it for other
    modules of the collection only (the default address while the play names another)."""
    if source != DEFAULT:
        return None
    elsewhere = sorted(key for key, options in defaults.items()
                       if key.startswith(COLLECTION + ".") and options.get(option) is not None
                       and options.get(option) != value)
    if not elsewhere:
        return None
    shown = "" if API_ARGUMENT_SPEC[option].get("no_log") else " (%s)" % (value,)
    return ("the role would use the default %s%s, but the play's module_defaults set %s only for %s, not for the "
            "modules this role calls: set it in module_defaults for %s, or set %s"
            % (option, shown, option, ", ".join(elsewhere), GROUP, CONNECTION_VARIABLES[option]))


def resolve(inputs, hosts, defaults, groups, task_options=None, modules=ROLE_MODULES):
    """The role's Connection. ``inputs``: each site's role variables (the connection variables among them), in the
    order of ``hosts``; ``defaults``: the play's module_defaults (``play_module_defaults``), ``groups``: the play's
    action groups; ``task_options``: connection options the setup task was given itself (not by module_defaults)."""
    variables, problems = _variables_of_the_fleet(inputs, hosts)
    task_options = dict(task_options or {})
    given, sources, resolved = {}, {}, {}
    for module in modules:
        given[module], sources[module], resolved[module], errors = _resolve_module(
            module, task_options, variables, defaults, groups)
        for error in errors:
            text = "%s (for %s)" % (error, fqcn(module))
            if text not in problems:
                problems.append(text)
    for option in IDENTITY:
        differing = _differing(option, modules, resolved, sources)
        if differing:
            problems.append(differing)
    role_sources = sources[modules[0]]
    connection = Connection(given, role_sources, resolved, problems)
    if problems:
        return connection
    first = resolved[modules[0]]
    for option in IDENTITY:
        found = _default_while_configured(option, first.get(option), role_sources.get(option, DEFAULT), defaults)
        if found:
            problems.append(found)
    if first.get("api_key") is None:
        problems.append(ROLE_MISSING_KEY)
    else:
        for module in modules:
            try:
                validate_connection_options(resolved[module])
            except ModuleFailure as failure:
                text = connection.words(failure.msg)
                if text not in problems:
                    problems.append(text)
    return connection
