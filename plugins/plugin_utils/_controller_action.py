# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action-plugin base that serves a module of this collection in the controller process.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

Why: starting a module process costs controller CPU for every task (docs/performance.md, "What a task
costs the controller"), and partners run these tasks for whole fleets. The module's logic is plain code
in module_utils, so the action plugin validates the task arguments against the module's own argument
spec (same object: defaults, choices, mutual exclusions, env fallbacks), runs the logic here, and masks
no_log values in the result with the collection's one masking function, as the classic module path does
(module_utils/api/masking.py). ``wpcloud_hosting_execution: module`` runs the classic module.

The no_log values come from ``masking.no_log_values`` (module_utils/api/masking.py) on the validated parameters, not from the
validation result: ansible-core (2.16 to 2.21) keeps them only in ``ValidationResult._no_log_values``
and ``parameters._list_no_log_values``, both private; its public API (``ArgumentSpecValidator``,
``ValidationResult.validated_parameters``, ``remove_values``, ``set_fallbacks``) has no list of them.

Progress of long waits goes through Ansible's Display: in the worker process that runs this plugin it is
proxied to the main process, which prints it at once (terminal, a pipe, ansible-runner's stdout, where it
becomes a ``verbose`` event, which AWX shows). A classic module process has no such channel.
"""

from __future__ import annotations

import importlib

from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import CONNECTION_VARIABLES
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import (
    no_log_values as spec_no_log_values,
    short_no_log_options,
    short_secret_warning,
)

display = Display()

COLLECTION = "wpcloud.hosting"
EXECUTION_VAR = "wpcloud_hosting_execution"
# Set (true) by the site_migration role for its tasks: each connection option comes from its wpcloud_* variable
# (CONNECTION_VARIABLES) when that is set, over the play's module_defaults, as the role's setup takes it
# (plugins/plugin_utils/site_migration/connection.py). A task argument templated to omit cannot say "the variable,
# else module_defaults": Ansible drops the module_defaults value with it.
ROLE_CONNECTION_VAR = "wpcloud_hosting_role_connection"


def _inject_invocation(task_vars):
    # ansible-core 2.21 made the invocation key opt-in; older cores always add it.
    try:
        return bool(C.config.get_config_value("INJECT_INVOCATION", variables=task_vars))
    except Exception:  # pylint: disable=broad-exception-caught
        return True


def module_file_of(module):
    """The module file of one of the collection's modules (its MODULE_SPEC and run_logic)."""
    return importlib.import_module("ansible_collections.%s.plugins.modules.%s" % (COLLECTION, module))


def _validated(module_spec, args):
    """``args`` checked by a module's spec: the validation (its errors) and the parameters it supports,
    defaults and env fallbacks included."""
    validation = ArgumentSpecValidator(**module_spec).validate(args)
    params = dict((k, v) for k, v in validation.validated_parameters.items()
                  if k not in validation.unsupported_parameters)
    return validation, params


def run_in_controller(module, args, check_mode=False, diff=False, progress=None, by_field=False):
    """One module's logic on ``args`` in this process, as its action plugin runs it: validated by the module's
    own MODULE_SPEC, a spec error or a ModuleFailure as a failed result, masked by the spec's no_log values.
    For the actions that make several modules' calls in one task (site_migration_setup). ``by_field``: ``args``
    hold a migration's fields under the service's names, validated by the module file's FIELD_SPEC and run by
    its FIELD_LOGIC (the migration module's)."""
    module_file = module_file_of(module)
    spec, logic = (module_file.FIELD_SPEC, module_file.FIELD_LOGIC) if by_field else \
        (module_file.MODULE_SPEC, module_file.run_logic)
    validation, params = _validated(spec, args)
    ctx = ModuleContext(params, spec["argument_spec"], check_mode=check_mode, diff=diff, progress=progress)
    return ctx.secrets.mask(_logic_outcome("%s.%s" % (COLLECTION, module), logic, validation, ctx))


def _logic_outcome(fqcn, logic, validation, ctx):
    """The result of a module's logic (or of its spec check), warnings included."""
    if validation.error_messages:
        error = validation.errors[0]
        msg = validation.errors.msg
        if isinstance(error, UnsupportedError):
            msg = "Unsupported parameters for (%s) module: %s" % (fqcn, msg)
        return {"failed": True, "msg": msg}
    try:
        outcome = logic(ctx.params, ctx)
    except ModuleFailure as failure:
        outcome = dict(failure.details)
        outcome.update(failed=True, msg=failure.msg)
    finally:
        ctx.close()
    outcome.setdefault("changed", False)
    if ctx.warnings:
        outcome["warnings"] = ctx.warnings
    return outcome


class _ControllerAction(ActionBase):
    """What every action plugin of the collection is: it runs in the controller process, for the module
    file of its name (MODULE, which subclasses set)."""

    MODULE = None
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def __init_subclass__(cls, **kwargs):
        super(_ControllerAction, cls).__init_subclass__(**kwargs)
        # The module file (and the module_utils it imports) with the action plugin: ansible-playbook's main
        # process loads the plugin to plan each task, so every worker it forks then has them, instead of
        # compiling them again in each task's worker (docs/performance.md, "Fleet cost").
        # An import error is left to the task's run, which reports it.
        if cls.MODULE:
            try:
                module_file_of(cls.MODULE)
            except ImportError:
                pass

    def _module_file(self):
        return module_file_of(self.MODULE)


class ControllerOnlyAction(_ControllerAction):
    """An action plugin that is the whole module (no module process, no API options), such as webhook_ack
    and fleet_vars: the task's arguments validated by the module's MODULE_SPEC, a bad one refused with
    no_log values removed, then ``run_validated``."""

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ControllerOnlyAction, self).run(tmp, task_vars)
        spec = self._module_file().MODULE_SPEC
        validation, params = _validated(spec, dict(self._task.args))
        # Defaults and env fallbacks included: the validated parameters hold them.
        no_log_values = spec_no_log_values(spec["argument_spec"], validation.validated_parameters)
        if validation.error_messages:
            result.update(failed=True, msg=remove_values("; ".join(validation.error_messages), no_log_values))
            return result
        return self.run_validated(result, params, no_log_values, task_vars)

    def run_validated(self, result, params, no_log_values, task_vars):
        raise NotImplementedError


class ControllerModuleAction(_ControllerAction):
    """An API module's action plugin: its logic in the controller process, or the classic module."""

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
        role_connection = self._role_connection(task_vars)
        args, nulls = self._check_mode_nulls(module_file, dict(self._task.args, **role_connection))
        validation, params = _validated(module_file.MODULE_SPEC, args)
        host = task_vars.get("inventory_hostname")
        ctx = ModuleContext(params, module_file.MODULE_SPEC["argument_spec"], check_mode=bool(self._task.check_mode),
                            diff=bool(self._task.diff), progress=lambda line: display.display("[%s] %s" % (host, line)))
        if nulls and not validation.error_messages and any(not params.get(name) for name in nulls):
            # Only null IDs: nothing to call, only what the task would do.
            result.update(changed=module_file.CHECK_MODE_NULLS["changed"], msg=self._nulls_note(module_file, nulls))
            return result
        if execution == "module" and not validation.error_messages:
            result.update(self._execute_module(module_name=fqcn, module_args=args, task_vars=task_vars))
            self._add_nulls_note(result, module_file, nulls)
            return result

        if not validation.error_messages and not role_connection:
            # (The role's setup says it of its own variables, once.)
            for name in short_no_log_options(module_file.MODULE_SPEC["argument_spec"], params):
                ctx.warn(short_secret_warning(name))
        outcome = _logic_outcome(fqcn, module_file.run_logic, validation, ctx)
        self._add_nulls_note(outcome, module_file, nulls)
        if _inject_invocation(task_vars):
            outcome["invocation"] = {"module_args": params}
        result.update(ctx.secrets.mask(outcome))
        return result

    def _role_connection(self, task_vars):
        """The connection options of the wpcloud_* variables that are set, for a task of the site_migration role
        (ROLE_CONNECTION_VAR); nothing for any other task."""
        if not boolean(self._templar.template(task_vars.get(ROLE_CONNECTION_VAR, False)), strict=False):
            return {}
        found = {}
        for option, variable in CONNECTION_VARIABLES.items():
            if variable in task_vars:
                value = self._templar.template(task_vars[variable])
                if value is not None:
                    found[option] = value
        return found

    def _check_mode_nulls(self, module_file, args):
        """In check mode, null items of the module's ID lists (CHECK_MODE_NULLS) stand for IDs that earlier
        tasks only pretended to create; they are left out here (the spec would refuse or convert them) and
        said in the result. Outside check mode they reach the spec, which refuses them."""
        nulls = {}
        declared = getattr(module_file, "CHECK_MODE_NULLS", None)
        if not declared or not self._task.check_mode:
            return args, nulls
        for name in declared["options"]:
            value = args.get(name)
            if isinstance(value, list) and any(item is None for item in value):
                nulls[name] = sum(1 for item in value if item is None)
                args[name] = [item for item in value if item is not None]
        return args, nulls

    @staticmethod
    def _nulls_note(module_file, nulls):
        return "check mode: %s null ID%s in %s (from earlier tasks that ran in check mode and only pretended " \
               "to create them): %s" % (sum(nulls.values()), "" if sum(nulls.values()) == 1 else "s",
                                        " and ".join(sorted(nulls)), module_file.CHECK_MODE_NULLS["note"])

    def _add_nulls_note(self, outcome, module_file, nulls):
        if not nulls or outcome.get("failed"):
            return
        note = self._nulls_note(module_file, nulls)
        outcome["msg"] = "%s; %s" % (outcome["msg"], note) if outcome.get("msg") else note
        outcome["changed"] = bool(outcome.get("changed")) or module_file.CHECK_MODE_NULLS["changed"]
