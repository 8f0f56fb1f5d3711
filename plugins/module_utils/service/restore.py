# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""site_backup state=restored: a site restored from a files backup and a database backup, the steps of one site's
BackupRun (service/backup.py) for it.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

The service restores only a site whose meta ``allow_restore`` holds a recent Unix time and that is suspended with
503; it answers a job (and a response ticket), and the suspension stays after it (docs/api-choices.md "Going live").
Before any write both backups are checked against the site's list; every write is resolved by a read when its answer
is lost; what the task set is taken back when the restore is refused or fails.
"""

from __future__ import annotations

import time

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import Ticket, fetch_messages, poll_gap
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import Job, recent_jobs
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    ALLOW_RESTORE,
    JOB_FAILURE,
    META_VALUE,
    RESTORE_FROM,
    RESTORE_JOB_FIELDS,
    RESTORE_JOB_TYPE,
    RESTORE_NOT_READY,
    RESTORE_TICKET_FIELD,
    SUSPENDED,
    SUSPENDED_FOR_RESTORE,
    as_int_or_str,
)


class RestoreSteps(object):
    """The restore of one site (a mixin of BackupRun: its ``path``, ``site``, ``records``, ``ids``, ``params``,
    ``ctx``, ``result``, ``actions``, ``waits``, ``write`` and ``details``)."""

    def prepare_restored(self, client):
        listed = dict((r["backup_id"], r) for r in self.records)
        missing = [i for i in self.ids if i not in listed]
        if missing:
            raise ModuleFailure("backup_ids names %s, which site %s does not list (its backups: %s): give a files and a "
                                "database backup of this site, as site_backup state=listed shows them." % (
                                    missing[0], self.site, ", ".join(sorted(listed)) or "none"))
        pair = [listed[i] for i in self.ids]
        if pair[0]["content"] == pair[1]["content"]:
            raise ModuleFailure("backup_ids names two %s backups (%s, %s): a restore takes one files backup and one "
                                "database backup." % (pair[0]["content"], pair[0]["backup_id"], pair[1]["backup_id"]))
        self.pair = sorted(pair, key=lambda r: r["content"] != "files")    # files first (one reading requires it)
        self.suspended_before = self.meta(client, SUSPENDED)
        self.result.update(restored_from=[r["backup_id"] for r in self.pair],
                           suspended_before=self.suspended_before is not None)
        actions = ["allow a restore (site meta %s)" % ALLOW_RESTORE]
        if str(self.suspended_before or "") != SUSPENDED_FOR_RESTORE:
            actions.append("suspend the site (503)")
        actions.append("restore files from backup %s and the database from backup %s" % tuple(self.result[
            "restored_from"]))
        if not self.params.get("keep_suspended"):
            actions.append("lift the suspension")
        if self.ctx.diff:
            self.result["diff"] = {"before": {"site": "its files and database as they are now"},
                                   "after": {"site": "files of backup %s, database of backup %s" % tuple(
                                       self.result["restored_from"])}}
        if self.ctx.check_mode:
            return self.planned(actions)
        try:
            self.start_restore(client)
        except ModuleFailure:
            self.put_back(client, failed=True)
            raise

    def meta_write(self, client, key, value):
        """site-meta update (``value``) or remove (None), resolved by a read when its answer was lost."""
        site_id = self.path.site_id

        def send():
            if value is None:
                client.call("site_meta.remove", site=site_id, key=key)
            else:
                client.call("site_meta.update", params={META_VALUE: value}, site=site_id, key=key)
            return {}

        def happened():
            now = client.call("site_meta.get", site=site_id, key=key).data
            return {} if (now in (None, "", []) if value is None else str(now) == value) else None

        self.write("site_meta.remove" if value is None else "site_meta.update", send, happened,
                   "site meta %s of site %s" % (key, self.site), "Setting site meta %s of site %s" % (key, self.site))

    def meta(self, client, key):
        """A site meta value, None when unset."""
        try:
            value = client.call("site_meta.get", site=self.path.site_id, key=key).data
        except WPCloudAPIError as exc:
            raise api_failure(exc, "Reading site meta %s of site %s" % (key, self.site))
        return None if value in (None, "", [], False) else value

    def start_restore(self, client):
        self.meta_write(client, ALLOW_RESTORE, str(int(time.time())))
        self.actions.append("allow a restore (site meta %s)" % ALLOW_RESTORE)
        if str(self.suspended_before or "") != SUSPENDED_FOR_RESTORE:
            self.meta_write(client, SUSPENDED, SUSPENDED_FOR_RESTORE)
            self.actions.append("suspend the site (503)")
        known = set(str(job.get("id")) for job in self._restore_jobs(client))
        ids = [r["backup_id"] for r in self.pair]
        options = wait_options(self.params)
        deadline = time.monotonic() + options["wait_timeout"]
        started = time.monotonic()

        def send():
            while True:
                try:
                    return client.call("site.restore", params={RESTORE_FROM: ids}, site=self.path.site_id).data
                except WPCloudAPIError as exc:
                    # A backup listed as soon as create answered may not be ready for a restore yet: sent again
                    # (a refusal, nothing happened) while the wait lasts.
                    ready_later = exc.status == 400 and RESTORE_NOT_READY.search(exc.api_message or "")
                    gap = poll_gap(time.monotonic() - started, options["poll_interval"], options["poll_max_interval"])
                    if not ready_later or time.monotonic() + gap > deadline:
                        raise
                    time.sleep(gap)

        def happened():
            new = [job for job in self._restore_jobs(client) if str(job.get("id")) not in known]
            return {RESTORE_JOB_FIELDS[0]: new[0].get("id")} if new else None

        data = self.write("site.restore", send, happened, "restore of site %s" % self.site,
                          "Restoring site %s" % self.site)
        self.actions.append("restore files from backup %s and the database from backup %s" % tuple(ids))
        data = data if isinstance(data, dict) else {}
        job_id = next((as_int_or_str(data[f]) for f in RESTORE_JOB_FIELDS if data.get(f) not in (None, "")), None)
        self.result.update(job_id=job_id, ticket_id=data.get(RESTORE_TICKET_FIELD))
        if job_id is None:
            raise ModuleFailure("The service started the restore of site %s but named no job to follow; read the site "
                                "before lifting its suspension." % self.site, changed=True)
        if self.params["wait"]:
            self.job = Job(job_id, time.monotonic())
            self.waits.append(self.job)

    def _restore_jobs(self, client):
        try:
            return recent_jobs(client, self.path.site_id, RESTORE_JOB_TYPE)
        except WPCloudAPIError as exc:
            raise api_failure(exc, "Reading the recent jobs of site %s" % self.site)

    def put_back(self, client, failed):
        """After a restore (or a failure before it ended): allow_restore removed when the service left it, and the
        suspension lifted (keep_suspended: kept after a success)."""
        if any(a.startswith("allow a restore") for a in self.actions) and (failed or self.meta(client, ALLOW_RESTORE)):
            self.meta_write(client, ALLOW_RESTORE, None)
        if self.params.get("keep_suspended") and not failed:
            self.result["suspended"] = True
            return
        if failed and not any(a.startswith("suspend") for a in self.actions):
            self.result["suspended"] = self.result.get("suspended_before", False)
            return          # nothing of ours to undo
        self.meta_write(client, SUSPENDED, None)
        self.actions.append("lift the suspension")
        self.result["suspended"] = False

    def finish_restore(self, client, timed_out):
        job = getattr(self, "job", None)
        if job is None:             # wait=false: the restore runs on; the suspension stays until it is lifted
            self.result["suspended"] = True
            return
        entry = job.as_result(time.monotonic())
        self.result["job"] = entry
        what = "restore of site %s" % self.site
        if job.error or job.outcome == JOB_FAILURE:
            messages = self.ticket_messages(client)
            self.put_back(client, failed=True)
            reason = ("waiting for it failed: %s" % job.error) if job.error else "it failed (status %s)" % job.status
            raise ModuleFailure("The service's job %s (%s): %s; the service says the site is unchanged. %s" % (
                job.job_id, what, reason, "The suspension this task set was lifted." if any(
                    a == "lift the suspension" for a in self.actions) else ""), messages=messages, **self.details())
        if timed_out and not job.done:
            raise ModuleFailure("Job %s (%s) was still %s when wait_timeout=%ss ran out. The site stays suspended (503) "
                                "until the restore ends: follow the job, then lift the suspension (site meta "
                                "%s remove)." % (job.job_id, what, job.status, self.params["wait_timeout"], SUSPENDED),
                                timed_out=True, suspended=True, **self.details())
        self.put_back(client, failed=False)

    def ticket_messages(self, client):
        ticket_id = self.result.get("ticket_id")
        if not ticket_id:
            return []
        ticket = Ticket(ticket_id, time.monotonic())
        fetch_messages(client, ticket)
        return ticket.messages or []
