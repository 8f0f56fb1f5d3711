# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A site's domains read: the primary domain and its aliases, the certificate of each and what to put in DNS (the
domain names users write checked first); the logic of site_domain_info, and what site_domain reads with
(service/domain_switch.py).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

The readings behind every call (the owner's panel, the SDKs, the service's docs) are in docs/api-choices.md,
"Going live". In short: the primary domain changes through a job (update-site-domain), aliases at once
(site-alias), each attached domain has a certificate (ssl-info: issued, failed or pending), and get-ips names the
addresses of a domain's A records; a domain held elsewhere is claimed with a TXT record
(get-domain-verification-code).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import validate_site
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import (
    list_result,
    run_for_each,
    with_api_load,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.rounds import elements_of
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import read_site
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    ALIAS_DOMAINS,
    DNS_A,
    DNS_TXT,
    IPS_RANGES,
    IPS_SUGGESTED,
    SERVICE_BY_DOMAIN,
    SSL_BROKEN_FIELDS,
    SSL_BROKEN_RECORD,
    SSL_CERTIFICATE_FIELDS,
    SSL_DETAIL_FIELDS,
    SSL_FAILED,
    SSL_ISSUED,
    SSL_PENDING,
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
            host = text.split("/", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0] or "the host name alone"
            raise ModuleFailure("%s must be a host name without %s (%s): give %s." % (option, what, shown, host))
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
            written = str(value)
            raise ModuleFailure("%s lists %s twice (once written as %r): give each domain once." % (option, name, written))
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


# -- site_domain_info --------------------------------------------------------------------------------------------

def run_info(params, ctx):
    return with_api_load(ctx, lambda: _run_info(params, ctx))


def _run_info(params, ctx):
    name = client_name(params)
    if params.get("sites") is not None:
        elements = elements_of(params)
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
