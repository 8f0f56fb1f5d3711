"""The emulated service: sites, client metadata, migrations and response tickets, with their rules.

Everything the HTTP layer needs is a method that returns ``(status, message, data)`` or raises
``ApiError``; one re-entrant lock guards all state, and every change is written to the state file
(when there is one) before the answer goes out, so a restart never loses an acknowledged write.
"""

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


class ApiError(Exception):
    def __init__(self, status, message, data=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.data = [] if data is None else data


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


class Service:
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
        self.epoch = 0  # bumped by reset(): workers of an older epoch must not touch new state
        self.extra_202 = {}
        self.sites, self.client_meta, self.migrations, self.tickets = {}, {}, {}, {}
        self.next_migration_id = int(config.get("first_migration_id", 5001))
        self.ticket_seq = 0
        if state_file and os.path.exists(state_file):
            self._load()
        else:
            self._seed()
            self._save()

    # ----------------------------------------------------------------- state and persistence
    def _seed(self):
        self.sites = {}
        for entry in self.config.get("sites", []):
            self._put_site(int(entry["id"]), entry["domain"], bool(entry.get("allow_migration")))
        self.client_meta = {self.client: {}}
        self.migrations, self.tickets, self.extra_202 = {}, {}, {}

    def _put_site(self, site_id, domain, allow):
        self.sites[site_id] = {"id": site_id, "domain": domain.lower(), "created": _stamp(),
                               "allow_site_migration": "true" if allow else None, "meta": {}}
        os.makedirs(self.storage(site_id), exist_ok=True)

    def storage(self, site_id):
        return os.path.join(self.workdir, "sites", str(site_id))

    def _load(self):
        with open(self.state_file, encoding="utf-8") as handle:
            state = json.load(handle)
        self.sites = {int(k): v for k, v in state["sites"].items()}
        for site_id in self.sites:
            os.makedirs(self.storage(site_id), exist_ok=True)
        self.client_meta = state.get("client_meta", {})
        self.client_meta.setdefault(self.client, {})
        self.migrations = {int(k): v for k, v in state.get("migrations", {}).items()}
        self.tickets = state.get("tickets", {})
        self.next_migration_id = max(self.next_migration_id, state.get("next_migration_id", 0))
        self.ticket_seq = state.get("ticket_seq", 0)
        # No worker survived the restart: whatever was running ends as a failure, visibly.
        for ticket in self.tickets.values():
            if ticket["status"] == "running":
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
                 "migrations": self.migrations, "tickets": self.tickets,
                 "next_migration_id": self.next_migration_id, "ticket_seq": self.ticket_seq}
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
            shutil.rmtree(os.path.join(self.workdir, "sites"), ignore_errors=True)
            self._seed()
            self._save()

    # ----------------------------------------------------------------- lookups
    def _site(self, ref):
        ref = str(ref).strip().lower()
        if ref.isdigit() and int(ref) in self.sites:
            return self.sites[int(ref)]
        for site in self.sites.values():
            if site["domain"] == ref:
                return site
        raise ApiError(404, "Site not found: %s" % ref)

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
    def site_get(self, ref):
        with self.lock:
            site = self._site(ref)
            return 200, "OK", {"atomic_site_id": site["id"], "atomic_client_id": int(self.client_id)
                               if self.client_id.isdigit() else self.client_id,
                               "domain_name": site["domain"], "php_version": "8.3", "wp_version": "latest",
                               "created": site["created"]}

    def site_meta_get(self, ref, key):
        with self.lock:
            site = self._site(ref)
            if key == "allow_site_migration":
                return 200, "OK", site["allow_site_migration"]
            return 200, "OK", site["meta"].get(key)

    def site_allow_migration(self, ref):
        with self.lock:
            site = self._site(ref)
            if site["allow_site_migration"] not in (None, "true"):
                return 200, "OK", {"ready_for_migration": False}
            site["allow_site_migration"] = "true"
            self._save()
            return 200, "OK", {"ready_for_migration": True}

    def hook_site_view(self, site):
        return {"id": site["id"], "atomic_site_id": site["id"], "domain_name": site["domain"],
                "client": self.client, "allow_site_migration": site["allow_site_migration"],
                "storage": self.storage(site["id"]), "created": site["created"]}

    def hook_add_site(self, body):
        """One site ({"id", "domain", "allow_migration", "provisioned"}), or many: {"sites": [...]}."""
        if isinstance(body.get("sites"), list):
            return {"sites": [self.hook_add_site(site if isinstance(site, dict) else {}) for site in body["sites"]]}
        site_id, domain = body.get("id"), body.get("domain")
        if isinstance(site_id, bool) or not isinstance(site_id, int) or site_id <= 0:
            raise ApiError(400, "id must be a positive integer")
        if not isinstance(domain, str) or not domain or "/" in domain:
            raise ApiError(400, "domain must be a host name")
        with self.lock:
            if site_id in self.sites or any(s["domain"] == domain.lower() for s in self.sites.values()):
                raise ApiError(409, "site %s or domain %s already exists" % (site_id, domain))
            self._put_site(site_id, domain, bool(body.get("allow_migration")))
            self._save()
            view = self.hook_site_view(self.sites[site_id])
        if body.get("provisioned") and self.sender:
            self.sender.emit(self.client, "site_provisioned", atomic_site_id=site_id, data=[])
        return view

    def hook_get_site(self, ref):
        with self.lock:
            return self.hook_site_view(self._site(ref))

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
            self.ticket_seq += 1
            tid = new_ticket_id(self.ticket_seq)
            now = time.time()
            self.tickets[tid] = {"id": tid, "migration_id": mig["id"], "site_id": mig["site_id"],
                                 "client": mig["client"], "operation": operation, "status": "running",
                                 "created": now, "accept_until": now + self.accept_delay, "responses": []}
            mig["state"] = "preflight-running" if operation == "preflight" else RUNNING
            mig["generation"] += 1
            mig["updated"] = _stamp()
            self._save()
            job = (self.epoch, mig["id"], mig["generation"], tid, operation)
        threading.Thread(target=self._work, args=job, daemon=True,
                         name="%s-%s" % (operation, migration_id)).start()
        return 200, "OK", {"response-ticket-id": tid}

    def _executor_view(self, mig):
        # The full record plus the args flattened to the top level, for executors' convenience.
        view = copy.deepcopy(mig)
        for key, value in mig["args"].items():
            view.setdefault(key, value)
        return view

    def _work(self, epoch, mid, generation, tid, operation):
        time.sleep(self.accept_delay)  # queued: the ticket answers 202 meanwhile
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
