# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""service/rounds.py without a server: the elements of sites (the task's options as defaults, a site twice
refused), and the three rounds - every run prepared, all their waits in one poller run, each finished; a failure in
the first round skips the others, raised by the single form, listed by the list form."""

from __future__ import annotations

import time

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import Polled
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.rounds import SiteRun, elements_of, run_rounds

PARAMS = {"api_url": "https://api.wpcloud.test", "api_key": "unit-key", "validate_certs": True, "timeout": 30,
          "retries": 0, "retry_timeout": 10, "wait": True, "wait_timeout": 60, "poll_interval": 1.0,
          "poll_max_interval": None, "progress_interval": 0, "site": None}


def test_elements_take_the_tasks_options_as_defaults():
    params = dict(PARAMS, type="both", sites=[{"site": "1", "type": None}, {"site": "2", "type": "files"}])
    assert [(e["site"], e["type"], e["sites"]) for e in elements_of(params)] == [("1", "both", None), ("2", "files", None)]
    with pytest.raises(ModuleFailure, match="sites lists site a.example twice"):
        elements_of(dict(PARAMS, sites=[{"site": "a.example"}, {"site": "A.example "}]))


class Ready(Polled):
    """A wait that ends at its third poll."""

    def __init__(self, log):
        super(Ready, self).__init__(time.monotonic())
        self.log = log

    @property
    def done(self):
        return self.polls >= 3

    @property
    def failed(self):
        return False

    def poll(self, client):
        self.polls += 1
        self.log.append(("poll", id(self), time.monotonic()))

    def progress(self):
        return "ready"


class Run(SiteRun):
    def prepare(self):
        if self.params["site"] == "bad":
            raise ModuleFailure("site bad is bad", site_id=None)
        self.waits.append(Ready(self.params["log"]))
        return {"site": self.params["site"]}

    def finish(self, timed_out):
        return {"site": self.params["site"], "polls": self.waits[0].polls, "timed_out": timed_out, "changed": True}


def rounds(sites, fake_time):
    log = []
    params = dict(PARAMS, log=log, sites=[{"site": s} for s in sites] if len(sites) > 1 else None, site=sites[0])
    ctx = ModuleContext(params)
    runs = [Run(e, "acme", ctx) for e in (elements_of(params) if params["sites"] else [params])]
    try:
        return run_rounds(params, ctx, runs, "unit"), log
    except ModuleFailure as failure:
        return failure, log


def test_every_wait_in_one_poller_run(fake_time):
    result, log = rounds(["1", "2", "3"], fake_time)
    assert [r["polls"] for r in result["results"]] == [3, 3, 3] and result["failed_count"] == 0
    rounds_at = sorted(set(entry[2] for entry in log))
    assert len(rounds_at) == 3 and len(log) == 9          # three rounds, every wait polled in each


def test_a_failed_site_skips_its_wait_and_is_named(fake_time):
    failure, log = rounds(["1", "bad"], fake_time)
    assert isinstance(failure, ModuleFailure) and failure.msg == "1 of 2 sites failed: site bad: site bad is bad"
    assert [r["failed"] for r in failure.details["results"]] == [False, True] and len(log) == 3


def test_the_single_form_raises_its_failure(fake_time):
    failure, log = rounds(["bad"], fake_time)
    assert isinstance(failure, ModuleFailure) and failure.msg == "site bad is bad" and "failed" not in failure.details
