"""What the service tells a partner to put in DNS: get-ips (ranges and suggested A records) and the domain
verification code (a TXT value). No state; the test-controlled DNS table lives in the service.

Docs (Automattic/wp-cloud-docs ``content/doc-manage-domains.md``): ``get-ips/{client}/{domain}`` answers
``{"ips": ["192.0.78.128/25"], "suggested": ["192.0.78.150", "192.0.78.200"]}`` -- ``ips`` are the client's
ranges (CIDR), ``suggested`` the addresses for that domain's A records. ``doc-domain-verification-records.md``:
``get-domain-verification-code/{client}/{domain}`` answers a bare string ``"atomic-domain-<code>"``, unique per
client and host name, published as a TXT record on that host.

The emulator's addresses come from a documentation range (RFC 5737), two per domain, stable per domain.
"""

import hashlib
import ipaddress

RANGE = ipaddress.ip_network("198.51.100.0/25")
SUGGESTED_PER_DOMAIN = 2


def suggested(domain):
    """Two distinct host addresses of RANGE, the same for the same domain every time."""
    hosts = list(RANGE.hosts())
    start = int.from_bytes(hashlib.sha256(domain.encode("utf-8")).digest()[:4], "big") % len(hosts)
    return [str(hosts[(start + step * 7) % len(hosts)]) for step in range(SUGGESTED_PER_DOMAIN)]


def ips_answer(domain, shape):
    """get-ips's data: ``{"ips", "suggested"}`` (suggested only with a domain); ``shape=list`` wraps it in a list."""
    data = {"ips": [str(RANGE)]}
    if domain:
        data["suggested"] = suggested(domain)
    return [data] if shape == "list" else data


def verification_code(client, domain):
    """The TXT value that lets ``client`` claim ``domain`` (unique per client and host name)."""
    digest = hashlib.sha256(("wpcloud-emulator:%s:%s" % (client, domain)).encode("utf-8")).hexdigest()
    return "atomic-domain-%s" % digest[:32]
