# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What each step's result does to its sites (plugins/plugin_utils/site_migration/outcomes.py), without
a server: the pairing of results and sites, the messages in the role's words, the waits, the key, the
new destination sites and the uncertain writes."""

from __future__ import annotations

import json

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.outcomes import advance
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import role_message
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.report import report
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    ADMIN_PASS,
    NEW,
    created_result,
    fleet_at_preflight,
    inputs,
    line_up,
    module_arguments,
    results,
    ticket_result,
)


def test_results_pair_with_sites_by_identity_not_position():
    fleet, dummy = line_up({}, {}, {})
    # The allow step answers for site 1003 first, and refuses 1001 only.
    done = {"check": results({"site": "1001"}, {"site": "1002"}, {"site": "1003"}),
            "allow": results({"site": "1003", "failed": False}, {"site": "1001", "failed": True, "msg": "HTTP 500"},
                             {"site": "1002", "failed": False})}
    assert step_arguments(fleet, "create", done, [inputs()] * 3)["migrations"][0]["site"] == "1002"
    ended = dict((s["site"], s) for s in advance(fleet, done))
    assert ended["1001"]["result"] == "error" and "site 1001: allowing a migration failed: HTTP 500" == \
        ended["1001"]["message"]
    assert ended["1002"]["stage"] == ended["1003"]["stage"] == "create"


def test_preflight_and_run_results_pair_by_migration_id():
    fleet, dummy = line_up({}, {})
    done = {"check": results({"site": "1001"}, {"site": "1002"}), "allow": results({"site": "1001"}, {"site": "1002"}),
            "create": results(created_result("1002", 8), created_result("1001", 7)),
            "preflight": results(ticket_result(8, "t8"), ticket_result(7, "t7", state="failure", failed=True,
                                                                       ticket={"diagnosis": {"code": "x"}}))}
    ended = dict((s["site"], s) for s in advance(fleet, done))
    assert ended["1001"]["result"] == "preflight_failed" and ended["1001"]["preflight"]["ticket_id"] == "t7"
    assert ended["1002"]["stage"] == "run" and ended["1002"]["preflight"]["ticket_id"] == "t8"


def test_results_without_identity_pair_by_position():
    fleet, dummy = line_up({}, {})
    done = {"check": results({"failed": False}, {"failed": True, "msg": "remote_port must be between 1 and 65535"})}
    ended = advance(fleet, done)
    assert ended[0]["stage"] == "allow" and ended[1]["result"] == "invalid_input"


def test_a_step_that_failed_as_a_whole_gives_every_site_its_message():
    fleet, dummy = line_up({}, {})
    ended = advance(fleet, {"check": {"failed": False, "msg": "migrations lists site 1001 twice"}})
    assert [e["message"] for e in ended] == ["site 1001: migrations lists site 1001 twice",
                                             "site 1002: migrations lists site 1001 twice"]


def test_module_messages_name_the_role_variable():
    """Issue 13 item 2: site_migration_remote_port, never remote_port, also in the modules' own checks."""
    fleet, dummy = line_up({}, {}, {}, {})
    msgs = ["remote_port must be between 1 and 65535 (SSH usually listens on 22), got 0.",
            "remote_host must be a host name or IP address (letters, digits, dots and hyphens), got an invalid value.",
            "ssh_id_pass does not open ssh_id: the passphrase is wrong.",
            "site must be a numeric site ID or a domain name like example.com (letters, digits, hyphens and dots "
            "only; no scheme, path, port or spaces)."]
    done = {"check": results(*[{"site": str(1001 + i), "failed": True, "msg": m} for i, m in enumerate(msgs)])}
    ended = [e["message"] for e in advance(fleet, done)]
    assert ended[0] == "site 1001: site_migration_remote_port must be between 1 and 65535 (SSH usually listens on " \
        "22), got 0."
    assert ended[1].startswith("site 1002: site_migration_remote_host must be a host name")
    assert ended[2] == "site 1003: site_migration_ssh_id_pass does not open site_migration_ssh_id: the passphrase " \
        "is wrong."
    assert ended[3].startswith("site 1004: site_migration_site must be a numeric site ID")


def test_translation_leaves_other_words_and_role_variables_alone():
    text = "add the returned ssh_id_pub for site 5 to remote_user's keys; site_migration_remote_port stays"
    assert role_message(text) == ("add the returned ssh_id_pub for site 5 to site_migration_remote_user's keys; "
                                  "site_migration_remote_port stays")
    assert role_message("still running when wait_timeout=60s ran out", "run") == \
        "still running when site_migration_run_timeout=60s ran out"
    assert role_message("api_url must be an absolute URL; set api_key or WPCLOUD_API_KEY") == \
        "wpcloud_api_url must be an absolute URL; set wpcloud_api_key or WPCLOUD_API_KEY"
    assert role_message("state_file /inv/s/1001.json could not be read as JSON (ValueError): fix or remove it") \
        == "the state file /inv/s/1001.json (in site_migration_state_dir) could not be read as JSON (ValueError): " \
        "fix or remove it"


def test_a_failed_preflight_stops_its_site_with_the_diagnosis_in_role_words():
    fleet, done = fleet_at_preflight()
    hint = "Set remote_docroot to the directory that holds wp-config.php"
    done["preflight"] = results(ticket_result(7, "t7", state="failure", failed=True, ticket={
        "messages": ["Connecting", "could not find WordPress"],
        "diagnosis": {"code": "docroot_missing", "hint": hint, "matched": "could not find WordPress"}}))
    entry = advance(fleet, done)[0]
    assert entry["result"] == "preflight_failed" and entry["diagnosis"]["code"] == "docroot_missing"
    assert entry["message"] == ("site 1001: preflight of migration 7 failed (docroot_missing): Set "
                                "site_migration_docroot to the directory that holds wp-config.php Messages: "
                                "Connecting | could not find WordPress")
    assert entry["diagnosis"]["hint"].startswith("Set site_migration_docroot")


def test_an_unfinished_preflight_names_the_timeout_variable():
    fleet, done = fleet_at_preflight(site_migration_preflight_timeout=60)
    done["preflight"] = results(ticket_result(7, "t7", state="running", failed=True, timed_out=True, msg="did not finish"))
    entry = advance(fleet, done)[0]
    assert entry["result"] == "preflight_unfinished"
    assert "after site_migration_preflight_timeout=60s" in entry["message"]


def test_a_run_succeeds_or_fails_with_its_ticket():
    fleet, done = fleet_at_preflight(2)
    done["preflight"] = results(ticket_result(7, "p7"), ticket_result(8, "p8"))
    done["run"] = results(ticket_result(7, "r7"), ticket_result(8, "r8", state="failure", failed=True,
                                                                ticket={"diagnosis": {"code": "unknown", "hint": "read"}}))
    ended = advance(fleet, done)
    assert [e["result"] for e in ended] == ["succeeded", "run_failed"]
    assert ended[0]["run"] == {"ticket_id": "r7", "state": "success", "elapsed": 2.5, "response_count": 3,
                               "already_running": False, "diagnosis": None}


def test_a_resumed_run_is_followed_by_its_state():
    fleet, done = fleet_at_preflight(2)
    done["create"] = results(created_result("1001", 7, state="migration-running"),
                             created_result("1002", 8, state="migration-running"))
    assert step_arguments(fleet, "preflight", done)["count"] == 0 and step_arguments(fleet, "run", done)["migration_ids"] == [7, 8]
    done["run"] = results({"migration_id": 7, "already_running": True, "state": "migration-succeeded"},
                          {"migration_id": 8, "already_running": True, "state": "migration-failed", "failed": True,
                           "msg": "The migration run that was already active ended in state migration-failed."})
    ended = advance(fleet, done)
    assert ended[0]["result"] == "succeeded" and ended[0]["run"]["already_running"] is True
    assert ended[0]["message"] == "resumed: the run was already active; it ended in state migration-succeeded"
    assert ended[1]["result"] == "run_failed"


REFUSED = "migration %d cannot start: its latest preflight has not succeeded since the last change (state: %s)."


def test_a_run_seen_running_that_ended_before_ready_read_it_is_its_outcome():
    """Issue 23 item 7: the resume race. The create step saw the runs active; by the time
    migration_ready read them they had ended, and its partner rule refused a new start."""
    fleet, done = fleet_at_preflight(3)
    done["create"] = results(created_result("1001", 7, state="migration-running"),
                             created_result("1002", 8, state="migration-running"), created_result("1003", 9))
    done["preflight"] = results(ticket_result(9, "p9"))
    done["run"] = results(
        {"migration_id": 7, "failed": True, "state": "migration-succeeded", "msg": REFUSED % (7, "migration-succeeded")},
        {"migration_id": 8, "failed": True, "state": "migration-failed", "msg": REFUSED % (8, "migration-failed")},
        {"migration_id": 9, "failed": True, "state": "migration-succeeded", "msg": REFUSED % (9, "migration-succeeded")})
    ended = advance(fleet, done)
    assert ended[0]["result"] == "succeeded" and ended[0]["run"]["already_running"] is True
    assert ended[0]["message"] == "resumed: the run was already active; it ended in state migration-succeeded"
    assert ended[1]["result"] == "run_failed" and "seen running earlier" in ended[1]["message"]
    # not seen running by this play: the refusal stands
    assert ended[2]["result"] == "error" and "cannot start" in ended[2]["message"]


def test_check_mode_reports_what_would_happen():
    fleet, dummy = line_up({}, {})
    done = {"check": results({"site": "1001"}, {"site": "1002"}), "allow": results({"site": "1001"}, {"site": "1002"}),
            "create": results(created_result("1001", None), created_result("1002", 8))}
    done["preflight"] = results(ticket_result(8, None))
    ended = advance(fleet, done)
    assert [e["result"] for e in ended] == ["checked", "checked"]
    assert ended[0]["message"] == "check mode: the migration would be created"
    assert ended[1]["message"] == "check mode: preflight would be started"


def test_a_generated_key_is_installed_before_preflight_and_its_failure_stops_the_site():
    fleet, done = fleet_at_preflight(2, site_migration_install_key=True)
    done["create"] = results(created_result("1001", 7, ssh_id_pub="ssh-ed25519 AAAA one"),
                             created_result("1002", 8, ssh_id_pub="ssh-ed25519 AAAA two"))
    todo = step_arguments(fleet, "key", done)
    assert todo["count"] == 2 and len(todo["users"]) == 1          # one source user, one .ssh directory
    assert todo["sites"][1] == {"site": "1002", "source_host": "src.example", "remote_user": "www",
                                "ssh_id_pub": "ssh-ed25519 AAAA two", "install_become": False}
    done["key"] = {"results": [{"item": todo["sites"][1], "unreachable": True, "msg": "ssh: connect refused"},
                               {"item": todo["sites"][0], "changed": True}]}
    ended = advance(fleet, done)
    assert ended[0]["stage"] == "preflight" and ended[0]["key_installed"] is True
    assert ended[1]["result"] == "error"
    assert ended[1]["message"] == "site 1002: installing the generated key on src.example failed: ssh: connect refused"
    # the shell that appends the key fails with its own words, not "non-zero return code"
    done["key"]["results"][0] = {"item": todo["sites"][1], "failed": True, "rc": 1, "msg": "non-zero return code",
                                 "stderr": "chown: invalid user: 'www'\n"}
    assert advance(fleet, done)[1]["message"] == ("site 1002: installing the generated key on src.example failed: "
                                                  "chown: invalid user: 'www'")


def test_a_later_steps_stale_result_is_never_applied():
    """Registered results of an earlier run of the role in the same play stay until overwritten."""
    fleet, done = fleet_at_preflight()
    done["run"] = results(ticket_result(7, "old"))
    assert step_arguments(fleet, "preflight", done)["migration_ids"] == [7]
    # Preflight has not run yet: the site was not reached, whatever an old run result says.
    entry = advance(fleet, done)[0]
    assert entry["stage"] == "preflight" and entry["result"] is None
    assert report(fleet, ["dest0.example"], done)["sites"][0]["result"] == "not_reached"


def test_a_step_that_did_not_run_leaves_its_sites_not_reached():
    fleet, dummy = line_up({}, {})
    ended = advance(fleet, {"check": results({"site": "1001"}, {"site": "1002"})})
    assert [(e["stage"], e["result"]) for e in ended] == [("allow", None), ("allow", None)]


# ----------------------------------------------------------------------------------------- uncertain writes

def test_uncertain_writes_are_reported_per_site_with_their_step():
    fleet, done = fleet_at_preflight(2)
    lost = {"write": "migration.create", "what": "the migration of site 1001", "errors": ["reset"],
            "resolved_by": "read", "outcome": "happened", "sends": 1}
    done["create"] = results(created_result("1001", 7, uncertain=[lost]), created_result("1002", 8))
    done["preflight"] = results(ticket_result(7, "p7"), ticket_result(8, "p8"))
    done["run"] = results(ticket_result(7, "r7"), ticket_result(8, "r8"))
    rep = report(fleet, ["dest0.example", "dest1.example"], done, True, generated="T")
    assert rep["sites"][0]["uncertain"] == [dict(lost, step="create")] and rep["sites"][1]["uncertain"] == []
    assert [s["result"] for s in rep["sites"]] == ["succeeded", "succeeded"]


def test_a_preflight_followed_by_the_migrations_state_goes_on_to_the_run():
    """A preflight whose start answer was lost, which a read showed had started: no ticket, the module
    followed the migration's state (already_running)."""
    fleet, done = fleet_at_preflight(2)
    done["preflight"] = results(dict(ticket_result(7, None), already_running=True, state="preflight-succeeded"),
                                dict(ticket_result(8, None), already_running=True, state="preflight-failed", failed=True,
                                     msg="The preflight followed by its migration's state ended in state "
                                         "preflight-failed."))
    ended = advance(fleet, done, upto="run")
    assert ended[0]["stage"] == "run" and ended[0]["preflight"]["already_running"] is True
    assert ended[1]["result"] == "preflight_failed" and "followed by its migration's state" in ended[1]["message"]


# ------------------------------------------------------------------------- new destination sites

def _listing(*domains, **whole):
    return dict({"changed": False, "client": "demo", "count": len(domains),
                 "sites": [{"site_id": 100 + i, "domain": d} for i, d in enumerate(domains)]}, **whole)


def _site_created(domain, site_id, job="success", operation="create"):
    return {"domain": domain, "site_id": site_id, "operation": operation, "changed": operation == "create",
            "failed": False, "job_id": 70 if site_id else None,
            "job": {"job_id": 70, "status": job, "elapsed": 3.0} if site_id else None}


def test_a_site_named_by_domain_is_looked_for_only_when_the_role_may_create_it():
    fleet, dummy = line_up(dict(NEW, site_migration_site="new.example"), dict(NEW, site_migration_site="1002"),
                           {"site_migration_site": "old.example"})
    assert [e["stage"] for e in fleet] == ["find", "check", "check"]
    assert module_arguments(step_arguments(fleet, "find", {})) == {"count": 1, "client": "demo"}


def test_missing_sites_are_created_all_at_once_and_skip_the_allow_step():
    fleet, given = line_up(dict(NEW, site_migration_site="new.example", site_migration_admin_pass=ADMIN_PASS,
                                site_migration_php_version="8.3"),
                           dict(NEW, site_migration_site="Old.Example"),
                           dict(NEW, site_migration_site="two.example", site_migration_create_timeout=60))
    done = {"find": _listing("old.example")}
    todo = step_arguments(fleet, "new", done, given)
    assert module_arguments(todo) == {"count": 2, "client": "demo", "wait": True, "wait_timeout": 900, "poll_interval": 1.0,
                                      "poll_max_interval": 12.0,
                                      "sites": [{"domain": "new.example", "admin_user": "admin", "admin_email": "admin@example.com",
                                                 "admin_pass": ADMIN_PASS, "php_version": "8.3"},
                                                {"domain": "two.example", "admin_user": "admin", "admin_email": "admin@example.com"}]}
    done["new"] = results(_site_created("two.example", 202), _site_created("new.example", 201))
    assert step_arguments(fleet, "check", done, given)["count"] == 3
    done["check"] = results({"site": "new.example"}, {"site": "Old.Example"}, {"site": "two.example"})
    assert step_arguments(fleet, "allow", done)["sites"] == ["Old.Example"]          # the irreversible call: old only
    done["allow"] = results({"site": "old.example"})
    assert step_arguments(fleet, "create", done, given)["count"] == 3
    ended = advance(fleet, done)
    assert [(e["destination"], e["stage"]) for e in ended] == [
        ("created", "create"), ("existing", "create"), ("created", "create")]
    assert ended[0]["new_site"] == {"site_id": 201, "job_id": 70, "job_status": "success", "elapsed": 3.0}
    assert ADMIN_PASS not in json.dumps(fleet) and ADMIN_PASS not in json.dumps(ended)


def test_a_created_site_without_the_flag_goes_through_the_allow_step():
    fleet, given = line_up(dict(NEW, site_migration_site="kept.example"), dict(NEW, site_migration_site="lost.example"))
    done = {"find": _listing()}
    done["new"] = results(dict(_site_created("kept.example", 501), allow_site_migration=True),
                          dict(_site_created("lost.example", 502), allow_site_migration=False))
    done["check"] = results({"site": "kept.example"}, {"site": "lost.example"})
    assert step_arguments(fleet, "allow", done)["sites"] == ["lost.example"]   # read back without the flag: allowed first
    done["allow"] = results({"site": "lost.example"})
    assert step_arguments(fleet, "create", done, given)["count"] == 2
    ended = advance(fleet, done)
    assert [(e["destination"], e["stage"]) for e in ended] == [("created", "create"), ("created", "create")]


def test_a_site_the_listing_missed_but_that_exists_takes_the_usual_path():
    fleet, given = line_up(dict(NEW, site_migration_site="alias.example"))
    done = {"find": _listing(), "new": results(_site_created("alias.example", 300, operation="none"))}
    ended = advance(fleet, done)
    assert ended[0]["stage"] == "check" and ended[0]["destination"] == "existing"


def test_without_waiting_a_created_site_is_left_to_its_webhook():
    fleet, given = line_up(dict(NEW, site_migration_site="later.example", site_migration_create_wait=False))
    done = {"find": _listing()}
    assert step_arguments(fleet, "new", done, given)["wait"] is False
    done["new"] = results(_site_created("later.example", 401, job=None))
    ended = advance(fleet, done)
    assert ended[0]["result"] == "awaiting_provisioning" and "site_provisioned" in ended[0]["message"]
    assert step_arguments(fleet, "stop", done) == {"stopped": {}, "changed": {"dest0.example": True}}  # fine: not stopped
    rep = report(fleet, ["dest0.example"], done)
    assert rep["destinations"] == {"created": 1} and rep["counts"] == {"awaiting_provisioning": 1}


def test_check_mode_says_the_site_would_be_created():
    fleet, given = line_up(dict(NEW, site_migration_site="new.example"))
    done = {"find": _listing(), "new": results(_site_created("new.example", None))}
    ended = advance(fleet, done)
    assert ended[0]["result"] == "checked" and "would be created" in ended[0]["message"]


def test_a_failed_listing_or_create_stops_its_sites_in_role_words():
    fleet, given = line_up(dict(NEW, site_migration_site="a.example"), dict(NEW, site_migration_site="b.example"))
    failed = advance(fleet, {"find": {"failed": True, "msg": "client demo is not the client of this API key"}})
    assert [e["result"] for e in failed] == ["error", "error"]
    assert "listing the sites of site_migration_client demo failed" in failed[0]["message"]
    refusal = "The service refused the API key for client demo (HTTP 401). Check api_key (WPCLOUD_API_KEY)."
    refused = advance(line_up(dict(NEW, site_migration_site="a.example"))[0],
                      {"find": {"failed": True, "failure": {"status": 401}, "msg": refusal}})
    assert refused[0]["message"] == ("site a.example: The service refused the API key for client demo (HTTP 401). Check "
                                     "wpcloud_api_key (WPCLOUD_API_KEY). (listing the sites of site_migration_client demo)")
    done = {"find": _listing(), "new": results(
        {"domain": "a.example", "failed": True, "msg": "admin_email must be an e-mail address like admin@example.com."},
        _site_created("b.example", 501))}
    ended = advance(fleet, done)
    assert ended[0]["result"] == "error"
    assert "site_migration_admin_email must be an e-mail address" in ended[0]["message"]
    assert ended[1]["stage"] == "check"
