# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The partner API in memory, behind a requests transport adapter and a urllib3 pool: no server, no socket.

Every session of a WPCloudClient sends through ``FakeService.adapter()``, and its pool for the hot reads
(HOT_READS) is ``FakeService.pool()`` (the ``fake_api`` fixture puts both in place), so the client's own
code runs whole: the operation table, form bodies and query strings, the Auth
header, the envelope, statuses and the retry rules. The service keeps what the modules rely on (sites and
their allow_site_migration, migrations with their states, client metadata, response tickets; for going live a
site's primary domain, aliases and certificates, its backups, site meta and restores) and logs
every request like the emulator's request log (tests/support/emulator): operation, method, parameter names, and
whether it writes. ``fault`` makes the next matching requests fail as a network or a service does,
with the exception chains requests and urllib3 raise (each transport gets its library's).

Real HTTPS against the emulator: tests/system/test_client_https.py.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
from types import SimpleNamespace
from urllib.parse import parse_qsl, unquote, urlsplit

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from urllib3 import HTTPResponse
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.exceptions import SSLError as Urllib3SSLError

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import API_PREFIX, OPERATIONS, WRITE

API_KEY = "unit-key"
URL = "https://api.wpcloud.test"
SERVICE_REDACTED = "[redacted]"  # what the service itself shows for a credential (the emulator's choice)
SECRETS = ("remote-pass", "ssh-id", "ssh-id-pass")
SITE_DB_PASS = "db-pass-of-the-site-7f3a"


def _routes():
    routes = []
    for name, (method, template, kind) in OPERATIONS.items():
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        routes.append((method, re.compile("^" + pattern + "$"), name, kind))
    return routes


ROUTES = _routes()


def _caused(*chain):
    """The last exception, each one caused by the one before (as urllib3 and requests raise them)."""
    for cause, effect in zip(chain, chain[1:]):
        effect.__cause__ = cause
    return chain[-1]


def _urllib3_error(kind, url):
    """What urllib3 raises with retries off (the hot reads' pool) for a network failure of ``kind``."""
    if kind == "refused":
        return _caused(ConnectionRefusedError(111, "Connection refused"),
                       NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused"))
    if kind == "connect-timeout":
        return ConnectTimeoutError(None, "Connection to api.wpcloud.test timed out. (connect timeout=1)")
    if kind == "read-timeout":
        return ReadTimeoutError(None, url, "Read timed out. (read timeout=1)")
    if kind == "reset":
        reset = ConnectionResetError(104, "Connection reset by peer")
        return _caused(reset, ProtocolError("Connection aborted.", reset))
    if kind == "tls":
        verify = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                                                 "unable to get local issuer certificate")
        return _caused(verify, Urllib3SSLError(verify))
    if kind == "tls-record":
        # A TLS record error mid-request (not about the certificate): a lost connection.
        lost = ssl.SSLError(1, "[SSL: DECRYPTION_FAILED_OR_BAD_RECORD_MAC] decryption failed or bad record mac")
        return _caused(lost, Urllib3SSLError(lost))
    raise ValueError(kind)


# What requests raises over urllib3's error (its adapter runs urllib3 with max_retries=0: failures before
# sending come wrapped in a MaxRetryError).
_REQUESTS_ERRORS = {
    "refused": (True, requests.exceptions.ConnectionError, "Max retries exceeded"),
    "connect-timeout": (True, requests.exceptions.ConnectTimeout, "timed out"),
    "read-timeout": (False, requests.exceptions.ReadTimeout, "Read timed out."),
    "reset": (False, requests.exceptions.ConnectionError, "Connection aborted."),
    "tls": (True, requests.exceptions.SSLError, "certificate verify failed"),
    "tls-record": (False, requests.exceptions.SSLError, "bad record mac"),
}


def network_error(kind, url, layer="requests"):
    """The exception requests (``layer`` "urllib3": urllib3 with retries off) raises for a network failure of
    ``kind``, caused by the chain below it as the libraries raise it."""
    low = _urllib3_error(kind, url)
    if layer == "urllib3":
        return low
    wrapped, error, text = _REQUESTS_ERRORS[kind]
    if wrapped:
        low = _caused(low, MaxRetryError(None, url, low))
    return _caused(low, error(text))


class FakeTransport(BaseAdapter):
    """A requests adapter that hands every request to a FakeService."""

    def __init__(self, service):
        super().__init__()
        self.service = service

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        self.service.verified.append(verify)
        return self.service.handle(request)

    def close(self):
        pass


class FakePool(object):
    """A urllib3 PoolManager (the hot reads' transport) that hands every request to a FakeService."""

    def __init__(self, service, tls):
        self.service, self.tls = service, tls

    def request(self, method, url, body=None, headers=None, timeout=None, retries=None, redirect=None):
        assert retries is False and redirect is False, "the client's retries are its own; redirects not followed"
        # What the pool verifies against, as requests' verify would say it (False, or the CA bundle).
        self.service.verified.append(self.tls.get("ca_certs") or self.tls.get("ca_cert_dir") or False)
        request = SimpleNamespace(method=method, url=url, body=body, headers=dict(headers or {}))
        resp = self.service.handle(request, layer="urllib3")
        return HTTPResponse(body=resp.content, headers=dict(resp.headers), status=resp.status_code)

    def clear(self):
        pass


class FakeService(object):
    """The little of the service that the modules' logic relies on, in memory (see the module doc)."""

    def __init__(self, api_key=API_KEY):
        self.api_key = api_key
        self.url = URL
        self.log = []
        # The modules' rounds send a fleet's calls from several threads (rounds.run_for_each, poller.follow):
        # one request at a time changes the state, as one at a time is answered by a real server's
        # transaction. Without it two threads took the same job ID (len(self.jobs) + 1) on a loaded machine.
        self._lock = threading.RLock()
        self.verified = []
        self.sites = {}
        self.migrations = {}
        self.meta = {}
        self.tickets = {}
        self.faults = []
        self.scripts = {}
        self.next_id = 5001
        self.next_ticket = 1
        self.site_ids = {}                     # domain -> site ID of the sites create-site made
        self.jobs = {}
        self.job_steps = ["queued", "running", "success"]   # a job's _status, one per poll, the last repeated
        # Other readings of the service (the emulator's variants.py): get-sites paging honoured, ignored or
        # refused; its allow_site_migration column listed, refused or dropped; create keeping the flag or not.
        self.paging = "honour"
        self.list_key = "listed"
        self.create_keeps_flag = True
        self.used_domains = set()              # domains of sites of another client (check_domain: used)
        # Going live (the emulator's domains.py and backups.py in little): a site's primary domain and aliases,
        # each attached domain's certificate, its backups, site meta, and the readings the tests switch.
        self.primary = {}                      # site ID -> primary domain (sites added with add_live_site)
        self.site_aliases = {}                 # site ID -> [aliases]
        self.ssl = {}                          # domain -> issued | pending | failed
        self.site_meta = {}                    # (site ID, key) -> value
        self.backups = {}                      # site ID -> [records as listed, newest first]
        self.next_backup = 3001
        self.backup_quota = 1
        self.backup_lag = 0                    # list reads a new backup stays unlisted for (the created event's lag)
        self.restores = []                     # (site ID, [backup IDs]) of the restores applied
        self.service_form = "both"             # or "domain": {client}/{site ID} refused with 400
        self.same_domain_answer = "empty"      # update-site-domain to the primary: [] (or "refused": 400)
        self.ssl_pending_answer = "nulls"      # or "empty": data [] for a pending certificate
        self.restore_not_ready = 0             # restores refused "not ready" before one is taken

    def adapter(self):
        return FakeTransport(self)

    def pool(self, **tls):
        return FakePool(self, tls)

    # -- what the tests set up ---------------------------------------------------------------------------
    def add_site(self, site, allow=None):
        """A site; ``allow`` is its allow_site_migration (None: not allowed, "true", or a migration ID)."""
        self.sites[str(site)] = allow
        return str(site)

    def add_live_site(self, site_id, domain, aliases=(), ssl="issued"):
        """A site with a primary domain and aliases (every certificate ``ssl``), as site_domain and site_backup find it."""
        site = str(site_id)
        self.sites[site] = None
        self.primary[site] = domain
        self.site_aliases[site] = list(aliases)
        for name in [domain] + list(aliases):
            self.ssl[name] = ssl
        self.backups[site] = []
        return site

    def add_backup(self, site, kind="ondemand-fs", taken="2026-01-01 00:00:00"):
        """A backup listed for ``site`` (its type as the service names it); returns its ID."""
        backup_id = str(self.next_backup)
        self.next_backup += 1
        self.backups[str(site)].insert(0, {"atomic_backup_id": backup_id, "atomic_site_id": str(site),
                                           "backup_timestamp": taken, "type": kind, "_lag": 0, "_deleting": False})
        return backup_id

    def add_migration(self, site="1002", state="new", auth="generated", **args):
        migration_id = self.next_id
        self.next_id += 1
        self.migrations[migration_id] = {"atomic_site_migration_id": str(migration_id), "atomic_site_id": str(site),
                                         "state": state, "auth": auth, "args": dict(args)}
        self.sites[str(site)] = str(migration_id)
        return migration_id

    def script(self, kind, steps=("success",), messages=(), migration_id=None):
        """How the next tickets of ``kind`` (preflight, ready) go: one step per summary poll, the last one
        repeated ("pending" is a 202, then "running", "success" or "failure"); their full form's messages."""
        self.scripts[(kind, migration_id)] = {"steps": list(steps), "messages": list(messages)}

    def states(self, migration_id, *states):
        """The states migration.get reports for a migration, one per read, the last one repeated."""
        self.migrations[migration_id]["states"] = list(states)

    def fault(self, operation, status=None, error=None, count=1, retry_after=None, after=False, body=None):
        """The next ``count`` requests of ``operation`` ("*": any) fail: with HTTP ``status`` (and
        Retry-After, or a non-JSON ``body``), or the network ``error`` of network_error(); ``after``: the
        service applied the request first (its answer was lost)."""
        self.faults.append(dict(operation=operation, status=status, error=error, count=count,
                                retry_after=retry_after, after=after, body=body))

    # -- what the tests read -----------------------------------------------------------------------------
    @property
    def calls(self):
        return self.log

    @property
    def writes(self):
        return [c for c in self.log if c["write"]]

    def operations(self):
        return [c["operation"] for c in self.log]

    # -- the transport side ------------------------------------------------------------------------------
    def _faulted(self, request, entry, fault):
        entry["status"] = fault["status"]
        headers = {"Retry-After": str(fault["retry_after"])} if fault["retry_after"] is not None else {}
        if fault["body"] is not None:
            return self._response(request, fault["status"], raw=fault["body"], headers=headers)
        return self._response(request, fault["status"], "fault", [], headers)

    def handle(self, request, layer="requests"):
        with self._lock:
            return self._handle(request, layer)

    def _handle(self, request, layer):
        parts = urlsplit(request.url)
        assert parts.path.startswith(API_PREFIX), parts.path
        route = [(name, kind, match) for method, pattern, name, kind in ROUTES
                 for match in [pattern.match(parts.path[len(API_PREFIX):])] if method == request.method and match]
        assert route, "no operation for %s %s" % (request.method, parts.path)
        name, kind, match = route[0]
        path_args = dict((key, unquote(value)) for key, value in match.groupdict().items())
        body = request.body or ""
        body = body.decode() if isinstance(body, bytes) else body
        pairs = parse_qsl(parts.query if request.method == "GET" else body, keep_blank_values=True)
        params = dict(pairs)
        entry = {"operation": name, "method": request.method, "path": parts.path, "query": parts.query,
                 "params": sorted(params), "sent": params, "pairs": pairs, "write": kind == WRITE,
                 "headers": dict(request.headers), "status": None, "transport": layer}
        self.log.append(entry)
        fault = self._take_fault(name)
        if fault and fault["error"] and not fault["after"]:
            entry["status"] = fault["error"]
            raise network_error(fault["error"], request.url, layer)
        if fault and fault["status"] and not fault["after"]:
            return self._faulted(request, entry, fault)
        if request.headers.get("Auth") != self.api_key:
            entry["status"] = 403
            return self._response(request, 403, "Forbidden: invalid API key", [])
        answer = getattr(self, "_" + name.replace(".", "_"))(params, **path_args)
        status, data = answer[:2]
        message = answer[2] if len(answer) > 2 else None     # the service's own words, when a test needs them
        entry["status"] = status
        if fault and fault["error"]:
            entry["status"] = fault["error"]
            raise network_error(fault["error"], request.url, layer)
        if fault and fault["status"]:          # applied, then answered with the fault's status
            return self._faulted(request, entry, fault)
        if status == 202:
            return self._response(request, 202, "Accepted", None)
        return self._response(request, status, message or ("OK" if status < 300 else "error %d" % status), data)

    def _take_fault(self, name):
        for fault in self.faults:
            if fault["operation"] in (name, "*") and fault["count"] > 0:
                fault["count"] -= 1
                return fault
        return None

    @staticmethod
    def _response(request, status, message=None, data=None, headers=None, raw=None):
        resp = requests.Response()
        resp.status_code = status
        resp._content = raw.encode() if raw is not None else json.dumps({"message": message, "data": data}).encode()
        resp.headers = CaseInsensitiveDict(dict({"Content-Type": "application/json"}, **(headers or {})))
        resp.url = request.url
        resp.request = request
        resp.encoding = "utf-8"
        resp.reason = "fake"
        return resp

    # -- operations ----------------------------------------------------------------------------------------
    @staticmethod
    def _auth(args):
        if "remote-pass" in args:
            return "password"
        if "ssh-id" in args:
            return "key-passphrase" if "ssh-id-pass" in args else "key"
        return "generated"

    def _store(self, record, params):
        for name, value in params.items():
            # the service keeps numbers as numbers: the port reads back as 2022
            record["args"][name] = int(value) if name == "remote-port" else value
        if any(name in params for name in SECRETS):
            for name in SECRETS:
                if name not in params:
                    record["args"].pop(name, None)
            record["auth"] = self._auth(params)

    def _migration(self, migration_id):
        return self.migrations.get(int(migration_id)) if str(migration_id).isdigit() else None

    def _site_get(self, params, site):
        live = self._live(site)
        if live is not None:
            return 200, {"atomic_site_id": int(live), "domain_name": self.primary[live], "db_pass": SITE_DB_PASS}
        if site not in self.sites:
            return 404, []
        # As the service: the record holds the site's credentials.
        return 200, {"atomic_site_id": int(site) if site.isdigit() else self.site_ids.get(site, 1001),
                     "domain_name": site if site in self.site_ids else "%s.example" % site,
                     "php_version": "8.3", "db_pass": SITE_DB_PASS, "smtp_pass": "smtp-" + SITE_DB_PASS,
                     "site_api_key": "key-" + SITE_DB_PASS}

    def _site_create(self, params, client):
        domain = params["domain_name"]
        if domain in self.sites:
            return 400, []
        site_id = 9000 + len(self.site_ids) + 1
        self.site_ids[domain] = site_id
        flag = params.get("meta[allow_site_migration]") == "true" and self.create_keeps_flag
        self.sites[domain] = "true" if flag else None
        self.sites[str(site_id)] = self.sites[domain]
        return 200, {"job_id": self._job(site_id), "atomic_site_id": site_id, "domain_name": domain}

    def _site_delete(self, params, client, site):
        domain = next((d for d, i in self.site_ids.items() if str(i) == site), None)
        if domain is None:
            return 404, []
        del self.sites[domain], self.sites[site], self.site_ids[domain]
        return 200, {"job_id": self._job(int(site))}

    def _job(self, site_id):
        job_id = 700 + len(self.jobs) + 1
        self.jobs[job_id] = {"id": str(job_id), "steps": list(self.job_steps), "data": {"atomic_site_id": site_id}}
        return job_id

    def _job_status(self, params, job_id):
        job = self.jobs.get(int(job_id))
        if job is None:
            return 404, []
        status = job["steps"].pop(0) if len(job["steps"]) > 1 else job["steps"][0]
        if status == "success" and job.get("effect"):
            job.pop("effect")()             # a going-live job's change happens when it succeeds
        return 200, {"id": job["id"], "_status": status, "type": job.get("type"), "data": job["data"]}

    def _job_recent(self, params):
        # a going-live job (it has a type) as it stands now; the others as they end
        return 200, dict((str(i), {"id": j["id"], "_status": j["steps"][0] if j.get("type") else j["steps"][-1],
                                   "type": j.get("type"), "data": j["data"]}) for i, j in self.jobs.items())

    def _site_list(self, params, client, key=None):
        if client != "acme":
            return 403, []
        if self.paging == "refuse" and ("limit" in params or "after" in params):
            return 400, []
        if key is not None and self.list_key == "refused":
            return 400, []
        ids = sorted(int(s) for s in self.sites if s.isdigit())
        after, limit = int(params.get("after") or 0), int(params.get("limit") or 1000)
        if self.paging == "ignore":
            after, limit = 0, len(ids)
        page = [i for i in ids if i > after][:limit]
        domains = dict((str(i), d) for d, i in self.site_ids.items())
        entries = [{"atomic_site_id": str(i), "domain_name": domains.get(str(i), "%d.example" % i),
                    "created": "2026-01-01", "db_pass": SITE_DB_PASS} for i in page]
        if key is not None and self.list_key == "listed":
            for entry in entries:
                entry[key] = self.sites[entry["atomic_site_id"]]
        return 200, entries

    def _site_list_plain(self, params, client):
        return self._site_list(params, client)

    def _site_check_domain(self, params, client, domain):
        if domain in self.used_domains or domain in self.sites or self._owner(domain) is not None:
            return 400, []
        return 200, {"allowed": True}

    def _site_meta_get(self, params, site, key):
        site = self._live(site) or site
        if site not in self.sites:
            return 404, []
        if key != "allow_site_migration":
            return 200, self.site_meta.get((site, key))
        return 200, self.sites[site]

    def _site_allow_migration(self, params, site):
        if site not in self.sites:
            return 404, []
        if self.sites[site] not in (None, "true"):
            return 200, {"ready_for_migration": False}
        self.sites[site] = "true"
        return 200, {"ready_for_migration": True}

    def _migration_create(self, params, site):
        if site not in self.sites:
            return 404, []
        if self.sites[site] is None:
            return 403, []
        if self.sites[site] != "true":
            return 409, []
        if not params.get("remote-host") or not params.get("remote-user"):
            return 400, []
        migration_id = self.add_migration(site=site)
        self._store(self.migrations[migration_id], params)
        data = {"migration-id": migration_id}
        if self.migrations[migration_id]["auth"] == "generated":
            data["ssh-id-pub"] = self.migrations[migration_id]["ssh-id-pub"] = \
                "ssh-ed25519 AAAAfake wpcloud-migration-%d" % migration_id
        return 200, data

    def _migration_get(self, params, migration_id):
        record = self._migration(migration_id)
        if record is None:
            return 404, []
        if record.get("states"):
            record["state"] = record["states"].pop(0) if len(record["states"]) > 1 else record["states"][0]
        shown = dict((k, v) for k, v in record.items() if k != "states")
        shown["args"] = dict((k, SERVICE_REDACTED if k in SECRETS else v) for k, v in record["args"].items())
        return 200, shown

    def _migration_update(self, params, migration_id):
        record = self._migration(migration_id)
        if record is None:
            return 404, []
        if record["state"] == "migration-running":
            return 409, []
        self._store(record, params)
        record["state"] = "new"
        return 200, {"migration-id": int(migration_id)}

    def _start(self, kind, migration_id):
        record = self._migration(migration_id)
        if record is None:
            return 404, []
        if record["state"] == "migration-running":
            return 409, []
        script = self.scripts.get((kind, int(migration_id))) or self.scripts.get((kind, None)) or \
            {"steps": ["success"], "messages": []}
        ticket_id = "%08x.%d" % (int(migration_id), self.next_ticket)
        self.next_ticket += 1
        self.tickets[ticket_id] = {"steps": list(script["steps"]), "messages": list(script["messages"]),
                                   "migration_id": int(migration_id), "kind": kind, "responses": 0}
        record["state"] = "preflight-running" if kind == "preflight" else "migration-running"
        return 200, {"response-ticket-id": ticket_id}

    def _migration_preflight(self, params, migration_id):
        return self._start("preflight", migration_id)

    def _migration_ready(self, params, migration_id):
        return self._start("ready", migration_id)

    def _ticket(self, params, full):
        ticket_id = params.get("response-ticket-id")
        if not ticket_id:
            return 400, []
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return 404, []
        steps = ticket["steps"]
        step = steps.pop(0) if len(steps) > 1 and not full else steps[0]
        if step == "pending":
            return 202, None
        ticket["responses"] += 1 if not full else 0
        if step in ("success", "failure"):
            record = self.migrations[ticket["migration_id"]]
            done = "%s-%s" % ("preflight" if ticket["kind"] == "preflight" else "migration",
                              "succeeded" if step == "success" else "failed")
            record["state"] = done
        data = {"response-ticket-id": ticket_id, "status": step, "response_count": ticket["responses"]}
        if full:
            data["responses"] = [{"timestamp": 1700000000 + n, "message": m} for n, m in enumerate(ticket["messages"])]
        return 200, data

    def _ticket_summary(self, params):
        return self._ticket(params, full=False)

    def _ticket_full(self, params):
        return self._ticket(params, full=True)

    def _client_meta_get(self, params, client, key):
        if key not in self.meta:
            return 404, []
        return 200, None if key == "webhook_hmac_key" else self.meta[key]

    def _client_meta_add(self, params, client, key):
        if key in self.meta:
            return 409, []
        self.meta[key] = params["value"]
        return 200, []

    def _client_meta_update(self, params, client, key):
        if key not in self.meta:
            return 404, []
        self.meta[key] = params["value"]
        return 200, []

    def _client_meta_remove(self, params, client, key):
        if key not in self.meta:
            return 404, []
        del self.meta[key]
        return 200, []

    # -- going live ------------------------------------------------------------------------------------------------
    def _live(self, ref):
        """The site ID of a site added with add_live_site, by ID or primary domain, else None."""
        if ref in self.primary:
            return ref
        return next((site for site, domain in self.primary.items() if domain == ref), None)

    def _owner(self, domain):
        return next((site for site, primary in self.primary.items()
                     if domain == primary or domain in self.site_aliases[site]), None)

    def _service(self, service, identifier):
        """The site of a {service}/{identifier} path: 400 for a refused form, None when unknown."""
        if service == "domain":
            site = next((s for s, d in self.primary.items() if d == identifier), None)
            return (404, None) if site is None else (200, site)
        if self.service_form == "domain" or service != "acme" or not identifier.isdigit():
            return 400, None
        return (200, identifier) if identifier in self.primary else (404, None)

    def _aliases(self, service, identifier, change=None):
        status, site = self._service(service, identifier)
        if site is None:
            return status, []
        if change is not None:
            status = change(site)
            if status != 200:
                return status, []
        return 200, {"domains": list(self.site_aliases[site])}

    def _site_alias_list(self, params, service, identifier):
        return self._aliases(service, identifier)

    def _site_alias_add(self, params, service, identifier, domain):
        def add(site):
            if domain == self.primary[site] or (self._owner(domain) not in (None, site)) or domain in self.used_domains:
                return 400
            if domain not in self.site_aliases[site]:
                self.site_aliases[site].append(domain)
                self.ssl[domain] = "pending"
            return 200
        return self._aliases(service, identifier, add)

    def _site_alias_remove(self, params, service, identifier, domain):
        def remove(site):
            if domain == self.primary[site]:
                return 400
            if domain not in self.site_aliases[site]:
                return 404
            self.site_aliases[site].remove(domain)
            self.ssl.pop(domain, None)
            return 200
        return self._aliases(service, identifier, remove)

    def _switch(self, service, identifier, domain, keep):
        status, site = self._service(service, identifier)
        if site is None:
            return status, []
        old = self.primary[site]
        if domain == old:
            return (400, []) if self.same_domain_answer == "refused" else (200, [])
        if self._owner(domain) not in (None, site) or domain in self.used_domains:
            return 400, []

        def effect():
            if domain in self.site_aliases[site]:
                self.site_aliases[site].remove(domain)
            self.primary[site] = domain
            self.ssl.setdefault(domain, "pending")
            if keep:
                self.site_aliases[site].append(old)
            else:
                self.ssl.pop(old, None)
        job_id = self._job(int(site))
        self.jobs[job_id].update(type="update-site-domain", effect=effect)
        self.jobs[job_id]["data"].update(domain_name=domain, old_domain_name=old)
        return 200, {"job_id": job_id, "atomic_site_id": int(site), "domain_name": domain, "old_domain_name": old}

    def _site_update_domain(self, params, service, identifier, domain):
        return self._switch(service, identifier, domain, keep=False)

    def _site_update_domain_keep(self, params, service, identifier, domain):
        return self._switch(service, identifier, domain, keep=True)

    def _site_ssl_info(self, params, domain):
        state = self.ssl.get(domain) if self._owner(domain) is not None else None
        if state is None:
            return 404, []
        if state == "pending" and self.ssl_pending_answer == "empty":
            return 200, []
        data = {"domain": domain, "acme_certificate_id": None, "broken_record": None, "ca_provider": None}
        if state == "issued":
            data.update(acme_certificate_id=4000 + len(domain), ca_provider="letsencrypt")
        elif state == "failed":
            data["broken_record"] = {"reason": "not hosted here", "retry_date": "2026-01-01 00:10:00", "failcount": 1}
        return 200, data

    def _site_ssl_retry(self, params, domain):
        if self._owner(domain) is None:
            return 404, []
        if self.ssl.get(domain) != "failed":
            return 200, {"queued": False}
        self.ssl[domain] = "pending"
        return 200, {"queued": True}

    def _client_ips(self, params, client, domain):
        if client != "acme":
            return 403, []
        return 200, {"ips": ["192.0.2.0/25"], "suggested": ["192.0.2.%d" % (10 + len(domain)), "192.0.2.99"]}

    def _client_domain_verification(self, params, client, domain):
        return 200, "atomic-domain-%08x" % (sum(map(ord, client + domain)) * 7919)

    def _site_meta_update(self, params, site, key):
        site = self._live(site) or site
        if site not in self.sites:
            return 404, []
        self.site_meta[(site, key)] = params["value"]
        return 200, []

    def _site_meta_remove(self, params, site, key):
        site = self._live(site) or site
        self.site_meta.pop((site, key), None)
        return 200, []

    def _backup_create(self, params, site, kind):
        site = self._live(site)
        if site is None:
            return 404, []
        wanted = "ondemand-" + kind
        if sum(1 for r in self.backups[site] if r["type"] == wanted) >= self.backup_quota:
            return 403, []
        backup_id = self.add_backup(site, wanted, taken="2026-06-01 12:00:00")
        self.backups[site][0]["_lag"] = self.backup_lag
        return 200, {"atomic_backup_request_id": 9000 + int(backup_id)}

    def _backup_delete(self, params, site, backup_id):
        site = self._live(site)
        record = next((r for r in self.backups.get(site, []) if r["atomic_backup_id"] == backup_id), None)
        if record is None:
            return 404, []
        if record["_deleting"] or not record["type"].startswith("ondemand-"):
            return 400, []
        record["_deleting"] = True          # listed until the next list read
        return 200, {"atomic_backup_request_id": 9500 + int(backup_id)}

    def _backup_list(self, params, service, identifier):
        status, site = self._service(service, identifier)
        if site is None:
            return status, []
        listed = []
        for record in list(self.backups[site]):
            if record["_deleting"] == "done":
                self.backups[site].remove(record)
                continue
            if record["_deleting"]:
                record["_deleting"] = "done"
            if record["_lag"] > 0:
                record["_lag"] -= 1
                continue
            listed.append(dict((k, v) for k, v in record.items() if not k.startswith("_")))
        return 200, listed

    def _site_restore(self, params, site):
        site = self._live(site)
        if site is None:
            return 404, []
        if not self.site_meta.get((site, "allow_restore"), "").isdigit():
            return 400, []
        if self.site_meta.get((site, "suspended")) != "503":
            return 409, []
        if self.restore_not_ready > 0:
            self.restore_not_ready -= 1
            return 400, [], "Backup %s is not ready" % params.get("restore_from[]")
        ids = [value for name, value in self.log[-1]["pairs"] if name == "restore_from[]"]
        job_id = self._job(int(site))

        def effect():
            self.restores.append((site, ids))
            self.site_meta.pop((site, "allow_restore"), None)
        self.jobs[job_id].update(type="restore-site", effect=effect)
        return 200, {"atomic_job_id": job_id, "response_ticket_id": "restore-%d" % job_id}
