# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of wpcloud.hosting.site_migration_recap: one site's outcome of the fleet run, for the play
recap (the site_migration role's one task per site).

Its arguments hold no template: ``ansible.builtin.assert`` with ``fail_msg`` and ``changed_when`` compiled
three Jinja templates in every site's worker process (what that cost: docs/performance.md, "The play
recap: no template per site").
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import ControllerOnlyAction


def site_outcome(recap, host):
    """(failed, changed, msg) of ``host`` in the fleet's ``recap`` (stopped: host -> message, changed:
    host -> true), as the assert of tasks/stop.yml decided it."""
    stopped = recap.get("stopped") or {}
    if host in stopped:
        return True, False, stopped[host]
    return False, host in (recap.get("changed") or {}), None


def cutover_words(recap, host):
    """What the site's line says of its cutover (cutover: host -> words), or None."""
    return (recap.get("cutover") or {}).get(host)


class ActionModule(ControllerOnlyAction):
    MODULE = "site_migration_recap"

    def run_validated(self, result, params, no_log_values, task_vars):
        name = params["var"]
        if name not in task_vars:
            result.update(failed=True, msg="site_migration_recap: var names %r, which is not defined for this host; "
                                           "name the variable that holds the fleet's outcome (the site_migration "
                                           "role sets site_migration__recap)." % name)
            return result
        recap = task_vars[name]
        if not isinstance(recap, Mapping):
            recap = self._templar.template(recap)    # a variable that is itself a template
        if not isinstance(recap, Mapping):
            result.update(failed=True, msg="site_migration_recap: var %r must hold a dict with stopped and changed, "
                                           "got %s." % (name, type(recap).__name__))
            return result
        host = task_vars.get("inventory_hostname")
        failed, changed, msg = site_outcome(recap, host)
        result["changed"] = changed
        words = cutover_words(recap, host)
        if words:
            # Shown on the site's line at every verbosity (as debug's msg), and in AWX's event of the host.
            if not failed:
                result.update(msg=words, _ansible_verbose_always=True)
        if failed:
            result.update(failed=True, msg=msg)
        return result
