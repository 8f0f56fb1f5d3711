# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of wpcloud.hosting.fleet_vars: every host's variables in one task.

A task that runs for each host costs the controller a worker process per host (docs/performance.md,
"What a task costs the controller"); ``hostvars`` does not show role defaults, role
parameters nor play or block vars. This plugin asks Ansible's variable manager for each host's
variables exactly as that host's own run of this task would get them (the same call the strategy
makes), and templates the names asked for: one worker for the whole play.
"""

from __future__ import annotations

from ansible.errors import AnsibleError

from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import ControllerOnlyAction


def _variable_manager(task_vars):
    """The play's VariableManager. Ansible gives an action plugin no public handle on it; the
    ``hostvars`` it passes holds it (ansible-core 2.16 to 2.21)."""
    hostvars = task_vars.get("hostvars")
    manager = getattr(hostvars, "_variable_manager", None)
    inventory = getattr(hostvars, "_inventory", None)
    if manager is None or inventory is None:
        raise AnsibleError("fleet_vars: this version of ansible-core gives no variable manager to action plugins; "
                           "resolve the variables with a task per host (ansible.builtin.set_fact) instead.")
    return manager, inventory


class ActionModule(ControllerOnlyAction):
    MODULE = "fleet_vars"

    def run_validated(self, result, params, no_log_values, task_vars):
        # The play's host lists, as the strategy passes them (without them each call would list them again).
        batch = task_vars.get("ansible_play_batch")
        hosts_all = task_vars.get("ansible_play_hosts_all")
        hosts = params["hosts"] if params["hosts"] is not None else (batch or [])
        if not hosts:
            result.update(failed=True, msg="fleet_vars: hosts is empty; name the hosts to read, or leave hosts out "
                                           "for the play batch.")
            return result
        manager, inventory = _variable_manager(task_vars)
        play = self._task.get_play()
        found = []
        for name in hosts:
            host = inventory.get_host(name)
            if host is None:
                result.update(failed=True, msg="fleet_vars: host %r is not in the inventory (hosts)" % name)
                return result
            variables = manager.get_vars(play=play, host=host, task=self._task, _hosts=batch, _hosts_all=hosts_all)
            templar = self._templar.copy_with_new_env(available_variables=variables)
            found.append(dict((var, templar.template(variables[var])) for var in params["names"] if var in variables))
        result.update(changed=False, hosts=list(hosts), host_vars=found)
        return result
