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

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.plugins.action import ActionBase

from ansible_collections.wpcloud.hosting.plugins.module_utils import _webhook_ack as ack
from ansible_collections.wpcloud.hosting.plugins.modules.webhook_ack import MODULE_SPEC


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars or {})
        validation = ArgumentSpecValidator(**MODULE_SPEC).validate(dict(self._task.args))
        no_log_values = set(validation._no_log_values)
        if validation.error_messages:
            result.update(failed=True, msg=remove_values("; ".join(validation.error_messages), no_log_values))
            return result
        params = dict((k, v) for k, v in validation.validated_parameters.items()
                      if k not in validation.unsupported_parameters)
        try:
            outcome = ack.run(params, check_mode=self._task.check_mode)
        except ack.AckError as exc:
            outcome = {"failed": True, "msg": str(exc)}
        preserved = dict((k, v) for k, v in outcome.items() if v is None or isinstance(v, bool))
        outcome = remove_values(outcome, no_log_values)
        outcome.update(preserved)
        result.update(outcome)
        return result
