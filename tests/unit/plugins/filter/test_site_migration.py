# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role's workflow decisions (plugins/filter/site_migration.py), without a server.

Inputs are what the role's "Read every site's inputs" gives (role variables with a value), step
results are shaped like the list forms of the modules return them; the end-to-end runs are in
tests/system/test_role.py.
"""

from __future__ import annotations

import datetime
import json
import os
import re

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.filter import site_migration as sm
from ansible_collections.wpcloud.hosting.plugins.module_utils.service import vocabulary

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "site_migration")
with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as _handle:
    SPEC = yaml.safe_load(_handle)["argument_specs"]["main"]
with open(os.path.join(ROLE, "defaults", "main.yml")) as _handle:
    DEFAULTS = yaml.safe_load(_handle)

HOSTVARS = {"src.example": {"ansible_host": "10.0.0.5", "ansible_port": 2222, "ansible_user": "www"},
            "bare.example": {}}
PASSWORD = "correct horse battery staple"


def inputs(**given):
    """One site's resolved inputs: the role defaults (templates filled in) and what the test gives."""
    values = dict((k, v) for k, v in DEFAULTS.items() if not (isinstance(v, str) and "{{" in v))
    values.update(site_migration_state_dir="/inv/wpcloud-state", site_migration_report_dir="/inv/wpcloud-reports",
                  site_migration_confirm_overwrite=True, site_migration_source_host="src.example",
                  site_migration_install_key=False)
    values.update(given)
    return dict((k, v) for k, v in values.items() if v is not None)


def line_up(*sites, hostvars=None):
    hostvars = HOSTVARS if hostvars is None else hostvars
    hosts = [s.pop("host", "dest%d.example" % i) for i, s in enumerate(sites)]
    for i, s in enumerate(sites):
        s.setdefault("site_migration_site", str(1001 + i))
    return sm.lineup([inputs(**s) for s in sites], hosts, SPEC, hostvars), [inputs(**s) for s in sites]


def results(*items, **whole):
    return dict(whole, results=list(items), changed=False)


# ----------------------------------------------------------------------------------------- lineup

def test_the_filters_are_registered():
    assert sm.FilterModule().filters() == {"site_migration_lineup": sm.lineup, "site_migration_step": sm.step,
                                           "site_migration_inputs": sm.inputs_of,
                                           "site_migration_report": sm.report, "site_migration_waiting": sm.waiting,
                                           "site_migration_report_merge": sm.merge_reports,
                                           "site_migration_report_name": sm.report_name}


def test_a_valid_site_is_resolved_from_its_source_host():
    fleet, dummy = line_up({})
    entry = fleet[0]
    assert entry["result"] is None and entry["message"] == "" and entry["stage"] == "check"
    assert (entry["remote_host"], entry["remote_port"], entry["remote_user"]) == ("10.0.0.5", 2222, "www")
    assert entry["install_become"] is False and entry["install_key"] is False
    assert entry["preflight_timeout"] == 900 and entry["run_timeout"] == 7200 and entry["poll_interval"] == 1.0


def test_role_variables_win_over_the_source_host_and_become_follows_the_user():
    fleet, dummy = line_up({"site_migration_remote_host": "ssh.example", "site_migration_remote_port": 22,
                            "site_migration_remote_user": "blog"})
    entry = fleet[0]
    assert (entry["remote_host"], entry["remote_port"], entry["remote_user"]) == ("ssh.example", 22, "blog")
    assert entry["install_become"] is True          # Ansible logs in as www, the key is for blog


def test_a_source_without_ansible_host_is_reached_by_its_inventory_name():
    fleet, dummy = line_up({"site_migration_source_host": "bare.example", "site_migration_remote_user": "wp"})
    assert fleet[0]["remote_host"] == "bare.example" and fleet[0]["remote_port"] is None


def test_a_port_nobody_set_is_not_sent():
    """Issue 13 item 1 for the role: no site_migration_remote_port and no ansible_port means the
    migrations item has no remote_port, so an update keeps the stored port (create takes 22)."""
    fleet, given = line_up({"site_migration_source_host": "bare.example", "site_migration_remote_user": "wp"})
    assert "remote_port" not in sm.step(fleet, "check", {"info": results({"site": "1001", "migration_id": None})},
                                        given)["migrations"][0]


@pytest.mark.parametrize("variable", sorted("site_migration_" + name for name in sm.EMPTY_HINTS))
@pytest.mark.parametrize("value", ["", "   "])
def test_an_explicitly_empty_input_is_refused_by_its_variable_name(variable, value):
    """Issue 13 item 2: never replaced by the source host's values or a default."""
    given = {variable: value}
    if variable == "site_migration_remote_pass":
        given["site_migration_auth"] = "password"
    if variable.startswith("site_migration_ssh_id"):
        given.update(site_migration_auth="key", site_migration_ssh_id="KEY TEXT")
        given[variable] = value
    fleet, dummy = line_up(given)
    entry = fleet[0]
    assert entry["stage"] == "done" and entry["result"] == "invalid_input"
    assert "%s is empty: " % variable in entry["message"], entry["message"]
    if variable in ("site_migration_remote_host", "site_migration_remote_user"):
        assert entry[variable[len("site_migration_"):]] == value      # not 10.0.0.5 / www
        assert "must resolve" not in entry["message"]                  # one message, the right one


def test_an_empty_source_domain_is_not_refused_it_means_the_default_domain():
    fleet, given = line_up({"site_migration_source_domain": ""})
    assert fleet[0]["result"] is None
    assert sm.step(fleet, "check", {}, given)["migrations"][0]["remote_domain"] == ""


def test_null_means_unset_and_takes_the_source_hosts_values():
    fleet, dummy = line_up({"site_migration_remote_host": None, "site_migration_remote_user": None})
    assert fleet[0]["result"] is None and fleet[0]["remote_host"] == "10.0.0.5" and fleet[0]["remote_user"] == "www"


def test_no_source_host_is_needed_when_no_key_is_installed():
    """Issue 13 item 6: password or key auth, or install_key false: Ansible never connects to it."""
    fleet, dummy = line_up({"site_migration_source_host": None, "site_migration_auth": "password",
                            "site_migration_remote_pass": PASSWORD, "site_migration_remote_host": "old.example",
                            "site_migration_remote_user": "blog"},
                           {"site_migration_source_host": None, "site_migration_install_key": False,
                            "site_migration_remote_host": "old.example", "site_migration_remote_user": "shop"},
                           hostvars={})
    assert [e["result"] for e in fleet] == [None, None]
    assert fleet[0]["remote_port"] is None and fleet[0]["source_host"] == ""


def test_without_a_source_host_the_remote_host_and_user_must_be_set():
    fleet, dummy = line_up({"site_migration_source_host": None}, hostvars={})
    message = fleet[0]["message"]
    assert "set site_migration_remote_host" in message and "site_migration_remote_user" in message


def test_a_generated_key_to_install_needs_the_source_host():
    fleet, dummy = line_up({"site_migration_source_host": None, "site_migration_install_key": True,
                            "site_migration_remote_host": "old.example", "site_migration_remote_user": "blog"},
                           hostvars={})
    assert fleet[0]["result"] == "invalid_input"
    assert "site_migration_source_host is needed to install the generated key" in fleet[0]["message"]


def test_an_unknown_source_host_is_refused_when_the_site_does_not_say_where_the_source_is():
    fleet, dummy = line_up({"site_migration_source_host": "nosuch.example"},
                           {"site_migration_source_host": "nosuch.example", "site_migration_remote_host": "10.0.0.9"})
    for entry in fleet:
        assert entry["result"] == "invalid_input"
        assert ("site_migration_source_host (nosuch.example) is not an inventory host of this run (group "
                "wpcloud_sources; in an AWX sliced job, a source host in another slice is not): set "
                "site_migration_remote_host and site_migration_remote_user") in entry["message"]


def test_a_source_host_in_another_slice_is_reached_at_the_sites_own_address():
    """An AWX slice holds the variables of its own hosts only: a site whose source host is in another slice
    names it, and gives the address and user itself (the layout of docs/awx.md section 8)."""
    given = {"site_migration_source_host": "src-host", "site_migration_remote_host": "198.51.100.7",
             "site_migration_remote_user": "shop", "site_migration_remote_port": 2222,
             "site_migration_auth": "generated", "site_migration_install_key": True}
    fleet, dummy = line_up(dict(given), dict(given, site_migration_remote_user="news"),
                           dict(given, site_migration_install_become=False), hostvars={})
    assert [e["result"] for e in fleet] == [None, None, None] and fleet[0]["message"] == ""
    assert fleet[0]["source_known"] is False and fleet[0]["remote_host"] == "198.51.100.7"
    assert [e["install_become"] for e in fleet] == [True, True, False]   # the login there is not known here
    sites = ["1001", "1002", "1003"]
    done = {"check": results(*[{"site": x} for x in sites]), "allow": results(*[{"site": x} for x in sites]),
            "create": results(*[_created(x, 7 + i, ssh_id_pub="ssh-ed25519 AAAA %d" % i) for i, x in enumerate(sites)])}
    todo = sm.step(fleet, "key", done)
    assert todo["count"] == 3
    # one inventory entry to add for the source, at the first site's address; two users' directories
    assert todo["absent_sources"] == [{"source_host": "src-host", "remote_host": "198.51.100.7", "remote_port": 2222}]
    assert [u["remote_user"] for u in todo["users"]] == ["shop", "news"]
    # Ansible counts the added source host among the play's hosts from then on: it is no site of the report
    report = sm.report(fleet, ["dest0.example", "dest1.example", "dest2.example", "src-host"], done)
    assert [e["host"] for e in report["sites"]] == ["dest0.example", "dest1.example", "dest2.example"]
    # the same site with its source host in the run's inventory: nothing to add, the become default as before
    known, dummy = line_up(dict(given, site_migration_source_host="src.example"))
    assert known[0]["source_known"] is True and known[0]["install_become"] is True
    one = dict((name, results(done[name]["results"][0])) for name in done)
    assert sm.step(known, "key", one)["absent_sources"] == []


@pytest.mark.parametrize("given, expected", [
    ({"site_migration_auth": "pasword"}, "value of site_migration_auth must be one of: password, key, generated"),
    ({"site_migration_preflight_timeout": "soon"}, "site_migration_preflight_timeout"),
    ({"site_migration_remote_port": ""}, "site_migration_remote_port"),
    ({"site_migration_confirm_overwrite": False}, "site_migration_confirm_overwrite must be true"),
    ({"site_migration_confirm_overwrite": "perhaps"}, "site_migration_confirm_overwrite"),
    ({"site_migration_auth": "password"}, "site_migration_auth=password needs site_migration_remote_pass"),
    ({"site_migration_auth": "key"}, "site_migration_auth=key needs site_migration_ssh_id"),
    ({"site_migration_remote_pass": PASSWORD}, "site_migration_remote_pass is only for site_migration_auth=password"),
    ({"site_migration_auth": "password", "site_migration_remote_pass": PASSWORD, "site_migration_ssh_id_pass": "pp"},
     "site_migration_ssh_id_pass is only for site_migration_auth=key (it is password): remove it"),
    ({"site_migration_poll_interval": 0.2}, "site_migration_poll_interval must be at least 1"),
    ({"site_migration_poll_interval": 5, "site_migration_poll_max_interval": 2},
     "site_migration_poll_max_interval must be at least site_migration_poll_interval"),
    ({"site_migration_run_timeout": 0}, "site_migration_run_timeout must be a positive number of seconds"),
    ({"site_migration_source_host": "bare.example"}, "the remote user must resolve"),
])
def test_each_rule_names_the_role_variable(given, expected):
    fleet, dummy = line_up(given)
    assert fleet[0]["result"] == "invalid_input" and fleet[0]["stage"] == "done"
    assert fleet[0]["message"].startswith("site 1001: invalid inputs: ")
    assert expected in fleet[0]["message"], fleet[0]["message"]


def test_a_secret_of_the_wrong_type_is_never_quoted():
    fleet, dummy = line_up({"site_migration_auth": "password", "site_migration_remote_pass": [PASSWORD]})
    assert PASSWORD not in json.dumps(fleet)


def test_the_lineup_holds_no_credential():
    fleet, dummy = line_up({"site_migration_auth": "password", "site_migration_remote_pass": PASSWORD})
    assert fleet[0]["result"] is None and PASSWORD not in json.dumps(fleet)


def test_two_hosts_for_one_site_are_both_refused_and_the_others_go_on():
    fleet, dummy = line_up({"site_migration_site": "blog.example"}, {"site_migration_site": "Blog.Example"},
                           {"site_migration_site": "1003"})
    assert [e["result"] for e in fleet] == ["invalid_input", "invalid_input", None]
    assert "also the destination of host dest1.example" in fleet[0]["message"]


def test_refresh_false_starts_with_reading_the_migration():
    fleet, dummy = line_up({"site_migration_refresh": False})
    assert fleet[0]["stage"] == "info"


def test_the_lineup_refuses_inputs_that_do_not_match_the_hosts():
    with pytest.raises(AnsibleFilterError):
        sm.lineup([inputs()], ["a", "b"], SPEC, HOSTVARS)


# ----------------------------------------------------------------------------------------- steps

def _created(site, migration_id, **extra):
    record = {"state": "new", "auth": "generated", "args": {"remote-host": "10.0.0.5", "remote-pass": "[redacted]"}}
    return dict({"site": site, "migration_id": migration_id, "site_id": int(site), "operation": "create",
                 "updated_fields": [], "state": "new", "record": record, "failed": False}, **extra)


def _ticket(migration_id, ticket_id, state="success", **extra):
    ticket = {"ticket_id": ticket_id, "state": state, "elapsed": 2.5, "response_count": 3, "polls": 3}
    ticket.update(extra.pop("ticket", {}))
    return dict({"migration_id": migration_id, "ticket_id": ticket_id, "ticket": ticket, "ticket_state": state,
                 "failed": False, "changed": True}, **extra)


def test_each_step_gives_its_module_arguments():
    fleet, given = line_up({"site_migration_refresh": False, "site_migration_poll_interval": 2.0,
                            "site_migration_preflight_timeout": 60, "site_migration_poll_max_interval": 30},
                           {"site_migration_auth": "password", "site_migration_remote_pass": PASSWORD})
    assert sm.step(fleet, "info", {}) == {"count": 1, "sites": ["1001"]}
    todo = sm.step(fleet, "check", {"info": results({"site": "1001", "exists": False, "migration_id": None})}, given)
    assert todo["count"] == 2
    assert todo["migrations"][0] == {"site": "1001", "remote_host": "10.0.0.5", "remote_port": 2222,
                                     "remote_user": "www", "state_file": "/inv/wpcloud-state/1001.json",
                                     "update_secret": "on_create"}
    assert todo["migrations"][1]["remote_pass"] == PASSWORD and "ssh_id" not in todo["migrations"][1]
    done = {"info": results({"site": "1001", "migration_id": None}),
            "check": results({"site": "1001"}, {"site": "1002"}), "allow": results({"site": "1001"}, {"site": "1002"}),
            "create": results(_created("1001", 7), _created("1002", 8))}
    assert sm.step(fleet, "allow", done)["sites"] == ["1001", "1002"]
    todo = sm.step(fleet, "preflight", done)
    # One wait for both: the shortest interval and the shortest cap of the two sites.
    assert todo == {"count": 2, "migration_ids": [7, 8], "wait_timeout": 900, "poll_interval": 1.0,
                    "poll_max_interval": 12.0}


def test_the_check_and_create_steps_need_the_inputs():
    fleet, dummy = line_up({})
    with pytest.raises(AnsibleFilterError):
        sm.step(fleet, "create", {"check": results({"site": "1001"}), "allow": results({"site": "1001"})})


def test_an_unknown_step_is_refused():
    with pytest.raises(AnsibleFilterError):
        sm.step([], "reboot")


def test_results_pair_with_sites_by_identity_not_position():
    fleet, dummy = line_up({}, {}, {})
    # The allow step answers for site 1003 first, and refuses 1001 only.
    done = {"check": results({"site": "1001"}, {"site": "1002"}, {"site": "1003"}),
            "allow": results({"site": "1003", "failed": False}, {"site": "1001", "failed": True, "msg": "HTTP 500"},
                             {"site": "1002", "failed": False})}
    assert sm.step(fleet, "create", done, [inputs()] * 3)["migrations"][0]["site"] == "1002"
    ended = dict((s["site"], s) for s in sm.advance(fleet, done))
    assert ended["1001"]["result"] == "error" and "site 1001: allowing a migration failed: HTTP 500" == \
        ended["1001"]["message"]
    assert ended["1002"]["stage"] == ended["1003"]["stage"] == "create"


def test_preflight_and_run_results_pair_by_migration_id():
    fleet, dummy = line_up({}, {})
    done = {"check": results({"site": "1001"}, {"site": "1002"}), "allow": results({"site": "1001"}, {"site": "1002"}),
            "create": results(_created("1002", 8), _created("1001", 7)),
            "preflight": results(_ticket(8, "t8"), _ticket(7, "t7", state="failure", failed=True,
                                                           ticket={"diagnosis": {"code": "x"}}))}
    ended = dict((s["site"], s) for s in sm.advance(fleet, done))
    assert ended["1001"]["result"] == "preflight_failed" and ended["1001"]["preflight"]["ticket_id"] == "t7"
    assert ended["1002"]["stage"] == "run" and ended["1002"]["preflight"]["ticket_id"] == "t8"


def test_results_without_identity_pair_by_position():
    fleet, dummy = line_up({}, {})
    done = {"check": results({"failed": False}, {"failed": True, "msg": "remote_port must be between 1 and 65535"})}
    ended = sm.advance(fleet, done)
    assert ended[0]["stage"] == "allow" and ended[1]["result"] == "invalid_input"


def test_a_step_that_failed_as_a_whole_gives_every_site_its_message():
    fleet, dummy = line_up({}, {})
    ended = sm.advance(fleet, {"check": {"failed": False, "msg": "migrations lists site 1001 twice"}})
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
    ended = [e["message"] for e in sm.advance(fleet, done)]
    assert ended[0] == "site 1001: site_migration_remote_port must be between 1 and 65535 (SSH usually listens on " \
        "22), got 0."
    assert ended[1].startswith("site 1002: site_migration_remote_host must be a host name")
    assert ended[2] == "site 1003: site_migration_ssh_id_pass does not open site_migration_ssh_id: the passphrase " \
        "is wrong."
    assert ended[3].startswith("site 1004: site_migration_site must be a numeric site ID")


def test_translation_leaves_other_words_and_role_variables_alone():
    text = "add the returned ssh_id_pub for site 5 to remote_user's keys; site_migration_remote_port stays"
    assert sm.role_message(text) == ("add the returned ssh_id_pub for site 5 to site_migration_remote_user's keys; "
                                     "site_migration_remote_port stays")
    assert sm.role_message("still running when wait_timeout=60s ran out", "run") == \
        "still running when site_migration_run_timeout=60s ran out"
    assert sm.role_message("api_url must be an absolute URL; set api_key or WPCLOUD_API_KEY") == \
        "wpcloud_api_url must be an absolute URL; set wpcloud_api_key or WPCLOUD_API_KEY"
    assert sm.role_message("state_file /inv/s/1001.json could not be read as JSON (ValueError): fix or remove it") \
        == "the state file /inv/s/1001.json (in site_migration_state_dir) could not be read as JSON (ValueError): " \
        "fix or remove it"


def _to_preflight(n=1, **given):
    fleet, dummy = line_up(*[dict(given) for dummy in range(n)])
    sites = [str(1001 + i) for i in range(n)]
    done = {"check": results(*[{"site": s} for s in sites]), "allow": results(*[{"site": s} for s in sites]),
            "create": results(*[_created(s, 7 + i) for i, s in enumerate(sites)])}
    return fleet, done


def test_a_failed_preflight_stops_its_site_with_the_diagnosis_in_role_words():
    fleet, done = _to_preflight()
    hint = "Set remote_docroot to the directory that holds wp-config.php"
    done["preflight"] = results(_ticket(7, "t7", state="failure", failed=True, ticket={
        "messages": ["Connecting", "could not find WordPress"],
        "diagnosis": {"code": "docroot_missing", "hint": hint, "matched": "could not find WordPress"}}))
    entry = sm.advance(fleet, done)[0]
    assert entry["result"] == "preflight_failed" and entry["diagnosis"]["code"] == "docroot_missing"
    assert entry["message"] == ("site 1001: preflight of migration 7 failed (docroot_missing): Set "
                                "site_migration_docroot to the directory that holds wp-config.php Messages: "
                                "Connecting | could not find WordPress")
    assert entry["diagnosis"]["hint"].startswith("Set site_migration_docroot")


def test_an_unfinished_preflight_names_the_timeout_variable():
    fleet, done = _to_preflight(site_migration_preflight_timeout=60)
    done["preflight"] = results(_ticket(7, "t7", state="running", failed=True, timed_out=True, msg="did not finish"))
    entry = sm.advance(fleet, done)[0]
    assert entry["result"] == "preflight_unfinished"
    assert "after site_migration_preflight_timeout=60s" in entry["message"]


def test_a_run_succeeds_or_fails_with_its_ticket():
    fleet, done = _to_preflight(2)
    done["preflight"] = results(_ticket(7, "p7"), _ticket(8, "p8"))
    done["run"] = results(_ticket(7, "r7"), _ticket(8, "r8", state="failure", failed=True,
                                                    ticket={"diagnosis": {"code": "unknown", "hint": "read"}}))
    ended = sm.advance(fleet, done)
    assert [e["result"] for e in ended] == ["succeeded", "run_failed"]
    assert ended[0]["run"] == {"ticket_id": "r7", "state": "success", "elapsed": 2.5, "response_count": 3,
                               "already_running": False, "diagnosis": None}


def test_a_resumed_run_is_followed_by_its_state():
    fleet, done = _to_preflight(2)
    done["create"] = results(_created("1001", 7, state="migration-running"),
                             _created("1002", 8, state="migration-running"))
    assert sm.step(fleet, "preflight", done)["count"] == 0 and sm.step(fleet, "run", done)["migration_ids"] == [7, 8]
    done["run"] = results({"migration_id": 7, "already_running": True, "state": "migration-succeeded"},
                          {"migration_id": 8, "already_running": True, "state": "migration-failed", "failed": True,
                           "msg": "The migration run that was already active ended in state migration-failed."})
    ended = sm.advance(fleet, done)
    assert ended[0]["result"] == "succeeded" and ended[0]["run"]["already_running"] is True
    assert ended[0]["message"] == "resumed: the run was already active; it ended in state migration-succeeded"
    assert ended[1]["result"] == "run_failed"


REFUSED = "migration %d cannot start: its latest preflight has not succeeded since the last change (state: %s)."


def test_a_run_seen_running_that_ended_before_ready_read_it_is_its_outcome():
    """Issue 23 item 7: the resume race. The create step saw the runs active; by the time
    migration_ready read them they had ended, and its partner rule refused a new start."""
    fleet, done = _to_preflight(3)
    done["create"] = results(_created("1001", 7, state="migration-running"),
                             _created("1002", 8, state="migration-running"), _created("1003", 9))
    done["preflight"] = results(_ticket(9, "p9"))
    done["run"] = results(
        {"migration_id": 7, "failed": True, "state": "migration-succeeded", "msg": REFUSED % (7, "migration-succeeded")},
        {"migration_id": 8, "failed": True, "state": "migration-failed", "msg": REFUSED % (8, "migration-failed")},
        {"migration_id": 9, "failed": True, "state": "migration-succeeded", "msg": REFUSED % (9, "migration-succeeded")})
    ended = sm.advance(fleet, done)
    assert ended[0]["result"] == "succeeded" and ended[0]["run"]["already_running"] is True
    assert ended[0]["message"] == "resumed: the run was already active; it ended in state migration-succeeded"
    assert ended[1]["result"] == "run_failed" and "seen running earlier" in ended[1]["message"]
    # not seen running by this play: the refusal stands
    assert ended[2]["result"] == "error" and "cannot start" in ended[2]["message"]


def test_check_mode_reports_what_would_happen():
    fleet, dummy = line_up({}, {})
    done = {"check": results({"site": "1001"}, {"site": "1002"}), "allow": results({"site": "1001"}, {"site": "1002"}),
            "create": results(_created("1001", None), _created("1002", 8))}
    done["preflight"] = results(_ticket(8, None))
    ended = sm.advance(fleet, done)
    assert [e["result"] for e in ended] == ["checked", "checked"]
    assert ended[0]["message"] == "check mode: the migration would be created"
    assert ended[1]["message"] == "check mode: preflight would be started"


def test_a_generated_key_is_installed_before_preflight_and_its_failure_stops_the_site():
    fleet, done = _to_preflight(2, site_migration_install_key=True)
    done["create"] = results(_created("1001", 7, ssh_id_pub="ssh-ed25519 AAAA one"),
                             _created("1002", 8, ssh_id_pub="ssh-ed25519 AAAA two"))
    todo = sm.step(fleet, "key", done)
    assert todo["count"] == 2 and len(todo["users"]) == 1          # one source user, one .ssh directory
    assert todo["sites"][1] == {"site": "1002", "source_host": "src.example", "remote_user": "www",
                                "ssh_id_pub": "ssh-ed25519 AAAA two", "install_become": False}
    done["key"] = {"results": [{"item": todo["sites"][1], "unreachable": True, "msg": "ssh: connect refused"},
                               {"item": todo["sites"][0], "changed": True}]}
    ended = sm.advance(fleet, done)
    assert ended[0]["stage"] == "preflight" and ended[0]["key_installed"] is True
    assert ended[1]["result"] == "error"
    assert ended[1]["message"] == "site 1002: installing the generated key on src.example failed: ssh: connect refused"
    # the shell that appends the key fails with its own words, not "non-zero return code"
    done["key"]["results"][0] = {"item": todo["sites"][1], "failed": True, "rc": 1, "msg": "non-zero return code",
                                 "stderr": "chown: invalid user: 'www'\n"}
    assert sm.advance(fleet, done)[1]["message"] == ("site 1002: installing the generated key on src.example failed: "
                                                     "chown: invalid user: 'www'")


def test_a_later_steps_stale_result_is_never_applied():
    """Registered results of an earlier run of the role in the same play stay until overwritten."""
    fleet, done = _to_preflight()
    done["run"] = results(_ticket(7, "old"))
    assert sm.step(fleet, "preflight", done)["migration_ids"] == [7]
    # Preflight has not run yet: the site was not reached, whatever an old run result says.
    entry = sm.advance(fleet, done)[0]
    assert entry["stage"] == "preflight" and entry["result"] is None
    assert sm.report(fleet, ["dest0.example"], done)["sites"][0]["result"] == "not_reached"


def test_a_step_that_did_not_run_leaves_its_sites_not_reached():
    fleet, dummy = line_up({}, {})
    ended = sm.advance(fleet, {"check": results({"site": "1001"}, {"site": "1002"})})
    assert [(e["stage"], e["result"]) for e in ended] == [("allow", None), ("allow", None)]


def test_the_vocabulary_comes_from_module_utils():
    for name in ("RUNNING_STATES", "FAILED_STATES", "MIGRATION_SUCCEEDED", "TICKET_TERMINAL", "SECRET_FIELDS",
                 "SECRET_PARAMS", "MIN_POLL_INTERVAL", "SITE_VALUE_RULES"):
        assert getattr(sm, name) is getattr(vocabulary, name), name


# ----------------------------------------------------------------------------------------- report and stop

REPORT_KEYS = {"generated", "sites_total", "counts", "destinations", "preflight_wait_seconds", "run_wait_seconds", "api_load",
               "refresh", "sites"}
SITE_KEYS = {"host", "site", "destination", "new_site", "site_id", "migration_id", "operation", "updated_fields",
             "auth", "remote",
             "key_installed", "preflight", "run", "duration", "result", "diagnosis", "uncertain", "message"}


def test_the_report_covers_every_host_and_keeps_its_keys():
    fleet, done = _to_preflight(2)
    done["preflight"] = results(_ticket(7, "p7"), _ticket(8, "p8", state="failure", failed=True,
                                                          ticket={"diagnosis": {"code": "unknown", "hint": "h"}}))
    done["run"] = results(_ticket(7, "r7"))
    rep = sm.report(fleet, ["dest0.example", "dest1.example", "late.example"], done, True, generated="T")
    assert set(rep) == REPORT_KEYS and all(set(s) == SITE_KEYS for s in rep["sites"])
    assert rep["counts"] == {"not_reached": 1, "preflight_failed": 1, "succeeded": 1} and rep["sites_total"] == 3
    first = rep["sites"][0]
    assert first["duration"] == 5.0 and first["remote"] == {"remote-host": "10.0.0.5"} and first["message"] == ""
    assert rep["sites"][2]["message"] == "stopped before the fleet steps: see the play output"
    assert rep["preflight_wait_seconds"] == 2.5 and rep["run_wait_seconds"] == 2.5 and rep["refresh"] is True
    assert rep["api_load"] == {"calls": 0, "peak_per_second": 0, "steps": {}}
    assert "[redacted]" not in json.dumps(rep)
    assert sm.step(fleet, "stop", done) == {"hosts": {"dest1.example": rep["sites"][1]["message"]},
                                            "changed": {"dest0.example": True}}


def test_the_report_states_the_load_of_the_waits():
    fleet, done = _to_preflight(2)
    done["preflight"] = results(_ticket(7, "p7"), _ticket(8, "p8"), api_load={"calls": 40, "peak_per_second": 9})
    done["run"] = results(_ticket(7, "r7"), _ticket(8, "r8"), api_load={"calls": 110, "peak_per_second": 4})
    rep = sm.report(fleet, ["dest0.example", "dest1.example"], done, True, generated="T")
    assert rep["api_load"] == {"calls": 150, "peak_per_second": 9, "steps": {
        "preflight": {"calls": 40, "peak_per_second": 9}, "run": {"calls": 110, "peak_per_second": 4}}}


def test_a_left_alone_site_is_reported_from_what_was_read():
    fleet, dummy = line_up({"site_migration_refresh": False})
    record = {"state": "migration-succeeded", "auth": "password", "args": {"remote-user": "www", "remote-pass": "x"}}
    done = {"info": results({"site": "1001", "site_id": 1001, "migration_id": 7, "state": "migration-succeeded",
                             "record": record})}
    rep = sm.report(fleet, ["dest0.example"], done, "false")
    site = rep["sites"][0]
    assert site["result"] == "left_alone" and site["migration_id"] == 7 and site["auth"] == "password"
    assert site["remote"] == {"remote-user": "www"} and rep["refresh"] is False
    assert sm.step(fleet, "stop", done) == {"hosts": {}, "changed": {}}      # left alone: "ok" in the recap


# ----------------------------------------------------------------------------------------- uncertain writes

def test_uncertain_writes_are_reported_per_site_with_their_step():
    fleet, done = _to_preflight(2)
    lost = {"write": "migration.create", "what": "the migration of site 1001", "errors": ["reset"],
            "resolved_by": "read", "outcome": "happened", "sends": 1}
    done["create"] = results(_created("1001", 7, uncertain=[lost]), _created("1002", 8))
    done["preflight"] = results(_ticket(7, "p7"), _ticket(8, "p8"))
    done["run"] = results(_ticket(7, "r7"), _ticket(8, "r8"))
    rep = sm.report(fleet, ["dest0.example", "dest1.example"], done, True, generated="T")
    assert rep["sites"][0]["uncertain"] == [dict(lost, step="create")] and rep["sites"][1]["uncertain"] == []
    assert [s["result"] for s in rep["sites"]] == ["succeeded", "succeeded"]


def test_a_preflight_followed_by_the_migrations_state_goes_on_to_the_run():
    """A preflight whose start answer was lost, which a read showed had started: no ticket, the module
    followed the migration's state (already_running)."""
    fleet, done = _to_preflight(2)
    done["preflight"] = results(dict(_ticket(7, None), already_running=True, state="preflight-succeeded"),
                                dict(_ticket(8, None), already_running=True, state="preflight-failed", failed=True,
                                     msg="The preflight followed by its migration's state ended in state "
                                         "preflight-failed."))
    ended = sm.advance(fleet, done, upto="run")
    assert ended[0]["stage"] == "run" and ended[0]["preflight"]["already_running"] is True
    assert ended[1]["result"] == "preflight_failed" and "followed by its migration's state" in ended[1]["message"]


# ------------------------------------------------------------------------- new destination sites

NEW = {"site_migration_client": "demo", "site_migration_admin_user": "admin",
       "site_migration_admin_email": "admin@example.com"}
ADMIN_PASS = "new-site admin pass 5f1e"


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
    assert sm.step(fleet, "find", {}) == {"count": 1, "client": "demo"}


def test_missing_sites_are_created_all_at_once_and_skip_the_allow_step():
    fleet, given = line_up(dict(NEW, site_migration_site="new.example", site_migration_admin_pass=ADMIN_PASS,
                                site_migration_php_version="8.3"),
                           dict(NEW, site_migration_site="Old.Example"),
                           dict(NEW, site_migration_site="two.example", site_migration_create_timeout=60))
    done = {"find": _listing("old.example")}
    todo = sm.step(fleet, "new", done, given)
    assert todo == {"count": 2, "client": "demo", "wait": True, "wait_timeout": 900, "poll_interval": 1.0,
                    "poll_max_interval": 12.0,
                    "sites": [{"domain": "new.example", "admin_user": "admin", "admin_email": "admin@example.com",
                               "admin_pass": ADMIN_PASS, "php_version": "8.3"},
                              {"domain": "two.example", "admin_user": "admin", "admin_email": "admin@example.com"}]}
    done["new"] = results(_site_created("two.example", 202), _site_created("new.example", 201))
    assert sm.step(fleet, "check", done, given)["count"] == 3
    done["check"] = results({"site": "new.example"}, {"site": "Old.Example"}, {"site": "two.example"})
    assert sm.step(fleet, "allow", done)["sites"] == ["Old.Example"]          # the irreversible call: old only
    done["allow"] = results({"site": "old.example"})
    assert sm.step(fleet, "create", done, given)["count"] == 3
    ended = sm.advance(fleet, done)
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
    assert sm.step(fleet, "allow", done)["sites"] == ["lost.example"]   # read back without the flag: allowed first
    done["allow"] = results({"site": "lost.example"})
    assert sm.step(fleet, "create", done, given)["count"] == 2
    ended = sm.advance(fleet, done)
    assert [(e["destination"], e["stage"]) for e in ended] == [("created", "create"), ("created", "create")]


def test_a_site_the_listing_missed_but_that_exists_takes_the_usual_path():
    fleet, given = line_up(dict(NEW, site_migration_site="alias.example"))
    done = {"find": _listing(), "new": results(_site_created("alias.example", 300, operation="none"))}
    ended = sm.advance(fleet, done)
    assert ended[0]["stage"] == "check" and ended[0]["destination"] == "existing"


def test_without_waiting_a_created_site_is_left_to_its_webhook():
    fleet, given = line_up(dict(NEW, site_migration_site="later.example", site_migration_create_wait=False))
    done = {"find": _listing()}
    assert sm.step(fleet, "new", done, given)["wait"] is False
    done["new"] = results(_site_created("later.example", 401, job=None))
    ended = sm.advance(fleet, done)
    assert ended[0]["result"] == "awaiting_provisioning" and "site_provisioned" in ended[0]["message"]
    assert sm.step(fleet, "stop", done) == {"hosts": {}, "changed": {"dest0.example": True}}  # fine: not stopped
    rep = sm.report(fleet, ["dest0.example"], done)
    assert rep["destinations"] == {"created": 1} and rep["counts"] == {"awaiting_provisioning": 1}


def test_check_mode_says_the_site_would_be_created():
    fleet, given = line_up(dict(NEW, site_migration_site="new.example"))
    done = {"find": _listing(), "new": results(_site_created("new.example", None))}
    ended = sm.advance(fleet, done)
    assert ended[0]["result"] == "checked" and "would be created" in ended[0]["message"]


def test_a_failed_listing_or_create_stops_its_sites_in_role_words():
    fleet, given = line_up(dict(NEW, site_migration_site="a.example"), dict(NEW, site_migration_site="b.example"))
    failed = sm.advance(fleet, {"find": {"failed": True, "msg": "client demo is not the client of this API key"}})
    assert [e["result"] for e in failed] == ["error", "error"]
    assert "listing the sites of site_migration_client demo failed" in failed[0]["message"]
    refusal = "The service refused the API key for client demo (HTTP 401). Check api_key (WPCLOUD_API_KEY)."
    refused = sm.advance(line_up(dict(NEW, site_migration_site="a.example"))[0],
                         {"find": {"failed": True, "failure": {"status": 401}, "msg": refusal}})
    assert refused[0]["message"] == ("site a.example: The service refused the API key for client demo (HTTP 401). Check "
                                     "wpcloud_api_key (WPCLOUD_API_KEY). (listing the sites of site_migration_client demo)")
    done = {"find": _listing(), "new": results(
        {"domain": "a.example", "failed": True, "msg": "admin_email must be an e-mail address like admin@example.com."},
        _site_created("b.example", 501))}
    ended = sm.advance(fleet, done)
    assert ended[0]["result"] == "error"
    assert "site_migration_admin_email must be an e-mail address" in ended[0]["message"]
    assert ended[1]["stage"] == "check"


@pytest.mark.parametrize("given, expected", [
    ({"site_migration_client": "demo"}, "set site_migration_admin_user too"),
    ({"site_migration_client": "demo", "site_migration_admin_user": "admin"}, "set site_migration_admin_email too"),
    ({"site_migration_admin_email": "a@example.com"},
     "site_migration_admin_email describes a destination site the role creates: set site_migration_client too"),
    (dict(NEW, site_migration_admin_user="web admin"), "site_migration_admin_user must be 1 to 60 letters"),
    (dict(NEW, site_migration_admin_email="nobody"), "site_migration_admin_email must be an e-mail address"),
    (dict(NEW, site_migration_php_version="eight"), "site_migration_php_version must be a version like 8.3"),
    (dict(NEW, site_migration_client=" "), "site_migration_client is empty"),
    (dict(NEW, site_migration_admin_pass=""), "site_migration_admin_pass is empty"),
    (dict(NEW, site_migration_create_timeout=0), "site_migration_create_timeout must be a positive number"),
])
def test_new_site_inputs_are_refused_by_their_variable_before_any_call(given, expected):
    fleet, dummy = line_up(dict(given, site_migration_site="new.example"))
    assert fleet[0]["result"] == "invalid_input" and expected in fleet[0]["message"], fleet[0]["message"]


def test_one_client_per_play():
    fleet, dummy = line_up(dict(NEW, site_migration_site="a.example"),
                           dict(NEW, site_migration_site="b.example", site_migration_client="other"))
    assert [e["result"] for e in fleet] == ["invalid_input", "invalid_input"]
    assert "site_migration_client differs between the sites of this play (demo, other)" in fleet[0]["message"]


def test_the_webhook_finds_only_the_destinations_left_to_it():
    hostvars = {"a.example": {"site_migration_create_wait": False},
                "b.example": {"site_migration_create_wait": "false", "site_migration_site": "4711"},
                "c.example": {"site_migration_create_wait": True},
                "d.example": {}}
    hosts = ["a.example", "b.example", "c.example", "d.example", "gone.example"]
    assert sm.waiting(hosts, hostvars) == [{"host": "a.example", "site": "a.example"},
                                           {"host": "b.example", "site": "4711"}]
    found = sm.waiting(hosts, hostvars, {"site_id": 9, "domain": "A.Example"})
    assert found == [{"host": "a.example", "site": "a.example"}]
    assert sm.waiting(hosts, hostvars, {"site_id": 4711, "domain": "other.example"})[0]["host"] == "b.example"
    assert sm.waiting(hosts, hostvars, {"site_id": 5, "domain": "c.example"}) == []
    with pytest.raises(AnsibleFilterError, match="site must be a site_info result"):
        sm.waiting(hosts, hostvars, "a.example")


# ----------------------------------------------------------------------------------------- slices

def _slice_report(hosts, result="succeeded", wait=2.0, generated="T"):
    rep = {"generated": generated, "sites_total": len(hosts), "counts": {result: len(hosts)},
           "destinations": {"existing": len(hosts)}, "preflight_wait_seconds": wait, "run_wait_seconds": wait * 2,
           "refresh": True, "sites": [{"host": h, "result": result} for h in hosts],
           "api_load": {"calls": 10 * len(hosts), "peak_per_second": 3, "steps": {}}}
    return rep


def test_slice_reports_merge_into_one_fleet_report():
    merged = sm.merge_reports([_slice_report(["d.example", "b.example"], wait=3.0, generated="T1"),
                               _slice_report(["c.example"], result="run_failed", generated="T2"),
                               _slice_report(["a.example"], generated="T3")], generated="NOW")
    assert merged["sites_total"] == 4
    assert [s["host"] for s in merged["sites"]] == ["a.example", "b.example", "c.example", "d.example"]
    assert merged["counts"] == {"run_failed": 1, "succeeded": 3} and merged["destinations"] == {"existing": 4}
    assert merged["preflight_wait_seconds"] == 3.0 and merged["run_wait_seconds"] == 6.0
    assert merged["merged_from"] == ["T1", "T2", "T3"] and merged["refresh"] is True
    # The slices ran at the same time: their peaks add up.
    assert merged["api_load"] == {"calls": 40, "peak_per_second": 9}
    assert set(merged) == REPORT_KEYS | {"merged_from"}
    # set_stats artifacts (name -> report), as a workflow node after a sliced job receives them
    artifacts = {"site_migration_report_2": _slice_report(["x.example"]), "site_migration_report_1": _slice_report(["y.example"])}
    assert sm.merge_reports(artifacts)["sites_total"] == 2


def test_a_host_in_two_slices_is_refused():
    with pytest.raises(AnsibleFilterError, match="host b.example is in reports 1 and 2"):
        sm.merge_reports([_slice_report(["a.example", "b.example"]), _slice_report(["b.example"])])
    with pytest.raises(AnsibleFilterError, match="no report to merge"):
        sm.merge_reports([])
    with pytest.raises(AnsibleFilterError, match="item 1 is not a site_migration report"):
        sm.merge_reports([{"sites": "x"}])


def test_each_sites_values_are_kept_by_name_and_null_ones_left_out():
    options = ["site_migration_site", "site_migration_remote_pass", "site_migration_docroot",
               "site_migration_source_domain"]
    # fleet_vars gives the defined variables of each host; an explicitly empty one stays (the line-up refuses it).
    host_vars = [{"site_migration_site": "1001", "site_migration_remote_pass": PASSWORD, "site_migration_source_domain": ""},
                 {"site_migration_site": "shop.example", "site_migration_remote_pass": None, "site_migration_docroot": "/srv/www",
                  "unrelated": "x"}]
    assert sm.inputs_of(host_vars, options) == [
        {"site_migration_site": "1001", "site_migration_remote_pass": PASSWORD, "site_migration_source_domain": ""},
        {"site_migration_site": "shop.example", "site_migration_docroot": "/srv/www"}]
    with pytest.raises(AnsibleFilterError, match="item 1 is a list, not a dict of variables"):
        sm.inputs_of([{}, ["a", "b", "c"]], options)


# ----------------------------------------------------------------------------------------- report name

AT = datetime.datetime(2026, 11, 26, 10, 45, 1, 123456, tzinfo=datetime.timezone.utc)


def test_the_report_of_a_controller_job_is_named_by_the_job():
    """Each slice of an AWX sliced job template is a job of its own (awx_job_id): slices that finish in the
    same second never share a report file or artifact name."""
    names = [sm.report_name(["dest%d.example" % k], job_id=4711 + k, now=AT) for k in range(4)]
    assert names[0] == "site-migration-20261126T104501-job4711"
    assert len(set(names)) == 4
    assert sm.report_name(["a"], job_id="4711", now=AT) == names[0]
    with pytest.raises(AnsibleFilterError, match=r"job_id must be the controller's job number \(awx_job_id\)"):
        sm.report_name(["a"], job_id="4711; rm", now=AT)


def test_the_report_of_a_run_outside_a_controller_is_named_by_its_hosts_and_time():
    slices = [["dest%02d.example" % i for i in range(k, 24, 4)] for k in range(4)]
    names = [sm.report_name(part, now=AT) for part in slices]
    assert len(set(names)) == 4 and all(n.startswith("site-migration-20261126T104501-123456-hosts-") for n in names)
    # the play's hosts, in any order: the same name; the next microsecond: another
    assert sm.report_name(list(reversed(slices[0])), now=AT) == names[0]
    later = AT.replace(microsecond=123457)
    assert sm.report_name(slices[0], now=later) != names[0]
    assert sm.report_name(slices[0], job_id=None, now=AT) == sm.report_name(slices[0], job_id="", now=AT)
    with pytest.raises(AnsibleFilterError, match="the play has no hosts"):
        sm.report_name([], now=AT)
    # the time is UTC by default, and the name is one a file and an artifact variable can carry
    assert re.match(r"^site-migration-\d{8}T\d{6}-\d{6}-hosts-[0-9a-f]{16}$", sm.report_name(["x"]))
