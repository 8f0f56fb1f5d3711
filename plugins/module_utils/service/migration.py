# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Migrations: the migration and migration_info module logic, and the migration records (the one reader
of migration.get) that migration_preflight and migration_ready use too.

The migration logic (``run_one``; its entries and list form are migration_module.py) takes a migration's fields
under the service's names (``remote-pass``): its callers map their users' names to them once, the module its
options (FIELD_NAMES), the site_migration role its variables (ROLE_FIELDS). Its messages name the module option
of a field (OPTION_NAMES), which the role puts in its own words.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import re

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import NULL_ID_MSG, validate_host, validate_site
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.uncertain_writes import module_write, write_once
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import list_result, run_for_each
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure, api_failure
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import mask
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import (
    allow_known_off,
    allow_value,
    read_allow_site_migration,
    read_allow_site_migration_value,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_credentials import (
    FORGOTTEN,
    auth_method,
    decide,
    sent_record,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.ssh_key import inspect_ssh_id
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.state_file import read_state_file, write_state_file
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    OPTION_NAMES,
    PLAIN_PARAMS,
    RECORD_SECRETS,
    RUNNING_STATES,
    SECRET_PARAMS,
    as_int_or_str,
)

# The fields the logic names itself (the service's names, from the vocabulary).
HOST, USER, PORT, DOCROOT, DOMAIN = PLAIN_PARAMS
PASSWORD, KEY, KEY_PASS = SECRET_PARAMS

# A create for a site whose allow_site_migration is known to be off (an unset flag is unknown: sent as before).
ALLOW_OFF_MSG = ("site %s does not accept a migration: its allow_site_migration is off. Nothing was sent: allow "
                 "it first with wpcloud.hosting.site_allow_migration (site: %s, confirm_overwrite: true; the "
                 "site_migration role does this when site_migration_confirm_overwrite is true), then run this again.")

_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$")

# What a new migration gets for a field the user left out. Not argument-spec defaults: a spec default
# cannot be told from a value the user gave, and an update sends only what the user gave (a default
# sent on update would overwrite the stored value, e.g. remote-port 2022 with 22).
CREATE_DEFAULTS = {PORT: 22}


# -- records -------------------------------------------------------------------------------------------

def redact_record(record):
    """A migration record safe to return: every credential field reads as the mask, whatever it holds."""
    return mask(record, fields=RECORD_SECRETS)


def record_args(record):
    args = record.get("args") if isinstance(record, dict) else None
    return args if isinstance(args, dict) else {}


def record_state(record):
    state = record.get("state") if isinstance(record, dict) else None
    return str(state) if state is not None else None


def read_migration(client, migration_id):
    """The record of a migration, or None when the service does not know it (404). The one reader of
    migration.get: WPCloudAPIError for any other failure."""
    resp = client.call("migration.get", accept_status=(404,), migration_id=migration_id)
    if resp.status == 404:
        return None
    return resp.data if isinstance(resp.data, dict) else {}


def get_migration(client, migration_id, missing_ok=False):
    try:
        record = read_migration(client, migration_id)
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading migration %s" % migration_id)
    if record is None and not missing_ok:
        raise ModuleFailure("migration_id %s was not found (HTTP 404): check the ID recorded for this site."
                            % migration_id, failure={"status": 404, "operation": "migration.get"})
    return record


def migration_id_of(record, fallback=None):
    value = None
    for name in ("atomic_site_migration_id", "migration-id", "migration_id", "id"):
        if isinstance(record, dict) and record.get(name) not in (None, ""):
            value = record[name]
            break
    return as_int_or_str(value) if value is not None else fallback


def resolve_migration(client, params, flag=None):
    """(migration_id, record) from migration_id, or from the site's allow_site_migration; (None, None).
    ``flag`` (a dict), when given, gets ``off``: the site's allow_site_migration was read and is known off."""
    # An empty site is refused, never read as "no site" (that would call the API for site "None").
    site = validate_site(params["site"]) if params.get("site") is not None else None
    if site is None and params.get("migration_id") is None:
        raise ModuleFailure(NULL_ID_MSG % "migration_id (or site)")
    if params.get("migration_id") is not None:
        if params["migration_id"] <= 0:
            raise ModuleFailure("migration_id must be a positive integer.")
        record = get_migration(client, params["migration_id"])
        if site and site.isdigit():
            owner = as_int_or_str(record.get("atomic_site_id"))
            if owner not in (None, "") and str(owner) != site:
                raise ModuleFailure("migration_id %s belongs to site %s, not to site %s."
                                    % (params["migration_id"], owner, site))
        return params["migration_id"], record
    value = read_allow_site_migration_value(client, site)
    attached = allow_value(value)[1]
    if flag is not None:
        flag["off"] = allow_known_off(value)
    if attached is None:
        return None, None
    return attached, get_migration(client, attached)


def public_record(record, migration_id):
    return {
        "migration_id": migration_id,
        "site_id": as_int_or_str(record.get("atomic_site_id")),
        "state": record_state(record),
        "record": redact_record(record),
    }


# -- the migration module ---------------------------------------------------------------------------------

def _validate(params):
    if params.get("site") is not None:
        validate_site(params["site"])
    if params.get(HOST) is not None:
        validate_host(params[HOST], OPTION_NAMES[HOST])
    if params.get(USER) is not None and not _USER_RE.match(params[USER]):
        raise ModuleFailure("remote_user must be an SSH user name (letters, digits, '_', '.', '@' and '-', "
                            "at most 64 characters), got an invalid value.")
    if params.get(PORT) is not None and not 1 <= params[PORT] <= 65535:
        raise ModuleFailure("remote_port must be between 1 and 65535 (SSH usually listens on 22), got %d."
                            % params[PORT])
    docroot = params.get(DOCROOT)
    if docroot is not None:
        if not docroot.strip() or len(docroot) > 4096 or any(ord(c) < 32 for c in docroot):
            raise ModuleFailure("remote_docroot must be a directory path on the source host, without control "
                                "characters; leave it out to let the service try the common paths.")
    domain = params.get(DOMAIN)
    if domain not in (None, ""):
        try:
            validate_site(domain, OPTION_NAMES[DOMAIN])
        except ModuleFailure:
            raise ModuleFailure("remote_domain must be the source's domain name like example.com, or an empty "
                                "string to use the destination site's default domain.")
        if domain.isdigit():
            raise ModuleFailure("remote_domain must be a domain name, not a number.")
    if params.get(PASSWORD) is not None and params[PASSWORD] == "":
        raise ModuleFailure("remote_pass is empty: pass the SSH password, or leave it out.")
    if params.get(KEY_PASS) is not None and params[KEY_PASS] == "":
        raise ModuleFailure("ssh_id_pass is empty: leave it out for a key without a passphrase.")
    if params.get(KEY) is not None:
        return inspect_ssh_id(params[KEY], params.get(KEY_PASS))
    return None


def _desired_plain(params, create=False):
    """The readable fields the user gave, by the service's names, as typed (remote-port stays a number).

    ``create`` adds CREATE_DEFAULTS for the fields left out; an update sends only what was given.
    """
    wanted = {}
    for field in PLAIN_PARAMS:
        value = params.get(field)
        if value is None and create:
            value = CREATE_DEFAULTS.get(field)
        if value is not None:
            wanted[field] = value
    return wanted


def _stored_equals(current, wanted):
    """A stored field equals a wanted one: the service may return 2022 or "2022"."""
    return current is not None and str(current) == str(wanted)


def _typed_like_wanted(value, like):
    """A stored value in the diff, typed like the wanted value (2022, never "2022", next to 22)."""
    if isinstance(like, int) and not isinstance(like, bool):
        return as_int_or_str(value)
    return value


def _secret_form(params):
    return dict((f, params[f]) for f in SECRET_PARAMS if params.get(f) is not None)


def _auth(params):
    return auth_method(params.get(PASSWORD), params.get(KEY), params.get(KEY_PASS))


def _null_target(params, ctx, fingerprint):
    """site and migration_id both null: the ID of a migration an earlier task only pretended to create
    (check mode), or a playbook error."""
    if not ctx.check_mode:
        raise ModuleFailure(NULL_ID_MSG % "migration_id (or site)")
    given = sorted(f for f in PLAIN_PARAMS + SECRET_PARAMS if params.get(f) is not None)
    result = dict(changed=True, operation="update", migration_id=None, updated_fields=given,
                  msg="check mode: migration_id is null, as an earlier task in check mode only pretended to "
                      "create the migration; the fields given would be sent to it")
    if fingerprint:
        result["ssh_id_fingerprint"] = fingerprint
    if ctx.diff:
        result["diff"] = {"before": {}, "after": dict(_desired_plain(params), auth=_auth(params))}
    return result


def _record_sent(params, recorded, migration_id, fingerprint):
    """Keep what the state file records of the credentials just sent (sent_record), when it differs."""
    sent = sent_record(params, recorded, fingerprint)
    if params.get("state_file") and any(recorded.get(k) != v for k, v in sent.items()):
        site = validate_site(params["site"]) if params.get("site") else recorded.get("site")
        write_state_file(params["state_file"], site, migration_id, **sent)


def _recorded_migration(client, params, ctx, flag=None):
    """resolve_migration for the migration ID a state file recorded. When the service does not know that
    ID (a migration deleted, a service reset) and the site provably holds no such migration (its
    allow_site_migration holds another ID or none), the ID is forgotten, with a warning, and the site's own
    migration (or a new one) is managed instead; otherwise the failure names the state file and the fix."""
    recorded_id, state_file = params["migration_id"], params.get("state_file")
    try:
        return resolve_migration(client, params)
    except ModuleFailure as failure:
        if (failure.details.get("failure") or {}).get("operation") != "migration.get" \
                or failure.details["failure"].get("status") != 404:
            raise
    gone = "migration_id %s, recorded in the state file %s, was not found (HTTP 404)" % (recorded_id, state_file)
    site = validate_site(params["site"])      # the spec asks for a site (or a migration_id) with a state file
    attached = read_allow_site_migration(client, site)[1]
    if attached is not None and str(attached) == str(recorded_id):
        # The site says it holds that migration while the service cannot read it: not provably gone.
        raise ModuleFailure("%s, yet site %s holds it in allow_site_migration. Nothing was changed: ask WP Cloud "
                            "support about migration %s, or remove %s once it is known to be gone."
                            % (gone, site, recorded_id, state_file),
                            failure={"status": 404, "operation": "migration.get"})
    ctx.warn("%s, and site %s does not hold it (%s): the ID is forgotten and the site's %s. The state file is "
             "rewritten when that migration is recorded." % (
                 gone, site, "it holds migration %s" % attached if attached is not None else "it holds none",
                 "migration %s is managed" % attached if attached is not None else "new migration is created"))
    return resolve_migration(client, dict(params, migration_id=None), flag)


def run_one(params, ctx):
    """One migration, its fields under the service's names: its result (``credentials_not_sent``: the
    credentials given that nothing could be compared with, for the caller's warning)."""
    fingerprint = _validate(params)
    recorded = read_state_file(params.get("state_file"))
    from_state_file = params.get("migration_id") is None and recorded.get("migration_id") is not None
    if from_state_file:
        params = dict(params, migration_id=int(recorded["migration_id"]))
    if params.get("site") is None and params.get("migration_id") is None:
        return _null_target(params, ctx, fingerprint)
    client = ctx.client()
    flag = {}
    if from_state_file:
        migration_id, record = _recorded_migration(client, params, ctx, flag)
    else:
        migration_id, record = resolve_migration(client, params, flag)
    if record is not None and params.get("state_file") and recorded.get("migration_id") != migration_id \
            and not ctx.check_mode:
        # What it kept of the credentials sent was another migration's: nothing to compare with now.
        recorded = write_state_file(params["state_file"], validate_site(params["site"]) if params.get("site")
                                    else None, migration_id, **FORGOTTEN)
    desired_auth = _auth(params)
    result = dict(changed=False, operation="none", updated_fields=[])
    if fingerprint:
        result["ssh_id_fingerprint"] = fingerprint

    if record is None:
        for field in (HOST, USER):
            if params.get(field) is None:
                raise ModuleFailure("%s is required to create a migration for site %s."
                                    % (OPTION_NAMES[field], params["site"]))
        form = _desired_plain(params, create=True)
        form.update(_secret_form(params))
        result.update(changed=True, operation="create", migration_id=None, site=validate_site(params["site"]))
        if ctx.diff:
            result["diff"] = {"before": {}, "after": dict(_desired_plain(params, create=True), auth=desired_auth)}
        if ctx.check_mode:
            return result
        if flag.get("off"):
            # Read above: the service would refuse the create (403), which reads like a refused API key.
            raise ModuleFailure(ALLOW_OFF_MSG % (result["site"], result["site"]),
                                failure={"operation": "migration.create", "effect": "none"})
        operation, sends = "migration.create", []

        def send():
            # A repeat (after a read proved the first send had not taken effect) that the service refuses
            # with 409 "already holds a migration": the first send took effect after the read; read again.
            repeat = bool(sends)
            sends.append(operation)
            resp = client.call(operation, params=form, accept_status=(409,) if repeat else (), site=result["site"])
            if resp.status == 409:
                found = happened()
                if found is not None:
                    return found
                raise ModuleFailure("The service refused the repeated create for site %s (HTTP 409: %s)."
                                    % (result["site"], resp.message),
                                    failure={"operation": "migration.create", "status": 409})
            data = resp.data if isinstance(resp.data, dict) else {}
            if migration_id_of(data) is None:
                raise ModuleFailure("The service created a migration but returned no migration-id; read it from "
                                    "the site's allow_site_migration with wpcloud.hosting.migration_info.",
                                    failure={"operation": "migration.create", "message": resp.message})
            return data

        def happened():
            # The site's allow_site_migration holds the migration's ID once one exists.
            attached = read_allow_site_migration(client, result["site"])[1]
            return {"migration-id": attached} if attached is not None else None

        data = module_write(operation, send, happened, "the migration of site %s" % result["site"],
                            "Creating a migration for site %s" % result["site"], result)
        migration_id = migration_id_of(data)
        if params.get("state_file"):
            # Recorded before anything else can fail, so that a re-run manages this migration.
            write_state_file(params["state_file"], result["site"], migration_id, **sent_record(params, {}, fingerprint))
        if data.get("ssh-id-pub"):
            result["ssh_id_pub"] = data["ssh-id-pub"]
        record = get_migration(client, migration_id, missing_ok=True) or {}
        result.update(public_record(record, migration_id))
        if "ssh_id_pub" not in result and record.get("ssh-id-pub"):
            result["ssh_id_pub"] = record["ssh-id-pub"]
        return result

    # Existing migration: compare what can be read, send only the differences in what the user gave.
    current = record_args(record)
    wanted = _desired_plain(params)
    if wanted.get(PORT) == CREATE_DEFAULTS[PORT] and PORT not in current:
        wanted.pop(PORT)  # the service's default; nothing to change
    # An empty remote-domain is sent when the record has none (empty means "the destination's default").
    changes = dict((k, v) for k, v in wanted.items() if not _stored_equals(current.get(k), v) or (k == DOMAIN and k not in current))
    current_auth = record.get("auth")
    # Before any write: on_create with a credential known to differ fails here (migration_credentials.py).
    credentials = decide(params, migration_id, recorded, fingerprint, current_auth)
    if credentials.send:
        changes.update(_secret_form(params))
    elif credentials.not_sent:
        result["credentials_not_sent"] = credentials.not_sent
    result.update(public_record(record, migration_id))
    if record.get("ssh-id-pub"):
        result["ssh_id_pub"] = record["ssh-id-pub"]
    result["updated_fields"] = sorted(k for k in changes)
    if ctx.diff:
        before = dict((k, _typed_like_wanted(current.get(k), v)) for k, v in changes.items() if k not in SECRET_PARAMS)
        after = dict((k, v) for k, v in changes.items() if k not in SECRET_PARAMS)
        if any(k in SECRET_PARAMS for k in changes):
            before["auth"] = current_auth
            after["auth"] = "%s (credentials replaced)" % desired_auth
        result["diff"] = {"before": before, "after": after}
    if not changes:
        return result
    if record_state(record) in RUNNING_STATES:
        raise ModuleFailure("Migration %s is actively running, so the service refuses updates. Wait for the run "
                            "to finish (wpcloud.hosting.response_ticket_wait or migration_ready with wait), or "
                            "pause it, then run this task again." % migration_id,
                            migration_id=migration_id, state=record_state(record))
    result.update(changed=True, operation="update")
    if ctx.check_mode:
        return result
    uncertain = []

    def send():
        return client.call("migration.update", params=changes, migration_id=migration_id)

    def happened():
        try:
            return update_applied(client, migration_id, changes)
        except ModuleFailure as failure:
            failure.details["uncertain"] = uncertain
            raise

    try:
        write_once("migration.update", send, happened, uncertain, "the update of migration %s" % migration_id)
    except WPCloudAPIError as exc:
        if exc.status == 409:
            raise ModuleFailure("The service refused to update migration %s (HTTP 409: %s). A run is probably "
                                "active: wait for it or pause it, then run this task again; the update was not "
                                "retried." % (migration_id, exc.api_message), failure=exc.to_dict(),
                                migration_id=migration_id, uncertain=uncertain)
        failure = api_failure(exc, "Updating migration %s" % migration_id)
        failure.details["uncertain"] = uncertain
        raise failure
    if uncertain:
        result["uncertain"] = uncertain
    if any(k in SECRET_PARAMS for k in changes):
        _record_sent(params, recorded, migration_id, fingerprint)
    record = get_migration(client, migration_id, missing_ok=True) or record
    result.update(public_record(record, migration_id))
    return result


def update_applied(client, migration_id, changes):
    """Whether an update whose answer was lost took effect, from a read of the migration: True, or None
    to send it again. An update is idempotent while the migration is not running, so sending the same
    fields twice is safe; the read decides only what it can show. Secrets are never returned (and
    ``auth`` names only the kind), so an update that carries one is sent again; plain fields that all
    read back as wanted mean it happened. A migration that is running now refuses updates: the task
    fails and says so (the re-run compares again)."""
    record = get_migration(client, migration_id, missing_ok=True) or {}
    state = record_state(record)
    if state in RUNNING_STATES:
        raise ModuleFailure("The answer to the update of migration %s was lost and the migration is now running "
                            "(state %s), so the update cannot be sent again. Run this task again when the run has "
                            "ended: it compares the fields first." % (migration_id, state),
                            migration_id=migration_id, state=state)
    if any(k in SECRET_PARAMS for k in changes):
        return None
    shown = record_args(record)
    return True if all(_stored_equals(shown.get(k), v) for k, v in changes.items()) else None


def run_info(params, ctx):
    if params.get("sites") is not None:
        ctx.client()
        results = run_for_each(params["sites"], lambda site: dict(run_info(dict(params, site=site, sites=None), ctx),
                                                                  site=site))
        for site, result in zip(params["sites"], results):
            result.setdefault("site", site)
        return list_result(results, "sites", lambda r: "site %s" % r["site"])
    if params.get("site") is None and params.get("migration_id") is None and ctx.check_mode:
        return dict(changed=False, exists=False, migration_id=None,
                    msg="check mode: migration_id is null, as an earlier task in check mode only pretended to "
                        "create the migration")
    client = ctx.client()
    migration_id, record = resolve_migration(client, params)
    if record is None:
        return dict(changed=False, exists=False, migration_id=None)
    result = dict(changed=False, exists=True)
    result.update(public_record(record, migration_id))
    if record.get("ssh-id-pub"):
        result["ssh_id_pub"] = record["ssh-id-pub"]
    return result
