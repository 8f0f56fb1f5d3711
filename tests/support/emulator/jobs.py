"""Asynchronous jobs (create-site, delete-site, update-site-domain, restore-site): their timing configuration
and their public view.

A job is ``queued`` for ``queued`` seconds, ``running`` for ``duration`` seconds, then ends with its
``outcome`` (``success`` or ``failure``). Configuration (config key ``provisioning`` and
``POST /_emulator/provisioning``)::

    {"default": {"create": {"outcome": "success", "queued": 0.2, "duration": 1.0},
                 "delete": {"outcome": "success", "queued": 0.1, "duration": 0.5},
                 "domain": {"outcome": "success", "queued": 0.2, "duration": 1.0},
                 "restore": {"outcome": "success", "queued": 0.2, "duration": 1.0}},
     "domains": {"provfail.example": {"create": {"outcome": "failure"}}}}

A domain entry overrides the default per operation; missing fields fall back to the default. For ``domain``
(a primary domain switch) the entry of the NEW domain applies; for the others the site's domain.
The public job object follows the docs (``{"_status": "success", "id": "1234"}``) plus the fields a
public SDK names for it (``type``, ``created``, ``completed``, ``data``; rtCamp/wp-cloud-atomic-sdk
branch ``feat/batched-jobs``, ``SitesClient.get_job_status``).
"""

import copy
import time

OPERATIONS = ("create", "delete", "domain", "restore")
TYPES = {"create": "create-site", "delete": "delete-site", "domain": "update-site-domain", "restore": "restore-site"}
OUTCOMES = ("success", "failure")
FINAL = OUTCOMES
DEFAULT_CONFIG = {
    "default": {"create": {"outcome": "success", "queued": 0.2, "duration": 1.0},
                "delete": {"outcome": "success", "queued": 0.1, "duration": 0.5},
                "domain": {"outcome": "success", "queued": 0.2, "duration": 1.0},
                "restore": {"outcome": "success", "queued": 0.2, "duration": 1.0}},
    "domains": {},
}


def _stamp(when):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when))


def _validate_op(op, value, where):
    if op not in OPERATIONS:
        raise ValueError("%s: unknown operation %r (use %s)" % (where, op, ", ".join(OPERATIONS)))
    if not isinstance(value, dict):
        raise ValueError("%s.%s must be an object" % (where, op))
    unknown = set(value) - {"outcome", "queued", "duration"}
    if unknown:
        raise ValueError("%s.%s: unknown fields %s" % (where, op, ", ".join(sorted(unknown))))
    if "outcome" in value and value["outcome"] not in OUTCOMES:
        raise ValueError("%s.%s.outcome must be success or failure" % (where, op))
    for name in ("queued", "duration"):
        if name in value:
            seconds = value[name]
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= 3600:
                raise ValueError("%s.%s.%s must be a number of seconds from 0 to 3600" % (where, op, name))


def normalize_config(config):
    """Validate a provisioning configuration and fill in the defaults; raises ValueError."""
    config = copy.deepcopy(config or {})
    if not isinstance(config, dict) or set(config) - {"default", "domains"}:
        raise ValueError("provisioning configuration takes only 'default' and 'domains'")
    result = copy.deepcopy(DEFAULT_CONFIG)
    default = config.get("default") or {}
    if not isinstance(default, dict):
        raise ValueError("'default' must be an object")
    for op, value in default.items():
        _validate_op(op, value, "default")
        result["default"][op].update(value)
    domains = config.get("domains") or {}
    if not isinstance(domains, dict):
        raise ValueError("'domains' must be an object")
    for domain, ops in domains.items():
        if not isinstance(ops, dict):
            raise ValueError("domains.%s must be an object" % domain)
        for op, value in ops.items():
            _validate_op(op, value, "domains.%s" % domain)
        result["domains"][domain.lower()] = ops
    return result


def plan(config, op, domain):
    """(outcome, queued seconds, running seconds) for one new job."""
    step = dict(config["default"][op])
    step.update(config["domains"].get(domain.lower(), {}).get(op, {}))
    return step["outcome"], float(step["queued"]), float(step["duration"])


def new_job(job_id, op, client, site_id, domain, now, outcome, queued, duration, extra=None):
    """``extra``: what the job carries for its effect and shows in its data (a domain switch: old_domain_name,
    keep; a restore: the backups and the ticket)."""
    return {"id": job_id, "op": op, "client": client, "site_id": site_id, "domain": domain,
            "created": now, "start_at": now + queued, "done_at": now + queued + duration,
            "outcome": outcome, "final": False, "extra": dict(extra or {})}


def status_of(job, now):
    if job["final"] or now >= job["done_at"]:
        return job["outcome"]
    return "running" if now >= job["start_at"] else "queued"


def public_job(job, now):
    """job-status's data for one job (the ID as a string, as the docs show)."""
    status = status_of(job, now)
    data = {"atomic_site_id": job["site_id"], "domain_name": job["domain"]}
    if job["op"] == "domain":
        data["old_domain_name"] = job.get("extra", {}).get("old_domain_name")
    return {"id": str(job["id"]), "_status": status, "type": TYPES[job["op"]], "created": _stamp(job["created"]),
            "completed": _stamp(job["done_at"]) if status in FINAL else None, "data": data}
