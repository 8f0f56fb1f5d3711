# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The filters of the role wpcloud.hosting.site_migration, each documented in the .yml file of its name
next to this one. The decisions are in plugins/plugin_utils/site_migration/ (one file per phase):

* ``site_migration_lineup`` (``inputs.py``): every site's inputs, as ``wpcloud.hosting.fleet_vars`` read them,
  checked (the role's argument spec, empty values, the rules between variables) and resolved against
  its source host; one entry per site, no secret. The role runs the same code in its setup task
  (``wpcloud.hosting.site_migration_setup``, ``setup_phase.py``), with the steps up to the key install.
* ``site_migration_step`` (``steps.py``): the arguments of one step's module call for the sites that take
  it, and the fleet that took in the result of the step before (``outcomes.py``); the role uses it for the
  key install, the preflights and the runs; ``stop``: the recap.
* ``site_migration_report``, ``site_migration_report_name``, ``site_migration_report_merge``
  (``report.py``): the report of a run, its file name, and one report from those of AWX job slices.
* ``site_migration_waiting`` (``inputs.py``): the destinations the role created and left to their
  ``site_provisioned`` webhook, for the playbook that event runs.
* ``site_migration_domain_event`` (``domain_event.py``): what a ``domain_name_changed`` event says of the role's sites
  (a cutover confirmed, WordPress's siteurl following or not), for the playbook that event runs.
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.domain_event import domain_event
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.inputs import lineup, waiting
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.report import (
    merge_reports,
    report,
    report_name,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments


class FilterModule:
    """The workflow of the role wpcloud.hosting.site_migration."""

    def filters(self):
        return {
            "site_migration_lineup": lineup,
            "site_migration_step": step_arguments,
            "site_migration_report": report,
            "site_migration_report_merge": merge_reports,
            "site_migration_report_name": report_name,
            "site_migration_waiting": waiting,
            "site_migration_domain_event": domain_event,
        }
