# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The play's module_defaults as Ansible applies them (plugins/plugin_utils/module_defaults.py): merged entry by entry
from the play down to the innermost block, templated, 2.16's omit placeholder left out, then a module's groups'
entries and its own over them. Through a real ansible-playbook: tests/system/test_role_in_a_play.py."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.module_defaults import (
    action_groups,
    defaults_for,
    play_module_defaults,
)

GROUP = "group/wpcloud.hosting.all"
OMIT = "__omit_place_holder__1234"


class Templar(object):
    """Templates "{{ name }}" from its variables, as the running host's templar does."""

    def __init__(self, variables):
        self.variables = variables

    def template(self, value):
        if isinstance(value, dict):
            return dict((k, self.template(v)) for k, v in value.items())
        if isinstance(value, str) and value.startswith("{{ "):
            return self.variables[value[3:-3]]
        return value


def test_an_inner_block_replaces_an_entry_of_the_play_whole_and_omit_is_left_out():
    task = SimpleNamespace(module_defaults=[
        {GROUP: {"api_url": "{{ url }}", "api_key": "{{ key }}"}, "wpcloud.hosting.site": {"timeout": 5}},
        {GROUP: {"api_url": "https://inner.example", "ca_path": OMIT}},
    ])
    found = play_module_defaults(task, Templar({"url": "https://play.example", "key": "k-123456"}), OMIT)
    # Ansible replaces the play's entry with the block's: api_key is gone, as it is for a task there.
    assert found == {GROUP: {"api_url": "https://inner.example"}, "wpcloud.hosting.site": {"timeout": 5}}


def test_a_task_without_module_defaults_has_none():
    assert play_module_defaults(SimpleNamespace(), Templar({})) == {}
    assert action_groups(SimpleNamespace()) == {}


def test_a_module_gets_its_groups_entries_then_its_own_over_them():
    defaults = {GROUP: {"api_url": "https://group.example", "timeout": 30},
                "wpcloud.hosting.site": {"timeout": 5},
                "group/other.collection.all": {"api_url": "https://other.example"}}
    groups = {"wpcloud.hosting.site": ["wpcloud.hosting.all"], "wpcloud.hosting.migration": ["wpcloud.hosting.all"]}
    assert defaults_for("wpcloud.hosting.site", defaults, groups) == (
        {"api_url": "https://group.example", "timeout": 5}, {"api_url": GROUP, "timeout": "wpcloud.hosting.site"})
    migration, _entries = defaults_for("wpcloud.hosting.migration", defaults, groups)
    assert migration == {"api_url": "https://group.example", "timeout": 30}
    # Not in the group (as the play resolved it): only its own entry.
    assert defaults_for("wpcloud.hosting.fleet_vars", defaults, groups) == ({}, {})


def test_the_groups_are_those_the_play_resolved():
    play = SimpleNamespace(_action_groups={"wpcloud.hosting.site": ["wpcloud.hosting.all"]})
    task = SimpleNamespace(get_play=lambda: play)
    assert action_groups(task) == {"wpcloud.hosting.site": ["wpcloud.hosting.all"]}
