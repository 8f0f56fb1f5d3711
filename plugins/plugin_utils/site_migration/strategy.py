# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Whether the play's strategy runs the role's fleet-wide steps once: the role's steps for all sites are tasks with
``run_once``, which the free strategy (and those built on it: host_pinned) does not honour. Under such a strategy
every site would run the setup for the whole fleet at the same time (sites created, migrations created and allowed
once per site, racing each other), so the role refuses before any call and says which strategy to use and how.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from ansible import constants as C
from ansible.plugins.loader import strategy_loader
from ansible.plugins.strategy.free import StrategyModule as FreeStrategy

PER_HOST_MESSAGE = (
    "the play runs with strategy %s, under which run_once does not hold: each site would run the role's steps for "
    "the whole fleet at the same time (every site created, allowed and given a migration once per site). Nothing was "
    "written. Run the role in a play with 'strategy: linear' (the play keyword wins over the strategy of ansible.cfg "
    "and ANSIBLE_STRATEGY), or run the playbook wpcloud.hosting.migrate_site, which sets it.")


def runs_each_host_alone(strategy):
    """True when ``strategy`` (a name; None: the configured default) is free or built on it. An unknown one is
    given the benefit of the doubt: Ansible refuses a strategy it cannot load before any task."""
    name = strategy or C.DEFAULT_STRATEGY
    try:
        found = strategy_loader.get(name, class_only=True)
    except Exception:  # pylint: disable=broad-exception-caught
        found = None
    return isinstance(found, type) and issubclass(found, FreeStrategy)


def strategy_problem(strategy):
    """The refusal of the role under ``strategy``, or None when run_once holds under it."""
    if runs_each_host_alone(strategy):
        return PER_HOST_MESSAGE % (strategy or C.DEFAULT_STRATEGY)
    return None
