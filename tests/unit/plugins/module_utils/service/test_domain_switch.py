# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""service/domain_switch.py without a server: what a site must become (DomainRun.plan) from what it is and what the
task declares - the primary, the old one kept or released, aliases to remove and to add (never the primary), the
actions in the order they are sent - and the contradictions refused."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.domain_switch import DomainRun


def plan(primary="old.example", held=(), **options):
    """The plan for a site whose primary is ``primary`` and whose aliases are ``held``, given the task's options."""
    params = dict({"site": "1001", "aliases_state": "present"}, **options)
    run = DomainRun(params, "acme", ctx=None)
    run.options()
    run.primary, run.aliases = primary, list(held)
    return run.plan()


def test_nothing_to_do():
    result = plan(held=["www.old.example"], domain="old.example", aliases=["www.old.example"])
    assert (result["switch"], result["add"], result["remove"], result["actions"]) == (False, [], [], [])


def test_a_switch_releases_the_old_domain_unless_kept():
    released = plan(domain="new.example")
    assert (released["switch"], released["keep"], released["aliases"]) == (True, False, [])
    kept = plan(domain="new.example", keep_old_domain=True)
    assert kept["aliases"] == ["old.example"] and kept["actions"] == [
        "switch the primary domain old.example -> new.example (the old one kept as an alias)"]


def test_the_old_domain_listed_as_an_alias_means_keep():
    result = plan(domain="new.example", aliases=["old.example", "www.new.example"])
    assert result["keep"] is True and result["add"] == ["www.new.example"]
    assert result["aliases"] == ["old.example", "www.new.example"]


def test_an_alias_promoted_leaves_the_aliases_and_is_not_removed():
    result = plan(held=["new.example", "x.example"], domain="new.example", aliases_state="exact", aliases=["x.example"])
    assert result["remove"] == [] and result["aliases"] == ["x.example"]


def test_exact_removes_what_is_not_listed_and_keeps_a_kept_old_domain():
    result = plan(held=["a.example", "b.example"], domain="new.example", keep_old_domain=True, aliases_state="exact",
                  aliases=["b.example", "c.example"])
    assert (result["remove"], result["add"]) == (["a.example"], ["c.example"])
    assert result["actions"][:2] == ["remove alias a.example", "add alias c.example"]
    assert result["actions"][2].startswith("switch the primary domain")


def test_absent_removes_only_what_is_there():
    result = plan(held=["a.example"], aliases_state="absent", aliases=["a.example", "z.example"])
    assert (result["remove"], result["add"], result["aliases"]) == (["a.example"], [], [])


@pytest.mark.parametrize("options,expected", [
    ({"aliases": ["old.example"]}, "aliases lists old.example, the primary domain of site 1001"),
    ({"aliases": ["old.example"], "aliases_state": "absent"}, "and is never removed as one"),
    ({"domain": "new.example", "keep_old_domain": False, "aliases": ["old.example"]},
     "keep_old_domain=false and aliases_state=present with old.example (the current primary) in aliases"),
    ({"domain": "new.example", "keep_old_domain": True, "aliases": ["old.example"], "aliases_state": "absent"},
     "keep_old_domain=true and aliases_state=absent"),
])
def test_contradictions_are_refused(options, expected):
    with pytest.raises(ModuleFailure) as failure:
        plan(**options)
    assert expected in failure.value.msg
