# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Site tasks that wait, for one site or a fleet (site_domain, site_backup): three rounds on the task's one client.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

1. Every site's run is prepared, 16 at a time (runtime/context.py run_for_each): read, checked, and the writes that
   start its work sent (a domain switch, backup requests, a restore); what it then waits for goes in its ``waits``
   (service jobs, or poller items of its own).
2. Every wait of every site is followed in one poller run (service/poller.py follow): a fleet's waits end within
   one poll gap of the last one, with one progress line for all of them.
3. Every site's run is finished: what its waits found, its result.

A site that fails in round 1 skips the others; the single form raises its failure, the list form returns every
site's result (runtime/context.py list_result).
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import list_result, run_for_each
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.uncertain_writes import module_write
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import follow, progress_for
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import Job, poll_job


def elements_of(params):
    """The elements of ``sites``, each with the task's options as its defaults (an element's unset option is None);
    a site given twice is refused before any call."""
    elements = [dict(params, sites=None, **dict((k, v) for k, v in element.items() if v is not None))
                for element in params["sites"]]
    sites = [str(element.get("site") or "").strip().lower() for element in elements]
    twice = sorted(set(site for site in sites if site and sites.count(site) > 1))
    if twice:
        raise ModuleFailure("sites lists site %s twice: give each site once." % twice[0])
    return elements


class SiteRun(object):
    """One site of a task that runs in rounds: ``prepare()`` and ``finish(timed_out)`` are the module's; this holds what
    both need - its writes (each resolved by a read when its answer is lost) and the actions and doubts they leave."""

    def __init__(self, params, name, ctx):
        self.params = params
        self.client_name = name
        self.ctx = ctx
        self.waits = []
        self.actions = []
        self.uncertain = []
        self.result = None

    def write(self, operation, send, happened, what, failing):
        """runtime/uncertain_writes.py module_write, the doubts kept for the site's result."""
        holder = {}
        outcome = module_write(operation, send, happened, what, failing, holder)
        self.uncertain.extend(holder.get("uncertain", []))
        return outcome

    def writing(self, failure, **details):
        """A failure after some writes: ``failure`` with what was written (changed, actions, the doubts)."""
        failure.details.update(details, changed=bool(self.actions), actions=list(self.actions))
        if self.uncertain:
            failure.details["uncertain"] = self.uncertain + failure.details.get("uncertain", [])
        return failure


def run_rounds(params, ctx, runs, label):
    """The three rounds over ``runs`` (SiteRun); the single form's result (or its failure) when ``sites`` is not
    given, else the list form's."""
    ctx.client()        # a connection problem fails the task once, not each site
    results = run_for_each(runs, lambda run: run.prepare())
    live = [run for run, result in zip(runs, results) if not result["failed"]]
    items = [item for run in live for item in run.waits]
    timed_out = False
    if items:
        options, client = wait_options(params), ctx.client()
        timed_out = follow(items, lambda item: poll_job(client, item) if isinstance(item, Job) else item.poll(client),
                           options["wait_timeout"], options["poll_interval"], progress=progress_for(label, params, ctx),
                           poll_max_interval=options["poll_max_interval"])
    finished = run_for_each(live, lambda run: run.finish(timed_out))
    finished.reverse()
    results = [finished.pop() if not result["failed"] else result for result in results]
    if params.get("sites") is None:
        result = results[0]
        if result.pop("failed"):
            raise ModuleFailure(result.pop("msg"), **result)
        return result
    for run, result in zip(runs, results):
        result.setdefault("site", run.params.get("site"))
    return list_result(results, "sites", lambda r: "site %s" % r["site"])
