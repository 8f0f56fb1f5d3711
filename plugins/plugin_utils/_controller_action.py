# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action-plugin base that serves a module of this collection in the controller process.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

Why: starting a module process costs about 0.34 CPU-seconds per task on the controller, and partners
run these tasks for whole fleets. The module's logic is plain code in module_utils, so the action
plugin validates the task arguments against the module's own argument spec (same object: defaults,
choices, mutual exclusions, env fallbacks), runs the logic here, and masks no_log values in the result
exactly as AnsibleModule.exit_json does. ``wpcloud_hosting_execution: module`` runs the classic module.
"""

from __future__ import annotations

import importlib

from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase

from ansible_collections.wpcloud.hosting.plugins.module_utils._common import (
    ModuleContext,
    ModuleFailure,
)

COLLECTION = "wpcloud.hosting"
EXECUTION_VAR = "wpcloud_hosting_execution"


def _inject_invocation(task_vars):
    # ansible-core 2.21 made the invocation key opt-in; older cores always add it.
    try:
        return bool(C.config.get_config_value("INJECT_INVOCATION", variables=task_vars))
    except Exception:  # pylint: disable=broad-exception-caught
        return True


class ControllerModuleAction(ActionBase):
    """Subclasses set MODULE to the module's short name."""

    MODULE = None
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def _module_file(self):
        return importlib.import_module("ansible_collections.%s.plugins.modules.%s" % (COLLECTION, self.MODULE))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ControllerModuleAction, self).run(tmp, task_vars)
        fqcn = "%s.%s" % (COLLECTION, self.MODULE)
        execution = self._templar.template(task_vars.get(EXECUTION_VAR, "controller"))
        if execution not in ("controller", "module"):
            result.update(failed=True, msg="%s must be 'controller' or 'module', got %r." % (EXECUTION_VAR, execution))
            return result

        # Validated here on both paths, so that bad arguments never reach a module process and the
        # value of a misspelled option (a secret under a wrong name is not known to be no_log) is never
        # echoed back in the invocation.
        module_file = self._module_file()
        validator = ArgumentSpecValidator(**module_file.MODULE_SPEC)
        validation = validator.validate(dict(self._task.args))
        no_log_values = set(validation._no_log_values)
        params = dict((k, v) for k, v in validation.validated_parameters.items()
                      if k not in validation.unsupported_parameters)
        if execution == "module" and not validation.error_messages:
            result.update(self._execute_module(module_name=fqcn, module_args=dict(self._task.args),
                                               task_vars=task_vars))
            return result

        outcome = self._run_logic(fqcn, module_file, validation, params, no_log_values)
        if _inject_invocation(task_vars):
            outcome["invocation"] = {"module_args": params}

        # Same masking as AnsibleModule._return_formatted: bools and None survive.
        preserved = dict((k, v) for k, v in outcome.items() if v is None or isinstance(v, bool))
        outcome = remove_values(outcome, no_log_values)
        outcome.update(preserved)
        result.update(outcome)
        return result

    def _run_logic(self, fqcn, module_file, validation, params, no_log_values):
        if validation.error_messages:
            error = validation.errors[0]
            msg = validation.errors.msg
            if isinstance(error, UnsupportedError):
                msg = "Unsupported parameters for (%s) module: %s" % (fqcn, msg)
            return {"failed": True, "msg": msg}
        warnings = []
        ctx = ModuleContext(params, check_mode=bool(self._task.check_mode), diff=bool(self._task.diff),
                            warn=warnings.append)
        try:
            outcome = module_file.run_logic(params, ctx)
        except ModuleFailure as failure:
            outcome = dict(failure.details)
            outcome.update(failed=True, msg=failure.msg)
        finally:
            ctx.close()
            no_log_values.update(ctx.no_log_values)
        outcome.setdefault("changed", False)
        if warnings:
            outcome["warnings"] = warnings
        return outcome
