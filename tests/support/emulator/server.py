#!/usr/bin/env python
"""HTTPS emulator of the hosting platform API (contract: tests/support/emulator/README.md, "Contract").

    python tests/support/emulator/server.py [--port 0] [--workdir DIR] [--state-file FILE] [--config FILE]
                                    [--executor scripted|ssh] [--api-key K] [--accept-delay S]

Binds 127.0.0.1 only, prints one JSON line on stdout once it accepts connections, logs to stderr
(or --log-file). Stdlib HTTP server plus ``cryptography`` for the TLS material and the generated
migration identities; one thread per connection (HTTP/1.1 keep-alive), TLS handshakes done in that
thread so a slow client never stalls the accept loop.
"""

import argparse
import collections
import faulthandler
import hashlib
import hmac
import http
import http.server
import json
import logging
import os
import random
import re
import secrets
import select
import signal
import socket
import socketserver
import ssl
import struct
import sys
import tempfile
import threading
import time
from urllib.parse import parse_qsl, unquote, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from certs import make_tls_files  # noqa: E402
from executors import load_executor  # noqa: E402
from service import ApiError, Service  # noqa: E402
from variants import Variants, parse_pairs as parse_variants  # noqa: E402
from webhooks import WebhookSender  # noqa: E402

LOG = logging.getLogger("emulator")
API_PREFIX = "/api/v1.0/"
DEFAULT_CONFIG = os.path.join(HERE, "seed.json")
MAX_BODY = 1024 * 1024
REQUEST_LOG_LIMIT = 200000

BOTH = ("GET", "POST")
# (pattern under /api/v1.0/, endpoint name, methods, writes)
ROUTES = [(re.compile(pattern), name, methods, write) for pattern, name, methods, write in (
    (r"client-meta/([^/]+)/([^/]+)/add", "client_meta.add", ("POST",), True),
    (r"client-meta/([^/]+)/([^/]+)/update", "client_meta.update", ("POST",), True),
    (r"client-meta/([^/]+)/([^/]+)/get", "client_meta.get", BOTH, False),
    (r"client-meta/([^/]+)/([^/]+)/remove", "client_meta.remove", BOTH, True),
    (r"create-site/([^/]+)", "site.create", ("POST",), True),
    (r"get-site/([^/]+)(/extra)?", "site.get", ("GET",), False),
    (r"get-sites/([^/]+)((?:/[^/]+)*)", "site.list", ("GET",), False),
    (r"delete-site/([^/]+)/([^/]+)", "site.delete", ("POST",), True),
    (r"check-can-host-domain/([^/]+)/([^/]+)", "site.check_domain", ("GET",), False),
    (r"get-php-versions/([^/]+)", "client.php_versions", ("GET",), False),
    (r"job-status(?:/([^/]+))?", "job.status", BOTH, False),
    (r"job-completion(?:/([^/]+))?", "job.completion", BOTH, False),
    (r"site-meta/([^/]+)/([^/]+)/get", "site_meta.get", ("GET",), False),
    (r"site-meta/([^/]+)/([^/]+)/update", "site_meta.update", ("POST",), True),
    (r"site-meta/([^/]+)/([^/]+)/remove", "site_meta.remove", BOTH, True),
    # going live (issue 37): domains.py, backups.py
    (r"update-site-domain/([^/]+)/([^/]+)/([^/]+)(?:/([^/]+))?", "site.update_domain", ("POST",), True),
    (r"site-alias/([^/]+)/([^/]+)/list", "site.alias_list", ("GET",), False),
    (r"site-alias/([^/]+)/([^/]+)/add/([^/]+)", "site.alias_add", ("GET",), True),
    (r"site-alias/([^/]+)/([^/]+)/remove/([^/]+)", "site.alias_remove", ("GET",), True),
    (r"ssl-info/([^/]+)", "site.ssl_info", ("POST",), False),
    (r"ssl-retry/([^/]+)", "site.ssl_retry", ("POST",), True),
    (r"get-ips/([^/]+)(?:/([^/]+))?", "client.ips", ("GET",), False),
    (r"get-domain-verification-code/([^/]+)/([^/]+)", "client.domain_verification", ("GET",), False),
    (r"on-demand-backup/create/([^/]+)/([^/]+)", "backup.create", ("POST",), True),
    (r"on-demand-backup/delete/([^/]+)/([^/]+)", "backup.delete", ("POST",), True),
    (r"site-backups-list/([^/]+)/([^/]+)((?:/[^/]+)*)", "backup.list", ("GET",), False),
    (r"site-backup-info/([^/]+)/([^/]+)/([^/]+)", "backup.info", ("GET",), False),
    (r"restore-site/([^/]+)", "site.restore", ("POST",), True),
    (r"site-allow-ssh-migration/([^/]+)", "site.allow_migration", ("POST",), True),
    (r"response-ticket/get/summary", "ticket.summary", ("POST",), False),
    (r"response-ticket/get/full", "ticket.full", ("POST",), False),
    (r"migration/create/([^/]+)", "migration.create", BOTH, True),
    (r"migration/get/([^/]+)", "migration.get", BOTH, False),
    (r"migration/update/([^/]+)", "migration.update", BOTH, True),
    (r"migration/preflight/([^/]+)", "migration.preflight", BOTH, True),
    (r"migration/ready/([^/]+)", "migration.ready", BOTH, True),
)]
ENDPOINTS = {route[1] for route in ROUTES}
TICKET_ENDPOINTS = ("ticket.summary", "ticket.full")


def route(path):
    """Map a request path to (endpoint name, path arguments, methods, writes) or None.
    An optional path part that is absent comes back as None."""
    if not path.startswith(API_PREFIX):
        return None
    rest = path[len(API_PREFIX):].rstrip("/")
    for pattern, name, methods, write in ROUTES:
        match = pattern.fullmatch(rest)
        if match:
            return name, [None if group is None else unquote(group) for group in match.groups()], methods, write
    return None


def php_params(pairs):
    """Form pairs to a dict, tolerating PHP array notation (``a[b]=1``, ``a[]=2``); last value wins."""
    result = {}
    for name, value in pairs:
        match = re.fullmatch(r"([^\[\]]+)((?:\[[^\[\]]*\])+)", name)
        if not match:
            result[name] = value
            continue
        keys = [match.group(1)] + re.findall(r"\[([^\[\]]*)\]", match.group(2))
        node = result
        for i in range(len(keys) - 1):
            if not isinstance(node.get(keys[i]), dict):
                node[keys[i]] = {}
            node = node[keys[i]]
            if keys[i + 1] == "":
                keys[i + 1] = str(len(node))
        node[keys[-1]] = value
    return result


def param_names(pairs):
    # Names only, each once, in first-seen order: the log must never hold a value.
    return list(dict.fromkeys(pair[0] for pair in pairs))


# --------------------------------------------------------------------------- fault injection
class FaultRule:
    FIELDS = {"endpoint", "status", "retry_after", "latency", "reset", "extra_202", "count", "probability", "every",
              "max_in_a_row"}

    def __init__(self, spec):
        if not isinstance(spec, dict):
            raise ValueError("each rule must be an object")
        unknown = set(spec) - self.FIELDS
        if unknown:
            raise ValueError("unknown rule fields: %s" % ", ".join(sorted(unknown)))
        self.endpoint = spec.get("endpoint", "*")
        if self.endpoint != "*" and self.endpoint not in ENDPOINTS:
            raise ValueError("unknown endpoint %r" % self.endpoint)
        self.status = self._number(spec, "status", int, 100, 599)
        self.retry_after = self._number(spec, "retry_after", (int, float), 0, None)
        self.latency = self._number(spec, "latency", (int, float), 0, 600) or 0
        self.reset = spec.get("reset")
        if self.reset not in (None, "before", "after"):
            raise ValueError("reset must be 'before' or 'after'")
        self.extra_202 = self._number(spec, "extra_202", int, 0, None)
        self.count = self._number(spec, "count", int, 0, None)
        self.probability = self._number(spec, "probability", (int, float), 0, 1)
        self.probability = 1.0 if self.probability is None else float(self.probability)
        # every: fires on the k-th, 2k-th, ... request that reaches this rule (exact, no draw)
        self.every = self._number(spec, "every", int, 1, None) or 1
        # max_in_a_row: passes over a request whose identical predecessors were faulted this many times
        # in a row, so a client with more attempts than that gets through by rule, not by luck
        self.max_in_a_row = self._number(spec, "max_in_a_row", int, 1, None)
        self.seen = 0
        if not (self.status or self.latency or self.reset or self.extra_202):
            raise ValueError("a rule needs at least one of status, latency, reset, extra_202")
        self.tickets = set()  # extra_202 is granted once per ticket
        self.spec = dict(spec)

    @staticmethod
    def _number(spec, name, kinds, low, high):
        value = spec.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, kinds) or value < low or \
                (high is not None and value > high):
            raise ValueError("%s must be a number in range" % name)
        return value

    def describe(self):
        parts = []
        if self.latency:
            parts.append("latency=%s" % self.latency)
        if self.reset:
            parts.append("reset=%s" % self.reset)
        elif self.status:
            parts.append("status=%s" % self.status)
        if self.extra_202:
            parts.append("extra_202=%s" % self.extra_202)
        return ",".join(parts)


class Faults:
    """The fault rules. Draws for ``probability`` come from one random.Random per rule set, seeded
    with the set's ``seed`` (a new one is picked and logged when none is given), so a run can be
    replayed; ``every`` and ``count`` are exact."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.seed = None
        self.rng = random.Random()
        self.in_a_row = {}    # request key -> how many of its last sends in a row were faulted
        self.bounds_rows = False   # a rule has max_in_a_row: only then are requests digested and counted

    def set(self, specs, seed=None):
        rules = [FaultRule(spec) for spec in specs]
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError("seed must be an integer")
        if seed is None:
            seed = random.SystemRandom().randrange(2 ** 31)
        with self.lock:
            self.rules, self.seed, self.rng = rules, seed, random.Random(seed)
            self.in_a_row = {}
            self.bounds_rows = any(rule.max_in_a_row for rule in rules)
        if rules:
            LOG.info("fault rules set: %d rules, seed %d", len(rules), seed)

    def view(self):
        with self.lock:
            return [dict(rule.spec, remaining=rule.count) for rule in self.rules]

    @staticmethod
    def request_key(method, path, pairs):
        """What makes two sends the same request (a retry or a repeat): method, path and parameters.
        A digest, so that no parameter value (a credential) is kept."""
        text = json.dumps([method, path, sorted(pairs)])
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def pick(self, endpoint, ticket_id, request=None):
        """The first rule that matches and fires for this request (consuming one of its count).
        ``request`` is (method, path, pairs); it is digested only while a rule has ``max_in_a_row``."""
        with self.lock:
            if not self.rules:
                return None
            if request is None or not self.bounds_rows:
                return self._pick(endpoint, ticket_id, 0)
            key = self.request_key(*request)
            rule = self._pick(endpoint, ticket_id, self.in_a_row.get(key, 0))
            if rule:
                self.in_a_row[key] = self.in_a_row.get(key, 0) + 1
            else:
                self.in_a_row.pop(key, None)
            return rule

    def _pick(self, endpoint, ticket_id, in_a_row):
        for rule in self.rules:
            if rule.endpoint not in ("*", endpoint) or rule.count == 0:
                continue
            if rule.max_in_a_row is not None and in_a_row >= rule.max_in_a_row:
                continue      # does not reach the rule: its every-turn and count are kept for others
            if rule.extra_202:
                if endpoint not in TICKET_ENDPOINTS or ticket_id is None or ticket_id in rule.tickets:
                    continue
            rule.seen += 1
            if rule.seen % rule.every:
                continue
            if rule.probability < 1.0 and self.rng.random() >= rule.probability:
                continue
            if rule.count is not None:
                rule.count -= 1
            if rule.extra_202:
                rule.tickets.add(ticket_id)
            return rule
        return None


class RequestLog:
    def __init__(self):
        self.lock = threading.Lock()
        self.entries = collections.deque(maxlen=REQUEST_LOG_LIMIT)
        self.seq = 0
        self.clock = 0

    def tick(self):
        """A point on one clock shared by every request: an entry's ``received`` (its request arrived)
        and ``answered`` (just before the client could learn its outcome). ``seq`` is the order entries
        were logged, after answering: a thread descheduled between its answer and its log entry is
        logged after requests its answer caused, so only these two order cause and effect."""
        with self.lock:
            self.clock += 1
            return self.clock

    def add(self, **entry):
        with self.lock:
            self.seq += 1
            entry["seq"] = self.seq
            self.entries.append(entry)

    def since(self, seq):
        with self.lock:
            return [dict(e) for e in self.entries if e["seq"] > seq]

    def clear(self):
        with self.lock:
            self.entries.clear()


# --------------------------------------------------------------------------- HTTP
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every answer has a Content-Length
    server_version = "wpcloud-emulator/1.0"
    timeout = 300  # idle keep-alive connections are dropped after this

    def setup(self):
        super().setup()
        # Headers and body go out in two writes: without TCP_NODELAY the body waits for the client's
        # delayed ACK (~40 ms per response), which a real service does not add.
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def log_request(self, code="-", size="-"):
        pass  # we log ourselves, without query strings (they may hold secrets)

    def log_message(self, fmt, *args):
        LOG.debug("%s %s", self.client_address[0], fmt % args)

    def do_GET(self):
        self._handle()

    def do_POST(self):
        self._handle()

    def do_PUT(self):
        self._handle()

    def do_DELETE(self):
        self._handle()

    def do_PATCH(self):
        self._handle()

    def do_HEAD(self):
        self._handle()

    # -- plumbing
    def _read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > MAX_BODY:
                    raise ValueError("body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status, payload, headers=()):
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _envelope(self, status, message, data=None, headers=()):
        self._send(status, {"message": message, "data": [] if data is None and status >= 400 else data},
                   headers)

    def _reset_connection(self):
        """Abort with a TCP RST (SO_LINGER 0, no TLS close_notify): the client sees a reset."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        for closable in (self.rfile, self.connection):
            try:
                closable.close()
            except OSError:
                pass

    # -- dispatch
    def _handle(self):
        started = time.monotonic()
        split = urlsplit(self.path)
        path = split.path
        try:
            raw_body = self._read_body()
        except ValueError:
            self.close_connection = True
            self._envelope(413, "Request body too large or malformed")
            return
        query_pairs = parse_qsl(split.query, keep_blank_values=True)
        body_pairs, body_json = [], None
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if raw_body:
            if ctype == "application/json":
                try:
                    body_json = json.loads(raw_body)
                except ValueError:
                    body_json = None
                if isinstance(body_json, dict):
                    body_pairs = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in body_json.items()]
            else:
                body_pairs = parse_qsl(raw_body.decode("utf-8", "replace"), keep_blank_values=True)

        if path.startswith("/_emulator/") or path == "/_emulator":
            self._hook(path, split.query, raw_body)
            return

        found = route(path)
        endpoint, path_args, methods, write = found if found else (None, [], (), False)
        pairs = query_pairs + (body_pairs if self.command == "POST" else [])
        params = php_params(pairs)
        entry = {"time": round(time.time(), 3), "method": self.command, "path": path, "endpoint": endpoint,
                 "status": None, "write": write, "fault": None, "params": param_names(pairs),
                 "connection": self.client_address[1],   # the client's port: which connection it came on
                 "received": self.server.requests.tick()}
        service = self.server.service

        rule = None
        if endpoint:
            rule = self.server.faults.pick(endpoint, service.ticket_id_of(params), (self.command, path, pairs))
        if rule:
            entry["fault"] = rule.describe()
            if rule.latency:
                time.sleep(rule.latency)
            if rule.reset == "before":
                entry["answered"] = self.server.requests.tick()
                self._log(entry, started)
                self._reset_connection()
                return
            if rule.status and not rule.reset:
                headers = [("Retry-After", "%g" % rule.retry_after)] if rule.retry_after is not None else []
                phrase = http.HTTPStatus(rule.status).phrase if rule.status in http.HTTPStatus._value2member_map_ \
                    else "Error"
                entry["status"] = rule.status
                entry["answered"] = self.server.requests.tick()
                try:
                    self._envelope(rule.status, "%s (injected fault)" % phrase, [], headers)
                finally:
                    self._log(entry, started)
                return
            if rule.extra_202:
                service.add_extra_202(service.ticket_id_of(params), rule.extra_202)

        status, message, data = self._api(endpoint, path_args, methods, params)
        entry["status"] = status
        entry["answered"] = self.server.requests.tick()
        if rule and rule.reset == "after":
            self._log(entry, started)
            self._reset_connection()
            return
        # Logged even when the client has gone (a timed-out client still caused the effect).
        try:
            self._envelope(status, message, data)
        finally:
            self._log(entry, started)

    def _api(self, endpoint, args, methods, params):
        service = self.server.service
        key = next((v for k, v in self.headers.items() if k.lower() == "auth"), None)
        if key is None or not hmac.compare_digest(key.encode(), self.server.api_key.encode()):
            status = service.variants.bad_key_status
            return status, "%s: missing or invalid API key in the Auth header" % (
                "Unauthorized" if status == 401 else "Forbidden"), []
        if endpoint is None:
            return 404, "Not found: no such endpoint", []
        if self.command not in methods:
            return 405, "Method %s not allowed; use %s" % (self.command, " or ".join(methods)), []
        try:
            if endpoint == "client_meta.add":
                return service.client_meta_add(args[0], args[1], params)
            if endpoint == "client_meta.update":
                return service.client_meta_update(args[0], args[1], params)
            if endpoint == "client_meta.get":
                return service.client_meta_get(args[0], args[1])
            if endpoint == "client_meta.remove":
                return service.client_meta_remove(args[0], args[1])
            if endpoint == "site.get":
                return service.site_get(args[0], extra=bool(args[1]))
            if endpoint == "site.create":
                return service.site_create(args[0], params)
            if endpoint == "site.list":
                return service.site_list(args[0], [key for key in args[1].split("/") if key], params)
            if endpoint == "site.delete":
                return service.site_delete(args[0], args[1])
            if endpoint == "site.check_domain":
                return service.check_domain(args[0], args[1])
            if endpoint == "client.php_versions":
                return service.php_versions(args[0])
            if endpoint in ("job.status", "job.completion"):
                # POST with jobs[] (or POST without a path ID) is the batch form: a map job-id -> status.
                batch = self.command == "POST" and ("jobs" in params or args[0] is None)
                read = service.job_status if endpoint == "job.status" else service.job_completion
                if args[0] is None and not batch and endpoint == "job.completion":
                    return 404, "Not found: job-completion needs a job ID", []
                return read(args[0], params, batch=batch)
            if endpoint == "site_meta.get":
                return service.site_meta_get(args[0], args[1])
            if endpoint.startswith(("site_meta.", "site.update_domain", "site.alias", "site.ssl", "client.ips",
                                    "client.domain", "backup.", "site.restore")):
                return self._api_going_live(endpoint, args, params)
            if endpoint == "site.allow_migration":
                return service.site_allow_migration(args[0])
            if endpoint in TICKET_ENDPOINTS:
                return service.ticket_get(params, full=endpoint == "ticket.full")
            if endpoint == "migration.create":
                return service.migration_create(args[0], params)
            if endpoint == "migration.get":
                return service.migration_get(args[0])
            if endpoint == "migration.update":
                return service.migration_update(args[0], params)
            if endpoint == "migration.preflight":
                return service.migration_start(args[0], "preflight")
            if endpoint == "migration.ready":
                return service.migration_start(args[0], "ready")
        except ApiError as exc:
            return exc.status, exc.message, exc.data
        except Exception:  # never leak a traceback (or a secret in it) to the client
            LOG.exception("internal error in %s", endpoint)
            return 500, "Internal Server Error", []
        return 404, "Not found", []

    def _api_going_live(self, endpoint, args, params):
        """The endpoints of issue 37 (domains.py, backups.py, site-meta writes)."""
        service = self.server.service
        calls = {
            "site_meta.update": lambda: service.site_meta_update(args[0], args[1], params),
            "site_meta.remove": lambda: service.site_meta_remove(args[0], args[1]),
            "site.update_domain": lambda: service.domain_update(*args),
            "site.alias_list": lambda: service.alias(args[0], args[1], "list", None),
            "site.alias_add": lambda: service.alias(args[0], args[1], "add", args[2]),
            "site.alias_remove": lambda: service.alias(args[0], args[1], "remove", args[2]),
            "site.ssl_info": lambda: service.ssl_info(args[0]),
            "site.ssl_retry": lambda: service.ssl_retry(args[0]),
            "client.ips": lambda: service.get_ips(args[0], args[1]),
            "client.domain_verification": lambda: service.verification_code(args[0], args[1]),
            "backup.create": lambda: service.backup_create(args[0], args[1]),
            "backup.delete": lambda: service.backup_delete(args[0], args[1]),
            "backup.list": lambda: service.backups_list(args[0], args[1], [t for t in args[2].split("/") if t]),
            "backup.info": lambda: service.backup_info(args[0], args[1], args[2]),
            "site.restore": lambda: service.restore_site(args[0], params),
        }
        return calls[endpoint]()

    def _log(self, entry, started):
        # took: seconds from the request's arrival (its body read) to its log entry, injected latency
        # included: a test can tell a slow answer from an injected one
        entry.setdefault("took", round(time.monotonic() - started, 3))
        self.server.requests.add(**entry)
        LOG.info("%s %s -> %s%s (%.1f ms)", entry["method"], entry["path"], entry["status"],
                 " fault=%s" % entry["fault"] if entry["fault"] else "", entry["took"] * 1000)

    # -- test hooks (no Auth; the server only listens on loopback anyway)
    def _hook(self, path, query, raw_body):
        if self.client_address[0] != "127.0.0.1":
            self._envelope(403, "Forbidden: test hooks are loopback only")
            return
        srv = self.server
        try:
            body = json.loads(raw_body) if raw_body else {}
        except ValueError:
            self._envelope(400, "hook bodies are JSON")
            return
        if not isinstance(body, dict):
            self._envelope(400, "hook bodies are JSON objects")
            return
        method, name = self.command, path[len("/_emulator/"):].rstrip("/")
        try:
            if name == "requests" and method == "GET":
                since = dict(parse_qsl(query)).get("since", "0")
                listed = srv.requests.since(int(since) if since.isdigit() else 0)
                # clock, taken after the listing: every listed request was answered before it (it is logged after
                # answering); one answered before it may still be logged after, with ``received`` below it
                self._send(200, {"requests": listed, "clock": srv.requests.tick()})
            elif name == "faults" and method == "POST":
                rules = body.get("rules")
                if not isinstance(rules, list):
                    raise ApiError(400, "faults take {\"rules\": [...]}")
                try:
                    srv.faults.set(rules, body.get("seed"))
                except ValueError as exc:
                    raise ApiError(400, "invalid fault rule: %s" % exc) from None
                self._send(200, {"rules": srv.faults.view(), "seed": srv.faults.seed})
            elif name == "faults" and method == "GET":
                self._send(200, {"rules": srv.faults.view(), "seed": srv.faults.seed})
            elif name == "reset" and method == "POST":
                srv.faults.set([])
                srv.requests.clear()
                srv.service.reset()
                try:
                    self._configure_executor(srv.executor_reset_config)
                except ApiError as exc:  # an executor without settings must not break reset
                    LOG.warning("executor not reset: %s", exc.message)
                self._send(200, {"reset": True})
            elif name == "sites" and method == "POST":
                self._send(200, srv.service.hook_add_site(body))
            elif name.startswith("sites/") and method == "GET":
                self._send(200, srv.service.hook_get_site(unquote(name[len("sites/"):])))
            elif name == "provisioning" and method == "POST":
                self._send(200, {"provisioning": srv.service.hook_provisioning(body)})
            elif name == "provisioning" and method == "GET":
                self._send(200, {"provisioning": srv.service.hook_provisioning()})
            elif name == "executor" and method == "POST":
                self._send(200, {"executor": self._configure_executor(body)})
            elif name == "executor/release" and method == "POST":
                release = getattr(srv.service.executor, "release", None)
                if release is None:
                    raise ApiError(400, "this executor holds no runs")
                release()
                self._send(200, {"released": True})
            elif name == "executor" and method == "GET":
                self._send(200, {"executor": getattr(srv.service.executor, "config", None)})
            elif name == "events" and method == "POST":
                event = body.get("event")
                if not isinstance(event, str) or not event:
                    raise ApiError(400, "event is required")
                extra = {"signature_in_data": True} if body.get("signature_in_data") else {}
                data = body.get("data")
                if extra and data is not None and not isinstance(data, dict):
                    # refused here: the sender would fail after this hook had answered 200, and send nothing
                    raise ApiError(400, "signature_in_data needs data to be an object (or no data)")
                srv.sender.emit(body.get("client", srv.service.client), event,
                                atomic_site_id=body.get("atomic_site_id"), data=data, **extra)
                self._send(200, {"emitted": event})
            elif name == "variants" and method == "POST":
                try:
                    self._send(200, {"variants": srv.service.variants.update(body)})
                except ValueError as exc:
                    raise ApiError(400, str(exc)) from None
            elif name == "variants" and method == "GET":
                self._send(200, {"variants": srv.service.variants.view()})
            elif name in ("dns", "ssl", "backups") and method in ("GET", "POST"):
                read = {"dns": srv.service.hook_dns, "ssl": srv.service.hook_ssl, "backups": srv.service.hook_backups}
                self._send(200, {name: read[name](body if method == "POST" else None)} if name != "dns"
                           else read[name](body if method == "POST" else None))
            elif name == "automatic-backup" and method == "POST":
                self._send(200, srv.service.hook_automatic_backup(body))
            elif name == "deliveries" and method == "GET":
                self._send(200, {"deliveries": list(getattr(srv.sender, "deliveries", []))})
            else:
                self._envelope(404, "no such hook: %s %s" % (method, path))
        except ApiError as exc:
            self._envelope(exc.status, exc.message, exc.data)

    def _configure_executor(self, config):
        try:
            return self.server.service.executor.configure(config or {})
        except ValueError as exc:
            raise ApiError(400, "invalid executor configuration: %s" % exc) from None


class EmulatorServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # 200+ clients connecting at once must not be refused

    def __init__(self, address, ssl_context, **attrs):
        self.ssl_context = ssl_context
        for key, value in attrs.items():
            setattr(self, key, value)
        super().__init__(address, Handler)

    def server_bind(self):
        # HTTPServer.server_bind does a reverse DNS lookup (getfqdn); not needed on loopback.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request_thread(self, request, client_address):
        # TLS handshake here, in the connection's own thread, not in the accept loop.
        try:
            request.settimeout(30)
            conn = self.ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as exc:
            LOG.debug("TLS handshake with %s failed: %s", client_address, exc)
            request.close()
            return
        try:
            self.finish_request(conn, client_address)
        except Exception:
            self.handle_error(conn, client_address)
        finally:
            self.shutdown_request(conn)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, TimeoutError)):
            LOG.debug("connection from %s ended: %s", client_address, exc)
        else:
            LOG.exception("error serving %s", client_address)


# --------------------------------------------------------------------------- start-up
class StopSignals:
    """SIGTERM / SIGINT ask the main thread to stop; ``wait()`` blocks until one has arrived.

    A Python signal handler runs in the main thread between two bytecodes, possibly while that thread
    holds a lock (threading.Event.wait holds its condition's lock around the wait, and a handler that
    calls Event.set waits for that same lock for ever). So the handler takes no lock: it only records
    the signal number, and ``signal.set_wakeup_fd`` (written by the C-level handler, whichever thread
    the kernel delivered the signal to) wakes the main thread's select at once. Further signals while
    stopping only add to the record. SIGUSR1 dumps every thread's stack to stderr (faulthandler: no
    Python code runs) for diagnosing a stop that does not finish.
    """

    def __init__(self, signums):
        self.received = []
        self._read_fd, self._write_fd = os.pipe()
        for fd in (self._read_fd, self._write_fd):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        for signum in signums:
            signal.signal(signum, self._handler)
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    def _handler(self, signum, _frame):
        self.received.append(signum)  # list.append: no lock, safe between any two bytecodes

    def wait(self):
        """Block until a stop signal has arrived; return the first one's number."""
        while not self.received:
            select.select([self._read_fd], [], [], 5.0)
            try:
                os.read(self._read_fd, 512)
            except BlockingIOError:
                pass
        return self.received[0]


def load_config(path):
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    if not isinstance(config, dict):
        raise ValueError("config must be a JSON object")
    config.setdefault("client", "demo")
    config.setdefault("sites", [])
    config.setdefault("executor", {})
    config.setdefault("executor_options", {})
    return config


def parse_args(argv):
    parser = argparse.ArgumentParser(description="HTTPS emulator of the hosting platform API")
    parser.add_argument("--host", default="127.0.0.1", help="must be 127.0.0.1 (or localhost)")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--workdir", help="TLS files and site storage (default: a new temp dir)")
    parser.add_argument("--state-file", help="persist the service state here (JSON, mode 0600)")
    parser.add_argument("--config", help="seed/config JSON (default: seed.json next to this file)")
    parser.add_argument("--executor", default="scripted", choices=("scripted", "ssh"))
    parser.add_argument("--api-key", help="default: random")
    parser.add_argument("--accept-delay", type=float, help="seconds a new ticket answers 202 (config default 1.0)")
    parser.add_argument("--idle-timeout", type=float,
                        help="seconds an idle keep-alive connection stays open (default %d)" % Handler.timeout)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE",
                        help="another reading of the service (variants.py; README 'Variants'), repeatable")
    parser.add_argument("--webhook-ca", help="CA bundle the webhook sender trusts")
    parser.add_argument("--webhook-event-names", default="as-listed", choices=("as-listed", "hyphens"),
                        help="hyphens: send site-provisioned for site_provisioned (default: as spec 6.2 lists them)")
    parser.add_argument("--ready-requires-preflight", type=int, choices=(400, 409), metavar="STATUS",
                        help="refuse migration ready with STATUS unless the state is preflight-succeeded "
                             "(the partner rule enforced by the service; default: not enforced)")
    parser.add_argument("--log-file", help="log here instead of stderr")
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=getattr(logging, args.log_level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s",
                        **({"filename": args.log_file} if args.log_file else {"stream": sys.stderr}))
    if args.host not in ("127.0.0.1", "localhost"):
        print("server.py: the emulator binds 127.0.0.1 only (got --host %s)" % args.host, file=sys.stderr)
        return 2
    try:
        config = load_config(args.config or DEFAULT_CONFIG)
    except (OSError, ValueError) as exc:
        print("server.py: cannot read config: %s" % exc, file=sys.stderr)
        return 2
    try:
        config["variants"] = dict(config.get("variants") or {}, **parse_variants(args.variant))
        Variants(config["variants"])
    except ValueError as exc:
        print("server.py: %s" % exc, file=sys.stderr)
        return 2
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="wpcloud-emulator-"))
    os.makedirs(workdir, exist_ok=True)
    options = dict(config.get("executor_options", {}).get(args.executor) or {})
    options.setdefault("workdir", workdir)
    options.setdefault("config", config.get("executor"))
    try:
        executor = load_executor(args.executor, options)
    except (RuntimeError, ValueError) as exc:
        print("server.py: %s" % exc, file=sys.stderr)
        return 2
    accept_delay = args.accept_delay if args.accept_delay is not None else float(config.get("accept_delay", 1.0))
    if args.ready_requires_preflight:
        config["ready_requires_preflight"] = args.ready_requires_preflight
    if args.idle_timeout is not None:
        Handler.timeout = args.idle_timeout
    service = Service(config, workdir, executor, accept_delay=accept_delay,
                      state_file=os.path.abspath(args.state_file) if args.state_file else None)
    sender = WebhookSender(service.get_client_meta, ca_path=args.webhook_ca, event_names=args.webhook_event_names)
    service.sender = sender

    ca_path, cert_path, key_path = make_tls_files(workdir)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    api_key = args.api_key or secrets.token_urlsafe(24)
    # What reset restores: the scripted outcomes, plus the chosen executor's own options if not scripted.
    reset_config = dict(config.get("executor") or {})
    if args.executor != "scripted":
        reset_config.update(config.get("executor_options", {}).get(args.executor) or {})
    server = EmulatorServer(("127.0.0.1", args.port), context, service=service, faults=Faults(),
                            requests=RequestLog(), api_key=api_key, config=config, sender=sender,
                            executor_reset_config=reset_config)
    stop = StopSignals((signal.SIGTERM, signal.SIGINT))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    port = server.server_address[1]
    LOG.info("listening on https://127.0.0.1:%s (workdir %s, executor %s)", port, workdir, args.executor)
    sys.stdout.write(json.dumps({"url": "https://127.0.0.1:%d" % port, "api_key": api_key,
                                 "ca_path": ca_path, "client": service.client}) + "\n")
    sys.stdout.flush()
    signum = stop.wait()
    LOG.info("stopping (%s)", signal.Signals(signum).name)
    server.shutdown()
    server.server_close()
    try:
        sender.close()
    except Exception:  # a sender problem must not turn a clean stop into a crash
        LOG.exception("webhook sender did not close cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
