"""Readings of the service other than ours: switches that make the emulator answer the way the owner's
panel or a public SDK suggests the live service may (issue 23; docs/api-choices.md "Variants").

Every switch defaults to today's behaviour. Set them at start (``--variant NAME=VALUE``, repeatable, or
the config key ``variants``) or at run time (``POST /_emulator/variants``); ``POST /_emulator/reset``
restores the values the emulator started with.

Standard library only.
"""

# name -> (default, allowed values, what it means). ``job_words`` also takes "SUCCESS/FAILURE".
SWITCHES = {
    "bad_key_status": ("403", ("403", "401"),
                       "status of a missing or wrong API key (sites of another client stay 403)"),
    "paging": ("honour", ("honour", "ignore", "refuse"),
               "get-sites limit/after: honoured; ignored (the whole list on every call); refused (400)"),
    "list_allow_key": ("listed", ("listed", "refused", "dropped"),
                       "allow_site_migration as a get-sites meta segment: a column; refused (400); "
                       "accepted but left out of every entry"),
    "create_allow_meta": ("kept", ("kept", "dropped"),
                          "create-site's meta[allow_site_migration]: sets the flag; ignored"),
    "job_words": ("doc", ("doc", "wpconcierge"),
                  "the final words of a job: success/failure (docs); done/failed (the PHP SDK's poller); "
                  "or any SUCCESS/FAILURE pair, e.g. Completed/Error"),
    # Going live (issue 37): domains, SSL, DNS, backups, restore. docs/api-choices.md "Going live".
    "service_form": ("both", ("both", "client-id", "domain", "any-service"),
                     "{service}/{identifier}: {client}/{site ID} or domain/{domain}; only the first; only the second; "
                     "any service word with a site ID (the PHP SDK's tests use 'site' and 'atomic')"),
    "domain_job_answer": ("doc", ("doc", "minimal", "string-id"),
                          "update-site-domain's job: job_id, atomic_site_id, domain_name, old_domain_name (docs); "
                          "job_id only; job_id as a string"),
    "same_domain_answer": ("empty", ("empty", "job", "refused"),
                           "update-site-domain to the current primary: data [] (Python SDK); a job that changes "
                           "nothing; 400"),
    "domain_db_update": ("none", ("none", "siteurl"),
                         "a primary switch leaves the database alone (docs' event example); rewrites siteurl/home"),
    "alias_list": ("aliases", ("aliases", "with-primary"),
                   "site-alias domains: the aliases only (docs); the primary first, then the aliases"),
    "alias_repeat": ("ok", ("ok", "refused"), "site-alias add of an existing alias: 200 unchanged; 400"),
    "alias_event": ("sent", ("sent", "none"),
                    "domain_name_changed after an alias add/remove (spec, webhook docs); only for primary switches"),
    "ssl_info_key": ("domain", ("domain", "domain-or-id"),
                     "ssl-info/ssl-retry path: a domain (SDKs, docs); a domain or a site ID (the panel)"),
    "ssl_pending_answer": ("nulls", ("nulls", "empty"),
                           "ssl-info before a certificate: the object with nulls; data [] (PHP's empty array)"),
    "ssl_cert_field": ("acme", ("acme", "ssl"),
                       "certificate ID field: acme_certificate_id; ssl_certificate_id (docs: 'the field used can vary')"),
    "ssl_after_dns": ("at-once", ("at-once", "next-retry"),
                      "DNS arriving for a failed domain: an attempt at once; only at retry_date or after ssl-retry"),
    "ips_shape": ("object", ("object", "list"),
                  "get-ips data: {ips, suggested} (docs, panel); [{ips, suggested}] (the Python SDK's other case)"),
    "backup_request_answer": ("doc", ("doc", "job-id"),
                              "on-demand-backup create/delete: {atomic_backup_request_id} (docs, Python SDK); "
                              "{job_id} (the PHP SDK's docblock; still nothing to poll)"),
    "backup_id_form": ("numeric-string", ("numeric-string", "integer", "prefixed"),
                       "atomic_backup_id: \"1234\" (docs, Python SDK model); 1234; \"bkp-1234\" (PHP SDK tests)"),
    "backup_listing": ("with-event", ("with-event", "at-once", "lagging"),
                       "an on-demand backup is listed when 'created' is sent; as soon as create answers; "
                       "list_lag seconds after 'created'"),
    "backup_type_segments": ("many", ("many", "one"),
                             "site-backups-list type filter: several segments (Python SDK); one (PHP SDK)"),
    "backup_timestamp_form": ("datetime", ("datetime", "unix"),
                              "backup_timestamp: \"YYYY-MM-DD HH:MM:SS\" UTC (docs); Unix seconds"),
    "restore_answer": ("ticket", ("ticket", "job"),
                       "restore-site: {atomic_job_id, response_ticket_id} (docs, Python SDK); {job_id} (PHP SDK)"),
    "restore_order": ("any", ("any", "files-first"),
                      "restore_from[]: either order (docs); the files backup first, else 400"),
}
JOB_WORD_PRESETS = {"doc": ("success", "failure"), "wpconcierge": ("done", "failed")}


def _check(name, value):
    if name not in SWITCHES:
        raise ValueError("unknown variant %r (one of %s)" % (name, ", ".join(sorted(SWITCHES))))
    value = str(value).strip()
    allowed = SWITCHES[name][1]
    if value in allowed:
        return value
    if name == "job_words" and value.count("/") == 1 and all(part.strip() for part in value.split("/")):
        return value
    raise ValueError("variant %s takes %s%s, not %r" % (
        name, " | ".join(allowed), " | SUCCESS/FAILURE" if name == "job_words" else "", value))


def parse_pairs(pairs):
    """``["paging=ignore", ...]`` (the command line) as a dict, checked."""
    values = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep:
            raise ValueError("--variant takes NAME=VALUE, not %r" % pair)
        values[name.strip()] = _check(name.strip(), value)
    return values


class Variants:
    """The current switches (read by the service and the HTTP layer without a lock: each is one string)."""

    def __init__(self, start=None):
        self.start = dict((name, _check(name, value)) for name, value in (start or {}).items())
        self.values = {}
        self.reset()

    def reset(self):
        self.values = dict((name, spec[0]) for name, spec in SWITCHES.items())
        self.values.update(self.start)

    def update(self, given):
        checked = dict((name, _check(name, value)) for name, value in given.items())
        self.values.update(checked)
        return self.view()

    def view(self):
        return dict(self.values)

    def __getitem__(self, name):
        return self.values[name]

    @property
    def bad_key_status(self):
        return int(self.values["bad_key_status"])

    def job_word(self, status):
        """The word a job's status is shown with: the final ones renamed, queued and running as they are."""
        words = self.values["job_words"]
        success, failure = JOB_WORD_PRESETS.get(words) or tuple(part.strip() for part in words.split("/"))
        return {"success": success, "failure": failure}.get(status, status)
