# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""wpcloud.hosting.fleet_vars (plugins/action/fleet_vars.py): the hosts it reads (the play batch unless given, in
order), one read of every host's variables, and its refusals (no hosts, a host not in the inventory, bad options).
Ansible's variable manager is stood in for here; with the real one: tests/system/test_fleet_vars.py."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.wpcloud.hosting.plugins.action import fleet_vars
from ansible_collections.wpcloud.hosting.tests.unit.plugins.action_doubles import Templar

HOST_VARS = {"dest1.example": {"destination": "dest1.example", "source_host": "src1"},
             "dest2.example": {"destination": "dest2.example"}}


def run(monkeypatch, args, task_vars):
    """The action's result and the reads it made (hosts, names)."""
    reads = []

    def read_fleet_variables(task, templar, task_vars, hosts, names):
        reads.append((hosts, names))
        return [HOST_VARS[host] for host in hosts]      # a host not in the inventory: KeyError, as the real one
    monkeypatch.setattr(fleet_vars, "read_fleet_variables", read_fleet_variables)
    task = SimpleNamespace(args=args, check_mode=False, diff=False, async_val=0, action="wpcloud.hosting.fleet_vars")
    action = fleet_vars.ActionModule(task, SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent")), None, None,
                                     Templar(), None)
    return action.run(task_vars=task_vars), reads


def test_the_play_batch_is_read_in_one_go(monkeypatch):
    result, reads = run(monkeypatch, {"names": ["destination", "source_host"]},
                        {"ansible_play_batch": ["dest2.example", "dest1.example"]})
    assert result["changed"] is False and not result.get("failed")
    assert result["hosts"] == ["dest2.example", "dest1.example"]
    assert result["host_vars"] == [HOST_VARS["dest2.example"], HOST_VARS["dest1.example"]]
    assert reads == [(["dest2.example", "dest1.example"], ["destination", "source_host"])]


def test_the_hosts_given_are_read_in_their_order(monkeypatch):
    result, reads = run(monkeypatch, {"names": ["destination"], "hosts": ["dest1.example"]},
                        {"ansible_play_batch": ["dest2.example", "dest1.example"]})
    assert result["hosts"] == ["dest1.example"] and reads == [(["dest1.example"], ["destination"])]


def test_no_hosts_is_an_error_that_says_what_to_do(monkeypatch):
    for args, task_vars in (({"names": ["destination"], "hosts": []}, {"ansible_play_batch": ["dest1.example"]}),
                            ({"names": ["destination"]}, {"ansible_play_batch": []})):
        result, reads = run(monkeypatch, args, task_vars)
        assert result["failed"] is True and result["msg"].startswith("fleet_vars: hosts is empty; name the hosts")
        assert reads == []


def test_a_host_not_in_the_inventory_is_named(monkeypatch):
    result, reads = run(monkeypatch, {"names": ["destination"], "hosts": ["dest1.example", "gone.example"]}, {})
    assert result["failed"] is True and result["msg"] == "fleet_vars: host 'gone.example' is not in the inventory (hosts)"


def test_bad_options_are_refused_before_any_read(monkeypatch):
    result, reads = run(monkeypatch, {"hosts": ["dest1.example"]}, {})
    assert result["failed"] is True and "missing required arguments: names" in result["msg"] and reads == []
    result, reads = run(monkeypatch, {"names": ["destination"], "host": "dest1.example"}, {})
    assert result["failed"] is True and "host" in result["msg"] and reads == []
