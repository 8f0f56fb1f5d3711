# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of wpcloud.hosting.fleet_vars: every host's variables in one task, read through Ansible's
variable manager (plugins/plugin_utils/fleet_variables.py): one worker for the whole play."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import ControllerOnlyAction
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.fleet_variables import play_hosts, read_fleet_variables


class ActionModule(ControllerOnlyAction):
    MODULE = "fleet_vars"

    def run_validated(self, result, params, no_log_values, task_vars):
        hosts = play_hosts(task_vars, params["hosts"])
        if not hosts:
            result.update(failed=True, msg="fleet_vars: hosts is empty; name the hosts to read, or leave hosts out "
                                           "for the play batch.")
            return result
        try:
            found = read_fleet_variables(self._task, self._templar, task_vars, hosts, params["names"])
        except KeyError as missing:
            result.update(failed=True, msg="fleet_vars: host %r is not in the inventory (hosts)" % missing.args[0])
            return result
        result.update(changed=False, hosts=hosts, host_vars=found)
        return result
