# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The list forms' shared machinery (run_for_each, list_result). The rules of the migrations list are the
migration module's: tests/unit/plugins/modules/test_migration.py and module_utils/service/test_migration_module.py."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime import context
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import CONCURRENT_CALLS
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import list_result, run_for_each
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure


def label(result):
    return "site %s" % result["site"]


# -- run_for_each -------------------------------------------------------------------------------------

def test_results_come_back_in_input_order_even_when_items_finish_out_of_order():
    last_done = threading.Event()
    finished = []

    def logic(item):
        if item == "a":
            # "a" cannot finish before "c" has: it waits for it (they run concurrently).
            assert last_done.wait(5), "items did not run concurrently"
        finished.append(item)
        if item == "c":
            last_done.set()
        return {"site": item}

    results = run_for_each(["a", "b", "c"], logic)
    assert finished[-1] == "a"  # the completion order really differed from the input order
    assert [r["site"] for r in results] == ["a", "b", "c"]
    assert all(r["failed"] is False for r in results)


def test_runs_at_most_concurrent_calls_at_once_and_that_many_in_parallel():
    assert CONCURRENT_CALLS == 16
    active = [0]
    peak = [0]
    lock = threading.Lock()
    # The first 16 items can only pass this barrier together: fewer workers would break it.
    barrier = threading.Barrier(CONCURRENT_CALLS, timeout=10)

    def logic(item):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            if item < CONCURRENT_CALLS:
                barrier.wait()
            else:
                time.sleep(0.01)
        finally:
            with lock:
                active[0] -= 1
        return {"item": item}

    results = run_for_each(list(range(40)), logic)
    assert [r["item"] for r in results] == list(range(40))
    assert peak[0] == CONCURRENT_CALLS


def test_one_failed_item_does_not_stop_the_others():
    called = []
    lock = threading.Lock()

    def logic(item):
        with lock:
            called.append(item)
        if item == 2:
            raise ModuleFailure("site 2 was not found", failure={"status": 404}, site=item)
        return {"site": item, "changed": True}

    results = run_for_each([1, 2, 3, 4], logic)
    assert sorted(called) == [1, 2, 3, 4]
    assert results[1] == {"site": 2, "failure": {"status": 404}, "failed": True, "msg": "site 2 was not found"}
    assert [r["failed"] for r in results] == [False, True, False, False]
    assert "msg" not in results[0]


def test_an_unexpected_error_is_not_turned_into_an_item_result():
    # Only a ModuleFailure is an item's failure; a programming error must surface, not hide in results.
    def logic(item):
        if item == 2:
            raise KeyError("bug")
        return {}

    with pytest.raises(KeyError):
        run_for_each([1, 2, 3], logic)


def test_an_empty_list_calls_nothing():
    assert run_for_each([], lambda item: pytest.fail("called")) == []


def test_uses_a_bounded_pool_for_few_items(monkeypatch):
    sizes = []
    real = context.ThreadPoolExecutor

    def recording(max_workers):
        sizes.append(max_workers)
        return real(max_workers=max_workers)

    monkeypatch.setattr(context, "ThreadPoolExecutor", recording)
    run_for_each([1, 2, 3], lambda item: {})
    run_for_each(list(range(100)), lambda item: {})
    assert sizes == [3, CONCURRENT_CALLS]


# -- list_result --------------------------------------------------------------------------------------

def test_changed_when_any_item_changed_and_no_failure():
    outcome = list_result([{"site": "1", "changed": False, "failed": False},
                           {"site": "2", "changed": True, "failed": False}], "sites", label)
    assert outcome["changed"] is True
    assert outcome["failed_count"] == 0
    assert [r["site"] for r in outcome["results"]] == ["1", "2"]
    assert "diff" not in outcome
    unchanged = list_result([{"site": "1", "changed": False, "failed": False}], "sites", label)
    assert unchanged["changed"] is False


def test_an_empty_list_is_a_success_without_change():
    assert list_result([], "sites", label) == {"changed": False, "results": [], "failed_count": 0}


def test_item_diffs_are_gathered_with_headers_and_left_out_of_the_results():
    results = [
        {"site": "1", "changed": True, "failed": False,
         "diff": {"before": {"allow_site_migration": "disabled"}, "after": {"allow_site_migration": "enabled"}}},
        {"site": "2", "changed": False, "failed": False},
        {"site": "3", "changed": False, "failed": False, "diff": {"before": {"a": 1}, "after": {"a": 1}}},
    ]
    outcome = list_result(results, "sites", label)
    assert outcome["diff"] == [
        {"before": {"allow_site_migration": "disabled"}, "after": {"allow_site_migration": "enabled"},
         "before_header": "site 1", "after_header": "site 1"},
        {"before": {"a": 1}, "after": {"a": 1}, "before_header": "site 3", "after_header": "site 3"},
    ]
    assert all("diff" not in r for r in outcome["results"])


def test_a_failed_item_fails_the_task_naming_it_and_keeps_every_result():
    results = [
        {"site": "1", "changed": True, "failed": False, "diff": {"before": {}, "after": {"x": 1}}},
        {"site": "2", "failed": True, "msg": "site 2 was not found (HTTP 404)"},
        {"site": "3", "changed": False, "failed": False},
        {"site": "4", "failed": True, "msg": "remote_host is required"},
    ]
    with pytest.raises(ModuleFailure) as raised:
        list_result(results, "sites", label)
    failure = raised.value
    assert failure.msg == ("2 of 4 sites failed: site 2: site 2 was not found (HTTP 404); "
                           "site 4: remote_host is required")
    assert failure.details["failed_count"] == 2
    assert failure.details["changed"] is True
    assert [r["site"] for r in failure.details["results"]] == ["1", "2", "3", "4"]
    assert failure.details["diff"][0]["before_header"] == "site 1"


def test_the_message_names_the_first_five_failures_and_counts_the_rest():
    results = [{"site": str(i), "failed": True, "msg": "bad %d" % i} for i in range(8)]
    with pytest.raises(ModuleFailure) as raised:
        list_result(results, "migrations", label)
    msg = raised.value.msg
    assert msg.startswith("8 of 8 migrations failed: site 0: bad 0; ")
    assert "site 4: bad 4" in msg and "site 5" not in msg
    assert msg.endswith(" (and 3 more)")


def test_run_for_each_and_list_result_together():
    def logic(site):
        if site == "bad":
            raise ModuleFailure("site must be a numeric site ID or a domain name")
        return {"site": site, "changed": site == "new"}

    results = run_for_each(["old", "bad", "new"], logic)
    for given, result in zip(["old", "bad", "new"], results):
        result.setdefault("site", given)
    with pytest.raises(ModuleFailure) as raised:
        list_result(results, "sites", label)
    assert raised.value.msg == "1 of 3 sites failed: site bad: site must be a numeric site ID or a domain name"
    assert raised.value.details["changed"] is True
