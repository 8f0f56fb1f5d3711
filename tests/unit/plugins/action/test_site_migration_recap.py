# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""wpcloud.hosting.site_migration_recap (plugins/action/site_migration_recap.py): the role's one task per
site decides as the assert of tasks/stop.yml decided (its three expressions, templated here by Ansible),
without a template in the task."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template      # ansible-core 2.19 and later: templates are trusted explicitly
except ImportError:
    def trust_as_template(text):
        return text

from ansible_collections.wpcloud.hosting.plugins.action.site_migration_recap import ActionModule, site_outcome

# The assert of tasks/stop.yml before this module: that, fail_msg, changed_when.
OLD_THAT = "inventory_hostname not in site_migration__recap.stopped"
OLD_FAIL_MSG = "{{ site_migration__recap.stopped.get(inventory_hostname, '') }}"
OLD_CHANGED_WHEN = "inventory_hostname in site_migration__recap.changed"

RECAPS = [
    {"stopped": {}, "changed": {}},
    {"stopped": {"b.example": "b.example: the preflight failed (diagnosis: ssh_auth): check site_migration_remote_user"},
     "changed": {"a.example": True, "b.example": True}},
    {"stopped": {"a.example": "a.example: site_migration_site is empty", "c.example": "c"}, "changed": {"b.example": True}},
]
HOSTS = ["a.example", "b.example", "c.example", "d.example"]


def old_outcome(recap, host):
    """(failed, changed, msg) as the assert decided them: a failed assert is not changed in the recap."""
    templar = Templar(loader=DataLoader(), variables={"site_migration__recap": recap, "inventory_hostname": host})
    if not templar.template(trust_as_template("{{ %s }}" % OLD_THAT)):
        return True, False, templar.template(trust_as_template(OLD_FAIL_MSG))
    return False, bool(templar.template(trust_as_template("{{ %s }}" % OLD_CHANGED_WHEN))), None


@pytest.mark.parametrize("recap", RECAPS)
@pytest.mark.parametrize("host", HOSTS)
def test_each_site_gets_the_outcome_the_assert_gave_it(recap, host):
    assert site_outcome(recap, host) == old_outcome(recap, host)


def run(args, task_vars, check_mode=False):
    task = SimpleNamespace(args=args, check_mode=check_mode, diff=False, async_val=0, action="site_migration_recap")
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"))
    templar = Templar(loader=DataLoader(), variables=task_vars)
    return ActionModule(task, connection, None, DataLoader(), templar, None).run(task_vars=task_vars)


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_task_fails_a_stopped_site_with_its_message_and_reports_the_others(check_mode):
    recap = RECAPS[1]
    stopped = run({}, {"site_migration__recap": recap, "inventory_hostname": "b.example"}, check_mode)
    assert stopped["failed"] is True and stopped["changed"] is False
    assert stopped["msg"] == recap["stopped"]["b.example"]
    changed = run({}, {"site_migration__recap": recap, "inventory_hostname": "a.example"}, check_mode)
    assert changed["changed"] is True and not changed.get("failed")
    untouched = run({}, {"site_migration__recap": recap, "inventory_hostname": "d.example"}, check_mode)
    assert untouched["changed"] is False and not untouched.get("failed")


def test_another_variable_by_name_and_an_undefined_one_named_in_the_error():
    recap = {"stopped": {}, "changed": {"a.example": True}}
    assert run({"var": "my_recap"}, {"my_recap": recap, "inventory_hostname": "a.example"})["changed"] is True
    missing = run({"var": "my_recap"}, {"inventory_hostname": "a.example"})
    assert missing["failed"] is True and "'my_recap'" in missing["msg"] and "not defined" in missing["msg"]
    wrong = run({}, {"site_migration__recap": ["a.example"], "inventory_hostname": "a.example"})
    assert wrong["failed"] is True and "must hold a dict" in wrong["msg"]


def test_a_site_line_says_its_cutover_at_every_verbosity():
    recap = {"stopped": {"b.example": "b failed"}, "changed": {"a.example": True},
             "cutover": {"a.example": "cut over to shop.example; SSL issued", "b.example": "the cutover failed"}}
    said = run({}, {"site_migration__recap": recap, "inventory_hostname": "a.example"})
    assert said["msg"] == "cut over to shop.example; SSL issued" and said["_ansible_verbose_always"] is True
    # a stopped site says its failure; one with nothing to say is quiet
    stopped = run({}, {"site_migration__recap": recap, "inventory_hostname": "b.example"})
    assert stopped["msg"] == "b failed" and "_ansible_verbose_always" not in stopped
    quiet = run({}, {"site_migration__recap": recap, "inventory_hostname": "c.example"})
    assert "msg" not in quiet and "_ansible_verbose_always" not in quiet
