# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role's summary (roles/site_migration/templates/summary.txt.j2) rendered by Ansible's own template
lookup, as the task "Show the migration report" renders it (trim_blocks on)."""

from __future__ import annotations

import os

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader
from ansible.template import Templar

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.report import report as run_report
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import CREATED, DONE, EXISTING

TEMPLATE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "site_migration", "templates",
                        "summary.txt.j2")


def _summary(report):
    loader = DataLoader()
    variables = {"site_migration_report": report}
    lookup = lookup_loader.get("template", loader=loader, templar=Templar(loader=loader, variables=variables))
    return lookup.run([os.path.abspath(TEMPLATE)], variables)[0].splitlines()


def _fleet(results, destination):
    return [{"host": "h%d" % i, "site": "s%d.example" % i, "stage": DONE, "result": result,
             "destination": destination, "new_site": {"site_id": None}, "message": ""}
            for i, result in enumerate(results)]


@pytest.mark.parametrize("results", [["succeeded", "succeeded"], ["checked", "checked", "checked"]])
def test_the_counts_and_the_destinations_are_two_lines(results):
    fleet = _fleet(results, CREATED)
    report = run_report(fleet, [s["host"] for s in fleet])
    lines = _summary(report)
    assert lines[0] == "site_migration: %d site(s): %d %s" % (len(results), len(results), results[0])
    assert lines[1] == "destinations: %d created by this run (allow_site_migration at creation), 0 existing" \
        % len(results)


def test_without_created_destinations_the_sites_follow_the_counts():
    fleet = _fleet(["succeeded", "left_alone"], EXISTING)
    lines = _summary(run_report(fleet, [s["host"] for s in fleet]))
    assert lines[0] == "site_migration: 2 site(s): 1 left_alone, 1 succeeded"
    assert lines[1] == ""
    assert lines[2].startswith("s0.example")
