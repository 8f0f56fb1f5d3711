# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Each site's inputs checked and resolved (plugins/plugin_utils/site_migration/inputs.py), without a server."""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.inputs import lineup, waiting
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.report import report
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.stages import EMPTY_HINTS
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments
from ansible_collections.wpcloud.hosting.tests.unit.plugins.plugin_utils.site_migration.fleet_builders import (
    HOSTVARS,
    NEW,
    PASSWORD,
    SPEC,
    created_result,
    inputs,
    line_up,
    results,
)


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
    assert "remote_port" not in step_arguments(fleet, "check", {"info": results({"site": "1001", "migration_id": None})},
                                               given)["migrations"][0]


@pytest.mark.parametrize("variable", sorted("site_migration_" + name for name in EMPTY_HINTS))
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
    assert step_arguments(fleet, "check", {}, given)["migrations"][0]["remote-domain"] == ""


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
            "create": results(*[created_result(x, 7 + i, ssh_id_pub="ssh-ed25519 AAAA %d" % i) for i, x in enumerate(sites)])}
    todo = step_arguments(fleet, "key", done)
    assert todo["count"] == 3
    # one inventory entry to add for the source, at the first site's address; two users' directories
    assert todo["absent_sources"] == [{"source_host": "src-host", "remote_host": "198.51.100.7", "remote_port": 2222}]
    assert [u["remote_user"] for u in todo["users"]] == ["shop", "news"]
    # Ansible counts the added source host among the play's hosts from then on: it is no site of the report
    rep = report(fleet, ["dest0.example", "dest1.example", "dest2.example", "src-host"], done)
    assert [e["host"] for e in rep["sites"]] == ["dest0.example", "dest1.example", "dest2.example"]
    # the same site with its source host in the run's inventory: nothing to add, the become default as before
    known, dummy = line_up(dict(given, site_migration_source_host="src.example"))
    assert known[0]["source_known"] is True and known[0]["install_become"] is True
    one = dict((name, results(done[name]["results"][0])) for name in done)
    assert step_arguments(known, "key", one)["absent_sources"] == []


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
        lineup([inputs()], ["a", "b"], SPEC, HOSTVARS)


@pytest.mark.parametrize("given, expected", [
    ({"site_migration_client": "demo", "site_migration_admin_email": "a@example.com"},
     "set site_migration_admin_user too"),
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
    assert waiting(hosts, hostvars) == [{"host": "a.example", "site": "a.example"},
                                        {"host": "b.example", "site": "4711"}]
    found = waiting(hosts, hostvars, {"site_id": 9, "domain": "A.Example"})
    assert found == [{"host": "a.example", "site": "a.example"}]
    assert waiting(hosts, hostvars, {"site_id": 4711, "domain": "other.example"})[0]["host"] == "b.example"
    assert waiting(hosts, hostvars, {"site_id": 5, "domain": "c.example"}) == []
    with pytest.raises(AnsibleFilterError, match="site must be a site_info result"):
        waiting(hosts, hostvars, "a.example")


def test_the_lineup_takes_what_fleet_vars_read_null_meaning_unset():
    # fleet_vars gives every name asked for that a host defines, null ones included; an explicitly empty one
    # stays (and is refused by its name).
    read = [inputs(site_migration_remote_pass=None, site_migration_docroot=None),
            inputs(site_migration_site="1002", site_migration_docroot="")]
    fleet = lineup(read, ["dest0.example", "dest1.example"], SPEC, HOSTVARS)
    assert (fleet[0]["result"], fleet[0]["message"]) == (None, "")
    assert fleet[1]["result"] == "invalid_input" and "site_migration_docroot is empty" in fleet[1]["message"]
    with pytest.raises(AnsibleFilterError, match="item 1 is a list, not a dict of variables"):
        lineup([inputs(), ["a", "b"]], ["dest0.example", "dest1.example"], SPEC, HOSTVARS)
