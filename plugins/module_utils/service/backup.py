# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A site's backups: on-demand backups created and waited for until they exist, listed, deleted, and a site restored
from a files backup and a database backup; the logic of site_backup.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

The readings (docs/api-choices.md, "Going live"): create and delete answer a request ID and nothing can be polled;
a backup exists once site-backups-list shows it (the on-demand-backup event says "created" too); the service allows
one on-demand backup per type by default (403 past it). A restore needs site meta allow_restore (a recent Unix time)
and the site suspended with 503; it answers a job (and a response ticket); the suspension stays after it.
"""

from __future__ import annotations

import calendar
import re
import time

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import validate_site, wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import with_api_load
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.domain import ServicePath, client_name, find_site
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import Polled, follow
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.restore import RestoreSteps
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.rounds import (
    SiteRun,
    elements_of,
    run_rounds,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    AUTOMATIC_TYPES,
    BACKUP_ID,
    BACKUP_KINDS,
    BACKUP_REQUEST_FIELDS,
    BACKUP_TIMESTAMP,
    BACKUP_TIMESTAMP_FORMAT,
    BACKUP_TYPE,
    ONDEMAND_TYPES,
    as_int_or_str,
)

# The module's words for what a backup holds, by the service's kind.
KIND_WORDS = dict((kind, word) for word, kind in BACKUP_KINDS.items())
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


# -- what the user writes --------------------------------------------------------------------------------------

def max_age_seconds(value):
    """``max_age`` in seconds: a number of seconds, or with a unit (30m, 2h, 1d, 1w); None when unset."""
    if value is None:
        return None
    match = _AGE.match(str(value))
    if not match or float(match.group(1)) <= 0:
        raise ModuleFailure("max_age must be a positive age such as 3600, 30m, 2h or 1d (seconds, minutes, hours, "
                            "days, weeks), got %r." % str(value)[:40])
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


def kinds_of(params):
    """The service's kinds (fs, db) that ``type`` names, files first."""
    word = params.get("type") or "both"
    return [BACKUP_KINDS["files"], BACKUP_KINDS["database"]] if word == "both" else [BACKUP_KINDS[word]]


def backup_ids(params, state):
    """``backup_ids`` as opaque strings: none empty, none twice; a restore takes exactly two."""
    values = params.get("backup_ids")
    if values is None:
        if state == "restored":
            raise ModuleFailure("backup_ids is required with state=restored: give the ID of a files backup and of a "
                                "database backup of the site (the restore replaces both).")
        return None
    ids = [str(value).strip() for value in values]
    if any(not value for value in ids):
        raise ModuleFailure("backup_ids holds an empty ID: give each backup's ID as the service lists it.")
    twice = sorted(set(value for value in ids if ids.count(value) > 1))
    if twice:
        raise ModuleFailure("backup_ids lists %s twice: give each backup once." % twice[0])
    if state == "restored" and len(ids) != 2:
        raise ModuleFailure("backup_ids must hold two IDs with state=restored, a files backup and a database backup "
                            "of the site (the service restores both at once); got %d." % len(ids))
    return ids


# -- what the service lists ------------------------------------------------------------------------------------

def _timestamp(value):
    """Seconds since the epoch of a backup_timestamp ("YYYY-MM-DD HH:MM:SS" in UTC, or Unix seconds), or None."""
    if isinstance(value, bool) or value in (None, ""):
        return None
    if isinstance(value, (int, float)) or str(value).strip().isdigit():
        return float(value)
    try:
        return float(calendar.timegm(time.strptime(str(value).strip(), BACKUP_TIMESTAMP_FORMAT)))
    except ValueError:
        return None


def backup_record(entry, now=None):
    """A listed backup as the module returns it: its ID (a string, as listed), type, what it holds, whether it was
    made on demand, when (UTC) and how old (seconds; null when the service's time is not readable)."""
    kind = "fs" if str(entry.get(BACKUP_TYPE) or "").endswith("fs") else "db"
    taken = _timestamp(entry.get(BACKUP_TIMESTAMP))
    now = time.time() if now is None else now
    return {"backup_id": str(entry.get(BACKUP_ID)), "type": entry.get(BACKUP_TYPE), "content": KIND_WORDS[kind],
            "on_demand": entry.get(BACKUP_TYPE) == ONDEMAND_TYPES[kind],
            "taken": time.strftime(BACKUP_TIMESTAMP_FORMAT, time.gmtime(taken)) if taken is not None else None,
            "age": max(0, int(now - taken)) if taken is not None else None}


def list_backups(client, path):
    """Every backup of the site, newest first (the service's order kept for equal times). Listed without type
    segments (the sources send one, or several) and filtered here."""
    try:
        data = path.call(client, "backup.list").data
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Listing the backups of site %s" % path.site_id)
    now = time.time()
    records = [backup_record(entry, now) for entry in (data if isinstance(data, list) else [])
               if isinstance(entry, dict) and entry.get(BACKUP_ID) not in (None, "")]
    return sorted(records, key=lambda r: r["age"] if r["age"] is not None else float("inf"))


def _of_kind(records, kind, on_demand=True):
    wanted = ONDEMAND_TYPES[kind] if on_demand else AUTOMATIC_TYPES[kind]
    return [r for r in records if r["type"] == wanted]


def _request_id(data):
    if isinstance(data, dict):
        return next((as_int_or_str(data[f]) for f in BACKUP_REQUEST_FIELDS if data.get(f) not in (None, "")), None)
    return None


class Listing(Polled):
    """A wait on one site's backup list: until ``done_when(records)`` holds (a new backup listed, or deleted ones gone)."""

    def __init__(self, path, done_when, what):
        super(Listing, self).__init__(time.monotonic())
        self.path = path
        self.done_when = done_when
        self.what = what
        self.records = None
        self.met = False

    @property
    def done(self):
        return self.met or self.error is not None

    @property
    def failed(self):
        return self.error is not None

    def poll(self, client):
        self.polls += 1
        try:
            self.records = list_backups(client, self.path)
        except ModuleFailure as failure:
            cause = failure.details.get("failure") or {}
            if cause.get("retry_safe"):
                self.failed_polls += 1
                self.last_error = failure.msg
                return
            self.error = failure.msg
            return
        if self.done_when(self.records):
            self.met = True
            self.completed_at = time.monotonic()

    def progress(self):
        return "site %s: %s%s" % (self.path.site_id, self.what, " (done)" if self.met else "")

    def as_result(self, now):
        end = self.completed_at if self.completed_at is not None else now
        return self.poll_counts({"elapsed": round(end - self.started, 3)})


# -- the module --------------------------------------------------------------------------------------------------

def run_backup(params, ctx):
    return with_api_load(ctx, lambda: _run_backup(params, ctx))


def _run_backup(params, ctx):
    name = client_name(params)
    wait_options(params)
    state = params["state"]
    if state == "restored" and not params.get("confirm_overwrite"):
        raise ModuleFailure("confirm_overwrite must be true with state=restored: a restore replaces the site's files "
                            "and database with the backups' copies, and what the site holds now is lost unless it "
                            "is backed up first. Set confirm_overwrite: true once you are sure.")
    if params.get("sites") is None:
        runs = [BackupRun(params, name, ctx)]
    else:
        elements = elements_of(params)
        runs = [BackupRun(element, name, ctx) for element in elements]
    return run_rounds(params, ctx, runs, "site_backup")


class BackupRun(RestoreSteps, SiteRun):
    """One site of a site_backup task: prepare (read, check, the writes that start the work), then finish (what the
    waits found, the suspension lifted after a restore, the list as it is)."""

    def __init__(self, params, name, ctx):
        super(BackupRun, self).__init__(params, name, ctx)
        self.path = None
        self.site = self.kinds = self.max_age = self.ids = self.records = None

    # -- round 1
    def prepare(self):
        p, state = self.params, self.params["state"]
        self.site = validate_site(p.get("site"))
        self.kinds = kinds_of(p)
        self.max_age = max_age_seconds(p.get("max_age")) if state == "present" else None
        if p.get("max_age") is not None and state != "present":
            raise ModuleFailure("max_age applies to state=present (which backup counts as present); leave it out "
                                "with state=%s." % state)
        self.ids = backup_ids(p, state)
        if self.ids is not None and state == "present":
            raise ModuleFailure("backup_ids applies to state=absent and state=restored; with state=present the module "
                                "finds or creates the backups itself (see max_age).")
        client = self.ctx.client()
        site_id, primary = find_site(client, self.site)
        self.path = ServicePath(self.client_name, site_id, primary)
        self.records = list_backups(client, self.path)
        self.result = dict(changed=False, site=self.site, site_id=site_id)
        try:
            getattr(self, "prepare_" + state)(client)
        except ModuleFailure as failure:
            raise self.writing(failure, site_id=site_id)
        return self.result

    def shown(self, records):
        """The backups the result shows: those of the kinds ``type`` names."""
        kinds = set(KIND_WORDS[kind] for kind in self.kinds)
        return [r for r in records if r["content"] in kinds]

    def planned(self, actions):
        """Check mode: the writes the task would make."""
        self.result.update(actions=actions, changed=bool(actions))

    # -- state=listed
    def prepare_listed(self, client):
        self.result["actions"] = []

    # -- state=present: an on-demand backup of each kind, younger than max_age, made when there is none
    def prepare_present(self, client):
        self.found, self.todo, self.stale = {}, [], {}
        for kind in self.kinds:
            ondemand = _of_kind(self.records, kind)
            fresh = [r for r in ondemand if self.max_age is None or (r["age"] is not None and r["age"] <= self.max_age)]
            if fresh:
                self.found[kind] = fresh[0]
            else:
                self.todo.append(kind)
                self.stale[kind] = [r for r in ondemand if r["age"] is not None][::-1]   # the oldest first
        actions = []
        for kind in self.todo:
            action = "create a %s backup" % KIND_WORDS[kind]
            if self.stale[kind] and self.params.get("replace_older"):
                action += " (replacing backup %s if the service's quota is reached)" % self.stale[kind][0]["backup_id"]
            actions.append(action)
        if self.ctx.diff:
            self.result["diff"] = {
                "before": dict((KIND_WORDS[k], self.found[k]["backup_id"] if k in self.found else None)
                               for k in self.kinds),
                "after": dict((KIND_WORDS[k], self.found[k]["backup_id"] if k in self.found else "(a new backup)")
                              for k in self.kinds)}
        if self.ctx.check_mode:
            return self.planned(actions)
        self.requests = []
        for kind in self.todo:
            self.create(client, kind)
        waiting = [(kind, set(r["backup_id"] for r in _of_kind(self.records, kind))) for kind in self.todo]
        if waiting and self.params["wait"]:
            def listed(records, waiting=waiting):
                return all(any(r["backup_id"] not in before for r in _of_kind(records, kind)) for kind, before in waiting)
            self.waits.append(Listing(self.path, listed, "%s backup listed" % " and ".join(
                KIND_WORDS[kind] for kind, before in waiting)))
        self.waiting = waiting

    def create(self, client, kind):
        before = set(r["backup_id"] for r in _of_kind(self.records, kind))

        def send():
            try:
                return {"request_id": _request_id(client.call("backup.create", site=self.path.site_id,
                                                              kind=kind).data)}
            except WPCloudAPIError as exc:
                # The reads of this site just succeeded with this key: a 403 here is the service's quota of
                # on-demand backups (one per type by default).
                if exc.status == 403:
                    return {"request_id": None, "quota": exc.api_message or exc.message}
                raise

        def happened():
            records = list_backups(client, self.path)
            return {"request_id": None} if any(r["backup_id"] not in before for r in _of_kind(records, kind)) else None

        word = KIND_WORDS[kind]
        doubts = len(self.uncertain)
        answer = self.write("backup.create", send, happened, "%s backup of site %s" % (word, self.site),
                            "Creating a %s backup of site %s" % (word, self.site))
        if answer.get("quota"):
            stale = self.stale.get(kind) or []
            if not stale:
                # Nothing listed, and yet the quota is reached: a backup is being made (this task's, whose answer
                # was lost, or an earlier run's): waited for like a new one.
                if len(self.uncertain) > doubts:
                    self.actions.append("create a %s backup" % word)
                self.requests.append({"content": word, "request_id": None})
                return
            if not self.params.get("replace_older"):
                old = stale[0]
                raise ModuleFailure(
                    "The service's quota of on-demand %s backups of site %s is reached (the service says: %s). Backup "
                    "%s, taken %s, is older than max_age. Set replace_older: true to replace it with a new one, or "
                    "delete it first (state=absent, backup_ids: [%s])."
                    % (word, self.site, answer["quota"], old["backup_id"], old["taken"], old["backup_id"]))
            self.delete_now(client, stale[0])
            self.stale[kind] = stale[1:]
            return self.create(client, kind)
        self.actions.append("create a %s backup" % word)
        self.requests.append({"content": word, "request_id": answer["request_id"]})

    def delete_now(self, client, record):
        """replace_older: the stale backup deleted, and waited for until the list no longer shows it."""
        self.delete(client, record)
        gone = Listing(self.path, lambda records: all(r["backup_id"] != record["backup_id"] for r in records),
                       "backup %s deleted" % record["backup_id"])
        options = wait_options(self.params)
        follow([gone], lambda item: item.poll(client), options["wait_timeout"], options["poll_interval"],
               poll_max_interval=options["poll_max_interval"])
        if not gone.met:
            raise ModuleFailure("Backup %s of site %s was still listed when wait_timeout=%ss ran out after its deletion "
                                "was requested; run the task again."
                                % (record["backup_id"], self.site, self.params["wait_timeout"]), timed_out=True)

    # -- state=absent: the given on-demand backups (else every one of the kinds) deleted
    def prepare_absent(self, client):
        listed = dict((r["backup_id"], r) for r in self.records)
        if self.ids is None:
            targets = [r for kind in self.kinds for r in _of_kind(self.records, kind)]
        else:
            automatic = [listed[i] for i in self.ids if i in listed and not listed[i]["on_demand"]]
            if automatic:
                raise ModuleFailure("backup_ids names %s, an automatic %s backup of site %s: only on-demand backups can "
                                    "be deleted." % (automatic[0]["backup_id"], automatic[0]["content"], self.site))
            targets = [listed[i] for i in self.ids if i in listed]
        self.targets = targets
        self.result["absent"] = [i for i in self.ids or [] if i not in listed]
        if self.ctx.diff:
            self.result["diff"] = {"before": {"backups": [r["backup_id"] for r in self.shown(self.records)]},
                                   "after": {"backups": [r["backup_id"] for r in self.shown(self.records)
                                                         if r not in targets]}}
        if self.ctx.check_mode:
            return self.planned(["delete backup %s" % r["backup_id"] for r in targets])
        for record in targets:
            self.delete(client, record)
        if targets and self.params["wait"]:
            ids = set(r["backup_id"] for r in targets)
            self.waits.append(Listing(self.path, lambda records: not ids & set(r["backup_id"] for r in records),
                                      "%d backup(s) deleted" % len(ids)))

    def delete(self, client, record):
        backup_id = record["backup_id"]

        def send():
            try:
                data = client.call("backup.delete", site=self.path.site_id, backup_id=backup_id).data
            except WPCloudAPIError as exc:
                # A listed on-demand backup refused with 400: its deletion is queued already (an earlier run's,
                # or this one's whose answer was lost); 404: it is gone already.
                if exc.status in (400, 404):
                    return {"request_id": None}
                raise
            return {"request_id": _request_id(data)}

        def happened():
            return {"request_id": None} if all(r["backup_id"] != backup_id for r in list_backups(client, self.path)) \
                else None

        self.write("backup.delete", send, happened, "backup %s of site %s" % (backup_id, self.site),
                   "Deleting backup %s of site %s" % (backup_id, self.site))
        self.actions.append("delete backup %s" % backup_id)

    # -- round 3
    def finish(self, timed_out):
        client, result, state = self.ctx.client(), self.result, self.params["state"]
        if state == "restored" and not self.ctx.check_mode:
            self.finish_restore(client, timed_out)
        records = self.records
        for item in self.waits:
            if isinstance(item, Listing):
                if item.error:
                    raise ModuleFailure("Waiting on the backups of site %s failed: %s" % (self.site, item.error),
                                        **self.details())
                if not item.met:
                    raise ModuleFailure(self.timeout_message(item), timed_out=True, **self.details())
                records = item.records
        if state in ("present", "absent") and self.actions and not any(isinstance(i, Listing) for i in self.waits):
            records = list_backups(client, self.path)       # not waited for: the list as it is now
        if state == "present":
            self.finish_present(records)
        if not self.ctx.check_mode:
            result.update(actions=self.actions, changed=bool(self.actions))
        if self.uncertain:
            result["uncertain"] = self.uncertain
        result["backups"] = self.shown(records)
        return result

    def details(self):
        """The result so far as a failure's details: changed when a write was made, the actions made."""
        details = dict(self.result)
        details.update(changed=bool(self.actions), actions=self.actions)
        return details

    def timeout_message(self, item):
        if self.params["state"] == "present":
            kinds = " and ".join(KIND_WORDS[kind] for kind, before in self.waiting)
            return ("The %s backup of site %s was not listed when wait_timeout=%ss ran out. The service does not report a "
                    "failed backup: it never appears. Run the task again (it finds the backup once listed), or wait for "
                    "the on-demand-backup event." % (kinds, self.site, self.params["wait_timeout"]))
        return ("The deleted backups of site %s were still listed when wait_timeout=%ss ran out; run the task again."
                % (self.site, self.params["wait_timeout"]))

    def finish_present(self, records):
        chosen, created = dict(self.found), []
        for kind, before in getattr(self, "waiting", []):
            new = [r for r in _of_kind(records, kind) if r["backup_id"] not in before]
            if new:
                chosen[kind] = new[0]
                created.append(new[0]["backup_id"])
        self.result.update(backup_ids=[chosen[k]["backup_id"] for k in self.kinds if k in chosen], created=created)
        if getattr(self, "requests", None):
            self.result["requests"] = self.requests
