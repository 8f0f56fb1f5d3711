# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sites and step results that the tests of plugins/plugin_utils/site_migration/ share.

Inputs are what the role's "Read every site's inputs" (wpcloud.hosting.fleet_vars) gives, step results
are shaped like the list forms of the modules return them; the end-to-end runs are in
tests/system/test_role.py."""

from __future__ import annotations

import os

import yaml

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.inputs import lineup

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "roles", "site_migration")
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
    return lineup([inputs(**s) for s in sites], hosts, SPEC, hostvars), [inputs(**s) for s in sites]


def results(*items, **whole):
    return dict(whole, results=list(items), changed=False)


def created_result(site, migration_id, **extra):
    record = {"state": "new", "auth": "generated", "args": {"remote-host": "10.0.0.5", "remote-pass": "[redacted]"}}
    return dict({"site": site, "migration_id": migration_id, "site_id": int(site), "operation": "create",
                 "updated_fields": [], "state": "new", "record": record, "failed": False}, **extra)


def ticket_result(migration_id, ticket_id, state="success", **extra):
    ticket = {"ticket_id": ticket_id, "state": state, "elapsed": 2.5, "response_count": 3, "polls": 3}
    ticket.update(extra.pop("ticket", {}))
    return dict({"migration_id": migration_id, "ticket_id": ticket_id, "ticket": ticket, "ticket_state": state,
                 "failed": False, "changed": True}, **extra)


def fleet_at_preflight(n=1, **given):
    fleet, dummy = line_up(*[dict(given) for dummy in range(n)])
    sites = [str(1001 + i) for i in range(n)]
    done = {"check": results(*[{"site": s} for s in sites]), "allow": results(*[{"site": s} for s in sites]),
            "create": results(*[created_result(s, 7 + i) for i, s in enumerate(sites)])}
    return fleet, done


# A site that the role may create (site_migration_client), and the new site's administrator password.
NEW = {"site_migration_client": "demo", "site_migration_admin_user": "admin",
       "site_migration_admin_email": "admin@example.com"}
ADMIN_PASS = "new-site admin pass 5f1e"


def module_arguments(todo):
    """A step's module arguments, without the fleet it carries on to the next step."""
    return dict((k, v) for k, v in todo.items() if k not in ("fleet", "holds_secrets"))
