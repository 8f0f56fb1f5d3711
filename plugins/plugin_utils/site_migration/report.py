# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The report of a run of the role (filters ``site_migration_report``, ``site_migration_report_name`` and
``site_migration_report_merge``).

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.cutover import (
    ALREADY,
    NOT_CONFIRMED,
    NOT_REACHED,
    recap_words,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.going_live import cutover_due
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.outcomes import advance, redacted_args
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import converted


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def report(fleet, hosts, results=None, refresh=True, generated=None):
    """The report of the run: one entry per host of the play, stopped ones included (see the doc)."""
    by_host = dict((s.get("host"), s) for s in advance(fleet, results))
    # A source host that the key install added to the inventory (one of another AWX slice) is not a site,
    # though Ansible counts it among the play's hosts from then on.
    added = set(s.get("source_host") for s in fleet or [] if s.get("source_known") is False) - set(by_host)
    sites = []
    for host in [h for h in hosts or [] if h not in added]:
        s = by_host.get(host, {})
        m = s.get("migration") or {}
        info = s.get("info") or {}
        record = info.get("record") or {}
        pf, run = s.get("preflight"), s.get("run")
        result = s.get("result") or "not_reached"
        message = s.get("message") or ("stopped before the fleet steps: see the play output" if result == "not_reached"
                                       else "")
        sites.append({
            "host": host,
            "site": s.get("site", host),
            # How the destination came to be: created by this run (rule 1's preferred path), or existing.
            "destination": s.get("destination"),
            "new_site": s.get("new_site"),
            "site_id": m["site_id"] if "site_id" in m else info.get("site_id"),
            "migration_id": m.get("migration_id") or info.get("migration_id") or s.get("migration_id")
            or (s.get("recorded") or {}).get("migration_id"),
            "operation": m.get("operation"),
            "updated_fields": m.get("updated_fields") or [],
            "auth": m.get("auth") or record.get("auth"),
            "remote": m.get("remote") or redacted_args(record),
            "key_installed": s.get("key_installed", False),
            "preflight": pf,
            "run": run,
            "duration": round(float((pf or {}).get("elapsed") or 0) + float((run or {}).get("elapsed") or 0), 3),
            "result": result,
            # The going-live steps (docs/go-live.md): whether the site was live when the run started, the backup
            # taken before its run, its cutover (or the switch back of a rollback) and its restore.
            "workflow": s.get("workflow"),
            "production_domain": s.get("production_domain"),
            "live": bool(s.get("live")),
            "backup": report_backup(s.get("backup")),
            "cutover": cutover_of(s),
            "restore": s.get("restore"),
            "diagnosis": s.get("diagnosis"),
            "uncertain": s.get("uncertain") or [],
            "message": message,
        })
    counts, destinations, cutovers = {}, {}, {}
    for entry in sites:
        counts[entry["result"]] = counts.get(entry["result"], 0) + 1
        if entry["cutover"]:
            cutovers[entry["cutover"]["state"]] = cutovers.get(entry["cutover"]["state"], 0) + 1
        if entry["destination"]:
            destinations[entry["destination"]] = destinations.get(entry["destination"], 0) + 1

    def longest(phase):
        return max([e[phase]["elapsed"] for e in sites if e[phase] and e[phase].get("elapsed")] or [0])
    return {
        "generated": generated or utc_now(),
        "sites_total": len(sites),
        "counts": dict(sorted(counts.items())),
        "destinations": dict(sorted(destinations.items())),
        "cutovers": dict(sorted(cutovers.items())),
        "backups": sum(1 for e in sites if e["backup"] and e["backup"]["backup_ids"]),
        "preflight_wait_seconds": longest("preflight"),
        "run_wait_seconds": longest("run"),
        "api_load": api_load_of_run(results),
        "refresh": bool(converted(bool, refresh)),
        "sites": sites,
    }


def report_backup(backup):
    """A site's backup before its run as the report shows it (what the state file records of it left out)."""
    if not backup:
        return None
    return dict((k, v) for k, v in backup.items() if k != "record")


def cutover_of(entry):
    """A site's cutover as the report shows it: what the cutover step did (cutover.py), or why a site that names a
    production domain was not cut over (not confirmed, or stopped before); ``summary`` in words."""
    if entry.get("cutover"):
        cutover = dict(entry["cutover"])
    elif not entry.get("production_domain") or entry.get("workflow") == "rollback":
        return None
    elif entry.get("live") == entry["production_domain"]:
        # live already, and not cut over again by this run (a refused refresh)
        cutover = {"state": ALREADY, "domain": entry["production_domain"], "previous_domain": None}
    else:
        state = NOT_REACHED if cutover_due(entry, entry.get("check_mode")) else NOT_CONFIRMED
        cutover = {"state": state, "domain": entry["production_domain"], "previous_domain": entry.get("primary")}
    cutover["summary"] = recap_words(dict(entry, cutover=cutover), quiet=False)
    return cutover


def report_name(hosts, job_id=None, now=None):
    """The stem of a run's report file and artifact name, unique to the run (see the doc): its UTC time,
    then the controller job that ran it (every slice of a sliced job template is a job of its own) or,
    outside a controller, a digest of the play's hosts (slices cover disjoint hosts)."""
    hosts = sorted(set(str(h) for h in hosts or []))
    if not hosts:
        raise AnsibleFilterError("site_migration_report_name: the play has no hosts")
    stamp = now or datetime.datetime.now(datetime.timezone.utc)
    if job_id is not None and str(job_id).strip():
        if not str(job_id).strip().isdigit():
            raise AnsibleFilterError("site_migration_report_name: job_id must be the controller's job number "
                                     "(awx_job_id), not %r" % (job_id,))
        who = "job%s" % str(job_id).strip()
    else:
        # Microseconds keep two runs over the same hosts apart; the digest keeps slices apart.
        who = "%s-hosts-%s" % (stamp.strftime("%f"),
                               hashlib.sha256("\n".join(hosts).encode("utf-8")).hexdigest()[:16])
    return "site-migration-%s-%s" % (stamp.strftime("%Y%m%dT%H%M%S"), who)


def api_load_of_run(results):
    """The load the run's waiting tasks put on the service (their results' api_load): calls summed, the
    highest peak (the tasks run one after the other), and each step's own."""
    steps = dict((name, dict(r["api_load"])) for name, r in sorted((results or {}).items())
                 if isinstance(r, Mapping) and isinstance(r.get("api_load"), Mapping))
    return {"calls": sum(int(load.get("calls") or 0) for load in steps.values()),
            "peak_per_second": max([int(load.get("peak_per_second") or 0) for load in steps.values()] or [0]),
            "steps": steps}


def merge_reports(reports, generated=None):
    """One fleet report from the reports of runs over disjoint parts of the fleet (see the doc)."""
    if isinstance(reports, Mapping):
        reports = [v for k, v in sorted(reports.items())]       # set_stats artifacts: name -> report
    reports = list(reports or [])
    if not reports:
        raise AnsibleFilterError("site_migration_report_merge: no report to merge")
    sites, owner, counts, destinations, cutovers = [], {}, {}, {}, {}
    for number, rep in enumerate(reports, 1):
        if not isinstance(rep, Mapping) or not isinstance(rep.get("sites"), list):
            raise AnsibleFilterError("site_migration_report_merge: item %d is not a site_migration report" % number)
        for entry in rep["sites"]:
            host = entry.get("host")
            if host in owner:
                raise AnsibleFilterError("site_migration_report_merge: host %s is in reports %d and %d: each run "
                                         "(slice) must cover its own hosts" % (host, owner[host], number))
            owner[host] = number
            sites.append(entry)
        for total, part in ((counts, rep.get("counts") or {}), (destinations, rep.get("destinations") or {}),
                            (cutovers, rep.get("cutovers") or {})):
            for key, value in part.items():
                total[key] = total.get(key, 0) + int(value)
    refresh = sorted(set(bool(rep.get("refresh")) for rep in reports))
    return {
        "generated": generated or utc_now(),
        "merged_from": [rep.get("generated") for rep in reports],
        "sites_total": len(sites),
        "counts": dict(sorted(counts.items())),
        "destinations": dict(sorted(destinations.items())),
        "cutovers": dict(sorted(cutovers.items())),
        "backups": sum(int(rep.get("backups") or 0) for rep in reports),
        "preflight_wait_seconds": max(float(rep.get("preflight_wait_seconds") or 0) for rep in reports),
        "run_wait_seconds": max(float(rep.get("run_wait_seconds") or 0) for rep in reports),
        # Slices run at the same time: their peaks add up (at most; they need not coincide).
        "api_load": {"calls": sum(int((rep.get("api_load") or {}).get("calls") or 0) for rep in reports),
                     "peak_per_second": sum(int((rep.get("api_load") or {}).get("peak_per_second") or 0)
                                            for rep in reports)},
        "refresh": refresh[0] if len(refresh) == 1 else refresh,
        "sites": sorted(sites, key=lambda e: str(e.get("host"))),
    }
