# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The unit suite's FakeService (fake_service.py) answers calls from several threads one at a time, as the
modules' rounds send a fleet's calls (rounds.run_for_each, poller.follow)."""

from __future__ import annotations

import threading
import time

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
from ansible_collections.wpcloud.hosting.tests.unit.plugins.fake_service import API_KEY, URL


class _SlowCount(dict):
    """The service's jobs, counted slowly: another thread runs between the count and the new job's entry, as a
    loaded machine had it happen by chance."""

    def __len__(self):
        count = dict.__len__(self)
        time.sleep(0.001)
        return count


def test_calls_from_several_threads_each_get_their_own_job(fake_api):
    """Before the service's lock, two threads could take the same job ID: a site_domain list form then polled one
    job twice and the other never (test_site_domain.py failed so in a make test run, 2026-12-07)."""
    fake_api.jobs = _SlowCount(fake_api.jobs)
    client = WPCloudClient(api_url=URL, api_key=API_KEY, retries=0)
    jobs, errors = [], []

    def create(n):
        try:
            for i in range(5):
                answer = client.call("site.create", {"domain_name": "t%d-%d.example" % (n, i), "admin_user": "a",
                                                     "admin_email": "a@example.com"}, client="acme")
                jobs.append(answer.data["job_id"])
        except Exception as exc:  # pylint: disable=broad-exception-caught
            errors.append(exc)
    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    assert len(jobs) == 40 and len(set(jobs)) == 40, sorted(jobs)
    assert sorted(fake_api.jobs) == sorted(jobs)
