"""TLS certificates per domain: the state of each attached domain's certificate, moved by the clock (no state
of its own, no locking; the service holds the records and calls these functions under its lock).

What the service documents (Automattic/wp-cloud-docs ``content/doc-tls-certificates.md``,
``doc-troubleshoot-tls-provisioning.md``): provisioning starts after a domain or alias is added and its DNS
points to the platform; a failed attempt is requeued automatically with a growing delay (``retry_date``);
``ssl-retry`` queues an attempt at once (``queued: true``); ``ssl-info`` shows a certificate ID
(``acme_certificate_id`` or ``ssl_certificate_id``: "the field used can vary"), ``ca_provider``,
``certificate_expiration_date``, ``validation_expiration``, ``options`` and, after a failure,
``broken_record`` (``reason``, ``last_error``, ``retry_date``, ``failcount``).

Our model: a record per attached domain, ``pending`` until its first attempt (``attempt`` seconds after it
was attached), then ``issued`` when DNS pointed here at the attempt's time, else ``failed`` with the next
attempt ``retry_base`` x 2^(failcount-1) seconds later (at most ``retry_cap``). Configuration (config key
``ssl`` and ``POST /_emulator/ssl``)::

    {"attempt": 0.5, "retry_base": 5.0, "retry_cap": 3600.0}
"""

import copy
import time

DEFAULT_CONFIG = {"attempt": 0.5, "retry_base": 5.0, "retry_cap": 3600.0}
CERT_LIFETIME = 90 * 86400      # Let's Encrypt's 90 days
VALIDATION_LIFETIME = 30 * 86400
NOT_HOSTED = "not hosted here"  # one of the docs' reasons


def _stamp(when):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when))


def normalize_config(config):
    """Validate an SSL timing configuration and fill in the defaults; raises ValueError."""
    config = copy.deepcopy(config or {})
    if not isinstance(config, dict) or set(config) - set(DEFAULT_CONFIG):
        raise ValueError("ssl configuration takes only %s" % ", ".join(sorted(DEFAULT_CONFIG)))
    result = dict(DEFAULT_CONFIG)
    for name, value in config.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 86400:
            raise ValueError("ssl.%s must be a number of seconds from 0 to 86400" % name)
        result[name] = float(value)
    return result


def pending(now, config):
    """A newly attached domain: its first attempt comes ``attempt`` seconds later."""
    return {"state": "pending", "next_attempt": now + config["attempt"], "failcount": 0, "last_error": None,
            "issued_at": None, "cert_id": None}


def issued(now, cert_id):
    """A domain that had its certificate from the start (a site's creation domain)."""
    return {"state": "issued", "next_attempt": None, "failcount": 0, "last_error": None, "issued_at": now,
            "cert_id": cert_id}


def advance(record, domain, now, dns_since, new_cert_id, config):
    """Make every attempt due by ``now``, in order. ``dns_since``: when DNS began pointing here (None: not)."""
    while record["state"] != "issued" and record["next_attempt"] is not None and now >= record["next_attempt"]:
        at = record["next_attempt"]
        if dns_since is not None and dns_since <= at:
            record.update(state="issued", next_attempt=None, issued_at=at, cert_id=new_cert_id(), last_error=None)
            return
        record["failcount"] += 1
        delay = min(config["retry_cap"], config["retry_base"] * 2 ** (record["failcount"] - 1))
        record.update(state="failed", next_attempt=at + delay,
                      last_error="%s: HTTP-01 challenge failed: %s does not resolve to the platform's addresses "
                                 "(%s)" % (_stamp(at), domain, NOT_HOSTED))


def retry(record, now, config):
    """ssl-retry: an attempt queued at once after a failure (True); nothing to do otherwise (False)."""
    if record["state"] != "failed":
        return False
    record.update(state="pending", next_attempt=now + config["attempt"])
    return True


def dns_arrived(record, now, config):
    """DNS now points here (switch ssl_after_dns=at-once): an attempt comes ``attempt`` seconds later."""
    if record["state"] != "issued":
        soon = now + config["attempt"]
        record["next_attempt"] = soon if record["next_attempt"] is None else min(record["next_attempt"], soon)


def state_word(record):
    """The state a client reads from ssl-info: issued (a certificate ID), failed (broken_record), pending."""
    return record["state"]


def public_view(record, domain, cert_field, pending_answer):
    """ssl-info's data. ``cert_field``: acme | ssl; ``pending_answer``: nulls | empty."""
    field = "acme_certificate_id" if cert_field == "acme" else "ssl_certificate_id"
    if record["state"] == "pending" and pending_answer == "empty":
        return []
    view = {"domain": domain, field: None, "ca_provider": None, "certificate_expiration_date": None,
            "validation_expiration": None, "options": {"https_redirect": True, "hsts": False},
            "broken_record": None}
    if record["state"] == "issued":
        view.update({field: record["cert_id"], "ca_provider": "letsencrypt",
                     "certificate_expiration_date": _stamp(record["issued_at"] + CERT_LIFETIME),
                     "validation_expiration": _stamp(record["issued_at"] + VALIDATION_LIFETIME)})
    elif record["state"] == "failed":
        view["broken_record"] = {"reason": NOT_HOSTED, "last_error": record["last_error"],
                                 "retry_date": _stamp(record["next_attempt"]), "failcount": record["failcount"]}
    return view
