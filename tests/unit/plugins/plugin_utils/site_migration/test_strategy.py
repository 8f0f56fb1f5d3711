# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role under a strategy that runs each host alone (plugins/plugin_utils/site_migration/strategy.py): refused
before any call, saying which strategy to use and how. Through a real ansible-playbook (strategy: free in the play,
ANSIBLE_STRATEGY=free with migrate_site): tests/system/test_role_in_a_play.py."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.strategy import strategy_problem


@pytest.mark.parametrize("strategy", ["free", "host_pinned"])
def test_free_and_what_is_built_on_it_are_refused_with_the_way_out(strategy):
    problem = strategy_problem(strategy)
    assert problem.startswith("the play runs with strategy %s" % strategy)
    assert "Nothing was written" in problem and "'strategy: linear'" in problem and "ANSIBLE_STRATEGY" in problem
    assert "wpcloud.hosting.migrate_site" in problem


@pytest.mark.parametrize("strategy", ["linear", "debug", "no_such_strategy"])
def test_linear_and_what_is_built_on_it_run(strategy):
    assert strategy_problem(strategy) is None


def test_no_strategy_is_the_configured_default(monkeypatch):
    from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration import strategy as module
    monkeypatch.setattr(module.C, "DEFAULT_STRATEGY", "free")
    assert strategy_problem(None).startswith("the play runs with strategy free")
    monkeypatch.setattr(module.C, "DEFAULT_STRATEGY", "linear")
    assert strategy_problem(None) is None
