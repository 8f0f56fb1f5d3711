# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Runs a module's logic as a classic Ansible module (the path used with wpcloud_hosting_execution=module).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import (
    HAS_REQUESTS,
    REQUESTS_IMPORT_ERROR,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import short_no_log_options, short_secret_warning
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure


def run_module(module_spec, logic):
    """Build the AnsibleModule from the module's spec, run ``logic(params, ctx)``, exit."""
    # Imported here so that the controller-side action plugin, which imports the module file for its
    # argument spec, does not pay for AnsibleModule on every task.
    from ansible.module_utils.basic import AnsibleModule, missing_required_lib

    module = AnsibleModule(supports_check_mode=True, **module_spec)
    if not HAS_REQUESTS:
        module.fail_json(msg=missing_required_lib("requests"), exception=REQUESTS_IMPORT_ERROR)
    ctx = ModuleContext(module.params, module_spec["argument_spec"], check_mode=module.check_mode,
                        diff=module._diff, warn=module.warn)
    for name in short_no_log_options(module_spec["argument_spec"], module.params):
        ctx.warn(short_secret_warning(name))
    exit_json = module.exit_json
    try:
        result = logic(module.params, ctx)
    except ModuleFailure as failure:
        result = dict(failure.details, msg=failure.msg)
        exit_json = module.fail_json
    finally:
        ctx.close()
    # Masked here as on the controller path (AnsibleModule then finds nothing left to mask); it drops
    # the invocation unless the controller asks for it.
    result["invocation"] = {"module_args": module.params}
    exit_json(**ctx.secrets.mask(result))


def refuse_module_process(module_spec, name):
    """The classic ``main()`` of a module that only an action plugin on the controller serves (fleet_vars,
    report_file): a module process has nothing to do but say so."""
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(supports_check_mode=True, **module_spec)
    module.fail_json(msg="wpcloud.hosting.%s runs as an action plugin on the controller; call it as a task of "
                         "a play (it has no module process)." % name)
