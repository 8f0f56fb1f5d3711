# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""site_domain: a site's primary domain switched (the service's job followed) and its aliases made present, absent
or exactly the ones declared, from what service/domain.py reads.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

A task runs in three rounds: every site read, checked and written up to the start of its switch (DomainRun.prepare);
every switch's job followed in one wait (a fleet's switches end within one poll gap of the last one); each site's
domains and certificates read (DomainRun.finish). The readings behind the calls: docs/api-choices.md "Going live".
"""

from __future__ import annotations

import time

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import validate_site, wait_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import with_api_load
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.domain import (
    ALIAS,
    PRIMARY,
    ServicePath,
    aliases_of,
    client_name,
    describe,
    domain_list,
    domain_name,
    find_site,
    flat_records,
    hosting_refusal,
    read_aliases,
    read_ssl,
    txt_record,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.rounds import (
    SiteRun,
    elements_of,
    run_rounds,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import Job, job_outcome, recent_jobs
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    DOMAIN_JOB_TYPE,
    JOB_DOMAIN_FIELD,
    JOB_FAILURE,
    JOB_ID_FIELD,
    SSL_FAILED,
    SSL_PENDING,
    SSL_RETRY_QUEUED,
    as_int_or_str,
)

# site_domain's result: what happened to the primary domain.
SWITCH_NONE = "none"
SWITCHED = "switched"
SWITCH_STARTED = "started"


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
    what = "the old one kept as an alias" if keep else "the old one released"
    return "switch the primary domain %s -> %s (%s)" % (old, new, what)


# -- site_domain -------------------------------------------------------------------------------------------------

def run_domain(params, ctx):
    return with_api_load(ctx, lambda: _run_domain(params, ctx))


def _run_domain(params, ctx):
    name = client_name(params)
    wait_options(params)
    if params.get("sites") is None:
        runs = [DomainRun(params, name, ctx)]
    else:
        elements = elements_of(params)
        runs = [DomainRun(element, name, ctx) for element in elements]
        _refuse_shared_domains(runs)
    return run_rounds(params, ctx, runs, "site_domain")


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


class DomainRun(SiteRun):
    """One site of a site_domain task: prepare (read, check, plan, alias writes, the switch sent), then finish (the
    switch's outcome, the domains and their certificates read, failed certificates retried)."""

    def __init__(self, params, name, ctx):
        super(DomainRun, self).__init__(params, name, ctx)
        self.job = None
        self.path = None
        self.aliases = []
        self.primary = None
        self.want = None
        self.target = None

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
        self.target = plan
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
            raise self.writing(failure, site_id=site_id)
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
            self.waits.append(self.job)
        else:
            self.result["domain_switch"] = SWITCH_STARTED

    def switched(self):
        self.primary = self.path.primary = self.want
        self.result.update(domain=self.want, domain_switch=SWITCHED)

    # -- round 3
    def finish(self, timed_out):
        client, result = self.ctx.client(), self.result
        if self.uncertain:
            result["uncertain"] = self.uncertain
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
        result.update(domains=entries, dns_records=flat_records(entries))
        return result

    def followed(self, timed_out):
        job, result = self.job, self.result
        entry = job.as_result(time.monotonic())
        result["job"] = entry
        what = "switch of site %s to %s" % (self.site, self.want)
        details = dict(result)
        details.update(job=entry, changed=True, actions=self.actions)
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
        plan, entries = self.target, []
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
