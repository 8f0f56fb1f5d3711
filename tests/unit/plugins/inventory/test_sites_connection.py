# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sites inventory's hosts run on the controller by default (option connection, plugins/inventory/sites.py): a
play over them with Ansible's default fact gathering does not reach for SSH to the sites' domains. Through a real
ansible-playbook: tests/system/test_role_in_a_play.py."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.tests.unit.plugins.inventory.test_sites import parse  # noqa: F401 pylint: disable=unused-import


def test_the_site_hosts_group_runs_on_the_controller_with_the_plays_python(fake_api, parse):  # noqa: F811 pylint: disable=redefined-outer-name
    fake_api.add_site("1001")
    inventory = parse()
    group = inventory.groups["wpcloud_account_sites"].get_vars()
    assert group["ansible_connection"] == "local"
    assert group["ansible_python_interpreter"] == "{{ ansible_playbook_python }}"
    # Group variables: a host variable (compose, host_vars) or a group_vars file of the inventory overrides them.
    assert "ansible_connection" not in inventory.get_host("1001.example").get_vars()


def test_connection_none_sets_nothing(fake_api, parse):  # noqa: F811 pylint: disable=redefined-outer-name
    fake_api.add_site("1001")
    group = parse(connection="none").groups["wpcloud_account_sites"].get_vars()
    assert "ansible_connection" not in group and "ansible_python_interpreter" not in group
