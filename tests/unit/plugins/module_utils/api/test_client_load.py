# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The load a task puts on the service (issue 26): the client counts every request it sends and the most
within any one second; the waiting modules return it as ``api_load``. No server: a fake clock, the faked
HTTP layer."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.pace import Pace
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_preflight, response_ticket_wait, site


class Clock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_gate_counts_requests_and_the_busiest_second():
    clock = Clock()
    pace = Pace(0, clock=clock, sleep=lambda s: None)
    for when in (0.0, 0.1, 0.2, 0.95, 1.5, 3.0, 3.0, 3.0, 3.0, 3.99, 5.0):
        clock.now = when
        pace.admit()
    assert pace.sent == 11
    assert pace.peak == 5            # 3.0 x4 and 3.99 fall within one second; 0.0 to 0.95 only four


def test_a_ceiling_spaces_the_requests_and_so_bounds_the_peak():
    pace = Pace(4, sleep=lambda s: None)
    for dummy in range(20):
        pace.admit()
    assert pace.sent == 20 and pace.peak == 4


def test_a_waiting_task_returns_its_calls_and_peak_rate(fake_api, run_logic, fake_time):
    ids = [fake_api.add_migration(site=str(1200 + n)) for n in range(3)]
    fake_api.script("preflight", steps=["pending", "running", "success"])
    result, warnings = run_logic(migration_preflight, {"migration_ids": ids})
    # 3 reads, 3 starts, 3 x 3 summary polls: every request the service saw; the reads, the starts and the
    # first round of polls in the same (fake) instant, then a round of three a second.
    assert result["api_load"] == {"calls": len(fake_api.log), "peak_per_second": 9} and len(fake_api.log) == 15


def test_a_failed_wait_still_states_its_load(fake_api, run_logic, fake_time):
    mid = fake_api.add_migration()
    fake_api.script("preflight", steps=["pending", "running"])
    result, warnings = run_logic(migration_preflight, {"migration_id": mid, "wait_timeout": 2})
    assert isinstance(result, ModuleFailure) and result.details["api_load"]["calls"] == len(fake_api.log)


def test_bad_input_makes_no_call_and_states_no_load(fake_api, run_logic):
    result, warnings = run_logic(response_ticket_wait, {"ticket_ids": []})
    assert isinstance(result, ModuleFailure) and "api_load" not in result.details and fake_api.log == []


def test_the_site_module_states_its_load_once_for_a_list(fake_api, run_logic, fake_time):
    result, warnings = run_logic(site, {"client": "demo", "sites": [{"domain": "a.example"}, {"domain": "b.example"}],
                                        "admin_user": "admin", "admin_email": "admin@example.com"})
    assert result["api_load"]["calls"] == len(fake_api.log) > 0
    assert all("api_load" not in entry for entry in result["results"])
