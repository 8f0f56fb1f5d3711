# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The service's vocabulary: every name and rule of the WP Cloud partner API that the collection relies on,
defined once and imported wherever it is used (tests/unit/plugins/test_vocabulary.py checks it; it imports
the filter too, so it runs with the controller's tests, not in tests/unit/plugins/module_utils/).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Standard library only: the role's filter (plugins/filter/site_migration.py) imports it on every template.
What is not the service's but ours lives in its layer: the connection's defaults in api/client.py, the wait
contract (its defaults and the service's one-second poll minimum) in runtime/arguments.py, the adaptive wait's
constants in service/poller.py.
"""

from __future__ import annotations

import re

# -- migrations ---------------------------------------------------------------------------------------------

# The states of ``state`` in migration.get that the collection acts on (the others: ``new``, after a
# create or an update, and whatever else the service reports, are neither active nor ended).
PREFLIGHT_RUNNING = "preflight-running"
PREFLIGHT_SUCCEEDED = "preflight-succeeded"
PREFLIGHT_FAILED = "preflight-failed"
MIGRATION_RUNNING = "migration-running"
MIGRATION_SUCCEEDED = "migration-succeeded"
MIGRATION_FAILED = "migration-failed"

# A run is active: the service refuses updates, preflights and a second run.
RUNNING_STATES = frozenset([MIGRATION_RUNNING])
# A preflight or a run is active: a wait that follows the migration's state goes on.
ACTIVE_STATES = frozenset([PREFLIGHT_RUNNING, MIGRATION_RUNNING])
# The run ended, well or not.
RUN_TERMINAL_STATES = frozenset([MIGRATION_SUCCEEDED, MIGRATION_FAILED])
# The last preflight or run failed.
FAILED_STATES = frozenset([PREFLIGHT_FAILED, MIGRATION_FAILED])
# Where a started preflight / run leaves the migration: how a read tells whether a start whose
# answer was lost took effect.
PREFLIGHT_STARTED_STATES = frozenset([PREFLIGHT_RUNNING, PREFLIGHT_SUCCEEDED, PREFLIGHT_FAILED])
RUN_STARTED_STATES = frozenset([MIGRATION_RUNNING, MIGRATION_SUCCEEDED, MIGRATION_FAILED])

# Module option -> the service's parameter name: the one table that maps a module user's names. From there on
# a value carries its field's name only (the migration logic's keys are the fields: service/migration.py).
FIELD_NAMES = {
    "remote_host": "remote-host",
    "remote_user": "remote-user",
    "remote_port": "remote-port",
    "remote_pass": "remote-pass",
    "remote_docroot": "remote-docroot",
    "remote_domain": "remote-domain",
    "ssh_id": "ssh-id",
    "ssh_id_pass": "ssh-id-pass",
}
# The module option of each field: what the migration logic's messages call it (the role's are put in its
# own words by ROLE_VARIABLES).
OPTION_NAMES = dict((field, option) for option, field in FIELD_NAMES.items())
PLAIN_FIELDS = ("remote_host", "remote_user", "remote_port", "remote_docroot", "remote_domain")
PLAIN_PARAMS = tuple(FIELD_NAMES[f] for f in PLAIN_FIELDS)
# The credentials, which the service never shows again (in the order the messages name them).
SECRET_FIELDS = ("remote_pass", "ssh_id", "ssh_id_pass")
SECRET_PARAMS = tuple(FIELD_NAMES[f] for f in SECRET_FIELDS)
# Every field of a migration record that holds a secret: the credentials, and the private key of an
# identity the service generates.
RECORD_SECRETS = frozenset(SECRET_PARAMS) | frozenset(["generated-ssh-id"])
# Variable of the role wpcloud.hosting.site_migration -> the migration's field it gives: the one table that maps
# the role's names to the fields. The role's setup phase puts each value straight under its field
# (plugins/plugin_utils/site_migration/steps.py, migration_arguments); the line-up resolves an unset host,
# user or port from the source host first.
ROLE_FIELDS = {
    "site_migration_remote_host": "remote-host",
    "site_migration_remote_port": "remote-port",
    "site_migration_remote_user": "remote-user",
    "site_migration_remote_pass": "remote-pass",
    "site_migration_ssh_id": "ssh-id",
    "site_migration_ssh_id_pass": "ssh-id-pass",
    "site_migration_docroot": "remote-docroot",
    "site_migration_source_domain": "remote-domain",
}
# Connection option -> the variable of the role (and of the collection's playbooks) that gives it. The role takes
# each from this variable, else the play's module_defaults, else the WPCLOUD_* environment
# (plugins/plugin_utils/site_migration/connection.py).
CONNECTION_VARIABLES = {
    "api_url": "wpcloud_api_url",
    "api_key": "wpcloud_api_key",
    "ca_path": "wpcloud_ca_path",
    "validate_certs": "wpcloud_validate_certs",
    "timeout": "wpcloud_timeout",
    "rate_limit": "wpcloud_rate_limit",
}
# Module option -> the variable of the role that gives it: the role says every message in its own words with
# this table (plugins/plugin_utils/site_migration); a migration field's variable is ROLE_FIELDS' (written once).
ROLE_VARIABLES = dict([(OPTION_NAMES[field], variable) for variable, field in ROLE_FIELDS.items()], **{
    "update_secret": "site_migration_update_secret",
    "poll_interval": "site_migration_poll_interval",
    "poll_max_interval": "site_migration_poll_max_interval",
    # A new destination site's values (the site module's options).
    "admin_user": "site_migration_admin_user",
    "admin_email": "site_migration_admin_email",
    "admin_pass": "site_migration_admin_pass",
    "php_version": "site_migration_php_version",
    # Where the calls go and as whom (not timeout and rate_limit: module messages use those words plainly too).
    "api_url": CONNECTION_VARIABLES["api_url"],
    "api_key": CONNECTION_VARIABLES["api_key"],
    "ca_path": CONNECTION_VARIABLES["ca_path"],
    "validate_certs": CONNECTION_VARIABLES["validate_certs"],
})

# -- response tickets ---------------------------------------------------------------------------------------

TICKET_ID_PARAM = "response-ticket-id"
TICKET_RUNNING = "running"
TICKET_SUCCESS = "success"
TICKET_FAILURE = "failure"
TICKET_TERMINAL = frozenset([TICKET_SUCCESS, TICKET_FAILURE])
# Our names: a ticket that exists but has no response yet (HTTP 202), and a ticket or migration that a
# wait could not read.
TICKET_PENDING = "pending"
UNREADABLE = "error"

# -- sites and client metadata ------------------------------------------------------------------------------

# The site meta key that allows an incoming migration and then holds the migration's ID (spec 2.2).
ALLOW_SITE_MIGRATION = "allow_site_migration"
# Values of a site's allow_site_migration that mean "enabled, no migration attached", and "not enabled".
# How the service spells the flag is not documented (a public SDK sends "true"); anything else non-empty
# is taken as a migration ID.
ALLOW_FLAG_VALUES = frozenset(["true", "1", "yes", "on", "enabled"])
ALLOW_OFF_VALUES = frozenset(["", "false", "0", "no", "off", "disabled", "none", "null"])

# -- sites ----------------------------------------------------------------------------------------------

# Fields of a site record (get-site) that hold credentials: the service returns them, the collection
# never does (site_info, inventory).
SITE_CREDENTIAL_FIELDS = frozenset(["db_pass", "smtp_pass", "site_api_key"])
# The fact (a list of domains) that wpcloud.hosting.site sets in check mode for the sites it would create, so
# that the role's preview of a later play treats them as about to exist rather than missing (404).
CHECK_MODE_CREATED_SITES_FACT = "wpcloud_check_mode_created_sites"
# The most sites one get-sites page may hold (the service caps ``limit`` there).
SITES_PAGE_MAX = 1000
# A create-site / delete-site job: its ``_status`` values, the final ones first (the docs' words).
JOB_SUCCESS = "success"
JOB_FAILURE = "failure"
# Every word that ends a job, lower-cased (a status is compared case-insensitively): the docs' two and
# those public clients accept (the PHP SDK's JobPoller: complete, completed, done, ok; failed, error).
# Any other status keeps a wait polling, and is shown in its progress and its final message.
JOB_SUCCESS_WORDS = frozenset([JOB_SUCCESS, "complete", "completed", "done", "ok"])
JOB_FAILURE_WORDS = frozenset([JOB_FAILURE, "failed", "error"])
JOB_FINAL = JOB_SUCCESS_WORDS | JOB_FAILURE_WORDS
# Words a job is known to pass through before its end (a status outside these and JOB_FINAL is named
# as unknown in a wait's messages).
JOB_PENDING_WORDS = frozenset(["queued", "running", "pending", "started", "in-progress", "processing"])
# The create-site fields the site module sends, by option name (the service's names).
SITE_CREATE_FIELDS = {"domain": "domain_name", "admin_user": "admin_user", "admin_email": "admin_email",
                      "admin_pass": "admin_pass", "php_version": "php_version"}
# Fields of a site record that the site module compares with its options (no API changes them).
SITE_RECORD_FIELDS = {"admin_user": "wp_admin_user", "admin_email": "wp_admin_email", "php_version": "php_version"}
# What a new site's values must look like (the site module and the role check them before any write),
# with the fix a message gives; the option name leads the message.
SITE_VALUE_RULES = {
    "admin_user": (re.compile(r"^[A-Za-z0-9._@-]{1,60}$"), "must be 1 to 60 letters, digits and . _ @ - (no spaces)"),
    "admin_email": (re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$"), "must be an e-mail address like admin@example.com"),
    "php_version": (re.compile(r"^[0-9]+\.[0-9]+$"), "must be a version like 8.3 (the service lists the ones it offers)"),
}

# Client metadata keys the service never returns once set.
WRITE_ONLY_KEYS = frozenset(["webhook_hmac_key"])

# -- going live: domains, SSL, DNS (issue 37; docs/api-choices.md "Going live") --------------------------------

# {service}/{identifier} of the domain and backup-list paths: the client's name and the site ID (sent first: the
# ID never changes when the domain does), or this word and the site's primary domain (a service that refuses
# the first form with 400).
SERVICE_BY_DOMAIN = "domain"
# The field of a site-alias answer (list, add, remove) that lists the site's aliases.
ALIAS_DOMAINS = "domains"
# update-site-domain's answer (a job; [] when the domain is already primary) and its job's type and data.
JOB_ID_FIELD = "job_id"
DOMAIN_JOB_TYPE = "update-site-domain"
JOB_DOMAIN_FIELD = "domain_name"
# ssl-info: a certificate ID (the field's name varies: the docs), or a broken record after a failed attempt.
SSL_CERTIFICATE_FIELDS = ("acme_certificate_id", "ssl_certificate_id")
SSL_BROKEN_RECORD = "broken_record"
SSL_DETAIL_FIELDS = ("ca_provider", "certificate_expiration_date", "validation_expiration")
SSL_BROKEN_FIELDS = ("reason", "last_error", "retry_date", "failcount")
SSL_RETRY_QUEUED = "queued"
# The states the collection reports for a domain's certificate: issued (a certificate ID), failed (a broken
# record), pending (neither: the first attempt not made yet, or a retry queued); unknown when ssl-info could not
# tell (it did not know the domain).
SSL_ISSUED = "issued"
SSL_PENDING = "pending"
SSL_FAILED = "failed"
SSL_UNKNOWN = "unknown"
# get-ips: the client's ranges (CIDR) and the addresses suggested for a domain's A records.
IPS_RANGES = "ips"
IPS_SUGGESTED = "suggested"
DNS_A = "A"
DNS_TXT = "TXT"

# -- going live: on-demand backups and restore ------------------------------------------------------------------

# The module's word for a backup's content -> the service's kind in on-demand-backup/create/{site}/{kind}.
BACKUP_KINDS = {"files": "fs", "database": "db"}
# The types site-backups-list shows, by kind: the on-demand one (created by request) and the automatic one.
ONDEMAND_TYPES = {"fs": "ondemand-fs", "db": "ondemand-db"}
AUTOMATIC_TYPES = {"fs": "fs", "db": "db"}
# A listed backup's fields; IDs are opaque strings (digits, a number or "bkp-1234" by source).
BACKUP_ID = "atomic_backup_id"
BACKUP_SITE_ID = "atomic_site_id"
BACKUP_TIMESTAMP = "backup_timestamp"
BACKUP_TYPE = "type"
# "YYYY-MM-DD HH:MM:SS" in UTC (the docs); some readings give Unix seconds instead.
BACKUP_TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
# create and delete answer a request ID (the docs, the Python SDK), or "job_id" (the PHP SDK's docblock): nothing
# to poll either way; the on-demand-backup event carries the same request ID.
BACKUP_REQUEST_FIELDS = ("atomic_backup_request_id", JOB_ID_FIELD)
# Restore: form field restore_from[] (the files backup, then the database backup), the site meta that allows it
# (a recent Unix time) and the suspension it needs (503); the answer's job and response ticket.
RESTORE_FROM = "restore_from"
ALLOW_RESTORE = "allow_restore"
SUSPENDED = "suspended"
SUSPENDED_FOR_RESTORE = "503"
META_VALUE = "value"
RESTORE_JOB_FIELDS = ("atomic_job_id", JOB_ID_FIELD)
RESTORE_JOB_TYPE = "restore-site"
RESTORE_TICKET_FIELD = "response_ticket_id"
# A restore refused because a backup is listed but not ready yet (a service that lists a backup as soon as create
# answers): the restore is sent again while the wait lasts. Matched in the service's message, any case.
RESTORE_NOT_READY = re.compile(r"not (?:yet )?ready", re.IGNORECASE)
# The events that report these changes (spec 6.2; the event source passes them on).
DOMAIN_EVENT = "domain_name_changed"
BACKUP_EVENT = "on-demand-backup"
BACKUP_EVENT_CREATED = "created"


def as_int_or_str(value):
    """The service writes IDs as '5678' or 5678; return an int when it is one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


# -- diagnoses of a failed preflight or run -----------------------------------------------------------------

# Matching of failure messages to causes. The real service's wording is not published, so this is
# the one place to adjust. Messages are read from the last to the first (the cause of a failure is
# reported last; earlier lines are progress such as "Found WordPress installation in public_html"),
# and within one message the first code whose pattern matches wins.
DIAGNOSES = [
    ("auth_failed",
     [r"permission denied", r"authentication (?:failed|failure)", r"could not authenticate",
      r"too many authentication failures", r"bad passphrase", r"incorrect passphrase",
      r"host key verification failed", r"load key .*(?:invalid format|passphrase)"],
     "The service could not log in to the source over SSH. If the migration uses the identity the service "
     "generated, add the returned ssh_id_pub to ~/.ssh/authorized_keys of remote_user on remote_host; "
     "otherwise check remote_user, remote_pass or ssh_id/ssh_id_pass and that remote_port reaches sshd. "
     "Then update the migration and run preflight again."),
    ("wp_cli_missing",
     [r"(?:^|[\s:])wp: (?:command )?not found", r"wp-cli (?:is )?(?:not|un)available", r"wp-cli.*not (?:found|installed)",
      r"wp-cli.*missing"],
     "WP-CLI (the wp command) is not available to remote_user on the source. Install WP-CLI on the source "
     "host, in a directory on the user's PATH for non-interactive SSH sessions, and run preflight again."),
    ("rsync_missing",
     [r"rsync: (?:command )?not found", r"rsync (?:is )?(?:not|un)available", r"rsync.*not installed"],
     "rsync is not available to remote_user on the source. Install rsync on the source host (for example "
     "apt-get install rsync) and run preflight again."),
    ("docroot_missing",
     [r"could not (?:locate|find) (?:a |the )?wordpress", r"no wordpress installation", r"wp-config\.php.*not found",
      r"(?:document root|docroot).*(?:not found|does not exist|missing|no such)", r"set remote[-_]docroot"],
     "No WordPress document root was found on the source. Set remote_docroot to the directory that "
     "holds wp-config.php (for example /home/USER/public_html), update the migration and run preflight again."),
]
UNKNOWN_HINT = ("The failure did not match a known cause; read the ticket messages. Correct the problem "
                "with an update of the migration, then run preflight again.")


def diagnose(messages):
    """Return {code, hint, matched} for a failed ticket's messages."""
    for message in reversed(list(messages or [])):
        for code, patterns, hint in DIAGNOSES:
            for pattern in patterns:
                match = re.search(pattern, message, re.IGNORECASE)
                if match:
                    return {"code": code, "hint": hint, "matched": match.group(0).strip()}
    return {"code": "unknown", "hint": UNKNOWN_HINT, "matched": None}
