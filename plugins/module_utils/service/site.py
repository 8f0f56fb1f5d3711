# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Sites: reading allow_site_migration, and the logic of site, site_allow_migration and site_info.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import time

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import validate_site, wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import (
    KEY_REFUSED_STATUS,
    WPCloudAPIError,
    refused_key,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import list_result, run_for_each, with_api_load
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import Polled, follow, progress_for
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.uncertain_writes import module_write
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    ALLOW_FLAG_VALUES,
    ALLOW_OFF_VALUES,
    ALLOW_SITE_MIGRATION,
    JOB_FAILURE,
    JOB_FAILURE_WORDS,
    JOB_FINAL,
    JOB_PENDING_WORDS,
    JOB_SUCCESS,
    JOB_SUCCESS_WORDS,
    SITE_CREATE_FIELDS,
    SITE_CREDENTIAL_FIELDS,
    SITE_RECORD_FIELDS,
    SITE_VALUE_RULES,
    SITES_PAGE_MAX,
    as_int_or_str,
)


def read_allow_site_migration(client, site):
    """Return (enabled, migration_id) for a destination site; fail clearly on an unknown site."""
    return allow_value(read_allow_site_migration_value(client, site))


def read_allow_site_migration_value(client, site):
    """The site's allow_site_migration as the service returned it (None: unset or unknown)."""
    try:
        resp = client.call("site_meta.get", accept_status=(404,), site=site, key=ALLOW_SITE_MIGRATION)
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading allow_site_migration of site %s" % site)
    if resp.status == 404:
        raise ModuleFailure("site %s was not found (HTTP 404): check the site ID or domain." % site,
                            failure={"status": 404, "operation": "site_meta.get", "message": resp.message})
    return resp.data


def allow_known_off(value):
    """The flag is known to be off: a value the service wrote that says so (None, unset, stays unknown)."""
    return value is not None and allow_value(value) == (False, None)


def allow_value(value):
    """(enabled, migration_id) of an allow_site_migration value: off, on, or the ID of the migration."""
    if value is None or isinstance(value, (list, dict)) and not value or value is False:
        return False, None
    if value is True:
        return True, None
    text = str(value).strip()
    if text.lower() in ALLOW_OFF_VALUES:
        return False, None
    if text.lower() in ALLOW_FLAG_VALUES:
        return True, None
    return True, as_int_or_str(text)


def run_allow(params, ctx):
    if params.get("sites") is not None:
        return _run_allow_sites(params, ctx)
    site = validate_site(params["site"])
    if not params["confirm_overwrite"]:
        raise ModuleFailure(
            "confirm_overwrite must be true: allowing an incoming migration accepts that every later run of a "
            "migration replaces the files and database of site %s, and this cannot be undone. Set "
            "confirm_overwrite: true once you are sure this is the right destination." % site)
    client = ctx.client()
    enabled, migration_id = read_allow_site_migration(client, site)
    result = dict(changed=False, site=site, ready=enabled and migration_id is None, migration_id=migration_id)
    if not enabled:
        result["changed"] = True
        result["ready"] = True
        if not ctx.check_mode:
            def send():
                resp = client.call("site.allow_migration", site=site)
                return resp.data if isinstance(resp.data, dict) else {}

            def happened():
                now_enabled, attached = read_allow_site_migration(client, site)
                return {"ready_for_migration": attached is None} if now_enabled else None

            data = module_write("site.allow_migration", send, happened, "allow_site_migration of site %s" % site,
                                "Allowing a migration into site %s" % site, result)
            result["ready"] = bool(data.get("ready_for_migration", True))
            if not result["ready"]:
                # The service says a migration is attached already: report which one.
                result["changed"] = False
                result["migration_id"] = read_allow_site_migration(client, site)[1]
    if ctx.diff:
        result["diff"] = {
            "before": {"allow_site_migration": "enabled" if enabled else "disabled"},
            "after": {"allow_site_migration": "enabled"},
        }
    return result


def _run_allow_sites(params, ctx):
    """The list form: every site of ``sites`` at once, on one client."""
    if not params["confirm_overwrite"]:
        raise ModuleFailure(
            "confirm_overwrite must be true: allowing incoming migrations accepts that every later run of a "
            "migration replaces the files and database of each site in sites, and this cannot be undone. Set "
            "confirm_overwrite: true once you are sure these are the right destinations.")
    ctx.client()  # a connection problem fails the task once, not each site
    results = run_for_each(params["sites"], lambda site: run_allow(dict(params, site=site, sites=None), ctx))
    for given, result in zip(params["sites"], results):
        result.setdefault("site", given)
    return list_result(results, "sites", lambda r: "site %s" % r["site"])


# -- site_info ----------------------------------------------------------------------------------------------

def public_site(record):
    """A site record fit to return: every credential field of the service's record left out."""
    return dict((k, v) for k, v in (record or {}).items() if k not in SITE_CREDENTIAL_FIELDS)


def run_info(params, ctx):
    if params.get("site") is not None:
        return _read_site(ctx.client(), validate_site(params["site"]))
    return _list_sites(ctx.client(), params)


def list_sites(client, client_name, page_size=SITES_PAGE_MAX):
    """Every site of a client account, each with its migration flag and ID, never a credential (the
    site_info module and the sites inventory plugin)."""
    return _list_sites(client, {"client": client_name, "page_size": page_size})["sites"]


def _read_site(client, site):
    record = read_site(client, site)
    if record is None:
        return dict(changed=False, exists=False, site=site)
    enabled, migration_id = read_allow_site_migration(client, site)
    return dict(changed=False, exists=True, site=site, site_id=as_int_or_str(record.get("atomic_site_id")),
                domain=record.get("domain_name"), allow_site_migration=enabled, migration_id=migration_id,
                record=record)


def _listed(entry):
    # A listing that does not carry the flag (the service refused or dropped the key) leaves it unknown:
    # null, never "disabled"; site_info site: and site_allow_migration read it per site.
    enabled, migration_id = allow_value(entry.get(ALLOW_SITE_MIGRATION)) if ALLOW_SITE_MIGRATION in entry else (
        None, None)
    listed = {"site_id": as_int_or_str(entry.get("atomic_site_id")), "domain": entry.get("domain_name"),
              "allow_site_migration": enabled, "migration_id": migration_id}
    listed.update((k, v) for k, v in public_site(entry).items()
                  if k not in ("atomic_site_id", "domain_name", ALLOW_SITE_MIGRATION))
    return listed


# How get-sites is asked, best first: with paging and the flag as a column; the flag as a column only
# (a service that refuses limit/after); paging only, then neither (a service that refuses the meta key).
# Only a 400 to the first page moves to the next form (docs/api-choices.md "Variants").
LISTING_FORMS = ((True, True), (False, True), (True, False), (False, False))


def _list_page(client, params, limit, after, form):
    paged, with_flag = form
    query = dict([("limit", limit)] + ([("after", after)] if after is not None else [])) if paged else None
    if with_flag:
        return client.call("site.list", params=query, client=params["client"], key=ALLOW_SITE_MIGRATION)
    return client.call("site.list_plain", params=query, client=params["client"])


def _site_key(entry):
    """What tells one listed site from another: its ID, else its domain (None: neither, left out)."""
    if entry.get("atomic_site_id") not in (None, ""):
        return "id", str(entry["atomic_site_id"])
    if entry.get("domain_name"):
        return "domain", str(entry["domain_name"]).lower()
    return None


def _list_sites(client, params):
    """Every site of the client, once each, page after page (``after``: the last site ID of the page
    before), whether the service pages, ignores ``limit``/``after`` or refuses them (docs/api-choices.md)."""
    if not params["client"].strip():
        raise ModuleFailure("client is empty: give the client identifier of the partner account (lowercase).")
    limit = params["page_size"]
    if not 1 <= limit <= SITES_PAGE_MAX:
        raise ModuleFailure("page_size must be between 1 and %d (the service's cap per page)." % SITES_PAGE_MAX)
    sites, seen, after, pages, forms, refused = [], set(), None, 0, list(LISTING_FORMS), None
    while True:
        try:
            resp = _list_page(client, params, limit, after, forms[0])
        except WPCloudAPIError as exc:
            if exc.status == 400 and after is None and len(forms) > 1:
                refused = refused or exc
                forms.pop(0)
                continue
            if exc.status in KEY_REFUSED_STATUS:
                raise ModuleFailure(refused_key(exc.status, exc.api_message, "client %s" % params["client"],
                                                "client %s is not the client account of this key" % params["client"]),
                                    failure=exc.to_dict())
            raise api_failure(refused if refused is not None and exc.status == 400 else exc,
                              "Listing the sites of client %s" % params["client"])
        page = [entry for entry in (resp.data if isinstance(resp.data, list) else []) if isinstance(entry, dict)]
        pages += 1
        new = []
        for entry in page:
            key = _site_key(entry)
            if key is not None and key not in seen:
                seen.add(key)
                new.append(entry)
        sites.extend(_listed(entry) for entry in new)
        # The end: a page that brings no site not seen before (an empty page, or the whole list again
        # from a service that ignores paging), or a listing without paging. A short page is no proof.
        ids = [entry.get("atomic_site_id") for entry in page if entry.get("atomic_site_id") not in (None, "")]
        if not new or not forms[0][0] or not ids:
            break
        after = ids[-1]
    return dict(changed=False, client=params["client"], sites=sites, count=len(sites), pages=pages)


# -- site: create by domain, delete ---------------------------------------------------------------------------

def _check_site_options(params):
    """Refuse bad input by the option's name, before any call."""
    wait_options(params)
    domain = validate_site(params.get("domain"), "domain")
    if domain.isdigit():
        raise ModuleFailure("domain must be the site's domain name like example.com, not a site ID.")
    if params["state"] == "absent":
        if not params["confirm_delete"]:
            raise ModuleFailure("confirm_delete must be true to delete site %s: deleting a site removes its files "
                                "and database for good. Set confirm_delete: true once you are sure." % domain)
        return domain.lower()
    for name in ("admin_user", "admin_email"):
        value = params.get(name)
        if value is not None and not value.strip():
            raise ModuleFailure("%s is empty: give it, or leave it out for an existing site." % name)
    for option, (pattern, fix) in SITE_VALUE_RULES.items():
        if params.get(option) is not None and not pattern.match(params[option].strip()):
            raise ModuleFailure("%s %s." % (option, fix))
    if params.get("admin_pass") is not None and params["admin_pass"] == "":
        raise ModuleFailure("admin_pass is empty: give a password, or leave it out to have one generated.")
    return domain.lower()


def job_outcome(status):
    """success or failure for a word that ends a job (any case: JOB_SUCCESS_WORDS, JOB_FAILURE_WORDS), else None."""
    word = str(status or "").strip().lower()
    if word in JOB_SUCCESS_WORDS:
        return JOB_SUCCESS
    return JOB_FAILURE if word in JOB_FAILURE_WORDS else None


def unknown_job_status(status):
    """True for a status that is neither a known end nor a known step on the way (shown as such)."""
    word = str(status or "").strip().lower()
    return bool(word) and word not in JOB_FINAL and word not in JOB_PENDING_WORDS


class Job(Polled):
    """What a wait knows of one create-site / delete-site job (``status``: the service's own word)."""

    def __init__(self, job_id, started):
        super(Job, self).__init__(started)
        self.job_id = job_id
        self.status = None

    @property
    def outcome(self):
        return job_outcome(self.status)

    @property
    def done(self):
        return self.error is not None or self.outcome is not None

    @property
    def failed(self):
        return self.error is not None or self.outcome == JOB_FAILURE

    def progress(self):
        if unknown_job_status(self.status):
            return "job %s %s (a status this collection does not know; still polling)" % (self.job_id, self.status)
        return "job %s %s" % (self.job_id, self.status or "not read yet")

    def as_result(self, now):
        end = self.completed_at if self.completed_at is not None else now
        result = {"job_id": self.job_id, "status": self.status, "outcome": self.outcome,
                  "elapsed": round(end - self.started, 3)}
        if self.error:
            result["error"] = self.error
        return self.poll_counts(result)


def poll_job(client, job):
    """One poll of a Job (job-status); updates it in place (site, site_domain and site_backup follow jobs)."""
    job.polls += 1
    try:
        resp = client.call("job.status", job_id=job.job_id)
    except WPCloudAPIError as exc:
        job.poll_failed(exc)
        return
    # job-status answers an object with _status; job-completion (the owner's panel) a bare string.
    data = resp.data if isinstance(resp.data, dict) else {"_status": resp.data}
    job.status = str(data.get("_status") or data.get("status") or "unknown").strip()
    if job.done:
        job.completed_at = time.monotonic()


def _wait_job(client, job_id, params, ctx, what):
    """The job's end as a result entry; a ModuleFailure when it failed or outlasted wait_timeout."""
    options = wait_options(params)
    job = Job(job_id, time.monotonic())
    timed_out = follow([job], lambda j: poll_job(client, j), options["wait_timeout"], options["poll_interval"],
                       progress=progress_for("site: %s" % what, params, ctx),
                       poll_max_interval=options["poll_max_interval"])
    entry = job.as_result(time.monotonic())
    if job.error:
        raise ModuleFailure("Waiting for job %s (%s) failed: %s" % (job_id, what, job.error), job=entry)
    if job.outcome == JOB_FAILURE:
        raise ModuleFailure("The service's job %s (%s) failed (status %s)." % (job_id, what, job.status), job=entry,
                            changed=True)
    if timed_out and not job.done:
        unknown = (" (a status this collection does not know: a job ends on %s, or %s)" % (
            "/".join(sorted(JOB_SUCCESS_WORDS)), "/".join(sorted(JOB_FAILURE_WORDS)))
            if unknown_job_status(job.status) else "")
        raise ModuleFailure("Job %s (%s) was still %s%s when wait_timeout=%ss ran out; wait again with this task "
                            "(it reads the site first)." % (job_id, what, job.status, unknown, params["wait_timeout"]),
                            job=entry, changed=True, timed_out=True)
    return entry


def read_site(client, site, also=None):
    """The site's record without its credentials, or None when the service does not know it; a refused
    key (401/403) fails with the key first, ``also`` (or: the site belongs to another client account)
    named as one possible cause."""
    try:
        resp = client.call("site.get", accept_status=(404,), site=site)
    except WPCloudAPIError as exc:
        if exc.status in KEY_REFUSED_STATUS:
            raise ModuleFailure(refused_key(exc.status, exc.api_message, "site %s" % site,
                                            also or "site %s belongs to another client account" % site),
                                failure=exc.to_dict())
        raise api_failure(exc, "Reading site %s" % site)
    if resp.status == 404:
        return None
    return public_site(resp.data if isinstance(resp.data, dict) else {})


def _find_site(client, domain, params=None):
    """read_site for the site module; with ``params`` (before a create) a refused key that is proven to
    be the domain's fault (_domain_of_another_client) says so."""
    try:
        return read_site(client, domain)
    except ModuleFailure as failure:
        if params is None or (failure.details.get("failure") or {}).get("status") != 403:
            raise
        used = _domain_of_another_client(client, params["client"], domain)
        if used is None:
            raise
        raise ModuleFailure("domain %s is used by a site this API key cannot reach: the key lists the sites of "
                            "client %s and %s is not among them, and the service says: \"%s\". Choose another domain "
                            "(or use the API key of the account that holds it)."
                            % (domain, params["client"], domain, used), **failure.details)


def _domain_of_another_client(client, client_name, domain):
    """The service's "already used" message when it is proven that ``domain`` belongs to a site this key
    cannot reach: a listing of the client's sites with this key succeeds and lacks it, and
    check-can-host-domain refuses it. None when not proven (then the key is the suspect). Two reads,
    only after a 403."""
    try:
        listed = _list_sites(client, {"client": client_name, "page_size": SITES_PAGE_MAX})["sites"]
        if any(str(site.get("domain") or "").lower() == domain for site in listed):
            return None
        resp = client.call("site.check_domain", accept_status=(400, 409), client=client_name, domain=domain)
    except (WPCloudAPIError, ModuleFailure):
        return None
    allowed = resp.data.get("allowed") if isinstance(resp.data, dict) else None
    if resp.status < 300 and allowed is not False:
        return None
    return resp.message or "the domain is already used"


def recent_jobs(client, site_id, job_type):
    """The client's recent jobs (job-status without an ID) of ``job_type`` on a site, newest first, each as the
    service shows it ({"id", "_status", "type", "data"}); a job whose answer was lost, or one an earlier run left
    pending, is found here."""
    jobs = client.call("job.recent").data
    found = [job for job in (jobs.values() if isinstance(jobs, dict) else jobs if isinstance(jobs, list) else [])
             if isinstance(job, dict) and str(job.get("type") or "") == job_type
             and str((job.get("data") or {}).get("atomic_site_id")) == str(site_id)]
    return sorted(found, key=lambda job: int(job.get("id") or 0) if str(job.get("id") or "").isdigit() else 0,
                  reverse=True)


def _job_of_site(client, site_id):
    """The newest create-site job of a site (a create whose answer was lost has no job ID at hand)."""
    try:
        jobs = client.call("job.recent").data
    except WPCloudAPIError:
        return None
    found = [job for job in (jobs.values() if isinstance(jobs, dict) else [])
             if isinstance(job, dict) and str((job.get("data") or {}).get("atomic_site_id")) == str(site_id)]
    return max(found, key=lambda job: int(job.get("id") or 0)).get("id") if found else None


def run_site(params, ctx):
    return with_api_load(ctx, lambda: _run_site(params, ctx))


def _run_site(params, ctx):
    if params.get("sites") is not None:
        return _run_sites(params, ctx)
    domain = _check_site_options(params)
    client = ctx.client()
    record = _find_site(client, domain, params)
    result = dict(changed=False, domain=domain, state=params["state"])
    if params["state"] == "absent":
        return _delete(client, params, ctx, domain, record, result)
    if record is not None:
        return _existing(client, params, ctx, domain, record, result)
    for name in ("admin_user", "admin_email"):
        if params.get(name) is None:
            raise ModuleFailure("%s is required to create site %s." % (name, domain))
    form = dict((field, params[option]) for option, field in SITE_CREATE_FIELDS.items()
                if option != "domain" and params.get(option) is not None)
    form["domain_name"] = domain
    if params["allow_site_migration"]:
        form["meta"] = {ALLOW_SITE_MIGRATION: "true"}
    result.update(changed=True, operation="create", site_id=None, allow_site_migration=params["allow_site_migration"],
                  migration_id=None)
    if ctx.diff:
        after = dict((k, v) for k, v in form.items() if k not in ("admin_pass", "meta"))
        after["allow_site_migration"] = params["allow_site_migration"]
        result["diff"] = {"before": {"state": "absent"}, "after": after}
    if ctx.check_mode:
        return result

    def send():
        data = client.call("site.create", params=form, client=params["client"]).data
        return data if isinstance(data, dict) else {}

    def happened():
        found = _find_site(client, domain)
        return {"atomic_site_id": found.get("atomic_site_id"), "job_id": None} if found is not None else None

    created = module_write("site.create", send, happened, "site %s" % domain, "Creating site %s" % domain, result)
    result["site_id"] = as_int_or_str(created.get("atomic_site_id"))
    job_id = created.get("job_id") or _job_of_site(client, result["site_id"])
    result["job_id"] = job_id
    if params["wait"] and job_id is not None:
        result["job"] = _wait_job(client, job_id, params, ctx, "create %s" % domain)
        if params["allow_site_migration"]:
            _check_created_flag(client, ctx, domain, result)
    return result


def _check_created_flag(client, ctx, domain, result):
    """A created site holds allow_site_migration only if the service took meta[allow_site_migration] (a
    public SDK's reading, not the owner's panel's): read it once the site is provisioned, so that no
    migration is created on the word of the create form alone."""
    enabled, migration_id = read_allow_site_migration(client, domain)
    result.update(allow_site_migration=enabled, migration_id=migration_id)
    if not enabled:
        ctx.warn("site %s was created, but the service did not keep its allow_site_migration (it ignored "
                 "meta[allow_site_migration]): allow a migration into it with wpcloud.hosting.site_allow_migration "
                 "(it cannot be undone) before creating one." % domain)


def _existing(client, params, ctx, domain, record, result):
    """A site that exists is never created again; what its options would change is reported."""
    enabled, migration_id = read_allow_site_migration(client, domain)
    result.update(operation="none", site_id=as_int_or_str(record.get("atomic_site_id")),
                  allow_site_migration=enabled, migration_id=migration_id, record=record)
    differences = dict((option, {"site": record.get(field), "given": params[option]})
                       for option, field in SITE_RECORD_FIELDS.items()
                       if params.get(option) is not None and field in record
                       and str(record.get(field)).lower() != str(params[option]).strip().lower())
    if params["allow_site_migration"] and not enabled:
        differences["allow_site_migration"] = {"site": False, "given": True}
    if differences:
        result["differences"] = differences
        hint = (" To let it accept a migration, use wpcloud.hosting.site_allow_migration (it cannot be undone)."
                if "allow_site_migration" in differences else "")
        ctx.warn("site %s exists and differs from the task in %s; this module creates sites and does not change "
                 "an existing one.%s" % (domain, ", ".join(sorted(differences)), hint))
    return result


def _delete(client, params, ctx, domain, record, result):
    if record is None:
        return result
    site_id = as_int_or_str(record.get("atomic_site_id"))
    result.update(changed=True, operation="delete", site_id=site_id)
    if ctx.diff:
        result["diff"] = {"before": {"state": "present", "site_id": site_id}, "after": {"state": "absent"}}
    if ctx.check_mode:
        return result

    def send():
        data = client.call("site.delete", client=params["client"], site=site_id).data
        return data if isinstance(data, dict) else {}

    def happened():
        # The site is gone, or its deletion is queued (then a second request is refused anyway).
        return {"job_id": None} if _find_site(client, domain) is None else None

    deleted = module_write("site.delete", send, happened, "deleting site %s" % domain, "Deleting site %s" % domain,
                           result)
    result["job_id"] = deleted.get("job_id")
    if params["wait"] and result["job_id"] is not None:
        result["job"] = _wait_job(client, result["job_id"], params, ctx, "delete %s" % domain)
    return result


def _run_sites(params, ctx):
    """The list form: each element of ``sites`` as one site, the task's options as its defaults."""
    elements = params["sites"]
    domains = [str(e.get("domain") or "").strip().lower() for e in elements]
    twice = sorted(set(d for d in domains if domains.count(d) > 1))
    if twice:
        raise ModuleFailure("sites lists domain %s twice: give each site once." % twice[0])
    ctx.client()
    results = run_for_each(elements, lambda element: _run_site(
        dict(params, sites=None, **dict((k, v) for k, v in element.items() if v is not None)), ctx))
    for element, result in zip(elements, results):
        result.setdefault("domain", element.get("domain"))
    return list_result(results, "sites", lambda r: "site %s" % r["domain"])
