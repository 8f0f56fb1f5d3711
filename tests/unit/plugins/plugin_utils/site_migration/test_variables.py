# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""A misspelt variable of the role (plugins/plugin_utils/site_migration/variables.py): one warning per variable,
naming the closest one the role knows; every variable the role, its playbooks and the collection use never warns.
Through a real ansible-playbook: tests/system/test_role_in_a_play.py."""

from __future__ import annotations

import re
from pathlib import Path

from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import CONNECTION_VARIABLES
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.variables import (
    PREFIXES,
    unknown_variable_warnings,
)
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration import fleet_builders as fb

ROOT = Path(__file__).resolve().parents[5]
OPTIONS = fb.SPEC["options"]


def test_a_misspelt_variable_warns_once_naming_the_one_meant():
    seen = {"site_migration_confirm_overwite": ["a.example", "b.example", "c.example", "d.example"],
            "site_migration_remote_usr": ["a.example"]}
    assert unknown_variable_warnings(seen, OPTIONS) == [
        "site_migration_confirm_overwite (set for a.example, b.example, c.example and 1 more) is not a variable of the "
        "role wpcloud.hosting.site_migration and is ignored: did you mean site_migration_confirm_overwrite?",
        "site_migration_remote_usr (set for a.example) is not a variable of the role wpcloud.hosting.site_migration "
        "and is ignored: did you mean site_migration_remote_user?"]


def test_a_name_far_from_any_says_where_the_variables_are_listed():
    warnings = unknown_variable_warnings({"site_migration_colour": ["a"]}, OPTIONS)
    assert warnings == ["site_migration_colour (set for a) is not a variable of the role "
                        "wpcloud.hosting.site_migration and is ignored: the role's variables are listed by ansible-doc "
                        "-t role wpcloud.hosting.site_migration."]


def test_the_collections_namespace_warns_only_for_a_near_miss_of_a_connection_variable():
    seen = {"wpcloud_api_ur": ["a"], "wpcloud_apikey": ["a"], "wpcloud_site_id": ["a"], "wpcloud_space_used": ["a"],
            "wpcloud_domain": ["a"], "wpcloud_client": ["a"], "wpcloud_webhook_url": ["a"]}
    warnings = unknown_variable_warnings(seen, OPTIONS)
    assert [w.split(" ")[0] for w in warnings] == ["wpcloud_api_ur", "wpcloud_apikey"]
    assert warnings[0].endswith("did you mean wpcloud_api_url?") and warnings[1].endswith("did you mean wpcloud_api_key?")


def test_known_variables_never_warn():
    names = set(OPTIONS) | set(CONNECTION_VARIABLES.values())
    # Every variable the collection's roles, playbooks and plugins name (outputs, facts, internals, the playbooks'
    # own, the sites inventory's host variables), as a play's sites may hold them.
    for folder in ("roles", "playbooks", "plugins", "extensions"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".yml", ".yaml", ".py", ".j2") and path.name != "variables.py":  # (its misspellings)
                names |= set(re.findall(r"\b(?:%s)[a-z0-9_]*[a-z0-9]\b" % "|".join(PREFIXES), path.read_text()))
    assert "site_migration_report_file" in names and "wpcloud_webhook_url" in names   # the scan found them
    # not variables: the role's filters and modules
    names -= {"site_migration_lineup", "site_migration_step", "site_migration_report_name", "site_migration_waiting",
              "site_migration_report_merge", "site_migration_setup", "site_migration_recap"}
    names -= {"site_migration_stopped"}     # a group
    seen = dict((name, ["a.example"]) for name in names)
    assert unknown_variable_warnings(seen, OPTIONS) == []
