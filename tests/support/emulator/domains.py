"""A site's domains: the primary domain switch (a job), aliases, SSL per domain, and the DNS answers
(get-ips, the verification code). A mixin of ``service.Service``: its methods run under the service's lock
and use its state (``sites``, ``domains``, ``aliases``, ``reserved``, ``ssl``, ``dns``, ``outbox``).

Readings (docs/api-choices.md "Going live"; tests/support/emulator/README.md "Contract"):

* ``update-site-domain/{service}/{identifier}/{new}[/keep|/false]`` answers a job (docs: ``job_id``,
  ``atomic_site_id``, ``domain_name``, ``old_domain_name``) or ``[]`` when the domain is already primary (the
  Python SDK); the switch happens when the job succeeds, then ``domain_name_changed`` is sent.
* ``site-alias/{service}/{identifier}/list|add/{d}|remove/{d}`` answers ``{"domains": [aliases]}`` at once.
* The database keeps its siteurl on a switch (the docs' event example: ``then_db_siteurl`` is the old host);
  switch ``domain_db_update=siteurl`` rewrites the siteurl and home rows of ``db.sql`` instead.
"""

import copy
import os
import re
import time
from urllib.parse import urlsplit

import certificates as C
import dns as D
import sites as S
from errors import DOMAIN_USED_STATUS, ApiError

KEEP_WORDS = {"keep": True, "true": True, "false": False}
# The siteurl/home rows of a WordPress dump: (ID,'siteurl','http://host/path','yes')
SITEURL_ROW = re.compile(rb"\(\s*\d+\s*,\s*'siteurl'\s*,\s*'([^']*)'")


def parse_keep(value):
    """The optional fourth segment: absent or ``false`` drops the old domain, ``keep`` (or ``true``) keeps it."""
    if value is None:
        return False
    word = value.strip().lower()
    if word not in KEEP_WORDS:
        raise ApiError(400, "Invalid keep segment %r: use keep or false" % value[:40])
    return KEEP_WORDS[word]


def db_siteurl_host(storage, fallback):
    """The host of the siteurl row in the site's db.sql, or ``fallback`` when there is none."""
    path = os.path.join(storage, "db.sql")
    try:
        with open(path, "rb") as handle:
            match = SITEURL_ROW.search(handle.read())
    except OSError:
        match = None
    if not match:
        return fallback
    url = match.group(1).decode("utf-8", "replace")
    return (urlsplit(url).hostname or url) if "//" in url else url


def rewrite_siteurl(storage, old, new):
    """Point the siteurl and home rows of db.sql from ``old`` to ``new`` (nothing else in the dump)."""
    path = os.path.join(storage, "db.sql")
    if not os.path.exists(path):
        return
    with open(path, "rb") as handle:
        data = handle.read()
    pattern = re.compile(rb"(\(\s*\d+\s*,\s*'(?:siteurl|home)'\s*,\s*'(?:https?://)?)" + re.escape(old.encode())
                         + rb"(?=[/:']|$)", re.IGNORECASE)
    data, count = pattern.subn(lambda m: m.group(1) + new.encode(), data)
    if count:
        with open(path, "wb") as handle:
            handle.write(data)


class DomainEndpoints:
    """update-site-domain, site-alias, ssl-info, ssl-retry, get-ips, get-domain-verification-code."""

    # ----------------------------------------------------------------- primary domain
    def domain_update(self, service, identifier, new, keep):
        with self.lock:
            site = self._service_site(service, identifier)
            self._check_unlocked(site, "domain")
            keep_old = parse_keep(keep)
            normal = S.normalize_domain(new)
            if normal is None:
                raise ApiError(400, "Invalid domain: %s" % new.strip()[:253])
            same = normal == site["domain"]
            if same:
                answer = self.variants["same_domain_answer"]
                if answer == "empty":
                    return 200, "OK", []
                if answer == "refused":
                    raise ApiError(400, "%s is already the primary domain of site %s" % (normal, site["id"]))
            elif normal not in site["aliases"] and self._domain_taken(normal):
                raise ApiError(DOMAIN_USED_STATUS,
                               "Setting domain-as-primary failed: " + S.domain_used_message(normal))
            old = site["domain"]
            if not same:
                self.reserved[normal] = site["id"]   # nobody else takes it while the job runs
            job_id = self._start_job("domain", site, domain=normal,
                                     extra={"old_domain_name": old, "keep": keep_old, "same": same})
            site["domain_job"] = job_id
            self._save()
            form = self.variants["domain_job_answer"]
            if form == "minimal":
                return 200, "OK", {"job_id": job_id}
            if form == "string-id":
                return 200, "OK", {"job_id": str(job_id)}
            return 200, "OK", {"job_id": job_id, "atomic_site_id": site["id"], "domain_name": normal,
                               "old_domain_name": old}

    def _finish_domain_job(self, job, site):
        """The effect of a domain job that has ended (caller holds the lock)."""
        extra = job["extra"]
        new, old = job["domain"], extra["old_domain_name"]
        if self.reserved.get(new) == site["id"]:
            del self.reserved[new]
        if site.get("domain_job") == job["id"]:
            site.pop("domain_job")
        if job["outcome"] != "success" or extra.get("same") or site["domain"] != old:
            return
        now = time.time()
        if new in site["aliases"]:
            site["aliases"].remove(new)
            self.aliases.pop(new, None)
        del self.domains[old]
        site["domain"] = new
        self.domains[new] = site["id"]
        if extra.get("keep"):
            site["aliases"].append(old)
            self.aliases[old] = site["id"]
        else:
            self.ssl.pop(old, None)
        if new not in self.ssl:
            self.ssl[new] = C.pending(now, self.ssl_config)
        if self.variants["domain_db_update"] == "siteurl":
            rewrite_siteurl(self.storage(site["id"]), old, new)
            site["db_siteurl"] = new
        self._domain_event(site, old, new)

    def _domain_event(self, site, old, new):
        data = {"passed_old": old, "passed_new": new, "then_api_current": site["domain"],
                "then_db_siteurl": db_siteurl_host(self.storage(site["id"]), site["db_siteurl"])}
        self.outbox.append((site["client"], "domain_name_changed", site["id"], data))
        self._jobs_wake.notify_all()

    # ----------------------------------------------------------------- aliases
    def alias(self, service, identifier, action, domain):
        with self.lock:
            site = self._service_site(service, identifier)
            if action == "list":
                if domain is not None:
                    raise ApiError(404, "Not found: site-alias list takes no domain")
                return 200, "OK", {"domains": self._alias_view(site)}
            if domain is None:
                raise ApiError(400, "Missing domain: use site-alias/{service}/{identifier}/%s/{domain}" % action)
            self._check_unlocked(site, "domain")
            normal = S.normalize_domain(domain)
            if normal is None:
                raise ApiError(400, "Invalid domain: %s" % domain.strip()[:253])
            if action == "add":
                changed = self._alias_add(site, normal)
            else:
                changed = self._alias_remove(site, normal)
            if changed:
                if self.variants["alias_event"] == "sent":
                    old, new = ("", normal) if action == "add" else (normal, "")
                    self._domain_event(site, old, new)
                self._save()
            return 200, "OK", {"domains": self._alias_view(site)}

    def _alias_view(self, site):
        aliases = list(site["aliases"])
        return [site["domain"]] + aliases if self.variants["alias_list"] == "with-primary" else aliases

    def _alias_add(self, site, domain):
        if domain == site["domain"]:
            raise ApiError(400, "%s is the primary domain of site %s, not an alias" % (domain, site["id"]))
        if domain in site["aliases"]:
            if self.variants["alias_repeat"] == "refused":
                raise ApiError(400, "%s is already an alias of site %s" % (domain, site["id"]))
            return False
        if self._domain_taken(domain):
            raise ApiError(DOMAIN_USED_STATUS, S.domain_used_message(domain))
        site["aliases"].append(domain)
        self.aliases[domain] = site["id"]
        self.ssl[domain] = C.pending(time.time(), self.ssl_config)
        return True

    def _alias_remove(self, site, domain):
        if domain == site["domain"]:
            raise ApiError(400, "The primary domain %s cannot be removed as an alias; change the primary domain "
                                "first" % domain)
        if domain not in site["aliases"]:
            raise ApiError(404, "%s is not an alias of site %s" % (domain, site["id"]))
        site["aliases"].remove(domain)
        self.aliases.pop(domain, None)
        self.ssl.pop(domain, None)
        return True

    # ----------------------------------------------------------------- SSL
    def _ssl_record(self, ref):
        """(domain, record) for ssl-info/ssl-retry: 404 unless the domain is attached to a site of the client."""
        ref = str(ref).strip().lower()
        if ref.isdigit() and self.variants["ssl_info_key"] == "domain-or-id":
            domain = self._site(ref)["domain"]
        else:
            domain = S.normalize_domain(ref)
        owner = self.domains.get(domain, self.aliases.get(domain)) if domain else None
        if owner is None or owner not in self.sites:
            raise ApiError(404, "Not Found: %s is not a domain or alias of any site" % ref[:253])
        if self.sites[owner]["client"] != self.client:
            raise ApiError(403, "Forbidden: this key cannot act on the client of %s" % domain)
        if domain not in self.ssl:   # attached before certificates were kept (an older state file)
            self.ssl[domain] = C.issued(time.time(), self._new_cert_id())
        record = self.ssl[domain]
        C.advance(record, domain, time.time(), self._dns_since(domain), self._new_cert_id, self.ssl_config)
        return domain, record

    def ssl_info(self, ref):
        with self.lock:
            self._advance_jobs()
            domain, record = self._ssl_record(ref)
            return 200, "OK", C.public_view(record, domain, self.variants["ssl_cert_field"],
                                            self.variants["ssl_pending_answer"])

    def ssl_retry(self, ref):
        with self.lock:
            self._advance_jobs()
            _domain, record = self._ssl_record(ref)
            queued = C.retry(record, time.time(), self.ssl_config)
            if queued:
                self._save()
            return 200, "OK", {"queued": queued}

    # ----------------------------------------------------------------- DNS answers
    def get_ips(self, client, domain):
        with self.lock:
            self._check_client(client)
        normal = None
        if domain:
            normal = S.normalize_domain(domain)
            if normal is None:
                raise ApiError(400, "Invalid domain: %s" % domain.strip()[:253])
        return 200, "OK", D.ips_answer(normal, self.variants["ips_shape"])

    def verification_code(self, client, domain):
        with self.lock:
            self._check_client(client)
        normal = S.normalize_domain(domain)
        if normal is None:
            raise ApiError(400, "Invalid domain: %s" % domain.strip()[:253])
        return 200, "OK", D.verification_code(client, normal)

    # ----------------------------------------------------------------- test hooks
    def hook_dns(self, body=None):
        """``POST /_emulator/dns {"domain": d, "arrived": true|false, "txt": value|null}``: DNS of ``d`` now
        points here (or no longer does), and/or its TXT record holds ``value``. Without a body: the table."""
        with self.lock:
            if body is None:
                return {"dns": copy.deepcopy(self.dns)}
            unknown = set(body) - {"domain", "arrived", "txt"}
            domain = S.normalize_domain(body.get("domain"))
            if unknown or domain is None:
                raise ApiError(400, "dns takes {\"domain\": host, \"arrived\": bool, \"txt\": str or null}")
            if "arrived" in body and not isinstance(body["arrived"], bool):
                raise ApiError(400, "arrived must be true or false")
            if body.get("txt") is not None and not isinstance(body["txt"], str):
                raise ApiError(400, "txt must be a string or null")
            entry = self.dns.setdefault(domain, {"since": None, "txt": None})
            now = time.time()
            if body.get("arrived") is True and entry["since"] is None:
                entry["since"] = now
                record = self.ssl.get(domain)
                if record is not None and self.variants["ssl_after_dns"] == "at-once":
                    C.dns_arrived(record, now, self.ssl_config)
            elif body.get("arrived") is False:
                entry["since"] = None
            if "txt" in body:
                entry["txt"] = body["txt"]
            self._save()
            return {"domain": domain, "dns": dict(entry)}

    def hook_ssl(self, config=None):
        """Replace (config given) or show the SSL timing configuration (certificates.py)."""
        with self.lock:
            if config is not None:
                try:
                    self.ssl_config = C.normalize_config(config)
                except ValueError as exc:
                    raise ApiError(400, "invalid ssl configuration: %s" % exc) from None
            return dict(self.ssl_config)
