# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check mode across a workflow: what a task gets from an earlier check-mode task (a null ID, a preflight
that did not run) makes it say what it would do, without a call that writes and without failing."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_preflight, migration_ready
from ansible_collections.wpcloud.hosting.plugins.modules import response_ticket_wait


@pytest.mark.parametrize("module,would", [(migration_preflight, "preflight would be started"),
                                          (migration_ready, "run would be started")])
def test_a_null_migration_id_in_check_mode(fake_api, run_logic, module, would):
    result, warnings = run_logic(module, {"migration_id": None}, check_mode=True)
    assert not isinstance(result, ModuleFailure), result
    assert result["changed"] is True and result["ticket_id"] is None
    assert result["msg"].startswith("check mode: migration_id is null") and would in result["msg"]
    assert fake_api.calls == []


@pytest.mark.parametrize("module", [migration_preflight, migration_ready])
def test_a_null_migration_id_outside_check_mode_names_the_option(fake_api, run_logic, module):
    result, warnings = run_logic(module, {"migration_id": None})
    assert isinstance(result, ModuleFailure) and result.msg.startswith("migration_id is null")
    assert fake_api.calls == []


def test_ready_after_a_preflight_that_only_ran_in_check_mode(fake_api, run_logic):
    mid = fake_api.add_migration(state="new")
    result, warnings = run_logic(migration_ready, {"migration_id": mid}, check_mode=True)
    assert result["changed"] is True and "once a preflight succeeds" in result["msg"]
    assert fake_api.writes == []
    refused, warnings = run_logic(migration_ready, {"migration_id": mid})
    assert isinstance(refused, ModuleFailure) and "require_preflight" in refused.msg


@pytest.mark.parametrize("check_mode", [True, False])
def test_a_null_ticket_id(fake_api, run_logic, check_mode):
    result, warnings = run_logic(response_ticket_wait, {"ticket_id": None}, check_mode=check_mode)
    if check_mode:
        assert result["changed"] is False and "nothing to wait for" in result["msg"]
    else:
        assert isinstance(result, ModuleFailure) and result.msg.startswith("ticket_id is null")
    assert fake_api.calls == []
