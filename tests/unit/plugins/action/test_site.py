# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""wpcloud.hosting.site's action (plugins/action/site.py) on the fake service: in check mode it keeps the sites it
would create in a fact (wpcloud_check_mode_created_sites, merged with what earlier site tasks kept) for a later
play's role to preview; a real run or a failed task sets none. The module's logic: tests/unit/plugins/modules/
test_site.py; the role's preview of those sites: plugin_utils/site_migration/test_check_mode_preview.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.wpcloud.hosting.plugins.action.site import ActionModule
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import CHECK_MODE_CREATED_SITES_FACT
from ansible_collections.wpcloud.hosting.plugins.plugin_utils import _controller_action
from ansible_collections.wpcloud.hosting.tests.unit.plugins.action_doubles import Templar

ADMIN = {"client": "acme", "admin_user": "shopadmin", "admin_email": "a@shop.example", "admin_pass": "Adm1n-pass-of-the-shop"}


@pytest.fixture()
def run(fake_api, monkeypatch):
    """run(args, check_mode=False, facts=None): the site action's result, its task on the fake service."""
    monkeypatch.setattr(_controller_action.C.config, "get_config_value", lambda name, variables=None: False)

    def run(args, check_mode=False, facts=None):
        args = dict({"api_url": fake_api.url, "api_key": fake_api.api_key}, **args)
        task = SimpleNamespace(args=args, check_mode=check_mode, diff=False, async_val=0, action="wpcloud.hosting.site")
        action = ActionModule(task, SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent")), None, None,
                              Templar(), None)
        return action.run(task_vars={"inventory_hostname": "localhost", "ansible_facts": facts or {}})
    return run


def test_check_mode_keeps_the_sites_it_would_create_with_the_earlier_ones(fake_api, run):
    fake_api.add_site("old.example", allow="true")
    sites = [{"domain": "B.example"}, {"domain": "old.example"}, {"domain": "a.example"}]
    result = run(dict(ADMIN, sites=sites), check_mode=True, facts={CHECK_MODE_CREATED_SITES_FACT: ["z.example"]})
    assert result["changed"] is True and fake_api.writes == []
    assert result["ansible_facts"] == {CHECK_MODE_CREATED_SITES_FACT: ["a.example", "b.example", "z.example"]}


def test_check_mode_with_nothing_to_create_sets_no_fact(fake_api, run):
    fake_api.add_site("old.example", allow="true")
    result = run(dict(ADMIN, domain="old.example"), check_mode=True)
    assert result["changed"] is False and "ansible_facts" not in result


def test_a_real_run_or_a_failed_task_sets_no_fact(fake_api, run, fake_time):
    created = run(dict(ADMIN, domain="shop.example", wait=False))
    assert created["changed"] is True and created["operation"] == "create" and "ansible_facts" not in created
    refused = run(dict(ADMIN, domain="not a domain"), check_mode=True)
    assert refused["failed"] is True and "domain must be" in refused["msg"] and "ansible_facts" not in refused
