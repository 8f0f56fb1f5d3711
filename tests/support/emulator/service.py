"""The emulated service: sites, jobs, client metadata, migrations and response tickets, with their rules.

Everything the HTTP layer needs is a method that returns ``(status, message, data)`` or raises
``ApiError``; one re-entrant lock guards all state, and every change is written to the state file
(when there is one) before the answer goes out, so a restart never loses an acknowledged write.
Jobs (create-site, delete-site) move with the clock: every read brings them up to date first, and a
scheduler thread applies their effects (and sends ``site_provisioned``) when nobody is reading.
"""

import bisect
import copy
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

import backups as B
import certificates as C
import dns as D
import jobs as J
import sites as S
from domains import DomainEndpoints
from errors import DOMAIN_USED_STATUS, LOCKED_STATUS, ApiError  # noqa: F401 (ApiError: server.py imports it here)
from variants import Variants

LOG = logging.getLogger("emulator.service")

STATE_VERSION = 1
FIELDS = ("remote-host", "remote-user", "remote-port", "remote-pass", "remote-docroot", "remote-domain",
          "ssh-id", "ssh-id-pass")
SECRETS = ("remote-pass", "ssh-id", "ssh-id-pass")
REDACTED = "[redacted]"
WRITE_ONLY_META = ("webhook_hmac_key",)
RUNNING = "migration-running"
STATES = ("new", "preflight-running", "preflight-succeeded", "preflight-failed", RUNNING,
          "migration-succeeded", "migration-failed")
# Seconds within which a ticket's progress line reaches the state file (every other change is written
# before its answer goes out).
MESSAGE_SAVE_DELAY = 0.5
RECENT_JOBS = 100  # GET job-status without an ID lists this many of the client's newest jobs


def _stamp(when=None):
    # MySQL-style UTC text, the way the service's other dates look.
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when))


def _string(params, name):
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise ApiError(400, "%s must be a single value" % name)
    return value


def new_ticket_id(seq):
    """Same shape as the documented example ``697101d62363a84200817088867.243054b9b46e78e7.1``."""
    now = time.time()
    return "%x%s%011d.%s.%d" % (int(now), secrets.token_hex(4), int((now % 1) * 1e11),
                                secrets.token_hex(8), seq)


def generate_identity(migration_id):
    """An ed25519 pair: OpenSSH public line (with a comment naming the migration) and private PEM."""
    key = ed25519.Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    return "%s wpcloud-migration-%s" % (public, migration_id), private


class TicketHandle:
    """What an executor sees of a response ticket: it can only append messages."""

    def __init__(self, service, epoch, ticket_id):
        self._service, self._epoch, self.id = service, epoch, ticket_id

    def add_message(self, text):
        self._service._add_message(self._epoch, self.id, str(text))


class Service(DomainEndpoints, B.BackupEndpoints):
    def __init__(self, config, workdir, executor, accept_delay=1.0, state_file=None, sender=None):
        self.config = config
        self.client = config["client"]
        self.client_id = str(config.get("client_id", 1))
        self.workdir = workdir
        self.executor = executor
        self.accept_delay = float(accept_delay)
        self.state_file = state_file
        self.sender = sender
        self.lock = threading.RLock()
        self._message_save = None   # the pending write of ticket progress lines (_add_message)
        self._jobs_wake = threading.Condition(self.lock)  # the scheduler sleeps on it until a job is due
        self.epoch = 0  # bumped by reset(): workers of an older epoch must not touch new state
        self.extra_202 = {}
        self.sites, self.client_meta, self.migrations, self.tickets = {}, {}, {}, {}
        self.site_ids, self.domains = [], {}  # sorted IDs (get-sites paging) and primary domain -> ID
        self.aliases, self.reserved = {}, {}  # alias -> ID; a pending switch's new domain -> ID
        self.ssl, self.dns = {}, {}  # domain -> certificate record; domain -> {"since", "txt"} (the DNS hook)
        self.backups = {}  # backup ID -> record (backups.py)
        self.jobs, self.pending_jobs, self.outbox = {}, set(), []
        self.external_domains = {d.lower() for d in config.get("external_domains", [])}
        self.provisioning = J.normalize_config(config.get("provisioning"))
        self.ssl_config = C.normalize_config(config.get("ssl"))
        self.backup_config = B.normalize_config(config.get("backups"))
        self.next_migration_id = int(config.get("first_migration_id", 5001))
        self.next_job_id = int(config.get("first_job_id", 7001))
        self.next_site_id = int(config.get("first_site_id", 100001))
        self.next_backup_id = int(config.get("first_backup_id", 3001))
        self.next_backup_request_id = int(config.get("first_backup_request_id", 9001))
        self.next_cert_id = 1
        self.ticket_seq = 0
        # Other readings of the service (variants.py); reset() restores the start values.
        self.variants = Variants(config.get("variants"))
        if state_file and os.path.exists(state_file):
            self._load()
        else:
            self._seed()
            self._save()
        threading.Thread(target=self._job_loop, daemon=True, name="jobs").start()

    # ----------------------------------------------------------------- state and persistence
    def _seed(self):
        self.sites, self.site_ids, self.domains = {}, [], {}
        self.aliases, self.reserved, self.ssl, self.dns, self.backups = {}, {}, {}, {}, {}
        for entry in self.config.get("sites", []):
            self._hook_new_site({k: v for k, v in entry.items() if k != "provisioned"})
        self.client_meta = {self.client: {}}
        self.migrations, self.tickets, self.extra_202 = {}, {}, {}
        self.jobs, self.pending_jobs, self.outbox = {}, set(), []

    def _put_site(self, site_id, settings, client, status="active"):
        site = S.new_record(site_id, client, _stamp(), settings)
        site["status"] = status
        self._index_site(site)
        os.makedirs(self.storage(site_id), exist_ok=True)
        # A site's creation domain points to the platform from the start: its certificate is there.
        now = time.time()
        self.dns.setdefault(site["domain"], {"since": now, "txt": None})
        self.ssl[site["domain"]] = C.issued(now, self._new_cert_id())
        return site

    def _new_cert_id(self):
        cert_id = self.next_cert_id
        self.next_cert_id += 1
        return cert_id

    def _dns_since(self, domain):
        return (self.dns.get(domain) or {}).get("since")

    def _index_site(self, site):
        self.sites[site["id"]] = site
        self.domains[site["domain"]] = site["id"]
        for alias in site.get("aliases", ()):
            self.aliases[alias] = site["id"]
        bisect.insort(self.site_ids, site["id"])

    def _remove_site(self, site_id):
        site = self.sites.pop(site_id, None)
        if site is None:
            return
        if self.domains.get(site["domain"]) == site_id:
            del self.domains[site["domain"]]
        for domain in [site["domain"]] + list(site.get("aliases", ())):
            if self.aliases.get(domain) == site_id:
                del self.aliases[domain]
            self.ssl.pop(domain, None)
        for domain in [d for d, owner in self.reserved.items() if owner == site_id]:
            del self.reserved[domain]
        index = bisect.bisect_left(self.site_ids, site_id)
        if index < len(self.site_ids) and self.site_ids[index] == site_id:
            del self.site_ids[index]
        shutil.rmtree(self.storage(site_id), ignore_errors=True)
        self._drop_site_backups(site_id)  # deleting a site removes its backups (docs)

    def storage(self, site_id):
        return os.path.join(self.workdir, "sites", str(site_id))

    def _load(self):
        with open(self.state_file, encoding="utf-8") as handle:
            state = json.load(handle)
        self.sites, self.site_ids, self.domains = {}, [], {}
        self.aliases, self.reserved = {}, {}
        for site in state["sites"].values():
            self._index_site(S.complete_record(site, self.client))
            os.makedirs(self.storage(site["id"]), exist_ok=True)
        self.client_meta = state.get("client_meta", {})
        self.client_meta.setdefault(self.client, {})
        self.migrations = {int(k): v for k, v in state.get("migrations", {}).items()}
        self.tickets = state.get("tickets", {})
        # Jobs keep their absolute times: one due while the server was down ends at the next read.
        self.jobs = {int(k): v for k, v in state.get("jobs", {}).items()}
        self.pending_jobs = {job_id for job_id, job in self.jobs.items() if not job["final"]}
        self.next_migration_id = max(self.next_migration_id, state.get("next_migration_id", 0))
        self.next_job_id = max(self.next_job_id, state.get("next_job_id", 0))
        self.next_site_id = max(self.next_site_id, state.get("next_site_id", 0))
        self.next_backup_id = max(self.next_backup_id, state.get("next_backup_id", 0))
        self.next_backup_request_id = max(self.next_backup_request_id, state.get("next_backup_request_id", 0))
        self.next_cert_id = max(self.next_cert_id, state.get("next_cert_id", 0))
        self.ssl, self.dns = state.get("ssl", {}), state.get("dns", {})
        self.backups = {int(k): v for k, v in state.get("backups", {}).items()}
        for job in self.jobs.values():
            job.setdefault("extra", {})
            if job["op"] == "domain" and not job["final"]:
                self.reserved[job["domain"]] = job["site_id"]
        self.ticket_seq = state.get("ticket_seq", 0)
        # No worker survived the restart: whatever was running ends as a failure, visibly.
        for ticket in self.tickets.values():
            # a restore's ticket follows its job, which goes on across a restart (absolute times)
            if ticket["status"] == "running" and ticket.get("operation") != "restore":
                ticket["status"] = "failure"
                ticket["responses"].append({"timestamp": int(time.time()),
                                            "message": "Interrupted: the service restarted before the "
                                                       "operation finished."})
                ticket["accept_until"] = 0
        for mig in self.migrations.values():
            if mig["state"] == "preflight-running":
                mig["state"] = "preflight-failed"
            elif mig["state"] == RUNNING:
                mig["state"] = "migration-failed"
        self._save()

    def _save(self):
        """Write the whole state atomically (temp file + rename), mode 0600: it holds secrets."""
        if not self.state_file:
            return
        state = {"version": STATE_VERSION, "sites": self.sites, "client_meta": self.client_meta,
                 "migrations": self.migrations, "tickets": self.tickets, "jobs": self.jobs,
                 "ssl": self.ssl, "dns": self.dns, "backups": self.backups,
                 "next_migration_id": self.next_migration_id, "next_job_id": self.next_job_id,
                 "next_site_id": self.next_site_id, "next_backup_id": self.next_backup_id,
                 "next_backup_request_id": self.next_backup_request_id, "next_cert_id": self.next_cert_id,
                 "ticket_seq": self.ticket_seq}
        directory = os.path.dirname(os.path.abspath(self.state_file))
        fd, tmp = tempfile.mkstemp(prefix=".state-", dir=directory)  # mkstemp creates it 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(state, handle)
            os.replace(tmp, self.state_file)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def reset(self):
        with self.lock:
            self.epoch += 1
            self.variants.reset()
            shutil.rmtree(os.path.join(self.workdir, "sites"), ignore_errors=True)
            shutil.rmtree(os.path.join(self.workdir, "backups"), ignore_errors=True)
            self._seed()
            self.provisioning = J.normalize_config(self.config.get("provisioning"))
            self.ssl_config = C.normalize_config(self.config.get("ssl"))
            self.backup_config = B.normalize_config(self.config.get("backups"))
            self._save()
            self._jobs_wake.notify_all()

    # ----------------------------------------------------------------- jobs over time
    def _advance_jobs(self):
        """Apply the effects of every job and backup request whose time is up (caller holds the lock)."""
        now = time.time()
        if self.backups and self._advance_backups(now):
            self._save()
            self._jobs_wake.notify_all()
        if not self.pending_jobs:
            return
        done = sorted((job_id for job_id in self.pending_jobs if now >= self.jobs[job_id]["done_at"]),
                      key=lambda job_id: self.jobs[job_id]["done_at"])
        for job_id in done:
            job = self.jobs[job_id]
            job["final"] = True
            self.pending_jobs.discard(job_id)
            site = self.sites.get(job["site_id"])
            if site is None:
                continue
            if job["op"] == "create":
                if job["outcome"] == "success":
                    site["status"] = "active"
                    self.outbox.append((site["client"], "site_provisioned", site["id"], []))
                else:  # a failed provisioning leaves no site behind: the domain is free again
                    self._remove_site(site["id"])
            elif job["op"] == "domain":
                self._finish_domain_job(job, site)
            elif job["op"] == "restore":
                self._finish_restore(job, site)
            elif job["outcome"] == "success":
                self._remove_site(site["id"])
            else:
                site["status"] = "active"
        if done:
            self._save()
            self._jobs_wake.notify_all()

    def _job_loop(self):
        """Wake when the next job is due, apply it, and send the webhooks outside the lock."""
        while True:
            with self.lock:
                try:
                    self._advance_jobs()
                    if not self.outbox:
                        due = min([self.jobs[j]["done_at"] for j in self.pending_jobs]
                                  + [t for t in (self._backup_due(),) if t is not None], default=None)
                        self._jobs_wake.wait(None if due is None else max(0.0, due - time.time()) + 0.001)
                        self._advance_jobs()
                except Exception:  # a bug here must show in the log, not silently stop every job
                    LOG.exception("job scheduler")
                    self._jobs_wake.wait(1.0)
                events, self.outbox = self.outbox, []
            for client, event, site_id, data in events:
                if self.sender:
                    try:
                        self.sender.emit(client, event, atomic_site_id=site_id, data=data)
                    except Exception:  # a closed sender at shutdown must not kill the scheduler
                        LOG.exception("could not queue %s for site %s", event, site_id)

    def _start_job(self, op, site, domain=None, extra=None):
        """A new job on ``site``; ``domain``: the domain it is about and whose overrides apply (a domain
        switch: the new one), else the site's."""
        domain = domain or site["domain"]
        outcome, queued, duration = J.plan(self.provisioning, op, domain)
        job_id = self.next_job_id
        self.next_job_id += 1
        self.jobs[job_id] = J.new_job(job_id, op, site["client"], site["id"], domain, time.time(),
                                      outcome, queued, duration, extra)
        self.pending_jobs.add(job_id)
        site["job"] = job_id
        self._jobs_wake.notify_all()
        return job_id

    # ----------------------------------------------------------------- lookups
    def _find_site(self, ref):
        ref = str(ref).strip().lower()
        site_id = int(ref) if ref.isdigit() else self.domains.get(ref)
        return self.sites.get(site_id) if site_id is not None else None

    def _site(self, ref):
        """A site this key may act on: 404 when unknown, 403 when it belongs to another client."""
        self._advance_jobs()
        site = self._find_site(ref)
        if site is None:
            raise ApiError(404, "Site not found: %s" % str(ref).strip().lower())
        if site["client"] != self.client:
            raise ApiError(403, "Forbidden: this key cannot act on the client of site %s" % str(ref).strip())
        return site

    def _check_unlocked(self, site, doing):
        if site["status"] == "provisioning":
            raise ApiError(LOCKED_STATUS, "Site %s is locked: provisioning (job %s) has not finished; "
                                          "try again when it has" % (site["id"], site.get("job")))
        if site["status"] == "deleting":
            raise ApiError(LOCKED_STATUS, "Site %s is locked: it is being deleted (job %s)"
                           % (site["id"], site.get("job")))
        if site["status"] == "restoring":
            raise ApiError(LOCKED_STATUS, "Site %s is locked: a restore is running (job %s)"
                           % (site["id"], site.get("job")))
        if doing == "domain" and site.get("domain_job"):
            raise ApiError(LOCKED_STATUS, "Site %s is locked: its primary domain is being changed (job %s)"
                           % (site["id"], site["domain_job"]))
        if doing in ("delete", "backup", "restore"):
            # A preflight does not touch the site's storage: only deleting the site waits for it.
            busy = ("preflight-running", RUNNING) if doing == "delete" else (RUNNING,)
            for mig in self.migrations.values():
                if mig["site_id"] == site["id"] and mig["state"] in busy:
                    raise ApiError(LOCKED_STATUS, "Site %s is locked: migration %s is running"
                                   % (site["id"], mig["id"]))

    def _check_client(self, client):
        if client != self.client:
            raise ApiError(403, "Forbidden: this key cannot act on client %s" % client)

    def _migration(self, migration_id):
        if not str(migration_id).isdigit() or int(migration_id) not in self.migrations:
            raise ApiError(404, "Migration not found: %s" % migration_id)
        return self.migrations[int(migration_id)]

    def get_client_meta(self, client, key):
        """For the webhook sender: the raw value (secrets included) or None."""
        with self.lock:
            return self.client_meta.get(client, {}).get(key)

    # ----------------------------------------------------------------- client metadata
    @staticmethod
    def _check_meta_value(key, value):
        if value is None:
            raise ApiError(400, "Missing required parameter: value")
        if key == "webhook_url":
            parts = urlsplit(value)
            if parts.scheme.lower() != "https" or not parts.hostname:
                raise ApiError(400, "Invalid value for webhook_url: it must be an https:// URL with a host")
        if key in WRITE_ONLY_META and not value:
            raise ApiError(400, "Invalid value for %s: it must not be empty" % key)

    def client_meta_add(self, client, key, params):
        with self.lock:
            self._check_client(client)
            value = _string(params, "value")
            self._check_meta_value(key, value)
            meta = self.client_meta.setdefault(client, {})
            if key in meta:
                raise ApiError(409, "Client metadata %s already exists; use update to replace it" % key)
            meta[key] = value
            self._save()
            return 200, "OK", []

    def client_meta_update(self, client, key, params):
        with self.lock:
            self._check_client(client)
            value = _string(params, "value")
            meta = self.client_meta.setdefault(client, {})
            if key not in meta:
                raise ApiError(404, "Client metadata %s is not set" % key)
            self._check_meta_value(key, value)
            meta[key] = value
            self._save()
            return 200, "OK", []

    def client_meta_get(self, client, key):
        with self.lock:
            self._check_client(client)
            meta = self.client_meta.get(client, {})
            if key not in meta:
                raise ApiError(404, "Client metadata %s is not set" % key)
            return 200, "OK", None if key in WRITE_ONLY_META else meta[key]

    def client_meta_remove(self, client, key):
        with self.lock:
            self._check_client(client)
            meta = self.client_meta.get(client, {})
            if key not in meta:
                raise ApiError(404, "Client metadata %s is not set" % key)
            del meta[key]
            self._save()
            return 200, "OK", []

    # ----------------------------------------------------------------- sites
    def _public_client_id(self):
        return int(self.client_id) if self.client_id.isdigit() else self.client_id

    def site_get(self, ref, extra=False):
        with self.lock:
            site = self._site(ref)
            return 200, "OK", S.public_record(site, self._public_client_id(), extra=extra)

    def site_meta_get(self, ref, key):
        with self.lock:
            return 200, "OK", S.meta_value(self._site(ref), key)

    def site_meta_update(self, ref, key, params):
        with self.lock:
            site = self._site(ref)
            try:
                field, value = S.meta_write(key, _string(params, "value"))
            except S.FieldError as exc:
                raise ApiError(400, str(exc)) from None
            if field == "meta":
                site["meta"][key] = value
            else:
                site[field] = value
            self._save()
            return 200, "OK", []

    def site_meta_remove(self, ref, key):
        """Removing an unset key is not an error (the docs' restore guide removes suspended unconditionally)."""
        with self.lock:
            site = self._site(ref)
            try:
                S.meta_write(key, None, removing=True)
            except S.FieldError as exc:
                raise ApiError(400, str(exc)) from None
            if site["meta"].pop(key, None) is not None:
                self._save()
            return 200, "OK", []

    def site_allow_migration(self, ref):
        with self.lock:
            site = self._site(ref)
            self._check_unlocked(site, "allow")
            if site["allow_site_migration"] not in (None, "true"):
                return 200, "OK", {"ready_for_migration": False}
            site["allow_site_migration"] = "true"
            self._save()
            return 200, "OK", {"ready_for_migration": True}

    def _domain_taken(self, domain):
        """Used by a site (primary or alias), promised to a pending switch, or hosted elsewhere without this
        client's verification TXT record (the DNS hook publishes one)."""
        if self._domain_attached(domain):
            return True
        if domain in self.external_domains:
            return (self.dns.get(domain) or {}).get("txt") != D.verification_code(self.client, domain)
        return False

    def _domain_attached(self, domain):
        return domain in self.domains or domain in self.aliases or domain in self.reserved

    def _service_site(self, service, identifier):
        """The site of a ``{service}/{identifier}`` path (rtCamp base.py, WPConcierge Sites.php): the client's
        name and a site ID, or the word ``domain`` and a primary domain; switch service_form narrows or widens
        what is accepted. 400 for a form refused, then as _site (404, 403)."""
        form = self.variants["service_form"]
        if service == "domain":
            if form == "client-id":
                raise ApiError(400, "Invalid service domain: use {client}/{site ID}")
            if S.normalize_domain(identifier) is None:
                raise ApiError(400, "Invalid domain: %s" % identifier[:253])
        else:
            if form == "domain":
                raise ApiError(400, "Invalid service %s: use domain/{domain}" % service[:40])
            if form != "any-service":
                self._check_client(service)
            if not identifier.isdigit():
                raise ApiError(400, "Use {client}/{site ID} or domain/{domain}, not %s/%s"
                               % (service[:40], identifier[:253]))
        return self._site(identifier)

    def site_create(self, client, params):
        """create-site: the record exists at once (status provisioning) and a job provisions it."""
        with self.lock:
            self._check_client(client)
            self._advance_jobs()
            try:
                settings = S.validate_create(params)
            except S.FieldError as exc:
                raise ApiError(400, str(exc)) from None
            if self.variants["create_allow_meta"] == "dropped":
                settings["allow"] = None  # a service that ignores meta[allow_site_migration]
            if self._domain_taken(settings["domain"]):
                raise ApiError(DOMAIN_USED_STATUS, S.domain_used_message(settings["domain"]))
            site_id = max(self.next_site_id, (self.site_ids[-1] + 1) if self.site_ids else 0)
            self.next_site_id = site_id + 1
            site = self._put_site(site_id, settings, client, status="provisioning")
            job_id = self._start_job("create", site)
            self._save()
            return 200, "OK", {"job_id": job_id, "atomic_site_id": site_id, "domain_name": site["domain"]}

    def site_list(self, client, keys, params):
        """get-sites: the client's sites by ascending ID, after ``after``, at most ``limit``."""
        paging = self.variants["paging"]
        if paging == "refuse" and ("limit" in params or "after" in params):
            raise ApiError(400, "Unknown parameter: limit/after are not supported")
        limit = _string(params, "limit") if paging == "honour" else None
        after = _string(params, "after") if paging == "honour" else None
        allow_key = self.variants["list_allow_key"]
        if allow_key == "refused" and "allow_site_migration" in keys:
            raise ApiError(400, "Invalid meta key: allow_site_migration")
        if limit is not None and (not limit.isdigit() or int(limit) < 1):
            raise ApiError(400, "limit must be a positive integer")
        if after is not None and not after.isdigit():
            raise ApiError(400, "after must be a site ID")
        for key in keys:
            if not S.META_KEY.fullmatch(key):
                raise ApiError(400, "Invalid meta key: %s" % key[:64])
        limit = min(int(limit), self.list_max_limit) if limit is not None else None
        with self.lock:
            self._check_client(client)
            self._advance_jobs()
            start = bisect.bisect_right(self.site_ids, int(after)) if after is not None else 0
            items = []
            for site_id in self.site_ids[start:]:
                site = self.sites[site_id]
                if site["client"] != client:
                    continue
                items.append(S.list_item(site, [k for k in keys if not (
                    allow_key == "dropped" and k == "allow_site_migration")]))
                if limit is not None and len(items) >= limit:
                    break
            return 200, "OK", items

    @property
    def list_max_limit(self):
        return int(self.config.get("list_max_limit", 1000))

    def site_delete(self, service, identifier):
        """delete-site/{client}/{site ID} or delete-site/domain/{domain}: a job removes the site."""
        with self.lock:
            site = self._service_site(service, identifier)
            if site["status"] == "deleting":
                raise ApiError(400, "A deletion is already queued for site %s (job %s)" % (site["id"], site["job"]))
            if S.is_set(site["meta"].get("do_not_delete")):
                raise ApiError(400, "Site %s has do_not_delete set; remove it before deleting the site" % site["id"])
            held = site["ondemand_backups"] + self.ondemand_count(site["id"])
            if held:
                raise ApiError(412, "Site %s has %d on-demand backup(s); delete them before deleting the site"
                               % (site["id"], held))
            self._check_unlocked(site, "delete")
            site["status"] = "deleting"
            job_id = self._start_job("delete", site)
            self._save()
            return 200, "OK", {"job_id": job_id}

    def check_domain(self, client, domain):
        with self.lock:
            self._check_client(client)
            self._advance_jobs()
            normal = S.normalize_domain(domain)
            if normal is None:
                raise ApiError(400, "Invalid domain: %s" % domain[:253])
            if self._domain_taken(normal):
                raise ApiError(DOMAIN_USED_STATUS, S.domain_used_message(normal))
            return 200, "OK", {"allowed": True}

    def php_versions(self, client):
        self._check_client(client)
        return 200, "OK", list(S.PHP_VERSIONS)

    # ----------------------------------------------------------------- jobs
    def _job(self, job_id):
        job = self.jobs.get(int(job_id)) if str(job_id).isdigit() else None
        if job is None or job["client"] != self.client:
            raise ApiError(404, "Job not found: %s" % job_id)
        return job

    @staticmethod
    def _job_ids(params, leading=None):
        """The IDs of a batch request: ``jobs[]=1&jobs[]=2`` (or ``jobs[0]=1``), plus a leading path ID."""
        value = params.get("jobs")
        if value is None and leading is None:
            raise ApiError(400, "Missing required parameter: jobs (send jobs[]=ID for each job)")
        if value is not None and not isinstance(value, dict):
            raise ApiError(400, "jobs must be an array: send jobs[]=ID for each job")
        ids = ([leading] if leading is not None else []) + list((value or {}).values())
        for job_id in ids:
            if not isinstance(job_id, str) or not job_id.strip().isdigit():
                raise ApiError(400, "Invalid job ID in jobs: IDs are integers")
        return list(dict.fromkeys(job_id.strip() for job_id in ids))

    def _job_map(self, ids, view):
        """job-id -> view for the known IDs; unknown IDs are left out. PHP's empty array is ``[]``."""
        now = time.time()
        result = {}
        for job_id in ids:
            job = self.jobs.get(int(job_id))
            if job is not None and job["client"] == self.client:
                result[str(job["id"])] = view(job, now)
        return result or []

    def job_status(self, job_id=None, params=None, batch=False):
        """GET job-status/{id}: one job object; POST job-status[/{id}] with jobs[]: a map; GET
        job-status: the client's newest jobs as a map."""
        with self.lock:
            self._advance_jobs()
            if batch:
                return 200, "OK", self._job_map(self._job_ids(params or {}, job_id), self._public_job)
            if job_id is None:
                newest = sorted((j for j in self.jobs if self.jobs[j]["client"] == self.client))[-RECENT_JOBS:]
                return 200, "OK", self._job_map([str(j) for j in newest], self._public_job)
            return 200, "OK", self._public_job(self._job(job_id), time.time())

    def job_completion(self, job_id=None, params=None, batch=False):
        """GET job-completion/{id}: the bare status string; POST with jobs[]: a map id -> string."""
        with self.lock:
            self._advance_jobs()
            if batch:
                return 200, "OK", self._job_map(self._job_ids(params or {}, job_id), self._job_word)
            return 200, "OK", self._job_word(self._job(job_id), time.time())

    def _public_job(self, job, now):
        view = J.public_job(job, now)
        view["_status"] = self.variants.job_word(view["_status"])
        return view

    def _job_word(self, job, now):
        return self.variants.job_word(J.status_of(job, now))

    # ----------------------------------------------------------------- test hooks
    def hook_site_view(self, site):
        return {"id": site["id"], "atomic_site_id": site["id"], "domain_name": site["domain"],
                "client": site["client"], "status": site["status"], "job": site.get("job"),
                "allow_site_migration": site["allow_site_migration"], "meta": dict(site["meta"]),
                "ondemand_backups": site["ondemand_backups"], "storage": self.storage(site["id"]),
                "created": site["created"], "aliases": list(site["aliases"]), "domain_job": site.get("domain_job"),
                "backups": sorted(b for b, r in self.backups.items() if r["site_id"] == site["id"])}

    HOOK_SITE_FIELDS = {"id", "domain", "allow_migration", "provisioned", "client", "meta", "ondemand_backups",
                        "php_version", "admin_user", "admin_email", "geo_affinity", "aliases"}

    def _hook_new_site(self, body):
        """Validate one hook site and add it (caller holds the lock); returns the site."""
        unknown = set(body) - self.HOOK_SITE_FIELDS
        if unknown:
            raise ApiError(400, "unknown site fields: %s" % ", ".join(sorted(unknown)))
        site_id, domain = body.get("id"), body.get("domain")
        if isinstance(site_id, bool) or not isinstance(site_id, int) or site_id <= 0:
            raise ApiError(400, "id must be a positive integer")
        if not isinstance(domain, str) or not domain or "/" in domain:
            raise ApiError(400, "domain must be a host name")
        client = body.get("client", self.client)
        if not isinstance(client, str) or not client or "/" in client:
            raise ApiError(400, "client must be a client name")
        meta = body.get("meta") or {}
        if not isinstance(meta, dict) or any(not isinstance(v, str) for v in meta.values()):
            raise ApiError(400, "meta must be an object of strings")
        backups = body.get("ondemand_backups", 0)
        if isinstance(backups, bool) or not isinstance(backups, int) or backups < 0:
            raise ApiError(400, "ondemand_backups must be a count")
        settings = {"domain": domain.lower(), "allow": "true" if body.get("allow_migration") else None,
                    "meta": meta}
        for name in ("php_version", "admin_user", "admin_email", "geo_affinity"):
            if body.get(name) is not None:
                settings[name] = body[name]
        if settings.get("geo_affinity", S.DEFAULT_GEO) not in S.GEO_POOLS:
            raise ApiError(400, "geo_affinity must be one of %s" % ", ".join(sorted(S.GEO_POOLS)))
        if site_id in self.sites or self._domain_attached(domain.lower()):
            raise ApiError(409, "site %s or domain %s already exists" % (site_id, domain))
        aliases = body.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise ApiError(400, "aliases must be a list of host names")
        aliases = [a.lower() for a in aliases]
        if any(S.normalize_domain(a) != a or self._domain_taken(a) or a == domain.lower() for a in aliases):
            raise ApiError(409, "aliases must be host names no site uses: %s" % ", ".join(aliases))
        site = self._put_site(site_id, settings, client)
        site["ondemand_backups"] = backups
        now = time.time()
        for alias in aliases:   # attached and pointed here from the start, like the site's own domain
            site["aliases"].append(alias)
            self.aliases[alias] = site_id
            self.dns.setdefault(alias, {"since": now, "txt": None})
            self.ssl[alias] = C.issued(now, self._new_cert_id())
        return site

    def hook_add_site(self, body):
        """One site ({"id", "domain", "allow_migration", "provisioned", "client", "meta", ...}), or
        many: {"sites": [...]} (added in order, stopping at the first refused one; one state write)."""
        many = isinstance(body.get("sites"), list)
        entries = body["sites"] if many else [body]
        added, views, refused = [], [], None
        with self.lock:
            self._advance_jobs()
            try:
                for entry in entries:
                    site = self._hook_new_site(entry if isinstance(entry, dict) else {})
                    added.append((site["client"], site["id"], bool(entry.get("provisioned"))))
                    views.append(self.hook_site_view(site))
            except ApiError as exc:
                refused = exc
            if added:
                self._save()
        if self.sender:
            for client, site_id, provisioned in added:
                if provisioned:
                    self.sender.emit(client, "site_provisioned", atomic_site_id=site_id, data=[])
        if refused is not None:
            raise refused
        return {"sites": views} if many else views[0]

    def hook_get_site(self, ref):
        with self.lock:
            self._advance_jobs()
            site = self._find_site(ref)
            if site is None:
                raise ApiError(404, "Site not found: %s" % ref)
            return self.hook_site_view(site)

    def hook_provisioning(self, config=None):
        """Replace (config given) or show the job timing configuration."""
        with self.lock:
            if config is not None:
                try:
                    self.provisioning = J.normalize_config(config)
                except ValueError as exc:
                    raise ApiError(400, "invalid provisioning configuration: %s" % exc) from None
            return copy.deepcopy(self.provisioning)

    # ----------------------------------------------------------------- migrations
    @staticmethod
    def _validated(params, creating):
        """Pick and check the migration fields; returns only the fields that were sent."""
        given = {}
        for name in FIELDS:
            value = _string(params, name)
            if value is not None:
                given[name] = value
        for name in ("remote-host", "remote-user"):
            if creating and not given.get(name, "").strip():
                raise ApiError(400, "Missing required parameter: %s" % name)
            if name in given and not given[name].strip():
                raise ApiError(400, "%s must not be empty" % name)
            if name in given:
                given[name] = given[name].strip()
        if "remote-port" in given:
            port = given["remote-port"].strip()
            if not port.isdigit() or not 1 <= int(port) <= 65535:
                raise ApiError(400, "remote-port must be an integer from 1 to 65535")
            given["remote-port"] = int(port)
        elif creating:
            given["remote-port"] = 22
        for name in SECRETS:
            if name in given and not given[name]:
                raise ApiError(400, "%s must not be empty" % name)
        if "remote-pass" in given and ("ssh-id" in given or "ssh-id-pass" in given):
            raise ApiError(400, "Use exactly one authentication method: remote-pass, or ssh-id "
                                "(with ssh-id-pass when the key is protected), not both")
        if "ssh-id-pass" in given and "ssh-id" not in given and creating:
            raise ApiError(400, "ssh-id-pass requires ssh-id")
        return given

    def migration_create(self, ref, params):
        with self.lock:
            site = self._site(ref)
            self._check_unlocked(site, "migrate")
            allow = site["allow_site_migration"]
            if allow is None:
                raise ApiError(403, "Site %s does not allow SSH migrations; call "
                                    "site-allow-ssh-migration/%s first" % (site["id"], site["id"]))
            if allow != "true":
                raise ApiError(409, "Site %s already holds migration %s; no other migration can target it"
                               % (site["id"], allow))
            given = self._validated(params, creating=True)
            mid = self.next_migration_id
            self.next_migration_id += 1
            now = _stamp()
            record = {"id": mid, "site_id": site["id"], "client": self.client, "created": now, "updated": now,
                      "state": "new", "generation": 0, "args": given}
            data = {"migration-id": mid}
            if "remote-pass" in given:
                record["auth"] = "password"
            elif "ssh-id" in given:
                record["auth"] = "key-passphrase" if "ssh-id-pass" in given else "key"
            else:
                public, private = generate_identity(mid)
                record["auth"] = "generated"
                record["ssh-id-pub"] = public
                given["generated-ssh-id"] = private
                data["ssh-id-pub"] = public
            self.migrations[mid] = record
            site["allow_site_migration"] = str(mid)  # spec 2.2: the flag now holds the migration ID
            self._save()
            return 200, "OK", data

    def migration_get(self, migration_id):
        with self.lock:
            mig = self._migration(migration_id)
            args = {k: (REDACTED if k in SECRETS else mig["args"][k]) for k in FIELDS if k in mig["args"]}
            data = {"atomic_site_migration_id": str(mig["id"]), "atomic_site_id": str(mig["site_id"]),
                    "atomic_client_id": self.client_id, "created": mig["created"], "updated": mig["updated"],
                    "state": mig["state"], "auth": mig["auth"]}
            if "ssh-id-pub" in mig:
                data["ssh-id-pub"] = mig["ssh-id-pub"]
            data["args"] = args
            return 200, "OK", data

    def _check_not_running(self, mig, doing):
        if mig["state"] == RUNNING:
            if doing == "update":
                raise ApiError(409, "Migration %s is actively running; pause it before changing its details."
                               % mig["id"])
            raise ApiError(409, "Migration %s is actively running; wait until it finishes." % mig["id"])

    def migration_update(self, migration_id, params):
        with self.lock:
            mig = self._migration(migration_id)
            self._check_not_running(mig, "update")
            given = self._validated(params, creating=False)
            args = mig["args"]
            if "remote-pass" in given:
                # A new auth method replaces the old one as a whole.
                for name in ("ssh-id", "ssh-id-pass", "generated-ssh-id"):
                    args.pop(name, None)
                mig.pop("ssh-id-pub", None)
                mig["auth"] = "password"
            elif "ssh-id" in given:
                for name in ("remote-pass", "ssh-id-pass", "generated-ssh-id"):
                    args.pop(name, None)
                mig.pop("ssh-id-pub", None)
                mig["auth"] = "key-passphrase" if "ssh-id-pass" in given else "key"
            elif "ssh-id-pass" in given:
                if "ssh-id" not in args:
                    raise ApiError(400, "ssh-id-pass requires ssh-id")
                mig["auth"] = "key-passphrase"
            args.update(given)
            mig["state"] = "new"
            mig["generation"] += 1
            mig["updated"] = _stamp()
            self._save()
            return 200, "OK", {"migration-id": mig["id"]}

    def migration_start(self, migration_id, operation):
        """preflight or ready: a new ticket every time, the work in a worker thread."""
        with self.lock:
            mig = self._migration(migration_id)
            self._check_not_running(mig, operation)
            refuse = self.config.get("ready_requires_preflight")
            if operation == "ready" and refuse and mig["state"] != "preflight-succeeded":
                raise ApiError(refuse, "Migration %s cannot start: its preflight has not succeeded since the last "
                                       "change (state %s); run preflight first" % (mig["id"], mig["state"]))
            self._advance_jobs()
            site = self.sites.get(mig["site_id"])
            if site is None:
                raise ApiError(404, "Site %s of migration %s no longer exists" % (mig["site_id"], mig["id"]))
            self._check_unlocked(site, operation)
            tid = self._new_ticket(site, operation, mig["id"])["id"]
            mig["state"] = "preflight-running" if operation == "preflight" else RUNNING
            mig["generation"] += 1
            mig["updated"] = _stamp()
            self._save()
            job = (self.epoch, mig["id"], mig["generation"], tid, operation, time.monotonic() + self.accept_delay)
        threading.Thread(target=self._work, args=job, daemon=True,
                         name="%s-%s" % (operation, migration_id)).start()
        return 200, "OK", {"response-ticket-id": tid}

    def _new_ticket(self, site, operation, migration_id=None):
        """A response ticket (preflight, ready, restore): 202 for accept_delay seconds, then running."""
        self.ticket_seq += 1
        tid = new_ticket_id(self.ticket_seq)
        now = time.time()
        self.tickets[tid] = {"id": tid, "migration_id": migration_id, "site_id": site["id"], "client": site["client"],
                             "operation": operation, "status": "running", "created": now,
                             "accept_until": now + self.accept_delay, "responses": []}
        return self.tickets[tid]

    @staticmethod
    def _ticket_line(ticket, text):
        ticket["responses"].append({"timestamp": int(time.time()), "message": text})

    def _executor_view(self, mig):
        # The full record plus the args flattened to the top level, for executors' convenience.
        view = copy.deepcopy(mig)
        for key, value in mig["args"].items():
            view.setdefault(key, value)
        return view

    def _work(self, epoch, mid, generation, tid, operation, accept_at):
        # Queued: the ticket answers 202 meanwhile. Until a deadline fixed when the ticket was made, so the
        # thread's start-up and the sleep's overshoot don't lengthen the window.
        time.sleep(max(0.0, accept_at - time.monotonic()))
        with self.lock:
            if epoch != self.epoch or mid not in self.migrations:
                return
            mig = self._executor_view(self.migrations[mid])
            site = self.hook_site_view(self.sites[mig["site_id"]])
            site["domain"] = site["domain_name"]
        handle = TicketHandle(self, epoch, tid)
        try:
            if operation == "preflight":
                ok = bool(self.executor.preflight(mig, handle))
            else:
                os.makedirs(site["storage"], exist_ok=True)
                ok = bool(self.executor.run(mig, site, handle))
        except Exception as exc:  # an executor bug must still end the ticket
            LOG.exception("executor %s failed", operation)
            handle.add_message("Internal error while running %s (%s)" % (operation, type(exc).__name__))
            ok = False
        status = "success" if ok else "failure"
        with self.lock:
            if epoch != self.epoch or tid not in self.tickets:
                return
            ticket = self.tickets[tid]
            ticket["status"] = status
            current = self.migrations.get(mid)
            if current is not None and current["generation"] == generation:
                prefix = "preflight" if operation == "preflight" else "migration"
                current["state"] = "%s-%s" % (prefix, "succeeded" if ok else "failed")
                current["updated"] = _stamp()
            self._save()
        if self.sender:
            self.sender.emit(ticket["client"], "response_ticket_updated", atomic_site_id=ticket["site_id"],
                             data={"response-ticket-id": tid, "status": status, "migration-id": mid,
                                   "operation": operation})

    def _add_message(self, epoch, tid, text):
        with self.lock:
            if epoch != self.epoch or tid not in self.tickets:
                return
            self.tickets[tid]["responses"].append({"timestamp": int(time.time()), "message": text})
            # A progress line is no answer to anyone: written within MESSAGE_SAVE_DELAY, with the lines
            # of every ticket of that moment (a write per line held the lock for most of a loaded fleet's run).
            if self._message_save is None:
                self._message_save = threading.Timer(MESSAGE_SAVE_DELAY, self._save_messages)
                self._message_save.daemon = True
                self._message_save.start()

    def _save_messages(self):
        with self.lock:
            self._message_save = None
            self._save()

    # ----------------------------------------------------------------- response tickets
    def ticket_id_of(self, params):
        value = params.get("response-ticket-id")
        return value if isinstance(value, str) and value else None

    def add_extra_202(self, tid, count):
        with self.lock:
            if tid in self.tickets:
                self.extra_202[tid] = self.extra_202.get(tid, 0) + int(count)

    def ticket_get(self, params, full):
        tid = self.ticket_id_of(params)
        if tid is None:
            raise ApiError(400, "Missing required parameter: response-ticket-id")
        with self.lock:
            ticket = self.tickets.get(tid)
            if ticket is None:
                raise ApiError(404, "Response ticket not found")
            if time.time() < ticket["accept_until"]:
                return 202, "Accepted", None
            if self.extra_202.get(tid, 0) > 0:
                self.extra_202[tid] -= 1
                return 202, "Accepted", None
            data = {"response-ticket-id": tid, "status": ticket["status"],
                    "response_count": len(ticket["responses"])}
            if full:
                data["responses"] = copy.deepcopy(ticket["responses"])
            return 200, "OK", data
