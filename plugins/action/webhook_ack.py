# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of wpcloud.hosting.webhook_ack: the acknowledgement is recorded on the controller.

ansible-rulebook runs a playbook on the machine of the event source, whatever hosts the play targets:
the controller holds the spool, so the acknowledgement is recorded here, for any host and without a
module process (the last task of every event's playbook).
"""

from __future__ import annotations

from ansible.module_utils.common.parameters import remove_values

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import ack
from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import ControllerOnlyAction


class ActionModule(ControllerOnlyAction):
    MODULE = "webhook_ack"

    def run_validated(self, result, params, no_log_values, task_vars):
        try:
            outcome = ack.run(params, check_mode=self._task.check_mode)
        except ack.AckError as exc:
            outcome = {"failed": True, "msg": str(exc)}
        preserved = dict((k, v) for k, v in outcome.items() if v is None or isinstance(v, bool))
        outcome = remove_values(outcome, no_log_values)
        outcome.update(preserved)
        result.update(outcome)
        return result
