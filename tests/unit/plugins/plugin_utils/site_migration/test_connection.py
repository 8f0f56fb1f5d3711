# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role's connection (plugins/plugin_utils/site_migration/connection.py): one precedence between the wpcloud_*
variables, the play's module_defaults (a module's own entry over its group's) and the WPCLOUD_* environment; one
connection for every module the role calls, or a refusal before any call that names the sources and the fix.
Through a real ansible-playbook: tests/system/test_role_in_a_play.py."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.defaults import DEFAULT_API_URL
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration import connection as conn

GROUP = "group/wpcloud.hosting.all"
KEY = "play-key-0123456789"
GROUPS = dict((conn.fqcn(m), ["wpcloud.hosting.all"]) for m in conn.ROLE_MODULES + ("client_meta",))
HOSTS = ("a.example", "b.example")


@pytest.fixture(autouse=True)
def no_environment(monkeypatch):
    for name in ("WPCLOUD_API_URL", "WPCLOUD_API_KEY", "WPCLOUD_CA_PATH", "WPCLOUD_VALIDATE_CERTS",
                 "WPCLOUD_RATE_LIMIT"):
        monkeypatch.delenv(name, raising=False)


def resolve(variables=None, defaults=None, task=None, hosts=HOSTS):
    return conn.resolve([dict(variables or {}) for host in hosts], list(hosts), defaults or {}, GROUPS, task)


def every_module(connection, option):
    return set(connection.resolved[m].get(option) for m in conn.ROLE_MODULES)


def test_the_plays_group_module_defaults_reach_every_module_the_role_calls():
    found = resolve(defaults={GROUP: {"api_url": "https://play.example", "api_key": KEY, "ca_path": "/ca.pem"}})
    assert found.problems == []
    assert every_module(found, "api_url") == {"https://play.example"} and every_module(found, "api_key") == {KEY}
    assert found.args_for("migration") == {"api_url": "https://play.example", "api_key": KEY, "ca_path": "/ca.pem"}
    assert found.source("api_url") == GROUP
    assert KEY not in found.describe() and "https://play.example from module_defaults for %s" % GROUP \
        in found.describe()


@pytest.mark.parametrize("given, expected, source", [
    # the variable over module_defaults over the environment over the default
    ({"variables": {"wpcloud_api_url": "https://var.example"}}, "https://var.example", conn.VARIABLE),
    ({}, "https://group.example", GROUP),
    ({"group": False}, "https://env.example", "WPCLOUD_API_URL"),
    ({"group": False, "env": False}, DEFAULT_API_URL, conn.DEFAULT),
    # the setup task's own argument (outside the role) over everything
    ({"task": {"api_url": "https://task.example"}, "variables": {"wpcloud_api_url": "https://var.example"}},
     "https://task.example", conn.TASK),
])
def test_one_precedence(monkeypatch, given, expected, source):
    if given.get("env", True):
        monkeypatch.setenv("WPCLOUD_API_URL", "https://env.example")
    defaults = {"wpcloud.hosting.site_info": {"api_key": KEY}}
    for module in conn.ROLE_MODULES:
        defaults[conn.fqcn(module)] = {"api_key": KEY}
    if given.get("group", True):
        defaults[GROUP] = {"api_url": "https://group.example"}
    found = resolve(given.get("variables"), defaults, given.get("task"))
    assert found.problems == [] and every_module(found, "api_url") == {expected} and found.source("api_url") == source


def test_a_modules_own_entry_over_its_groups_when_every_module_the_role_calls_gets_the_same():
    defaults = {GROUP: {"api_url": "https://group.example", "api_key": KEY, "timeout": 30}}
    defaults.update((conn.fqcn(m), {"api_url": "https://own.example"}) for m in conn.ROLE_MODULES)
    # A timeout for one module only is that module's: it says nothing about where the calls go.
    defaults[conn.fqcn("migration_ready")]["timeout"] = 120
    found = resolve(defaults=defaults)
    assert found.problems == [] and every_module(found, "api_url") == {"https://own.example"}
    assert found.resolved["migration_ready"]["timeout"] == 120 and found.resolved["site"]["timeout"] == 30


def test_module_defaults_for_one_module_only_would_split_the_calls_and_are_refused():
    found = resolve(defaults={GROUP: {"api_key": KEY}, "wpcloud.hosting.site": {"api_url": "https://site-only.example"}})
    assert len(found.problems) == 1
    problem = found.problems[0]
    assert "different api_url values" in problem and "https://site-only.example from module_defaults for " \
        "wpcloud.hosting.site for wpcloud.hosting.site" in problem
    assert "%s from the default" % DEFAULT_API_URL in problem
    assert "set api_url once for the play, in module_defaults for %s, or set wpcloud_api_url" % GROUP in problem


def test_keys_that_differ_are_refused_without_showing_either():
    found = resolve(defaults={GROUP: {"api_url": "https://play.example", "api_key": KEY},
                              "wpcloud.hosting.migration": {"api_key": "another-key-987654321"}})
    assert any("different api_key values" in p for p in found.problems)
    assert KEY not in " ".join(found.problems) and "another-key-987654321" not in " ".join(found.problems)


def test_the_default_address_while_the_play_names_another_for_other_modules_is_refused():
    found = resolve(variables={"wpcloud_api_key": KEY},
                    defaults={"wpcloud.hosting.client_meta": {"api_url": "https://meta-only.example"}})
    assert found.problems == ["the role would use the default api_url (%s), but the play's module_defaults set "
                              "api_url only for wpcloud.hosting.client_meta, not for the modules this role calls: set "
                              "it in module_defaults for %s, or set wpcloud_api_url" % (DEFAULT_API_URL, GROUP)]


def test_no_key_from_any_source_names_every_way_that_works_for_the_role():
    found = resolve(defaults={GROUP: {"api_url": "https://play.example"}})
    assert found.problems == [conn.ROLE_MISSING_KEY]
    assert "wpcloud_api_key" in conn.ROLE_MISSING_KEY and "module_defaults for %s" % GROUP in conn.ROLE_MISSING_KEY \
        and "WPCLOUD_API_KEY" in conn.ROLE_MISSING_KEY


def test_a_variable_that_differs_between_the_sites_is_refused_and_a_key_is_never_shown():
    found = conn.resolve([{"wpcloud_api_url": "https://a.example", "wpcloud_api_key": KEY},
                          {"wpcloud_api_url": "https://b.example", "wpcloud_api_key": "other-key-0123456"},
                          {"wpcloud_api_key": KEY}], ["a", "b", "c"], {}, GROUPS)
    text = " ".join(found.problems)
    assert "wpcloud_api_url differs between the sites of this play ('https://a.example' for a; " \
           "'https://b.example' for b; unset for c)" in text
    assert "wpcloud_api_key differs between the sites of this play (one value for a, c; one value for b)" in text
    assert KEY not in text and "other-key-0123456" not in text


def test_a_bad_value_is_named_by_where_it_came_from():
    found = resolve(variables={"wpcloud_api_key": KEY}, defaults={GROUP: {"api_url": "https://x.example/api/v1.0"}})
    assert found.problems == ["api_url of the play's module_defaults for %s ends in /api/v1.0, which the collection "
                              "adds itself: give the service's base URL, such as https://x.example." % GROUP]
    found = resolve(variables={"wpcloud_api_key": "  ", "wpcloud_api_url": "https://x.example"})
    assert found.problems[0].startswith("wpcloud_api_key is empty")


def test_a_message_names_the_option_by_its_source():
    by_group = resolve(defaults={GROUP: {"api_url": "https://play.example", "api_key": KEY}})
    assert by_group.words("Could not reach x; check wpcloud_api_url (the base URL)") == \
        "Could not reach x; check api_url of the play's module_defaults for %s (the base URL)" % GROUP
    by_variable = resolve(variables={"wpcloud_api_url": "https://var.example", "wpcloud_api_key": KEY})
    assert by_variable.words("check api_url and wpcloud_api_url") == "check wpcloud_api_url and wpcloud_api_url"
    by_default = resolve(variables={"wpcloud_api_key": KEY})
    assert by_default.words("check wpcloud_api_url") == (
        "check api_url (unset, so the default; set wpcloud_api_url, or api_url in the play's module_defaults for %s, "
        "or WPCLOUD_API_URL)" % GROUP)
