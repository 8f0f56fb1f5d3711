# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a step's registered result does to each site that took it: the site's next stage, its result and
message (in the role's words), and what the report shows of it. ``advance`` applies the results of the
steps that the fleet has not taken in yet, so a fleet kept between the steps takes each result once.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    FAILED_STATES,
    MIGRATION_SUCCEEDED,
    RUN_TERMINAL_STATES,
    RUNNING_STATES,
    SECRET_PARAMS,
    TICKET_TERMINAL,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.backup_first import (
    backup_first,
    outcome_of_backup,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.cutover import outcome_of_cutover
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.going_live import (
    after_listing,
    cutover_due,
    find_in_listing,
    listing_index,
    needs_listing,
    refusal,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.rollback import (
    first_step,
    outcome_of_restore,
)
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import (
    CREATED,
    DONE,
    EXISTING,
    STEP_TIMEOUT,
    STEPS,
    WAITED,
    role_message,
)


def result_identity(step, result):
    """The identity a step's result carries: the site, the migration, or the loop item's site."""
    if not isinstance(result, Mapping):
        return None
    if step == "new":
        value = result.get("domain")
    elif step == "key":
        item = result.get("item")
        value = item.get("site") if isinstance(item, Mapping) else None
    elif step in ("preflight", "run"):
        value = result.get("migration_id")
    else:
        value = result.get("site")
    return None if value is None else str(value).strip().lower()


def site_identity(step, entry):
    if step in ("preflight", "run"):
        value = entry.get("migration_id")
    elif step in ("new", "key"):
        value = entry.get("site")
    else:
        # the module calls name the site by its target (its ID when the name it is given has left it at a cutover)
        value = entry.get("target") or entry.get("site")
    return None if value is None else str(value).strip().lower()


def pair_results_with_sites(step, sites, registered):
    """Each site of the step with its own result: by identity, else (no or ambiguous identity) by
    position, which the list forms and loops keep. A step that failed as a whole gives every site
    its message."""
    whole = registered if isinstance(registered, Mapping) else {}
    items = [r for r in whole.get("results") or [] if isinstance(r, Mapping)]
    keys = [result_identity(step, r) for r in items]
    wanted = [site_identity(step, s) for s in sites]
    by_key = dict(zip(keys, items))
    identity = None not in keys and len(by_key) == len(items) and all(k in by_key for k in wanted)
    missing = {"failed": True, "msg": whole.get("msg") or "the step returned no result for this site"}
    if identity:
        return [(s, by_key[k]) for s, k in zip(sites, wanted)]
    return [(s, items[i] if i < len(items) else missing) for i, s in enumerate(sites)]


def redacted_args(record):
    args = record.get("args") if isinstance(record, Mapping) else None
    return dict((k, v) for k, v in (args or {}).items() if k not in SECRET_PARAMS)


def ticket_seen(r, resumed=None):
    ticket = r.get("ticket") if isinstance(r.get("ticket"), Mapping) else {}
    seen = {"ticket_id": r.get("ticket_id"),
            "state": ticket.get("state") if not resumed else r.get("state"),
            "elapsed": ticket.get("elapsed"), "response_count": ticket.get("response_count")}
    if resumed is not None:
        seen["already_running"] = resumed
    seen["diagnosis"] = diagnosis_in_role_words(ticket.get("diagnosis"))
    return ticket, seen


def diagnosis_in_role_words(diagnosis):
    if not isinstance(diagnosis, Mapping):
        return None
    diagnosis = dict(diagnosis)
    if diagnosis.get("hint"):
        diagnosis["hint"] = role_message(diagnosis["hint"])
    return diagnosis


def ticket_failure_message(r, ticket, about, diagnosis):
    return (about + " failed (%s): %s Messages: %s" % (
        (diagnosis or {}).get("code", "unknown"), (diagnosis or {}).get("hint", ""),
        " | ".join(str(m) for m in ticket.get("messages") or [])))


def apply_site_listing(sites, registered):
    """Step "find": the client's listing says which destinations exist (the others are created, when the role may
    create them), and where the going-live sites are and whether they are live (going_live.py)."""
    r = registered if isinstance(registered, Mapping) else {}
    listed = set(str(e.get("domain") or "").strip().lower() for e in r.get("sites") or [] if isinstance(e, Mapping))
    by_id, by_domain = listing_index(r.get("sites"))
    for s in sites:
        if r.get("failed") or "sites" not in r:
            msg = role_message(r.get("msg")) or "no listing returned"
            where = "listing the sites of site_migration_client %s" % s["client"]
            # A refused key leads the message, as in every module (issue 23).
            text = ("%s (%s)" % (msg, where) if (r.get("failure") or {}).get("status") in (401, 403)
                    else "%s failed: %s" % (where, msg))
            s.update(stage=DONE, result="error", message="site %s: %s" % (s["site"], text))
            continue
        found, how = find_in_listing(s, by_id, by_domain) if needs_listing(s) else (None, None)
        if found is not None:
            s.update(stage=s["after_find"], destination=EXISTING)
            s.update(after_listing(s, found, how))
        elif s["site"].strip().lower() in listed:
            s.update(stage=s["after_find"], destination=EXISTING)
        elif s.get("creatable"):
            s.update(stage="new")
        else:
            # Not in the account: the next step says so (site not found), naming the site.
            s.update(stage=s["after_find"])
        if s["stage"] == "restore":
            # a rollback: what the state file recorded decides its first step (or that there is nothing to do)
            s.update(first_step(s))


def outcome_of_new_site(s, r, failed, msg, who):
    """Step "new": the destination site created with allow_site_migration (or found after all)."""
    job = r.get("job") if isinstance(r.get("job"), Mapping) else None
    seen = {"site_id": r.get("site_id"), "job_id": r.get("job_id"),
            "job_status": (job or {}).get("status"), "elapsed": (job or {}).get("elapsed")}
    if failed:
        return {"stage": DONE, "result": "error", "new_site": seen,
                "message": who + "creating the destination site failed: %s" % msg}
    if r.get("operation") != "create":
        # It exists after all (created meanwhile, or the service knows it by this domain): today's path.
        return {"stage": s["after_find"], "destination": EXISTING}
    if r.get("site_id") is None:
        return {"stage": DONE, "result": "checked", "destination": CREATED, "new_site": seen,
                "message": "check mode: the site would be created (allow_site_migration at creation), then migrated"}
    if not s["create_wait"]:
        return {"stage": DONE, "result": "awaiting_provisioning", "destination": CREATED, "new_site": seen,
                "message": "created as site %s; its site_provisioned webhook starts the migration "
                           "(wpcloud.hosting.on_site_provisioned)" % r["site_id"]}
    if r.get("allow_site_migration") is False:
        # Read back after the job: the service did not keep meta[allow_site_migration], so the site goes
        # through the allow step like an existing one before its migration is created.
        return {"stage": "check", "destination": CREATED, "new_site": seen, "needs_allow": True}
    return {"stage": "check", "destination": CREATED, "new_site": seen}


def not_created_yet(s, r):
    """A check-mode site that an earlier task would create, which the service does not know yet (404)."""
    failure = r.get("failure") if isinstance(r.get("failure"), Mapping) else {}
    return bool(s.get("about_to_exist")) and failure.get("status") == 404 and failure.get("operation") == "site_meta.get"


def outcome_of_step(step, s, r):
    """The entry keys a site gets from its result of a step."""
    failed = bool(r.get("failed") or r.get("unreachable"))
    msg = role_message(r.get("msg"), step)
    who = "site %s: " % s["site"]
    if step == "new":
        return outcome_of_new_site(s, r, failed, msg, who)
    if failed and not_created_yet(s, r):
        if step == "info":        # no migration yet; its inputs are still checked
            return {"stage": "check"}
        return {"stage": DONE, "result": "checked",
                "message": "check mode: an earlier task would create site %s; its migration would then be created "
                           "and run" % s["site"]}
    if step == "info":
        info = {"site_id": r.get("site_id"), "migration_id": r.get("migration_id"), "record": r.get("record") or {}}
        if failed:
            return {"stage": DONE, "result": "error", "message": who + "reading its migration failed: %s" % msg}
        if s.get("workflow") == "cutover":
            if r.get("state") == MIGRATION_SUCCEEDED:
                return {"stage": DONE, "result": "left_alone", "info": info, "destination": EXISTING,
                        "migration_id": r.get("migration_id"),
                        "message": "cutover only (site_migration_workflow=cutover): its migration succeeded earlier"}
            return {"stage": DONE, "result": "not_migrated", "info": info, "destination": EXISTING,
                    "message": "site %s: its migration has not succeeded (%s), so it is not cut over: migrate it first "
                               "(wpcloud.hosting.migrate_site or wpcloud.hosting.go_live)"
                               % (s["site"], r.get("state") or "no migration")}
        if r.get("state") == MIGRATION_SUCCEEDED:
            return {"stage": DONE, "result": "left_alone", "info": info, "destination": s.get("destination") or EXISTING,
                    "message": "migration succeeded earlier; site_migration_refresh is false"}
        if s.get("live") and not s.get("live_consented"):
            return dict(refusal(s), info=info)
        return {"stage": "check", "info": info, "destination": s.get("destination") or EXISTING}
    if step == "check":
        if failed:
            return {"stage": DONE, "result": "invalid_input", "message": who + msg}
        # A site created with allow_site_migration needs no call to the irreversible allow endpoint,
        # unless the service was seen not to keep the flag.
        return {"stage": "create" if s.get("destination") == CREATED and not s.get("needs_allow") else "allow"}
    if step == "allow":
        if failed:
            return {"stage": DONE, "result": "error", "message": who + "allowing a migration failed: %s" % msg}
        return {"stage": "create", "destination": s.get("destination") or EXISTING}
    if step == "create":
        record = r.get("record") if isinstance(r.get("record"), Mapping) else {}
        migration = {"migration_id": r.get("migration_id"), "site_id": r.get("site_id"),
                     "operation": r.get("operation"), "updated_fields": list(r.get("updated_fields") or []),
                     "auth": record.get("auth"), "remote": redacted_args(record)}
        if failed:
            return {"stage": DONE, "result": "error", "migration": migration,
                    "message": who + "the migration could not be created or updated: %s" % msg}
        if r.get("migration_id") is None:
            return {"stage": DONE, "result": "checked", "migration": migration,
                    "message": "check mode: the migration would be created"}
        running = r.get("state") in RUNNING_STATES
        key = r.get("ssh_id_pub") or ""
        return {"migration": migration, "migration_id": r["migration_id"], "running": running, "ssh_id_pub": key,
                "backup_first": backup_first(s, r.get("operation")),
                "stage": "key" if s["install_key"] and key else ("run" if running else "preflight")}
    if step == "key":
        if failed:
            # the shell's own words ("Permission denied") rather than its "non-zero return code"
            detail = str(r.get("stderr") or "").strip() or msg or "unreachable"
            return {"stage": DONE, "result": "error", "key_installed": False,
                    "message": who + "installing the generated key on %s failed: %s" % (s["source_host"], detail)}
        return {"stage": "run" if s.get("running") else "preflight", "key_installed": bool(r.get("changed"))}
    if step == "backup":
        return outcome_of_backup(s, r, s.get("check_mode"))
    if step == "restore":
        return outcome_of_restore(s, r, s.get("check_mode"))
    if step == "cutover":
        return outcome_of_cutover(s, r, s.get("check_mode"))
    return outcome_of_wait(step, s, r, msg, who + WAITED[step][0] % s.get("migration_id"))


def going_on(s, outcome):
    """A site's outcome, sent on to the going-live steps still ahead of it: after a check-mode result that stands for
    a preflight or a run (their preview: the backup, then the cutover), or after its migration succeeded (this run,
    or earlier for a cutover) the cutover, when it is due (going_live.py cutover_due)."""
    merged = dict(s, **outcome)
    if merged.get("stage") != DONE or merged.get("cutover") is not None:
        return outcome
    if merged.get("result") == "checked" and merged.get("backup_first") and merged.get("backup") is None:
        return dict(outcome, stage="backup")
    if merged.get("result") in ("succeeded", "left_alone", "checked") and merged.get("workflow") != "rollback" \
            and cutover_due(merged, merged.get("check_mode")) and merged.get("target") is not None \
            and merged.get("client") is not None \
            and not (merged.get("destination") == CREATED and not (merged.get("new_site") or {}).get("site_id")):
        # (a site that check mode would create does not exist yet: nothing to preview)
        return dict(outcome, stage="cutover")
    return outcome


def run_ended_before_its_start(step, s, r):
    """The resume race: a run that an earlier step of this play saw running (an interrupted play
    started it) has ended by the time migration_ready reads the migration, and migration_ready refused
    to start another one; its result carries the ended state."""
    return step == "run" and bool(s.get("running")) and bool(r.get("failed")) and \
        not r.get("ticket_id") and r.get("state") in RUN_TERMINAL_STATES


def outcome_of_wait(step, s, r, msg, about):
    """The outcome of a preflight or run: its ticket started and waited for (or a run that was
    already active, followed by its migration's state)."""
    if run_ended_before_its_start(step, s, r):
        # Seen running by the create step, ended before migration_ready read it (whose partner rule
        # then refuses a new run): that run's end is the site's outcome, as if it had been followed.
        msg = "the run seen running earlier had ended when it was to be followed"
        r = dict(r, failed=r["state"] != MIGRATION_SUCCEEDED, already_running=True)
    failed = bool(r.get("failed"))
    # Followed by the migration's state instead of a ticket: a run that was already active, or a
    # start whose answer was lost and that a read showed had taken effect.
    resumed = bool(r.get("already_running")) if step == "run" or r.get("already_running") else None
    ticket, seen = ticket_seen(r, resumed)
    if failed and resumed:
        return {"stage": DONE, "result": step + ("_failed" if r.get("state") in FAILED_STATES else "_unfinished"),
                step: seen, "message": about + " (followed by its migration's state) ended in state %s: %s"
                % (r.get("state") or "unknown", msg)}
    if failed and r.get("ticket_state") in TICKET_TERMINAL:     # the ticket ended, and not in success
        return {"stage": DONE, "result": step + "_failed", step: seen, "diagnosis": seen["diagnosis"],
                "message": ticket_failure_message(r, ticket, about, seen["diagnosis"])}
    if failed and r.get("timed_out"):
        return {"stage": DONE, "result": step + "_unfinished", step: seen,
                "message": about + " did not finish (ticket %s is %s after %s=%ss). %s" % (
                    r.get("ticket_id"), ticket.get("state") or "unknown", STEP_TIMEOUT[step],
                    s[step + "_timeout"], WAITED[step][1])}
    if failed:
        return {"stage": DONE, "result": "error", step: seen if seen["ticket_id"] or resumed else None,
                "message": about + ": %s" % msg}
    if not r.get("ticket_id") and not resumed:
        return {"stage": DONE, "result": "checked", "message": "check mode: %s would be started" % WAITED[step][2]}
    if step == "preflight":
        return {"stage": "backup" if s.get("backup_first") else "run", "preflight": seen}
    return {"stage": DONE, "result": "succeeded", "run": seen,
            "message": "resumed: the run was already active; it ended in state %s" % r.get("state") if resumed else ""}


def advance(fleet, results, upto=None):
    """The fleet after every step before ``upto`` (all steps when None), from the registered results.

    A result moves the sites at its step's stage, and every outcome moves a site on to a later stage: a
    fleet that took in a step's result has no site left at that stage, so it never takes it in again."""
    fleet = [dict(entry) for entry in fleet or []]
    results = results or {}
    for step in STEPS:
        if step == upto:
            break
        sites = [s for s in fleet if s.get("stage") == step]
        if not sites:
            continue     # the step was skipped; a result left from an earlier play is not this run's
        if results.get(step) is None:
            break        # the play ended before this step: its sites were not reached
        if step == "find":
            apply_site_listing(sites, results[step])
            continue
        for site, result in pair_results_with_sites(step, sites, results.get(step)):
            site.update(going_on(site, outcome_of_step(step, site, result)))
            if isinstance(result, Mapping) and result.get("uncertain"):
                # Writes whose answer was lost, and how a read settled them (module_utils/runtime/uncertain_writes.py).
                site["uncertain"] = list(site.get("uncertain") or []) + [
                    dict(entry, step=step) for entry in result["uncertain"] if isinstance(entry, Mapping)]
    return fleet
