# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role's filters (plugins/filter/site_migration.py): the names the role calls, wired to the decisions of
plugins/plugin_utils/site_migration/ (whose tests are in tests/unit/plugins/plugin_utils/site_migration/)."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.filter import site_migration as sm
from ansible_collections.wpcloud.hosting.plugins.module_utils.service import vocabulary
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration import (
    domain_event,
    inputs,
    outcomes,
    report,
    stages,
    steps,
)


def test_the_filters_are_registered():
    assert sm.FilterModule().filters() == {"site_migration_lineup": inputs.lineup,
                                           "site_migration_step": steps.step_arguments,
                                           "site_migration_report": report.report,
                                           "site_migration_waiting": inputs.waiting,
                                           "site_migration_report_merge": report.merge_reports,
                                           "site_migration_report_name": report.report_name,
                                           "site_migration_domain_event": domain_event.domain_event}


def test_the_vocabulary_comes_from_module_utils():
    for module, names in ((outcomes, ("RUNNING_STATES", "FAILED_STATES", "MIGRATION_SUCCEEDED", "TICKET_TERMINAL",
                                      "SECRET_PARAMS")),
                          (inputs, ("SITE_VALUE_RULES",)),
                          (stages, ("ROLE_VARIABLES",)), (steps, ("ROLE_VARIABLES", "ROLE_FIELDS", "SECRET_PARAMS"))):
        for name in names:
            assert getattr(module, name) is getattr(vocabulary, name), name
