# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""service/restore.py on the fake service: a restore whose answer was lost is found among the site's recent jobs
(never sent twice), a suspension the site had before is lifted (and reported), a restore not waited for leaves the
site suspended, a restore the service refuses takes back what the task set."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import site_backup


@pytest.fixture()
def pair(fake_api, fake_time):
    fake_api.add_live_site(1002, "dest2.example")
    fake_api.job_steps = ["queued", "success"]
    return fake_api.add_backup("1002", "fs"), fake_api.add_backup("1002", "db")


def restore(run_logic, ids, **args):
    return run_logic(site_backup, dict({"client": "acme", "site": "1002", "state": "restored", "backup_ids": list(ids),
                                        "confirm_overwrite": True}, **args))


def test_a_restore_whose_answer_was_lost_is_found_not_sent_twice(fake_api, run_logic, pair):
    fake_api.fault("site.restore", error="reset", after=True)
    result, warnings = restore(run_logic, pair)
    assert [c["operation"] for c in fake_api.writes].count("site.restore") == 1
    assert result["uncertain"][0]["outcome"] == "happened" and result["job"]["outcome"] == "success"
    assert fake_api.restores == [("1002", list(pair))]


def test_a_suspension_from_before_is_lifted_and_reported(fake_api, run_logic, pair):
    fake_api.site_meta[("1002", "suspended")] = "503"
    result, warnings = restore(run_logic, pair)
    assert result["suspended_before"] is True and result["suspended"] is False
    assert [c["operation"] for c in fake_api.writes] == ["site_meta.update", "site.restore", "site_meta.remove"]


def test_without_wait_the_site_stays_suspended(fake_api, run_logic, pair):
    result, warnings = restore(run_logic, pair, wait=False)
    assert result["suspended"] is True and result["job_id"] and fake_api.site_meta[("1002", "suspended")] == "503"


def test_a_refused_restore_takes_back_what_the_task_set(fake_api, run_logic, pair):
    fake_api.fault("site.restore", status=409)
    result, warnings = restore(run_logic, pair)
    assert isinstance(result, ModuleFailure) and "HTTP 409" in result.msg
    assert fake_api.site_meta == {} and fake_api.restores == []
