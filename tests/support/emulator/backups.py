"""On-demand backups, the backup list and an in-place restore. A mixin of ``service.Service`` (its methods run
under the service's lock and use ``backups``, ``sites``, ``tickets``, ``outbox``), plus the pure parts: the
timing configuration, the public record and the copies on disk.

Readings (docs/api-choices.md "Going live"; README "Contract"): create and delete answer a request ID
(``atomic_backup_request_id``) and nothing can be polled; the ``on-demand-backup`` event reports
``acknowledged``, then ``created`` / ``deleted``; a backup "exists" once the list shows it (``ondemand-fs``,
``ondemand-db``). A backup is a real copy of the site's storage as it is when create answers (``files/`` for
``fs``, ``db.sql`` for ``db``), so a restore brings back exactly those bytes. Restore needs site meta
``allow_restore`` (a recent Unix time) and ``suspended`` = ``503``, and one ready files backup and one
ready database backup of the same site.

Configuration (config key ``backups``, ``POST /_emulator/backups``; seconds from the request)::

    {"create": {"acknowledged": 0.1, "duration": 1.0, "outcome": "success"},
     "delete": {"acknowledged": 0.1, "duration": 0.5},
     "list_lag": 1.0, "quota": {"fs": 1, "db": 1},
     "domains": {"backupfail.example": {"create": {"outcome": "failure"}}}}
"""

import copy
import os
import re
import shutil
import time

from errors import LOCKED_STATUS, ApiError

KINDS = ("fs", "db")
ONDEMAND = {"fs": "ondemand-fs", "db": "ondemand-db"}
TYPE_FILTERS = ("fs", "db", "ondemand-fs", "ondemand-db", "ondemand")
MAX_RESTORE_AGE = 30 * 86400   # allow_restore: at most 30 days old (docs)
MAX_RESTORE_AHEAD = 300        # ... and at most five minutes in the future
DEFAULT_CONFIG = {
    "create": {"acknowledged": 0.1, "duration": 1.0, "outcome": "success"},
    "delete": {"acknowledged": 0.1, "duration": 0.5},
    "list_lag": 1.0,
    "quota": {"fs": 1, "db": 1},
    "domains": {},
}


def _seconds(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 3600:
        raise ValueError("%s must be a number of seconds from 0 to 3600" % where)
    return float(value)


def _step(value, where, fields):
    if not isinstance(value, dict) or set(value) - set(fields):
        raise ValueError("%s takes only %s" % (where, ", ".join(fields)))
    step = {}
    for name, item in value.items():
        if name == "outcome":
            if item not in ("success", "failure"):
                raise ValueError("%s.outcome must be success or failure" % where)
            step[name] = item
        else:
            step[name] = _seconds(item, "%s.%s" % (where, name))
    return step


def normalize_config(config):
    """Validate a backups configuration and fill in the defaults; raises ValueError."""
    config = copy.deepcopy(config or {})
    if not isinstance(config, dict) or set(config) - set(DEFAULT_CONFIG):
        raise ValueError("backups configuration takes only %s" % ", ".join(DEFAULT_CONFIG))
    result = copy.deepcopy(DEFAULT_CONFIG)
    result["create"].update(_step(config.get("create", {}), "create", ("acknowledged", "duration", "outcome")))
    result["delete"].update(_step(config.get("delete", {}), "delete", ("acknowledged", "duration")))
    if "list_lag" in config:
        result["list_lag"] = _seconds(config["list_lag"], "list_lag")
    quota = config.get("quota", {})
    if not isinstance(quota, dict) or set(quota) - set(KINDS):
        raise ValueError("quota takes fs and db")
    for kind, count in quota.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError("quota.%s must be a count" % kind)
        result["quota"][kind] = count
    domains = config.get("domains", {})
    if not isinstance(domains, dict):
        raise ValueError("domains must be an object")
    for domain, ops in domains.items():
        if not isinstance(ops, dict) or set(ops) - {"create"}:
            raise ValueError("domains.%s takes only create" % domain)
        result["domains"][domain.lower()] = {"create": _step(ops.get("create", {}), "domains.%s.create" % domain,
                                                             ("acknowledged", "duration", "outcome"))}
    return result


def kind_of(backup_type):
    """fs or db, for any backup type (fs, db, ondemand-fs, ondemand-db)."""
    return "fs" if backup_type.endswith("fs") else "db"


def _stamp(when):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when))


def render_id(backup_id, form):
    """atomic_backup_id as the switch backup_id_form shows it."""
    if form == "integer":
        return backup_id
    if form == "prefixed":
        return "bkp-%d" % backup_id
    return str(backup_id)


def parse_id(text, form):
    """The internal ID of a backup ID as a client sends it back, or None when it cannot be one."""
    text = str(text).strip()
    match = re.fullmatch(r"bkp-(\d{1,18})", text) if form == "prefixed" else re.fullmatch(r"\d{1,18}", text)
    return int(match.group(1) if form == "prefixed" else match.group(0)) if match else None


def public_record(record, id_form, stamp_form):
    """One entry of site-backups-list / site-backup-info (docs' example; the Python SDK's Backup model)."""
    when = record["taken"]
    return {"atomic_backup_id": render_id(record["id"], id_form), "atomic_site_id": str(record["site_id"]),
            "backup_timestamp": int(when) if stamp_form == "unix" else _stamp(when), "type": record["type"]}


def take_copy(storage, target, kind):
    """Copy the site's files (fs) or database (db) into ``target``; what is absent is recorded as absent, so a
    restore reproduces it. Symlinks stay symlinks; modes and times are kept (copy2)."""
    os.makedirs(target, exist_ok=True)
    if kind == "fs":
        source = os.path.join(storage, "files")
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(target, "files"), symlinks=True)
        else:
            open(os.path.join(target, "files.absent"), "w", encoding="utf-8").close()
    else:
        source = os.path.join(storage, "db.sql")
        if os.path.isfile(source):
            shutil.copy2(source, os.path.join(target, "db.sql"))
        else:
            open(os.path.join(target, "db.absent"), "w", encoding="utf-8").close()


def put_back(target, storage, kind):
    """Replace the site's files (fs) or database (db) with the copy in ``target``; returns a count for the
    ticket (files restored, or database bytes)."""
    if kind == "fs":
        files = os.path.join(storage, "files")
        shutil.rmtree(files, ignore_errors=True)
        copy_dir = os.path.join(target, "files")
        if not os.path.isdir(copy_dir):
            return 0
        shutil.copytree(copy_dir, files, symlinks=True)
        return sum(len(names) for _root, _dirs, names in os.walk(files))
    database = os.path.join(storage, "db.sql")
    copy_file = os.path.join(target, "db.sql")
    if not os.path.isfile(copy_file):
        if os.path.exists(database):
            os.unlink(database)
        return 0
    part = database + ".restore"
    shutil.copy2(copy_file, part)
    os.replace(part, database)
    return os.path.getsize(database)


class BackupEndpoints:
    """on-demand-backup create/delete, site-backups-list, site-backup-info, restore-site."""

    def backup_dir(self, backup_id):
        return os.path.join(self.workdir, "backups", str(backup_id))

    # ----------------------------------------------------------------- records over time
    def _listed(self, record, now):
        """Whether the list shows a backup (switch backup_listing)."""
        listing = self.variants["backup_listing"]
        if record["state"] == "pending":
            return listing == "at-once"
        if listing == "lagging" and record["request_id"] is not None:   # automatic backups do not lag
            return now >= record["ready_at"] + self.backup_config["list_lag"]
        return True

    def _backup_due(self):
        """The next time a backup request changes something (the scheduler wakes for it), or None."""
        times = []
        for record in self.backups.values():
            if not record["acked"]:
                times.append(record["ack_at"])
            if record["state"] == "pending":
                times.append(record["ready_at"])
            if record.get("delete"):
                times.append(record["delete"]["ack_at"] if not record["delete"]["acked"]
                             else record["delete"]["done_at"])
        return min(times, default=None)

    def _advance_backups(self, now):
        """Apply every backup step due by ``now``, in time order (caller holds the lock); True if any."""
        steps = []
        for record in self.backups.values():
            if not record["acked"] and now >= record["ack_at"]:
                steps.append((record["ack_at"], 0, record["id"], "acknowledged"))
            if record["state"] == "pending" and now >= record["ready_at"]:
                steps.append((record["ready_at"], 1, record["id"], "created"))
            delete = record.get("delete")
            if delete and not delete["acked"] and now >= delete["ack_at"]:
                steps.append((delete["ack_at"], 2, record["id"], "delete-acknowledged"))
            if delete and now >= delete["done_at"]:
                steps.append((delete["done_at"], 3, record["id"], "deleted"))
        for _when, _order, backup_id, step in sorted(steps):
            record = self.backups.get(backup_id)
            if record is not None:
                self._backup_step(record, step)
        return bool(steps)

    def _backup_step(self, record, step):
        if step == "acknowledged":
            record["acked"] = True
            self._backup_event(record, "acknowledged", "create", record["request_id"], with_id=False)
        elif step == "created":
            if record["outcome"] == "success":
                record["state"] = "ready"
                self._backup_event(record, "created", "create", record["request_id"])
            else:   # no event for a failure is documented: the backup just never appears
                self._drop_backup(record["id"])
        elif step == "delete-acknowledged":
            record["delete"]["acked"] = True
            self._backup_event(record, "acknowledged", "delete", record["delete"]["request_id"])
        else:
            self._drop_backup(record["id"])
            self._backup_event(record, "deleted", "delete", record["delete"]["request_id"])

    def _backup_event(self, record, state, action, request_id, with_id=True):
        data = {"state": state, "action": action, "atomic_backup_request_id": request_id,
                "atomic_backup_id": render_id(record["id"], self.variants["backup_id_form"]) if with_id else None,
                "type": record["type"]}
        self.outbox.append((record["client"], "on-demand-backup", record["site_id"], data))

    def _drop_backup(self, backup_id):
        self.backups.pop(backup_id, None)
        shutil.rmtree(self.backup_dir(backup_id), ignore_errors=True)

    def _drop_site_backups(self, site_id):
        for backup_id in [b for b, record in self.backups.items() if record["site_id"] == site_id]:
            self._drop_backup(backup_id)

    def ondemand_count(self, site_id, kind=None):
        """On-demand backups a site holds, listed or still being made (they block delete-site: 412)."""
        return sum(1 for record in self.backups.values() if record["site_id"] == site_id
                   and record["type"] in ONDEMAND.values() and (kind is None or kind_of(record["type"]) == kind))

    # ----------------------------------------------------------------- create / delete
    def _new_backup(self, site, backup_type, now, ack=0.0, duration=0.0, outcome="success"):
        backup_id = self.next_backup_id
        self.next_backup_id += 1
        take_copy(self.storage(site["id"]), self.backup_dir(backup_id), kind_of(backup_type))
        record = {"id": backup_id, "site_id": site["id"], "client": site["client"], "type": backup_type,
                  "taken": now, "request_id": None, "state": "ready" if duration <= 0 else "pending",
                  "ack_at": now + ack, "ready_at": now + max(ack, duration), "outcome": outcome, "acked": True,
                  "delete": None}
        self.backups[backup_id] = record
        return record

    def _request_id(self):
        request_id = self.next_backup_request_id
        self.next_backup_request_id += 1
        return request_id

    def _request_answer(self, request_id):
        if self.variants["backup_request_answer"] == "job-id":
            return {"job_id": request_id}
        return {"atomic_backup_request_id": request_id}

    def backup_create(self, ref, kind):
        with self.lock:
            site = self._site(ref)
            if kind not in KINDS:
                raise ApiError(400, "Invalid backup type %s: use fs or db" % kind[:20])
            self._check_unlocked(site, "backup")
            quota = self.backup_config["quota"][kind]
            if self.ondemand_count(site["id"], kind) >= quota:
                raise ApiError(403, "On-demand backup quota reached for site %s: %d %s backup(s); delete one "
                                    "before requesting another" % (site["id"], quota, ONDEMAND[kind]))
            step = dict(self.backup_config["create"])
            step.update(self.backup_config["domains"].get(site["domain"], {}).get("create", {}))
            now = time.time()
            record = self._new_backup(site, ONDEMAND[kind], now, step["acknowledged"],
                                      max(step["duration"], 1e-6), step["outcome"])
            record.update(request_id=self._request_id(), acked=False)
            self._save()
            self._jobs_wake.notify_all()
            return 200, "OK", self._request_answer(record["request_id"])

    def _visible_backup(self, site, text):
        """A backup of ``site`` the client can see (listed), by the ID it sent: 404 otherwise."""
        backup_id = parse_id(text, self.variants["backup_id_form"])
        record = self.backups.get(backup_id) if backup_id is not None else None
        if record is None or record["site_id"] != site["id"] or not self._listed(record, time.time()):
            raise ApiError(404, "Backup %s not found for site %s" % (str(text)[:40], site["id"]))
        return record

    def backup_delete(self, ref, text):
        with self.lock:
            site = self._site(ref)
            self._advance_jobs()
            record = self._visible_backup(site, text)
            if record["type"] not in ONDEMAND.values():
                raise ApiError(400, "Only on-demand backups can be deleted; backup %s is an automatic %s backup"
                               % (text, record["type"]))
            if record["delete"]:
                raise ApiError(400, "A deletion of backup %s is already queued" % text)
            if site["status"] == "restoring":
                raise ApiError(LOCKED_STATUS, "Site %s is locked: a restore is running (job %s)"
                               % (site["id"], site.get("job")))
            step, now = self.backup_config["delete"], time.time()
            record["delete"] = {"request_id": self._request_id(), "ack_at": now + step["acknowledged"],
                                "done_at": now + max(step["acknowledged"], step["duration"]), "acked": False}
            self._save()
            self._jobs_wake.notify_all()
            return 200, "OK", self._request_answer(record["delete"]["request_id"])

    # ----------------------------------------------------------------- list / info
    def backups_list(self, service, identifier, types):
        with self.lock:
            site = self._service_site(service, identifier)
            if len(types) > 1 and self.variants["backup_type_segments"] == "one":
                raise ApiError(404, "Not found: no such endpoint")
            for name in types:
                if name not in TYPE_FILTERS:
                    raise ApiError(400, "Invalid backup type %s: use %s" % (name[:20], ", ".join(TYPE_FILTERS)))
            wanted = set(types)
            if "ondemand" in wanted:
                wanted |= set(ONDEMAND.values())
            now = time.time()
            records = sorted((r for r in self.backups.values() if r["site_id"] == site["id"]
                              and self._listed(r, now) and (not wanted or r["type"] in wanted)),
                             key=lambda r: (r["taken"], r["id"]), reverse=True)
            return 200, "OK", [public_record(r, self.variants["backup_id_form"],
                                             self.variants["backup_timestamp_form"]) for r in records]

    def backup_info(self, service, identifier, text):
        with self.lock:
            site = self._service_site(service, identifier)
            record = self._visible_backup(site, text)
            return 200, "OK", public_record(record, self.variants["backup_id_form"],
                                            self.variants["backup_timestamp_form"])

    # ----------------------------------------------------------------- restore
    @staticmethod
    def _check_allow_restore(site, now):
        value = (site["meta"].get("allow_restore") or "").strip()
        if not value:
            raise ApiError(400, "Site %s does not allow a restore: set site meta allow_restore to the current "
                                "Unix time first" % site["id"])
        if not value.isdigit() or int(value) <= 0:
            raise ApiError(400, "allow_restore must be a positive Unix time, not %r" % value[:20])
        if now - int(value) > MAX_RESTORE_AGE or int(value) - now > MAX_RESTORE_AHEAD:
            raise ApiError(400, "allow_restore of site %s is stale (more than 30 days old or more than five minutes "
                                "ahead); set it to the current Unix time" % site["id"])

    def _restore_pair(self, site, params):
        value = params.get("restore_from")
        if not isinstance(value, dict) or len(value) != 2 or not all(isinstance(v, str) for v in value.values()):
            raise ApiError(400, "restore_from[] must hold two backup IDs: one filesystem and one database backup")
        records = []
        for text in value.values():
            backup_id = parse_id(text, self.variants["backup_id_form"])
            record = self.backups.get(backup_id) if backup_id is not None else None
            if record is None or record["client"] != self.client:
                raise ApiError(404, "Backup %s not found" % text[:40])
            if record["site_id"] != site["id"]:
                raise ApiError(409, "Backup %s belongs to another site, not %s" % (text, site["id"]))
            if record["state"] != "ready" or record["delete"] or not self._listed(record, time.time()):
                raise ApiError(400, "Backup %s is not ready" % text)
            records.append(record)
        kinds = [kind_of(r["type"]) for r in records]
        if kinds[0] == kinds[1]:
            raise ApiError(409, "restore_from[] holds two %s backups; send one filesystem and one database backup"
                           % ("filesystem" if kinds[0] == "fs" else "database"))
        if kinds[0] != "fs" and self.variants["restore_order"] == "files-first":
            raise ApiError(400, "restore_from[] takes the filesystem backup first, then the database backup")
        return records if kinds[0] == "fs" else records[::-1]

    def restore_site(self, ref, params):
        with self.lock:
            site = self._site(ref)
            self._check_unlocked(site, "restore")
            now = time.time()
            self._check_allow_restore(site, now)
            files, database = self._restore_pair(site, params)
            if (site["meta"].get("suspended") or "").strip() != "503":
                raise ApiError(409, "Site %s is not suspended with 503: set site meta suspended to 503 before a "
                                    "restore" % site["id"])
            ticket = self._new_ticket(site, "restore")
            extra = {"fs": files["id"], "db": database["id"], "ticket": ticket["id"]}
            job_id = self._start_job("restore", site, extra=extra)
            site["status"] = "restoring"
            ids = [render_id(r["id"], self.variants["backup_id_form"]) for r in (files, database)]
            self._ticket_line(ticket, "Restore of site %s queued (job %s): files from backup %s, database from "
                                      "backup %s." % (site["id"], job_id, ids[0], ids[1]))
            self._save()
            if self.variants["restore_answer"] == "job":
                return 200, "OK", {"job_id": job_id}
            return 200, "OK", {"atomic_job_id": job_id, "response_ticket_id": ticket["id"]}

    def _finish_restore(self, job, site):
        """The effect of a restore job that has ended (caller holds the lock)."""
        extra = job["extra"]
        ticket = self.tickets.get(extra["ticket"])
        if site["status"] == "restoring":
            site["status"] = "active"
        ok = job["outcome"] == "success"
        if ok:
            count = put_back(self.backup_dir(extra["fs"]), self.storage(site["id"]), "fs")
            size = put_back(self.backup_dir(extra["db"]), self.storage(site["id"]), "db")
            site["meta"].pop("allow_restore", None)   # the service removes it after a successful restore
            lines = ["Files restored: %d files." % count, "Database restored: %d bytes." % size,
                     "Restore complete. The site stays suspended until site meta suspended is removed."]
            self.outbox.append((site["client"], "site_provisioned", site["id"], []))
        else:
            lines = ["Restore failed: the backups could not be applied; the site is unchanged."]
        if ticket is not None:
            for line in lines:
                self._ticket_line(ticket, line)
            ticket["status"] = "success" if ok else "failure"
            self.outbox.append((site["client"], "response_ticket_updated", site["id"],
                                {"response-ticket-id": ticket["id"], "status": ticket["status"],
                                 "operation": "restore"}))

    # ----------------------------------------------------------------- test hooks
    def hook_backups(self, config=None):
        """Replace (config given) or show the backup timing configuration."""
        with self.lock:
            if config is not None:
                try:
                    self.backup_config = normalize_config(config)
                except ValueError as exc:
                    raise ApiError(400, "invalid backups configuration: %s" % exc) from None
                self._jobs_wake.notify_all()
            return copy.deepcopy(self.backup_config)

    def hook_automatic_backup(self, body):
        """``{"site": ID or domain, "type": "fs"|"db"}``: an automatic backup (the platform's daily fs, hourly db),
        taken and listed now. Answers the record as the list shows it."""
        with self.lock:
            if set(body) - {"site", "type"} or body.get("type") not in KINDS:
                raise ApiError(400, "automatic-backup takes {\"site\": ID or domain, \"type\": \"fs\" or \"db\"}")
            site = self._find_site(body.get("site"))
            if site is None:
                raise ApiError(404, "Site not found: %s" % body.get("site"))
            record = self._new_backup(site, body["type"], time.time())
            self._save()
            return public_record(record, self.variants["backup_id_form"], self.variants["backup_timestamp_form"])
