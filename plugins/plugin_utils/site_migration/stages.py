# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The stages of the role wpcloud.hosting.site_migration: its steps in order, the results a site can end
with, the role variables behind each message, and a module's message in the role's words.

A site's stage is the next step it takes (``STEPS``) or ``done``, with a ``result`` and a message that
names the site, the role variable (never the module option) and the fix.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import ROLE_VARIABLES

# The steps of the workflow, in order; a site at stage S takes step S next. "find" and "new" are
# spec 4.5 rule 1's preferred path: a destination named by domain that the client does not have yet
# is created with allow_site_migration (so it skips "allow", the irreversible call).
# "backup" (a copy of the destination before a run overwrites it), "restore" and "cutover" (the primary domain
# switched to the production domain, or back in a rollback) are the going-live steps (docs/go-live.md).
STEPS = ("find", "new", "info", "check", "allow", "create", "key", "preflight", "backup", "run", "restore", "cutover")
DONE = "done"
# What the role does with the sites of a play (site_migration_workflow): migrate them (and cut over the ones whose
# cutover is confirmed), migrate then cut over every one (go_live), only cut over (cutover), or roll back (rollback).
WORKFLOWS = ("migrate", "go_live", "cutover", "rollback")
# The workflows that copy from the source (the others never start a migration run).
MIGRATING = frozenset(["migrate", "go_live"])
# Results of a site that is not stopped at the end of the play ("awaiting_provisioning": created, its
# migration left to the site_provisioned webhook, playbooks/on_site_provisioned.yml).
# "rolled_back": the rollback workflow restored the site and switched its domain back.
FINE_RESULTS = frozenset(["succeeded", "left_alone", "checked", "awaiting_provisioning", "rolled_back"])
# The fine results that changed the site (or, "checked", would in a real run): the site's line of the play
# recap says "changed"; a site left alone is "ok".
CHANGED_RESULTS = frozenset(["succeeded", "checked", "awaiting_provisioning", "rolled_back"])
# How a site came to be a destination (the report's "destination").
CREATED = "created"
EXISTING = "existing"

# Every role variable starts so; module messages are put in the role's words with ROLE_VARIABLES.
PREFIX = "site_migration_"
# The wait of each step ends after the role's timeout variable of that step.
STEP_TIMEOUT = {"new": "site_migration_create_timeout", "preflight": "site_migration_preflight_timeout",
                "run": "site_migration_run_timeout", "backup": "site_migration_backup_timeout",
                "restore": "site_migration_backup_timeout", "cutover": "site_migration_cutover_timeout"}
# The role variables that describe a site to create, by the site module's option.
NEW_SITE = ("admin_user", "admin_email", "admin_pass", "php_version")
# The steps that start a ticket and wait for it: what the messages call it, what to do after a timeout,
# and what check mode would start.
WAITED = {"preflight": ("preflight of migration %s", "Run the role again to retry.", "preflight"),
          "run": ("the run of migration %s", "Run the role again: it waits for the run.", "the run")}
# The role's credentials (their variables), per site_migration_auth.
CREDENTIALS = {"password": (ROLE_VARIABLES["remote_pass"],),
               "key": (ROLE_VARIABLES["ssh_id"], ROLE_VARIABLES["ssh_id_pass"]), "generated": ()}
ALL_CREDENTIALS = tuple(variable for variables in CREDENTIALS.values() for variable in variables)

# What an explicitly empty (or blank) value would have to mean, and why it cannot; ``source_domain``
# is the one variable whose empty value means something (the destination's default domain).
EMPTY_HINTS = {
    "site": "set the destination site's ID or domain, or leave it unset for the inventory hostname",
    "source_host": "name the source server's inventory host, or leave it unset when the role installs no key",
    "remote_host": "set the source's host name or address as the service sees it, or leave it unset (undefined "
                   "or null) to take ansible_host of site_migration_source_host",
    "remote_user": "set the SSH user on the source, or leave it unset (undefined or null) to take ansible_user of "
                   "site_migration_source_host",
    "remote_pass": "set the SSH password of the remote user (from the vault)",
    "ssh_id": "set the text of the SSH private key (from the vault)",
    "ssh_id_pass": "leave it unset for a key without a passphrase",
    "docroot": "set the source's document root, or leave it unset to let the service try the common paths",
    "state_dir": "set a directory on the controller, or leave it unset for the default",
    "report_dir": "set a directory on the controller, or leave it unset for the default",
    "client": "set the client account's identifier to create missing destination sites, or leave it unset to "
              "migrate into existing sites only",
    "admin_user": "set the new site's WordPress administrator user name",
    "admin_email": "set the new site's WordPress administrator e-mail address",
    "admin_pass": "leave it unset to have the service generate the administrator's password",
    "php_version": "leave it unset for the service's default PHP version",
    "production_domain": "set the domain the site goes live on, or leave it unset for no cutover",
    "overwrite_live": "leave it unset, or set it to the live site's domain to refresh that live site from its source",
}

_OPTION_RE = re.compile(r"(?<![\w.-])(%s)(?![\w-])" % "|".join(sorted(ROLE_VARIABLES, key=len, reverse=True)))
_SITE_OPTION_RE = re.compile(r"^site (?=must |is )")
_STATE_FILE_RE = re.compile(r"(?<![\w.-])state_file (\S+)")


def role_message(text, step=None):
    """A module's message in the role's words: each module option becomes the role variable."""
    if text is None:
        return None
    text = _SITE_OPTION_RE.sub("site_migration_site ", str(text))
    text = _STATE_FILE_RE.sub(r"the state file \1 (in site_migration_state_dir)", text)
    text = _OPTION_RE.sub(lambda m: ROLE_VARIABLES[m.group(1)], text)
    if step in STEP_TIMEOUT:
        text = re.sub(r"(?<![\w.-])wait_timeout(?![\w-])", STEP_TIMEOUT[step], text)
    return text


def role_value(params, name):
    """The value of role variable site_migration_<name> in a site's (checked) inputs."""
    return params.get(PREFIX + name)


def converted(kind, value):
    """value converted as the argument spec would, or None when it cannot be (already reported)."""
    if value is None:
        return None
    try:
        return boolean(value, strict=True) if kind is bool else kind(value)
    except (TypeError, ValueError):
        return None
