# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A site's domains: the primary domain and its aliases, the certificate of each and what to put in DNS; the logic
of site_domain and site_domain_info.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

The readings behind every call (the owner's panel, the SDKs, the service's docs) are in docs/api-choices.md,
"Going live". In short: the primary domain changes through a job (update-site-domain), aliases at once
(site-alias), each attached domain has a certificate (ssl-info: issued, failed or pending), and get-ips names the
addresses of a domain's A records; a domain held elsewhere is claimed with a TXT record
(get-domain-verification-code).
"""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import validate_site, wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import (
    list_result,
    run_for_each,
    with_api_load,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.uncertain_writes import module_write
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import follow, progress_for
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import (
    Job,
    job_outcome,
    poll_job,
    read_site,
    recent_jobs,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    ALIAS_DOMAINS,
    DNS_A,
    DNS_TXT,
    DOMAIN_JOB_TYPE,
    IPS_RANGES,
    IPS_SUGGESTED,
    JOB_DOMAIN_FIELD,
    JOB_FAILURE,
    JOB_ID_FIELD,
    SERVICE_BY_DOMAIN,
    SSL_BROKEN_FIELDS,
    SSL_BROKEN_RECORD,
    SSL_CERTIFICATE_FIELDS,
    SSL_DETAIL_FIELDS,
    SSL_FAILED,
    SSL_ISSUED,
    SSL_PENDING,
    SSL_RETRY_QUEUED,
    SSL_UNKNOWN,
    as_int_or_str,
)

try:
    import idna      # IDNA 2008 with UTS 46 mapping; installed with requests
except ImportError:  # pragma: no cover - the standard library's codec (IDNA 2003) then
    idna = None

PRIMARY = "primary"
ALIAS = "alias"
PLANNED = "planned"
# site_domain's result: what happened to the primary domain.
SWITCH_NONE = "none"
SWITCHED = "switched"
SWITCH_STARTED = "started"

_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


# -- domain names as the user writes them ----------------------------------------------------------------------

def domain_name(value, option):
    """A host name as the service takes it: lower case, without a trailing dot, an internationalised name in its
    ASCII (punycode) form. Refused, naming ``option`` and the fix: a URL, a path, a port, user information, a
    wildcard, an IP address, anything that is not a host name of at least two labels (docs/api-choices.md)."""
    text = "" if value is None else str(value).strip()
    if not text:
        raise ModuleFailure("%s is empty: give a host name such as shop.example.com." % option)
    shown = text if len(text) <= 80 else text[:77] + "..."
    if "://" in text or text.startswith("//"):
        host = urlsplit(text if "://" in text else "https:" + text).hostname
        fix = "give %s" % host if host else "give the host name alone"
        raise ModuleFailure("%s must be a host name, not a URL (%s): %s, without the scheme, path or port."
                            % (option, shown, fix))
    for mark, what in (("/", "a path"), ("@", "user information"), (":", "a port")):
        if mark in text:
            host = text.split("/", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0]
            raise ModuleFailure("%s must be a host name without %s (%s): give %s." % (option, what, shown,
                                                                                     host or "the host name alone"))
    if "*" in text:
        raise ModuleFailure("%s must be one host name, not a wildcard (%s): the service attaches each domain, and "
                            "issues its certificate, by name; list every host name." % (option, shown))
    name = text[:-1] if text.endswith(".") else text      # shop.example. is the same name as shop.example
    if any(ord(c) > 127 for c in name):
        name = _a_label(name, option, shown)
    name = name.lower()
    labels = name.split(".")
    if len(name) > 253 or len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        raise ModuleFailure("%s must be a host name like shop.example.com (letters, digits and hyphens in labels "
                            "of at most 63, joined by dots), got %s." % (option, shown))
    if all(label.isdigit() for label in labels) or labels[-1].isdigit():
        raise ModuleFailure("%s must be a host name, not an IP address (%s)." % (option, shown))
    if any(label.startswith("xn--") for label in labels):
        _check_punycode(name, option, shown)
    return name


def _a_label(name, option, shown):
    """The ASCII form of an internationalised domain name (bücher.example -> xn--bcher-kva.example)."""
    try:
        if idna is not None:
            return idna.encode(name, uts46=True).decode("ascii")
        return name.encode("idna").decode("ascii")
    except (UnicodeError, ValueError):
        raise ModuleFailure("%s is not a valid internationalised domain name (%s): check its spelling, or give its "
                            "ASCII (punycode) form, xn--..." % (option, shown))


def _check_punycode(name, option, shown):
    """A name with xn-- labels must decode, and encode back to itself (one spelling for one name)."""
    try:
        if idna is not None:
            again = idna.encode(idna.decode(name), uts46=True).decode("ascii")
        else:
            again = name.encode("ascii").decode("idna").encode("idna").decode("ascii")
    except (UnicodeError, ValueError):
        again = None
    if again != name:
        raise ModuleFailure("%s has an xn-- label that is not valid punycode (%s): give the name in Unicode, or "
                            "its exact ASCII form." % (option, shown))


def domain_list(values, option, forbidden=None):
    """Each name of a list option checked (domain_name); a name twice, once normalised, is refused, and so is
    ``forbidden`` (a primary domain, which is never an alias of its own site)."""
    names = []
    for value in values:
        name = domain_name(value, option)
        if name in names:
            raise ModuleFailure("%s lists %s twice (once written as %r): give each domain once." % (option, name,
                                                                                                  str(value)))
        if forbidden and name == forbidden[0]:
            raise ModuleFailure(forbidden[1] % name)
        names.append(name)
    return names


def client_name(params):
    text = (params.get("client") or "").strip()
    if not text:
        raise ModuleFailure("client is empty: give the client identifier of the partner account (lowercase).")
    return text


# -- {service}/{identifier} ------------------------------------------------------------------------------------

class ServicePath(object):
    """The ``{service}/{identifier}`` of one site: the client's name and the site ID first (the ID never changes
    when the domain does), else ``domain`` and the primary domain: after a 400 to the first call (a read), for
    every later call (docs/api-choices.md). ``primary`` follows a switch."""

    def __init__(self, client_name_, site_id, primary):
        self.client_name = client_name_
        self.site_id = site_id
        self.primary = primary
        self.by_domain = False
        self.settled = False

    def args(self):
        if self.by_domain:
            return {"service": SERVICE_BY_DOMAIN, "identifier": self.primary}
        return {"service": self.client_name, "identifier": str(self.site_id)}

    def call(self, client, operation, **args):
        try:
            resp = client.call(operation, **dict(self.args(), **args))
        except WPCloudAPIError as exc:
            if exc.status != 400 or self.settled:
                raise
            self.by_domain, self.settled = True, True
            resp = client.call(operation, **dict(self.args(), **args))
        self.settled = True
        return resp


# -- reading what a site holds ---------------------------------------------------------------------------------

def aliases_of(data, primary):
    """The aliases of a site-alias answer ({"domains": [...]}), without the primary (a service that lists it)."""
    names = data.get(ALIAS_DOMAINS) if isinstance(data, dict) else data
    aliases = []
    for name in names if isinstance(names, list) else []:
        name = str(name).strip().lower().rstrip(".")
        if name and name != primary and name not in aliases:
            aliases.append(name)
    return aliases


def read_aliases(client, path):
    try:
        return aliases_of(path.call(client, "site.alias_list").data, path.primary)
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading the aliases of site %s" % path.site_id)


def ssl_of(data):
    """(state, detail) of an ssl-info answer: issued (a certificate ID), failed (a broken record), else pending
    (nothing yet: the first attempt, or a queued retry; a service that answers [] for it too)."""
    if not isinstance(data, dict) or not data:
        return SSL_PENDING, {}
    certificate = next((data[field] for field in SSL_CERTIFICATE_FIELDS if data.get(field) not in (None, "")), None)
    if certificate is None:     # "the field used can vary" (the docs): any other *_certificate_id
        certificate = next((value for key, value in data.items()
                            if str(key).endswith("certificate_id") and value not in (None, "")), None)
    if certificate is not None:
        detail = dict((field, data.get(field)) for field in SSL_DETAIL_FIELDS if data.get(field) is not None)
        detail["certificate_id"] = as_int_or_str(certificate)
        return SSL_ISSUED, detail
    broken = data.get(SSL_BROKEN_RECORD)
    if broken:
        detail = dict((field, broken.get(field)) for field in SSL_BROKEN_FIELDS
                      if isinstance(broken, dict) and broken.get(field) is not None)
        return SSL_FAILED, detail
    return SSL_PENDING, {}


def read_ssl(client, domain):
    try:
        resp = client.call("site.ssl_info", accept_status=(404,), domain=domain)
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading the certificate of %s" % domain)
    if resp.status == 404:
        return SSL_UNKNOWN, {}
    return ssl_of(resp.data)


def a_records(client, client_name_, domain):
    """The A records the service suggests for ``domain`` (get-ips; an object, or a list holding one), and its
    address ranges."""
    try:
        data = client.call("client.ips", client=client_name_, domain=domain).data
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading the addresses for %s" % domain)
    if isinstance(data, list):
        data = next((item for item in data if isinstance(item, dict)), {})
    data = data if isinstance(data, dict) else {}
    suggested = data.get(IPS_SUGGESTED) or []
    ranges = data.get(IPS_RANGES) or []
    return ([{"type": DNS_A, "name": domain, "value": str(address)} for address in suggested],
            [str(block) for block in ranges])


def txt_record(client, client_name_, domain):
    """The TXT record that lets this client claim ``domain`` where it is held elsewhere."""
    try:
        data = client.call("client.domain_verification", client=client_name_, domain=domain).data
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading the verification code for %s" % domain)
    if isinstance(data, dict):
        data = next((value for value in data.values() if isinstance(value, str)), None)
    return {"type": DNS_TXT, "name": domain, "value": str(data)} if data else None


def hosting_refusal(client, client_name_, domain):
    """None when the client may attach ``domain`` (check-can-host-domain), else the service's reason."""
    try:
        resp = client.call("site.check_domain", accept_status=(400, 409), client=client_name_, domain=domain)
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Checking whether client %s may use %s" % (client_name_, domain))
    allowed = resp.data.get("allowed") if isinstance(resp.data, dict) else None
    if resp.status < 300 and allowed is not False:
        return None
    return resp.message or "the domain is already used"


def describe(client, client_name_, domain, role, ssl=None):
    """One entry of ``domains``: the domain, its role (primary, alias), its certificate, and the DNS records to
    set while it has none (``ssl``: the state already known, else read)."""
    state, detail = ssl if ssl is not None else read_ssl(client, domain)
    entry = {"domain": domain, "role": role, "ssl": state, "ssl_detail": detail, "dns_records": []}
    if state != SSL_ISSUED:
        entry["dns_records"], ranges = a_records(client, client_name_, domain)
        if not entry["dns_records"]:
            entry["ip_ranges"] = ranges
    return entry


def describe_planned(client, client_name_, domain):
    """An entry for a domain the site does not hold yet: its A records, and the TXT record to publish first when
    the service says it is used elsewhere."""
    entry = {"domain": domain, "role": PLANNED, "ssl": None, "ssl_detail": {}, "attachable": True}
    entry["dns_records"], ranges = a_records(client, client_name_, domain)
    if not entry["dns_records"]:
        entry["ip_ranges"] = ranges
    refusal = hosting_refusal(client, client_name_, domain)
    if refusal is not None:
        entry.update(attachable=False, refusal=refusal)
        txt = txt_record(client, client_name_, domain)
        if txt is not None:
            entry["dns_records"].insert(0, txt)
    return entry


def flat_records(entries):
    return [record for entry in entries for record in entry.get("dns_records") or []]


def find_site(client, site, new_domain=None):
    """The site's record; ``site`` given as a domain that has since been switched away is found under
    ``new_domain`` (a re-run of the switch). Fails when the service knows neither."""
    record = read_site(client, site)
    if record is None and new_domain and new_domain != site and not site.isdigit():
        record = read_site(client, new_domain)
    if record is None:
        raise ModuleFailure("site %s was not found (HTTP 404): give its numeric site ID or its primary domain (an "
                            "alias does not name a site)." % site)
    return as_int_or_str(record.get("atomic_site_id")), str(record.get("domain_name") or "").lower()


def pending_switch(client, site_id, domain):
    """The switch job of the site to ``domain`` that has not ended yet ({"job_id", "status"}), or None: a switch
    whose answer was lost, or one an earlier run stopped waiting for."""
    try:
        jobs = recent_jobs(client, site_id, DOMAIN_JOB_TYPE)
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading the recent jobs of site %s" % site_id)
    for job in jobs:
        if str((job.get("data") or {}).get(JOB_DOMAIN_FIELD) or "").lower() == domain and \
                job_outcome(job.get("_status")) is None:
            return {"job_id": as_int_or_str(job.get("id")), "status": job.get("_status")}
    return None


def _action(operation, domain):
    """How the result's ``actions`` name one write (the same words in check mode and after it)."""
    return {"site.alias_add": "add alias %s", "site.alias_remove": "remove alias %s",
            "site.ssl_retry": "retry the certificate of %s"}[operation] % domain


def _switch_action(old, new, keep):
    return "switch the primary domain %s -> %s (%s)" % (old, new, "the old one kept as an alias" if keep else
                                                       "the old one released")


# -- site_domain_info --------------------------------------------------------------------------------------------

def run_info(params, ctx):
    return with_api_load(ctx, lambda: _run_info(params, ctx))


def _run_info(params, ctx):
    name = client_name(params)
    if params.get("sites") is not None:
        elements = [dict(params, sites=None, **dict((k, v) for k, v in element.items() if v is not None))
                    for element in params["sites"]]
        _refuse_twice([str(e.get("site") or "").strip().lower() for e in elements], "site")
        ctx.client()
        results = run_for_each(elements, lambda element: _info_one(ctx.client(), name, element))
        for element, result in zip(elements, results):
            result.setdefault("site", element.get("site"))
        return list_result(results, "sites", lambda r: "site %s" % r["site"])
    return _info_one(ctx.client(), name, params)


def _info_one(client, name, params):
    site = validate_site(params.get("site"))
    planned = domain_list(params.get("domains") or [], "domains")
    site_id, primary = find_site(client, site)
    path = ServicePath(name, site_id, primary)
    aliases = read_aliases(client, path)
    entries = [describe(client, name, primary, PRIMARY)] + [describe(client, name, alias, ALIAS) for alias in aliases]
    entries += [describe_planned(client, name, domain) for domain in planned if domain != primary
                and domain not in aliases]
    return dict(changed=False, site=site, site_id=site_id, domain=primary, aliases=sorted(aliases), domains=entries,
                dns_records=flat_records(entries))


def _refuse_twice(values, what):
    twice = sorted(set(v for v in values if v and values.count(v) > 1))
    if twice:
        raise ModuleFailure("sites lists %s %s twice: give each site once." % (what, twice[0]))


# -- site_domain -------------------------------------------------------------------------------------------------

def run_domain(params, ctx):
    return with_api_load(ctx, lambda: _run_domain(params, ctx))


def _run_domain(params, ctx):
    name = client_name(params)
    wait_options(params)
    if params.get("sites") is None:
        runs = [DomainRun(params, name, ctx)]
    else:
        elements = [dict(params, sites=None, **dict((k, v) for k, v in element.items() if v is not None))
                    for element in params["sites"]]
        _refuse_twice([str(e.get("site") or "").strip().lower() for e in elements], "site")
        runs = [DomainRun(element, name, ctx) for element in elements]
        _refuse_shared_domains(runs)
    ctx.client()        # a connection problem fails the task once, not each site
    # Three rounds: each site read, checked and written up to the start of its switch; every switch's job followed
    # in one wait (a fleet's switches end within one poll gap of the last one); each site's domains read.
    results = run_for_each(runs, lambda run: run.prepare())
    jobs = [run.job for run, result in zip(runs, results) if not result["failed"] and run.job is not None]
    timed_out = _wait_jobs(jobs, params, ctx) if jobs else False
    finished = run_for_each([run for run, result in zip(runs, results) if not result["failed"]],
                            lambda run: run.finish(timed_out))
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


def _refuse_shared_domains(runs):
    """Two elements of sites that declare the same domain (as a primary or an alias) are refused before any call."""
    seen = {}
    for run in runs:
        try:
            declared = run.declared()
        except ModuleFailure:
            continue            # that element fails on its own, with its own message
        for domain in declared:
            if domain in seen and seen[domain] != run.params.get("site"):
                raise ModuleFailure("sites declares %s for site %s and for site %s: a domain belongs to one site."
                                    % (domain, seen[domain], run.params.get("site")))
            seen[domain] = run.params.get("site")


def _wait_jobs(jobs, params, ctx):
    options = wait_options(params)
    client = ctx.client()
    return follow(jobs, lambda job: poll_job(client, job), options["wait_timeout"], options["poll_interval"],
                  progress=progress_for("site_domain", params, ctx), poll_max_interval=options["poll_max_interval"])


class DomainRun(object):
    """One site of a site_domain task: prepare (read, check, plan, alias writes, the switch sent), then finish (the
    switch's outcome, the domains and their certificates read, failed certificates retried)."""

    def __init__(self, params, name, ctx):
        self.params = params
        self.client_name = name
        self.ctx = ctx
        self.job = None
        self.result = None
        self.path = None
        self.aliases = []
        self.primary = None
        self.want = None
        self.actions = []
        self.uncertain = []

    # -- options, checked before any call
    def declared(self):
        """The domains this element declares for its site (its primary and the aliases it wants present)."""
        self.options()
        wanted = [self.want] if self.want else []
        if self.listed is not None and self.params["aliases_state"] != "absent":
            wanted += self.listed
        return wanted

    def options(self):
        p = self.params
        self.site = validate_site(p.get("site"))
        self.want = domain_name(p["domain"], "domain") if p.get("domain") is not None else None
        state = p["aliases_state"]
        self.listed = None
        if p.get("aliases") is not None:
            rule = ("aliases lists %s, which domain makes the primary domain: a site's primary domain is never one "
                    "of its aliases. Leave it out of aliases.")
            self.listed = domain_list(p["aliases"], "aliases", (self.want, rule) if self.want else None)
        elif state != "present":
            raise ModuleFailure("aliases_state=%s needs aliases (the list to %s; an empty list %s)." % (
                state, "remove" if state == "absent" else "keep exactly",
                "removes nothing" if state == "absent" else "removes every alias"))
        if self.want is None and self.listed is None and not p.get("ssl_retry"):
            raise ModuleFailure("site_domain needs domain (the primary domain), aliases, or both; to read a site's "
                                "domains and the DNS records to set, use wpcloud.hosting.site_domain_info.")
        keep = p.get("keep_old_domain")
        if keep is not None and self.want is None:
            raise ModuleFailure("keep_old_domain applies to a change of the primary domain: give domain too (or "
                                "leave keep_old_domain out).")

    # -- round 1
    def prepare(self):
        self.options()
        client = self.ctx.client()
        site_id, self.primary = find_site(client, self.site, self.want)
        self.result = dict(changed=False, site=self.site, site_id=site_id, domain=self.primary,
                           domain_switch=SWITCH_NONE)
        self.path = ServicePath(self.client_name, site_id, self.primary)
        self.aliases = read_aliases(client, self.path)
        plan = self.plan()
        self.result.update(actions=plan["actions"], changed=bool(plan["actions"]))
        if self.ctx.diff:
            self.result["diff"] = {"before": {"domain": self.primary, "aliases": sorted(self.aliases)},
                                   "after": {"domain": plan["primary"], "aliases": sorted(plan["aliases"])}}
        if plan["switch"]:
            self.result.update(previous_domain=self.primary, keep_old_domain=plan["keep"])
        self.refuse_unattachable(client, plan)
        self.plan_ = plan
        if self.ctx.check_mode:
            self.result.update(domain=plan["primary"], aliases=sorted(plan["aliases"]),
                               domain_switch=SWITCHED if plan["switch"] else SWITCH_NONE)
            return self.result
        try:
            for domain in plan["remove"]:
                self.alias_write(client, "site.alias_remove", domain)
            for domain in plan["add"]:
                self.alias_write(client, "site.alias_add", domain)
            if plan["switch"]:
                self.switch(client, plan["keep"])
        except ModuleFailure as failure:
            failure.details.update(changed=bool(self.actions), actions=list(self.actions), site_id=site_id)
            if self.uncertain:
                failure.details["uncertain"] = self.uncertain + failure.details.get("uncertain", [])
            raise
        return self.result

    def plan(self):
        """What the site must become, from what it is: the primary, the old one kept or not, aliases to remove and
        to add (never the primary), and the actions in the order they are sent."""
        state, listed, primary = self.params["aliases_state"], self.listed, self.primary
        want = self.want or primary
        switch = want != primary
        if listed is not None and primary in listed and not switch:
            raise ModuleFailure("aliases lists %s, the primary domain of site %s: a site's primary domain is never "
                                "one of its aliases (and is never removed as one). Leave it out of aliases, or make "
                                "another domain primary with domain." % (primary, self.site))
        keep = self.params.get("keep_old_domain")
        old_listed = switch and listed is not None and primary in listed
        if old_listed and keep is not None and keep == (state == "absent"):
            raise ModuleFailure("keep_old_domain=%s and aliases_state=%s with %s (the current primary) in aliases "
                                "contradict each other: keep_old_domain keeps the old domain as an alias. Give one "
                                "of them." % (str(bool(keep)).lower(), state, primary))
        if keep is None:
            keep = bool(old_listed and state != "absent")
        after = [alias for alias in self.aliases if alias != want] + ([primary] if switch and keep else [])
        add, remove = [], []
        if listed is not None:
            if state in ("present", "exact"):
                add = [d for d in listed if d not in after]
            if state == "absent":
                remove = [d for d in listed if d in after]
            elif state == "exact":
                remove = [d for d in after if d not in listed and not (switch and keep and d == primary)]
        aliases = [d for d in after if d not in remove] + add
        actions = ([_action("site.alias_remove", d) for d in remove] + [_action("site.alias_add", d) for d in add]
                   + ([_switch_action(primary, want, keep)] if switch else []))
        return dict(primary=want, switch=switch, keep=keep, add=add, remove=remove, aliases=aliases, actions=actions)

    def refuse_unattachable(self, client, plan):
        """Every domain the plan attaches (an alias added, a primary that is no alias yet) that the service says is
        used elsewhere is refused before any write, with the TXT record that claims it."""
        new = list(plan["add"]) + ([plan["primary"]] if plan["switch"] and plan["primary"] not in self.aliases else [])
        refused = [(domain, hosting_refusal(client, self.client_name, domain)) for domain in new]
        refused = [(domain, reason) for domain, reason in refused if reason is not None and not (
            # this site's own switch to it, left pending by an earlier run: followed, not refused
            domain == plan["primary"] and pending_switch(client, self.path.site_id, domain) is not None)]
        if not refused:
            return
        records = [txt_record(client, self.client_name, domain) for domain, reason in refused]
        records = [record for record in records if record is not None]
        listed = "; ".join("%s (the service says: %s)" % (domain, reason) for domain, reason in refused)
        raise ModuleFailure("site %s cannot take %s. A domain held elsewhere (another host or account) is claimed "
                            "with a TXT record: publish %s, then run the task again; a domain of another site of this "
                            "account must leave that site first." % (
                                self.site, listed, ", ".join("TXT %s = %s" % (r["name"], r["value"]) for r in records)
                                or "the TXT record of get-domain-verification-code"),
                            dns_records=records, site_id=self.path.site_id)

    def alias_write(self, client, operation, domain):
        adding = operation == "site.alias_add"

        def send():
            return aliases_of(self.path.call(client, operation, domain=domain).data, self.path.primary)

        def happened():
            aliases = read_aliases(client, self.path)
            return aliases if (domain in aliases) == adding else None

        verb = "Adding" if adding else "Removing"
        self.aliases = self.write(operation, send, happened, "alias %s of site %s" % (domain, self.site),
                                  "%s alias %s of site %s" % (verb, domain, self.site))
        self.actions.append(_action(operation, domain))

    def switch(self, client, keep):
        want, site_id = self.want, self.path.site_id

        def pending():
            return pending_switch(client, site_id, want)

        def send():
            operation = "site.update_domain_keep" if keep else "site.update_domain"
            try:
                data = self.path.call(client, operation, domain=want).data
            except WPCloudAPIError as exc:
                found = pending() if exc.status == 423 else None
                if found is None:
                    raise
                return found        # an earlier run's switch to the same domain, still pending: followed
            if isinstance(data, dict) and data.get(JOB_ID_FIELD) not in (None, ""):
                return {"job_id": as_int_or_str(data[JOB_ID_FIELD])}
            return {"job_id": None}     # [] (the domain is already primary): nothing to follow

        def happened():
            _site_id, primary = find_site(client, str(site_id))
            if primary == want:
                return {"job_id": None}
            return pending()

        answer = self.write("site.update_domain", send, happened, "primary domain of site %s" % self.site,
                            "Switching site %s to %s" % (self.site, want))
        self.actions.append(_switch_action(self.primary, want, keep))
        self.result["job_id"] = answer["job_id"]
        if answer["job_id"] is None:
            self.switched()
        elif self.params["wait"]:
            self.job = Job(answer["job_id"], time.monotonic())
        else:
            self.result["domain_switch"] = SWITCH_STARTED

    def write(self, operation, send, happened, what, failing):
        holder = {}
        outcome = module_write(operation, send, happened, what, failing, holder)
        self.uncertain.extend(holder.get("uncertain", []))
        return outcome

    def switched(self):
        self.primary = self.path.primary = self.want
        self.result.update(domain=self.want, domain_switch=SWITCHED)

    # -- round 3
    def finish(self, timed_out):
        client, result = self.ctx.client(), self.result
        if self.job is not None:
            self.followed(timed_out)
            self.switched()
            # The old domain stays as an alias (keep) or leaves: the service's list says which.
            self.aliases = read_aliases(client, self.path)
        if self.ctx.check_mode:
            entries = self.predicted(client)
        else:
            entries = [describe(client, self.client_name, self.primary, PRIMARY)]
            entries += [describe(client, self.client_name, alias, ALIAS) for alias in self.aliases]
            if self.params.get("ssl_retry"):
                self.retry_failed(client, entries)
            result.update(aliases=sorted(self.aliases), actions=self.actions, changed=bool(self.actions))
        if self.uncertain:
            result["uncertain"] = self.uncertain
        result.update(domains=entries, dns_records=flat_records(entries))
        return result

    def followed(self, timed_out):
        job, result = self.job, self.result
        entry = job.as_result(time.monotonic())
        result["job"] = entry
        what = "switch of site %s to %s" % (self.site, self.want)
        details = dict(result, job=entry, changed=True, actions=self.actions)
        if job.error:
            raise ModuleFailure("Waiting for job %s (%s) failed: %s" % (job.job_id, what, job.error), **details)
        if job.outcome == JOB_FAILURE:
            raise ModuleFailure("The service's job %s (%s) failed (status %s): the site keeps its primary domain %s."
                                % (job.job_id, what, job.status, self.primary), **details)
        if timed_out and not job.done:
            raise ModuleFailure("Job %s (%s) was still %s when wait_timeout=%ss ran out; run the task again: it reads "
                                "the site first and follows the same job." % (
                                    job.job_id, what, job.status, self.params["wait_timeout"]),
                                timed_out=True, **details)

    def predicted(self, client):
        """Check mode: the domains the site would hold, those it holds read, the others as a new domain starts
        (its certificate pending, the A records to set)."""
        plan, entries = self.plan_, []
        held = set([self.primary] + self.aliases)
        for domain, role in [(plan["primary"], PRIMARY)] + [(alias, ALIAS) for alias in plan["aliases"]]:
            if domain in held:
                entries.append(describe(client, self.client_name, domain, role))
            else:
                entries.append(describe(client, self.client_name, domain, role, ssl=(SSL_PENDING, {})))
        if self.params.get("ssl_retry"):
            for entry in entries:
                if entry["ssl"] == SSL_FAILED:
                    self.result["actions"].append(_action("site.ssl_retry", entry["domain"]))
                    self.result["changed"] = True
        return entries

    def retry_failed(self, client, entries):
        """ssl_retry: a new attempt for every domain whose last one failed (then pending)."""
        for entry in entries:
            if entry["ssl"] != SSL_FAILED:
                continue
            domain = entry["domain"]

            def send(domain=domain):
                data = client.call("site.ssl_retry", domain=domain).data
                return {"queued": bool(data.get(SSL_RETRY_QUEUED)) if isinstance(data, dict) else False}

            def happened(domain=domain):
                return {"queued": True} if read_ssl(client, domain)[0] != SSL_FAILED else None

            answer = self.write("site.ssl_retry", send, happened, "certificate retry of %s" % domain,
                                "Retrying the certificate of %s" % domain)
            if answer["queued"]:
                entry.update(ssl=SSL_PENDING, ssl_detail={})
                self.actions.append(_action("site.ssl_retry", domain))
