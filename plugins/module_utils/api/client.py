# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one HTTP client of the collection for the WP Cloud partner API.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

What it owns: the operation table (method and path of every call, and whether it writes), the
``{message, data}`` envelope, and the retry rules (the error type and its wording: api/errors.py):

* reads are safe to repeat: they retry on connection errors, resets, read timeouts, 429 and every
  5xx, with capped exponential backoff and jitter, honouring Retry-After, within ``retry_timeout``;
* writes are repeated here only when they provably did not take effect: the connection was refused
  or timed out before anything was sent, or the service answered 429;
* a write whose effect is unknown (read timeout, reset after sending, any 5xx) is never repeated
  here: the error says ``effect: unknown`` and the module resolves it by reading the state the write
  would have changed (module_utils/runtime/uncertain_writes.py);
* being a good citizen at fleet scale: every request of the client (all threads of a task) passes
  one gate (``Pace``, api/pace.py): an optional ceiling on requests per second (``rate_limit``), and after a 429
  a pause that holds every worker of the client, not only the one that got it.

Credentials never travel in a URL: operations that carry parameters use form bodies.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import threading
import time
from functools import partial
from operator import methodcaller
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.defaults import (
    DEFAULT_API_URL,
    DEFAULT_RETRIES,
    DEFAULT_RETRY_TIMEOUT,
    DEFAULT_TIMEOUT,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import (
    CONNECTION_WORDS,
    KEY_REFUSED_STATUS,
    MISSING_KEY,
    WPCloudAPIError,
    certificate_problem,
    connection_refused,
    exception_chain,
    refused_key,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import Secrets
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.pace import Pace
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.version import collection_version

try:
    import requests
    import urllib3
    from requests.adapters import HTTPAdapter
    HAS_REQUESTS = True
    REQUESTS_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - reported by the modules
    requests = urllib3 = None
    HTTPAdapter = object
    HAS_REQUESTS = False
    REQUESTS_IMPORT_ERROR = exc

API_PREFIX = "/api/v1.0/"

# How many calls one task makes at once. A fan-out over a list form (run_for_each) or one wait (on
# tickets, or on migrations followed by their state) uses CONCURRENT_CALLS threads, and
# migration_ready runs its PARALLEL_WAITS waits side by side; the read session keeps a connection
# for each thread that can call at the same time.
CONCURRENT_CALLS = 16
PARALLEL_WAITS = 2
POOL_SIZE = CONCURRENT_CALLS * PARALLEL_WAITS

READ = "read"
WRITE = "write"

# The reads a wait repeats for every item it follows (a 1,000-site wave polls each of them about once a
# second): they go through a urllib3 pool directly, which costs the controller less CPU per call than a
# requests session (why: docs/api-choices.md, "A second transport for the hot reads"; how much:
# docs/performance.md, "What a task costs the controller"). Every other call
# goes through requests. Both transports send the same request and are classified by the same code (call).
HOT_READS = frozenset(("ticket.summary", "migration.get", "job.status"))

# The starts of a fleet's preflights and runs go through a urllib3 pool too, one replaced when older than
# WRITE_SESSION_MAX_AGE (the writes' rule): 1,000 starts are sent back to back, and their tickets end as far
# apart as they were started, which is what a fleet's completion -> return delay is made of
# (docs/performance.md, "Detection at a thousand sites"). The other writes stay on requests.
HOT_STARTS = frozenset(("migration.preflight", "migration.ready"))

# Writes reuse a kept-alive connection only while the session that opened it is young. A connection
# that the server closed (its keep-alive timeout) and that fails while a write is being sent would
# leave the write's effect unknown (resolved by a read: uncertain_writes.write_once), so writes never ride a
# connection older than this. The service's timeout is unknown; common servers keep idle
# connections 5 s (Apache) to 75 s (nginx). A young kept-alive connection also costs a write much less
# than a fresh TLS one (docs/performance.md, "What a task costs the controller").
WRITE_SESSION_MAX_AGE = 2.0

# One table for every call. The migration operations are documented as GET "still being tested";
# create and update carry credentials, so they go as POST form bodies (a public SDK used POST against
# the live service). Change a method here if the service insists.
OPERATIONS = {
    "client_meta.add": ("POST", "client-meta/{client}/{key}/add", WRITE),
    "client_meta.update": ("POST", "client-meta/{client}/{key}/update", WRITE),
    "client_meta.get": ("GET", "client-meta/{client}/{key}/get", READ),
    "client_meta.remove": ("GET", "client-meta/{client}/{key}/remove", WRITE),
    "site.get": ("GET", "get-site/{site}", READ),
    # All sites of the client, a page at a time (query limit, after), with one meta key as a column.
    "site.list": ("GET", "get-sites/{client}/{key}", READ),
    # The same without the meta column (a service that refuses the key): only after a 400 to site.list.
    "site.list_plain": ("GET", "get-sites/{client}", READ),
    # Whether the client may host a domain ({"allowed": true}, else 400 "already used"): only after a 403.
    "site.check_domain": ("GET", "check-can-host-domain/{client}/{domain}", READ),
    "site.create": ("POST", "create-site/{client}", WRITE),
    "site.delete": ("POST", "delete-site/{client}/{site}", WRITE),
    "job.status": ("GET", "job-status/{job_id}", READ),
    "job.recent": ("GET", "job-status", READ),
    "site_meta.get": ("GET", "site-meta/{site}/{key}/get", READ),
    "site.allow_migration": ("POST", "site-allow-ssh-migration/{site}", WRITE),
    "ticket.summary": ("POST", "response-ticket/get/summary", READ),
    "ticket.full": ("POST", "response-ticket/get/full", READ),
    "migration.create": ("POST", "migration/create/{site}", WRITE),
    "migration.get": ("GET", "migration/get/{migration_id}", READ),
    "migration.update": ("POST", "migration/update/{migration_id}", WRITE),
    "migration.preflight": ("GET", "migration/preflight/{migration_id}", WRITE),
    "migration.ready": ("GET", "migration/ready/{migration_id}", WRITE),
    # Going live (issue 37), as the owner's panel and the SDKs call them (docs/api-choices.md "Going live").
    # {service}/{identifier}: the client's name and a site ID, else the word "domain" and the primary domain.
    "site_meta.update": ("POST", "site-meta/{site}/{key}/update", WRITE),
    "site_meta.remove": ("GET", "site-meta/{site}/{key}/remove", WRITE),
    # The primary domain: a job; "/keep" keeps the old primary as an alias (nothing after it drops it).
    "site.update_domain": ("POST", "update-site-domain/{service}/{identifier}/{domain}", WRITE),
    "site.update_domain_keep": ("POST", "update-site-domain/{service}/{identifier}/{domain}/keep", WRITE),
    # Aliases: every source calls them with GET, writes included; each answers {"domains": [...]}.
    "site.alias_list": ("GET", "site-alias/{service}/{identifier}/list", READ),
    "site.alias_add": ("GET", "site-alias/{service}/{identifier}/add/{domain}", WRITE),
    "site.alias_remove": ("GET", "site-alias/{service}/{identifier}/remove/{domain}", WRITE),
    "site.ssl_info": ("POST", "ssl-info/{domain}", READ),
    "site.ssl_retry": ("POST", "ssl-retry/{domain}", WRITE),
    # What to put in DNS: the A records' addresses for a domain, the TXT value that claims one held elsewhere.
    "client.ips": ("GET", "get-ips/{client}/{domain}", READ),
    "client.domain_verification": ("GET", "get-domain-verification-code/{client}/{domain}", READ),
    # On-demand backups: create and delete answer a request ID, nothing to poll; the list shows the result.
    "backup.create": ("POST", "on-demand-backup/create/{site}/{kind}", WRITE),
    "backup.delete": ("POST", "on-demand-backup/delete/{site}/{backup_id}", WRITE),
    "backup.list": ("GET", "site-backups-list/{service}/{identifier}", READ),
    "site.restore": ("POST", "restore-site/{site}", WRITE),
}

RETRY_STATUS_READ = frozenset([429] + list(range(500, 600)))
RETRY_STATUS_WRITE = frozenset((429,))
# A gateway's answer (bad gateway, gateway timeout): the request may still be in the service's hands.
GATEWAY_STATUS = frozenset((502, 504))
BACKOFF_BASE = 0.5
BACKOFF_CAP = 10.0
# A refused connection means nothing listens there (a wrong port or host, a service down): after this
# many retries (about 1.5 s) it is reported, instead of the full backoff (12.7 s with the default retries).
REFUSED_RETRIES = 2


class ApiResponse(object):
    __slots__ = ("status", "message", "data")

    def __init__(self, status, message, data):
        self.status = status
        self.message = message
        self.data = data

    @property
    def pending(self):
        """A 202 from the ticket endpoints: no response yet."""
        return self.status == 202


def php_form(data, prefix=None):
    """Flatten a dict into form pairs with PHP array notation (``a[b]=1``, ``c[]=2``)."""
    pairs = []
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items:
        if prefix is None:
            name = str(key)
        elif isinstance(data, dict):
            name = "%s[%s]" % (prefix, key)
        else:
            name = "%s[]" % prefix
        if value is None:
            continue
        if isinstance(value, (dict, list, tuple)):
            pairs.extend(php_form(value, name))
        elif isinstance(value, bool):
            pairs.append((name, "true" if value else "false"))
        else:
            pairs.append((name, str(value)))
    return pairs


def parse_envelope(status, body):
    """Return (message, data) from a response body; tolerate non-JSON and any ``data`` shape."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    if not text.strip():
        return "", None
    try:
        payload = json.loads(text)
    except ValueError:
        # Error pages from proxies and the like: keep a short, single-line excerpt.
        excerpt = " ".join(text.split())[:200]
        return excerpt, None
    if isinstance(payload, dict) and ("message" in payload or "data" in payload):
        message = payload.get("message")
        if message is None and "error" in payload:
            message = payload.get("error")
        return ("" if message is None else str(message)), payload.get("data")
    return "", payload


def _not_sent(exc):
    """True when a connection error provably happened before the request left this host."""
    if requests is not None and isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    for item in exception_chain(exc):
        name = type(item).__name__
        if name in ("NewConnectionError", "ConnectTimeoutError", "NameResolutionError"):
            return True
        if isinstance(item, (ConnectionRefusedError, socket.gaierror)):
            return True
    return False


def _as_requests_error(exc):
    """The exception requests' adapter raises for urllib3's ``exc`` (urllib3 with retries off raises its own
    errors unwrapped), so that one classification (call) serves both transports, with the same messages."""
    errors = requests.exceptions
    if isinstance(exc, urllib3.exceptions.SSLError):
        return errors.SSLError(exc)
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return errors.ReadTimeout(exc)
    if isinstance(exc, urllib3.exceptions.ProxyError):
        return errors.ProxyError(exc)
    if isinstance(exc, urllib3.exceptions.ConnectTimeoutError) and \
            not isinstance(exc, urllib3.exceptions.NewConnectionError):
        return errors.ConnectTimeout(exc)
    return errors.ConnectionError(exc)


def _retry_after(headers):
    value = (headers or {}).get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime
        when = parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


class WPCloudClient(object):
    """Calls the partner API. One instance per task; reads share a keep-alive session, writes a
    keep-alive session that is replaced when older than WRITE_SESSION_MAX_AGE, and the hot reads
    (HOT_READS) a keep-alive urllib3 pool, the starts (HOT_STARTS) another one, renewed as the writes'
    session is. The transport is only how one attempt is sent (_send); the gate, retries, timeouts, TLS
    settings and the classification of answers and failures are call()'s.

    Safe to share between threads (the list forms and the poller call it concurrently). ``secrets``
    (a Secrets, the task's) holds what its error texts must never show; the API key is added to it.
    """

    def __init__(self, api_url=DEFAULT_API_URL, api_key=None, validate_certs=True, ca_path=None,
                 timeout=DEFAULT_TIMEOUT, retries=DEFAULT_RETRIES, retry_timeout=DEFAULT_RETRY_TIMEOUT,
                 user_agent=None, on_retry=None, sleep=None, secrets=None, rate_limit=0):
        if not HAS_REQUESTS:
            raise WPCloudAPIError("The Python library 'requests' is required on the controller "
                                  "(pip install requests).")
        if not api_key:
            raise WPCloudAPIError(MISSING_KEY)
        self.base = api_url.rstrip("/") + API_PREFIX
        self._api_key = api_key
        self.secrets = secrets if secrets is not None else Secrets()
        self.secrets.add(api_key)
        self.verify = ca_path if (ca_path and validate_certs) else bool(validate_certs)
        self.timeout = timeout
        self.retries = max(0, int(retries))
        self.retry_timeout = retry_timeout
        version = collection_version()
        self.user_agent = user_agent or ("wpcloud.hosting/%s" % version if version else "wpcloud.hosting")
        self.on_retry = on_retry
        self.sleep = sleep
        self.pace = Pace(rate_limit, sleep=sleep)
        self.calls = []  # (operation, status) of every attempt, for results and tests
        self._session = None
        self._writes = None        # (session, when it was made) of the writes
        self._hot = None           # (the hot reads' urllib3 pool or None,) once made
        self._hot_headers = None
        self._hot_tls = None
        self._hot_starts = None    # (the starts' urllib3 pool, when it was made)
        self.clock = time.monotonic
        self._lock = threading.Lock()

    # -- transport ---------------------------------------------------------------------------
    def _transport(self):
        """The requests adapter a new session sends through (retries are this client's own)."""
        return HTTPAdapter(max_retries=0, pool_connections=4, pool_maxsize=POOL_SIZE)

    def _pool(self, **tls):
        """The urllib3 pool the hot reads send through (``tls``: its certificate settings)."""
        return urllib3.PoolManager(num_pools=4, maxsize=POOL_SIZE, **tls)

    def _new_session(self):
        session = requests.Session()
        adapter = self._transport()
        session.mount("https://", adapter)
        session.mount("http://", adapter)
        session.headers.update({
            "Auth": self._api_key,
            "User-Agent": self.user_agent,
            "Accept": "application/json",
        })
        session.verify = self.verify
        session.trust_env = True  # https_proxy / no_proxy from the environment
        return session

    def _hot_pool(self):
        """The hot reads' pool, made once; None when they go through requests too: a proxy from the
        environment applies, or the CA bundle is not there (requests then says so, as it always did)."""
        hot = self._hot
        if hot is not None:     # every poll: no lock once made
            return hot[0]
        with self._lock:
            if self._hot is None:
                self._hot = (self._new_hot_pool(),)
            return self._hot[0]

    def _new_hot_pool(self):
        session = self._new_session()
        try:
            # What requests itself would use for these requests: the proxy, and the CA bundle (ca_path, else
            # REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE, else certifi's; never the environment's over ca_path).
            settings = session.merge_environment_settings(self.base, {}, None, self.verify, None)
            if requests.utils.select_proxy(self.base, settings["proxies"]):
                return None
            verify, tls = settings["verify"], {"cert_reqs": "CERT_NONE"}
            if verify and self.base.lower().startswith("https"):
                where = verify if verify is not True else requests.utils.extract_zipped_paths(
                    requests.utils.DEFAULT_CA_BUNDLE_PATH)
                if not where or not os.path.exists(where):
                    return None
                tls = {"cert_reqs": "CERT_REQUIRED", ("ca_cert_dir" if os.path.isdir(where) else "ca_certs"): where}
            self._hot_headers, self._hot_tls = dict(session.headers), tls
            return self._pool(**tls)
        finally:
            session.close()

    def _hot_start_pool(self):
        """The starts' pool (HOT_STARTS): made as the hot reads' one, replaced when older than
        WRITE_SESSION_MAX_AGE as the write session is; None when the hot reads go through requests."""
        if self._hot_pool() is None:
            return None
        with self._lock:
            self._hot_starts = self._young(self._hot_starts, partial(self._pool, **self._hot_tls), methodcaller("clear"))
            return self._hot_starts[0]

    def _young(self, held, make, close):
        """``held`` (a transport, when it was made) while younger than WRITE_SESSION_MAX_AGE, else a new one
        from ``make()``; the old one is closed: idle connections now, one in use when its request is done.
        Called under the lock."""
        now = self.clock()
        if held is None or now - held[1] > WRITE_SESSION_MAX_AGE:
            if held is not None:
                close(held[0])
            held = (make(), now)
        return held

    def _send(self, operation, kind, method, url, form):
        """One attempt through the transport of ``operation``: (status, headers, body), or the exception
        requests raises for a failed connection (whichever transport sent it)."""
        pool = self._hot_pool() if operation in HOT_READS else None
        if operation in HOT_STARTS:
            pool = self._hot_start_pool()
        if pool is None:
            session = self._write_session() if kind == WRITE else self._read_session()
            # verify is passed per request: requests would otherwise let REQUESTS_CA_BUNDLE or
            # CURL_CA_BUNDLE from the environment override ca_path.
            if method == "GET":
                resp = session.request(method, url, params=form or None, timeout=self.timeout,
                                       allow_redirects=False, verify=self.verify)
            else:
                resp = session.request(method, url, data=form, timeout=self.timeout,
                                       allow_redirects=False, verify=self.verify)
            return resp.status_code, resp.headers, resp.content
        headers, body = self._hot_headers, None
        if form and method == "GET":
            url += "?" + urlencode(form)
        elif form:
            headers = dict(headers, **{"Content-Type": "application/x-www-form-urlencoded"})
            body = urlencode(form).encode("ascii")
        try:
            resp = pool.request(method, url, body=body, headers=headers, timeout=self.timeout, retries=False,
                                redirect=False)
        except (urllib3.exceptions.TimeoutError, urllib3.exceptions.ProtocolError, urllib3.exceptions.SSLError,
                urllib3.exceptions.ProxyError, urllib3.exceptions.ClosedPoolError) as exc:
            raise _as_requests_error(exc) from exc
        return resp.status, resp.headers, resp.data

    def _read_session(self):
        with self._lock:
            if self._session is None:
                self._session = self._new_session()
            return self._session

    def _write_session(self):
        with self._lock:
            self._writes = self._young(self._writes, self._new_session, methodcaller("close"))
            return self._writes[0]

    def close(self):
        with self._lock:
            if self._hot is not None and self._hot[0] is not None:
                self._hot[0].clear()
            self._hot = None
            if self._hot_starts is not None:
                self._hot_starts[0].clear()
                self._hot_starts = None
            if self._session is not None:
                self._session.close()
                self._session = None
            if self._writes is not None:
                self._writes[0].close()
                self._writes = None

    def load(self):
        """The load this client put on the service so far: requests sent (retries too) and the most sent
        within any one second (a task's ``api_load``; the fleet's rate is the sum over its tasks at once)."""
        return {"calls": self.pace.sent, "peak_per_second": self.pace.peak}

    def url_for(self, operation, **path_args):
        method, template, kind = OPERATIONS[operation]
        quoted = dict((k, quote(str(v), safe="")) for k, v in path_args.items())
        return method, self.base + template.format(**quoted), kind

    def call(self, operation, params=None, accept_status=(), **path_args):
        """Make one API call with the retry rules above and return an ApiResponse.

        ``params`` go in the form body (POST) or, for GET operations, in the query string; GET
        operations never carry secrets. ``accept_status`` lists error statuses to return instead
        of raising (for example 404 when reading something that may not exist).
        """
        method, url, kind = self.url_for(operation, **path_args)
        retry_status = RETRY_STATUS_WRITE if kind == WRITE else RETRY_STATUS_READ
        form = php_form(params or {})
        deadline = time.monotonic() + self.retry_timeout
        attempt = 0
        while True:
            attempt += 1
            delay, paused = None, False
            self.pace.admit()       # before the session is picked: a write never waits on an aging one
            try:
                status, headers, body = self._send(operation, kind, method, url, form)
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
                if isinstance(exc, requests.exceptions.SSLError) and certificate_problem(exc):
                    self.calls.append((operation, "tls-error"))
                    raise WPCloudAPIError(
                        "TLS certificate verification failed for %s. Check validate_certs and ca_path." % self.base,
                        operation=operation, effect="none", attempts=attempt)
                # Any other failure, a TLS record error mid-request too, is a lost connection.
                not_sent = _not_sent(exc)
                self.calls.append((operation, "not-sent" if not_sent else "no-answer"))
                if not_sent or kind == READ:
                    error = WPCloudAPIError(
                        "Could not reach %s: %s; check api_url (the service's base URL, without /api/v1.0) and "
                        "that the controller can connect to it." % (self.shown_url(url), self._describe(exc)),
                        operation=operation, retry_safe=True,
                        effect="none" if not_sent else "unknown", attempts=attempt)
                else:
                    lost = WPCloudAPIError(
                        "The connection failed after %s was sent (%s); the service may or may not "
                        "have applied it, so it was not repeated. Run the task again: it reads the "
                        "current state first." % (operation, self._describe(exc)),
                        operation=operation, retry_safe=False, effect="unknown", attempts=attempt)
                    lost.in_flight = self.timeout
                    raise lost
                if attempt > REFUSED_RETRIES and connection_refused(exc):
                    raise error
            else:
                self.calls.append((operation, status))
                message, data = parse_envelope(status, body)
                if status < 300 or status in accept_status:
                    return ApiResponse(status, message, data)
                error = self._status_error(operation, kind, status, message, data, attempt)
                if status in GATEWAY_STATUS:  # the service behind the gateway may still be at work
                    error.in_flight = self.timeout
                if status not in retry_status:
                    raise error
                delay = _retry_after(headers)
                paused = status == 429
            if delay is None:
                delay = min(BACKOFF_CAP, BACKOFF_BASE * (2 ** (attempt - 1))) * random.uniform(0.5, 1.0)
            if paused:
                # The service asks this client to slow down: every worker waits, not only this one.
                self.pace.pause(delay)
            if attempt > self.retries:
                raise error
            if time.monotonic() + delay > deadline:
                raise error
            if self.on_retry is not None:
                self.on_retry("%s: %s; retrying in %.1fs (attempt %d of %d)" % (
                    operation, error.message, delay, attempt + 1, self.retries + 1))
            if not paused:         # after a 429 the gate holds this request with all the others
                (self.sleep or time.sleep)(delay)

    def _describe(self, exc):
        """What went wrong with the connection, in words (never the exception's text, which may hold data)."""
        chain = list(exception_chain(exc))
        for kind, words in CONNECTION_WORDS:
            if any(type(item).__name__ == kind if isinstance(kind, str) else isinstance(item, kind) for item in chain):
                return words
        if requests is not None and isinstance(exc, requests.exceptions.Timeout):
            return "no answer within timeout=%ss" % self.timeout
        return self.secrets.mask(exc.__class__.__name__)

    def shown_url(self, url):
        """A URL fit for a message: no user:password@, no query string."""
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return self.secrets.mask(urlunsplit((parts.scheme, netloc, parts.path, "", "")))

    def _status_error(self, operation, kind, status, message, data, attempt):
        api_message = self.secrets.mask(message) or None
        if status in KEY_REFUSED_STATUS:
            text = refused_key(status, api_message)
        elif kind == WRITE and status >= 500:
            text = ("HTTP %d from %s%s. The service may or may not have applied it, so it was not "
                    "repeated. Run the task again: it reads the current state first." % (
                        status, operation, ": " + api_message if api_message else ""))
        else:
            text = "HTTP %d from %s%s" % (status, operation, ": " + api_message if api_message else "")
        if status == 404 and re.search(r"/api(/v[\d.]*)?$", urlsplit(self.base[:-len(API_PREFIX)]).path):
            # The collection adds /api/v1.0 itself: an api_url that ends in it asks for /api/v1.0/api/v1.0/...
            text += ("; check api_url: it ends in %s, and the collection adds /api/v1.0 itself. Give the service's "
                     "base URL, such as https://atomic-api.wordpress.com" % urlsplit(self.base[:-len(API_PREFIX)]).path)
        effect = "none" if status in (400, 401, 403, 404, 409, 429) else (
            "unknown" if kind == WRITE and status >= 500 else "rejected")
        retry_safe = status == 429 or (kind == READ and status in RETRY_STATUS_READ)
        return WPCloudAPIError(text, status=status, operation=operation, api_message=api_message,
                               data=data, retry_safe=retry_safe, effect=effect, attempts=attempt)
