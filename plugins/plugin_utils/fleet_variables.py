# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Every host's variables as its own run of a task would see them, read in one task on the controller
(the actions fleet_vars and site_migration_setup).

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

A task that runs for each host costs the controller a worker process per host (docs/performance.md,
"What a task costs the controller"); ``hostvars`` does not show role defaults, role parameters nor play
or block vars. Ansible's variable manager gives each host's variables exactly as that host's own run of
the task would get them (the same call the strategy makes).
"""

from __future__ import annotations

from ansible.errors import AnsibleError


def _variable_manager(task_vars, action):
    """The play's VariableManager. Ansible gives an action plugin no public handle on it; the
    ``hostvars`` it passes holds it (ansible-core 2.16 to 2.21)."""
    hostvars = task_vars.get("hostvars")
    manager = getattr(hostvars, "_variable_manager", None)
    inventory = getattr(hostvars, "_inventory", None)
    if manager is None or inventory is None:
        raise AnsibleError("%s: this version of ansible-core gives no variable manager to action plugins; "
                           "resolve the variables with a task per host (ansible.builtin.set_fact) instead." % action)
    return manager, inventory


def play_hosts(task_vars, hosts=None):
    """The hosts to read: those given, else the play batch."""
    return list(hosts) if hosts is not None else list(task_vars.get("ansible_play_batch") or [])


def read_fleet_variables(task, templar, task_vars, hosts, names, seen=None, prefixes=()):
    """One dict per host of ``hosts``, in order: the variables of ``names`` defined for it, templated in its
    context. ``task`` and ``templar`` are the running action's; a host that is not in the inventory raises
    KeyError with its name. ``seen`` (a dict), when given, gets ``{variable: [host, ...]}`` of every variable
    whose name starts with one of ``prefixes`` (not templated: names only)."""
    # The play's host lists, as the strategy passes them (without them each call would list them again).
    batch = task_vars.get("ansible_play_batch")
    hosts_all = task_vars.get("ansible_play_hosts_all")
    manager, inventory = _variable_manager(task_vars, task.action)
    play = task.get_play()
    found = []
    for name in hosts:
        host = inventory.get_host(name)
        if host is None:
            raise KeyError(name)
        variables = manager.get_vars(play=play, host=host, task=task, _hosts=batch, _hosts_all=hosts_all)
        if seen is not None:
            for var in variables:
                if isinstance(var, str) and var.startswith(prefixes):
                    seen.setdefault(var, []).append(name)
        host_templar = templar.copy_with_new_env(available_variables=variables)
        found.append(dict((var, host_templar.template(variables[var])) for var in names if var in variables))
    return found
