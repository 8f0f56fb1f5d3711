# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import CHECK_MODE_CREATED_SITES_FACT
from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import ControllerModuleAction


def would_create(result):
    """The domains a check-mode result of the site module says it would create."""
    items = result.get("results") if isinstance(result.get("results"), list) else [result]
    return [str(r["domain"]).strip().lower() for r in items if isinstance(r, Mapping) and r.get("domain")
            and r.get("operation") == "create" and r.get("site_id") is None and not r.get("failed")]


class ActionModule(ControllerModuleAction):
    MODULE = "site"

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        if not self._task.check_mode or result.get("failed"):
            return result
        domains = would_create(result)
        if domains:
            # A fact, so that a later play's role (wpcloud.hosting.site_migration) previews these sites
            # as about to exist; kept across site tasks of the run (facts replace, so merged here).
            earlier = ((task_vars or {}).get("ansible_facts") or {}).get(CHECK_MODE_CREATED_SITES_FACT) or []
            result["ansible_facts"] = {CHECK_MODE_CREATED_SITES_FACT: sorted(set(list(earlier) + domains))}
        return result
