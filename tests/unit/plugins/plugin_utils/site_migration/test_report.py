# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of a run, its name and the merge of slices' reports (plugins/plugin_utils/site_migration/report.py),
without a server."""

from __future__ import annotations

import datetime
import json
import re

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.report import merge_reports, report, report_name
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    fleet_at_preflight,
    line_up,
    results,
    ticket_result,
)


# ----------------------------------------------------------------------------------------- report and stop

REPORT_KEYS = {"generated", "sites_total", "counts", "destinations", "cutovers", "backups", "preflight_wait_seconds",
               "run_wait_seconds", "api_load", "refresh", "sites"}
SITE_KEYS = {"host", "site", "destination", "new_site", "site_id", "migration_id", "operation", "updated_fields",
             "auth", "remote",
             "key_installed", "preflight", "run", "duration", "result", "diagnosis", "uncertain", "message",
             "workflow", "production_domain", "live", "backup", "cutover", "restore"}


def test_the_report_covers_every_host_and_keeps_its_keys():
    fleet, done = fleet_at_preflight(2)
    done["preflight"] = results(ticket_result(7, "p7"), ticket_result(8, "p8", state="failure", failed=True,
                                                                      ticket={"diagnosis": {"code": "unknown", "hint": "h"}}))
    done["run"] = results(ticket_result(7, "r7"))
    rep = report(fleet, ["dest0.example", "dest1.example", "late.example"], done, True, generated="T")
    assert set(rep) == REPORT_KEYS and all(set(s) == SITE_KEYS for s in rep["sites"])
    assert rep["counts"] == {"not_reached": 1, "preflight_failed": 1, "succeeded": 1} and rep["sites_total"] == 3
    first = rep["sites"][0]
    assert first["duration"] == 5.0 and first["remote"] == {"remote-host": "10.0.0.5"} and first["message"] == ""
    assert rep["sites"][2]["message"] == "stopped before the fleet steps: see the play output"
    assert rep["preflight_wait_seconds"] == 2.5 and rep["run_wait_seconds"] == 2.5 and rep["refresh"] is True
    assert rep["api_load"] == {"calls": 0, "peak_per_second": 0, "steps": {}}
    assert "[redacted]" not in json.dumps(rep)
    assert step_arguments(fleet, "stop", done) == {"stopped": {"dest1.example": rep["sites"][1]["message"]},
                                                   "changed": {"dest0.example": True}}


def test_the_report_states_the_load_of_the_waits():
    fleet, done = fleet_at_preflight(2)
    done["preflight"] = results(ticket_result(7, "p7"), ticket_result(8, "p8"), api_load={"calls": 40, "peak_per_second": 9})
    done["run"] = results(ticket_result(7, "r7"), ticket_result(8, "r8"), api_load={"calls": 110, "peak_per_second": 4})
    rep = report(fleet, ["dest0.example", "dest1.example"], done, True, generated="T")
    assert rep["api_load"] == {"calls": 150, "peak_per_second": 9, "steps": {
        "preflight": {"calls": 40, "peak_per_second": 9}, "run": {"calls": 110, "peak_per_second": 4}}}


def test_a_left_alone_site_is_reported_from_what_was_read():
    fleet, dummy = line_up({"site_migration_refresh": False})
    record = {"state": "migration-succeeded", "auth": "password", "args": {"remote-user": "www", "remote-pass": "x"}}
    done = {"info": results({"site": "1001", "site_id": 1001, "migration_id": 7, "state": "migration-succeeded",
                             "record": record})}
    rep = report(fleet, ["dest0.example"], done, "false")
    site = rep["sites"][0]
    assert site["result"] == "left_alone" and site["migration_id"] == 7 and site["auth"] == "password"
    assert site["remote"] == {"remote-user": "www"} and rep["refresh"] is False
    assert step_arguments(fleet, "stop", done) == {"stopped": {}, "changed": {}}      # left alone: "ok" in the recap


# ----------------------------------------------------------------------------------------- slices

def _slice_report(hosts, result="succeeded", wait=2.0, generated="T"):
    rep = {"generated": generated, "sites_total": len(hosts), "counts": {result: len(hosts)},
           "destinations": {"existing": len(hosts)}, "preflight_wait_seconds": wait, "run_wait_seconds": wait * 2,
           "refresh": True, "sites": [{"host": h, "result": result} for h in hosts],
           "api_load": {"calls": 10 * len(hosts), "peak_per_second": 3, "steps": {}}}
    return rep


def test_slice_reports_merge_into_one_fleet_report():
    merged = merge_reports([_slice_report(["d.example", "b.example"], wait=3.0, generated="T1"),
                            _slice_report(["c.example"], result="run_failed", generated="T2"),
                            _slice_report(["a.example"], generated="T3")], generated="NOW")
    assert merged["sites_total"] == 4
    assert [s["host"] for s in merged["sites"]] == ["a.example", "b.example", "c.example", "d.example"]
    assert merged["counts"] == {"run_failed": 1, "succeeded": 3} and merged["destinations"] == {"existing": 4}
    assert merged["preflight_wait_seconds"] == 3.0 and merged["run_wait_seconds"] == 6.0
    assert merged["merged_from"] == ["T1", "T2", "T3"] and merged["refresh"] is True
    # The slices ran at the same time: their peaks add up.
    assert merged["api_load"] == {"calls": 40, "peak_per_second": 9}
    assert set(merged) == REPORT_KEYS | {"merged_from"}
    # set_stats artifacts (name -> report), as a workflow node after a sliced job receives them
    artifacts = {"site_migration_report_2": _slice_report(["x.example"]), "site_migration_report_1": _slice_report(["y.example"])}
    assert merge_reports(artifacts)["sites_total"] == 2


def test_a_host_in_two_slices_is_refused():
    with pytest.raises(AnsibleFilterError, match="host b.example is in reports 1 and 2"):
        merge_reports([_slice_report(["a.example", "b.example"]), _slice_report(["b.example"])])
    with pytest.raises(AnsibleFilterError, match="no report to merge"):
        merge_reports([])
    with pytest.raises(AnsibleFilterError, match="item 1 is not a site_migration report"):
        merge_reports([{"sites": "x"}])


# ----------------------------------------------------------------------------------------- report name

AT = datetime.datetime(2026, 11, 26, 10, 45, 1, 123456, tzinfo=datetime.timezone.utc)


def test_the_report_of_a_controller_job_is_named_by_the_job():
    """Each slice of an AWX sliced job template is a job of its own (awx_job_id): slices that finish in the
    same second never share a report file or artifact name."""
    names = [report_name(["dest%d.example" % k], job_id=4711 + k, now=AT) for k in range(4)]
    assert names[0] == "site-migration-20261126T104501-job4711"
    assert len(set(names)) == 4
    assert report_name(["a"], job_id="4711", now=AT) == names[0]
    with pytest.raises(AnsibleFilterError, match=r"job_id must be the controller's job number \(awx_job_id\)"):
        report_name(["a"], job_id="4711; rm", now=AT)


def test_the_report_of_a_run_outside_a_controller_is_named_by_its_hosts_and_time():
    slices = [["dest%02d.example" % i for i in range(k, 24, 4)] for k in range(4)]
    names = [report_name(part, now=AT) for part in slices]
    assert len(set(names)) == 4 and all(n.startswith("site-migration-20261126T104501-123456-hosts-") for n in names)
    # the play's hosts, in any order: the same name; the next microsecond: another
    assert report_name(list(reversed(slices[0])), now=AT) == names[0]
    later = AT.replace(microsecond=123457)
    assert report_name(slices[0], now=later) != names[0]
    assert report_name(slices[0], job_id=None, now=AT) == report_name(slices[0], job_id="", now=AT)
    with pytest.raises(AnsibleFilterError, match="the play has no hosts"):
        report_name([], now=AT)
    # the time is UTC by default, and the name is one a file and an artifact variable can carry
    assert re.match(r"^site-migration-\d{8}T\d{6}-\d{6}-hosts-[0-9a-f]{16}$", report_name(["x"]))
