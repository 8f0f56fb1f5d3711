# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of wpcloud.hosting.site_migration_setup: the site_migration role's phase before the key
install in one task. The hosts' variables are read as fleet_vars reads them, the order of the steps is
plugins/plugin_utils/site_migration/setup_phase.py, and each module call is the module's own logic in this
process (``run_in_controller``). A credential goes from its role variable to the module's logic in memory, under
its field's name (remote-pass) from the first mapping on: never into a result, a fact or a task argument."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleError
from ansible.utils.display import Display

from ansible_collections.wpcloud.hosting.plugins.action.site import would_create
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import Secrets, short_secret_warnings
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import API_ARGUMENT_SPEC
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import CHECK_MODE_CREATED_SITES_FACT
from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import (
    ControllerOnlyAction,
    run_in_controller,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.fleet_variables import play_hosts, read_fleet_variables
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.module_defaults import (
    action_groups,
    defaults_for,
    play_module_defaults,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration import connection as role_connection
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.going_live import may_go_live
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.setup_phase import (
    CHECK_STEP,
    planned_cutover,
    role_secrets_by_variable,
    set_up,
    site_diffs,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.strategy import strategy_problem
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.variables import (
    PREFIXES,
    unknown_variable_warnings,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import role_message

display = Display()


def phase_result(steps, fleet, diff):
    """changed, warnings (each once, in order, in the role's words), diffs (one per site) and the steps' summary,
    from the steps' results."""
    changed, warnings, summary = False, [], {}
    for step, ran in steps.items():
        result = ran["result"] if isinstance(ran["result"], Mapping) else {}
        step_changed = step != CHECK_STEP and bool(result.get("changed"))
        changed = changed or step_changed
        # in the role's words (its variables, not the modules' options), as its messages are
        warnings += [w for w in (role_message(w) for w in result.get("warnings") or []) if w not in warnings]
        summary[step] = {"sites": ran["sites"], "changed": step_changed}
        if isinstance(result.get("api_load"), Mapping):
            summary[step]["api_load"] = dict(result["api_load"])
    # A cutover (or a rollback's switch back) that the run makes later is in the site's one diff, shown with this
    # task's (a diff is shown for a changed task only): the task says changed for it, with or without --diff.
    changed = changed or any(planned_cutover(entry) for entry in fleet)
    return changed, warnings, site_diffs(steps, fleet) if diff else [], summary


class ActionModule(ControllerOnlyAction):
    MODULE = "site_migration_setup"

    def _play_strategy(self):
        play = self._task.get_play() if hasattr(self._task, "get_play") else None
        return getattr(play, "strategy", None) if play is not None else None

    def _play_connection(self, inputs, hosts, task_vars):
        """The role's connection (plugins/plugin_utils/site_migration/connection.py): the task's own connection
        options are those module_defaults did not give it."""
        defaults = play_module_defaults(self._task, self._templar, task_vars.get("omit"))
        groups = action_groups(self._task)
        own, _entries = defaults_for(role_connection.fqcn(self.MODULE), defaults, groups)
        args = dict(self._task.args)
        task_options = dict((k, args[k]) for k in API_ARGUMENT_SPEC
                            if args.get(k) is not None and (k not in own or own[k] != args[k]))
        return role_connection.resolve(inputs, hosts, defaults, groups, task_options)

    def run_validated(self, result, params, no_log_values, task_vars):
        spec = params["argument_spec"]
        hosts = play_hosts(task_vars, params["hosts"])
        if not isinstance(spec.get("options"), Mapping) or not spec["options"]:
            result.update(failed=True, msg="site_migration_setup: argument_spec has no options; give it the role's "
                                           "argument spec (argument_specs.main of meta/argument_specs.yml).")
            return result
        if not hosts:
            result.update(failed=True, msg="site_migration_setup: hosts is empty; name the sites' hosts, or leave "
                                           "hosts out for the play batch.")
            return result
        problem = strategy_problem(self._play_strategy())
        if problem:
            result.update(failed=True, msg="site_migration_setup: %s" % problem)
            return result
        seen = {}
        try:
            inputs = read_fleet_variables(self._task, self._templar, task_vars, hosts, list(spec["options"]),
                                          seen=seen, prefixes=PREFIXES)
        except KeyError as missing:
            result.update(failed=True, msg="site_migration_setup: host %r is not in the inventory (hosts)"
                                           % missing.args[0])
            return result
        by_variable = role_secrets_by_variable(inputs, spec)
        secrets = Secrets(set(no_log_values).union(*by_variable.values()))
        host = task_vars.get("inventory_hostname")
        diff = bool(self._task.diff)
        try:
            connection = self._play_connection(inputs, hosts, task_vars)
        except AnsibleError as error:
            result.update(failed=True, msg=secrets.mask("site_migration_setup: the play's module_defaults: %s" % error))
            return result
        keys = connection.api_keys()
        for key in keys:
            secrets.add(key)
        display.v(secrets.mask("[%s] %s" % (host, connection.describe())))

        def progress(line):
            display.display(secrets.mask("[%s] %s" % (host, line)))

        def call(module, args, check_mode, by_field):
            return run_in_controller(module, dict(connection.args_for(module), **args), check_mode=check_mode,
                                     diff=diff, progress=progress, by_field=by_field)

        try:
            fleet, steps = set_up(inputs, hosts, spec, call, task_vars.get("hostvars"), bool(self._task.check_mode),
                                  progress, connection.problems)
        except AnsibleError as error:
            result.update(failed=True, msg=secrets.mask("site_migration_setup: %s" % error))
            return result
        if not connection.problems:
            # A step's message names the connection option it is about by where the role took it from (the
            # connection's own problems, which stop every site before any step, say that themselves).
            for entry in fleet:
                if entry.get("message"):
                    entry["message"] = connection.words(entry["message"])
        changed, warnings, diffs, summary = phase_result(steps, fleet, diff)
        if keys and connection.source("api_key") != role_connection.VARIABLE:
            label = connection.label("api_key")
            by_variable[label if label.startswith("WPCLOUD_") else "api_key (%s)" % label] = keys
        warnings = unknown_variable_warnings(seen, spec["options"]) + short_secret_warnings(by_variable) + warnings
        outcome = {"changed": changed, "steps": summary}
        if warnings:
            outcome["warnings"] = warnings
        if diffs:
            outcome["diff"] = diffs
        created = would_create(steps["new"]["result"]) if self._task.check_mode and "new" in steps else []
        if created:
            # As the site module's action says it (plugins/action/site.py): a later play's role previews them.
            earlier = (task_vars.get("ansible_facts") or {}).get(CHECK_MODE_CREATED_SITES_FACT) or []
            outcome["ansible_facts"] = {CHECK_MODE_CREATED_SITES_FACT: sorted(set(list(earlier) + created))}
        # Masked: warnings, the diffs (which the modules redacted already) and the summary. Shown (with --diff, the
        # sites' diffs; at -v, the whole result): it holds no credential, as tests/reliability/test_rel_secrets.py
        # checks at every verbosity.
        result.update(secrets.mask(outcome))
        # Holds no credential by construction (the line-up resolves none; the steps' results come masked), and
        # is not masked again: a credential that reads like a port or an ID would replace that value.
        result["fleet"] = fleet
        # Whether the role runs its going-live steps at all (a migration without them skips them as one task).
        result["going_live"] = any(may_go_live(entry) for entry in fleet)
        return result
