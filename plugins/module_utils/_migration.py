# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Migrations: the migration and migration_info module logic, and the record helpers shared with
migration_preflight and migration_ready.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import re
import tempfile

try:
    from cryptography.hazmat.primitives import serialization
    HAS_CRYPTOGRAPHY = True
except ImportError:  # pragma: no cover - reported when ssh_id is used
    serialization = None
    HAS_CRYPTOGRAPHY = False

from ansible_collections.wpcloud.hosting.plugins.module_utils._client import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils._common import (
    NULL_ID_MSG,
    ModuleFailure,
    api_failure,
    as_int_or_str,
    list_result,
    run_for_each,
    validate_host,
    validate_site,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils._site import read_allow_site_migration

# Module option -> the service's parameter name. The one place where the names are mapped.
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
PLAIN_FIELDS = ("remote_host", "remote_user", "remote_port", "remote_docroot", "remote_domain")
SECRET_FIELDS = ("remote_pass", "ssh_id", "ssh_id_pass")
SECRET_PARAMS = frozenset(FIELD_NAMES[f] for f in SECRET_FIELDS)
REDACTED = "[redacted]"

UNSENT_HINT = ("credentials cannot be read back to compare, and update_secret is on_create, so the service keeps "
               "the ones it has. If they changed, run this task once with update_secret: always, then run "
               "preflight again.")

RUNNING_STATES = frozenset(["migration-running"])
TERMINAL_RUN_STATES = frozenset(["migration-succeeded", "migration-failed"])
PREFLIGHT_OK = "preflight-succeeded"

_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$")

# What a new migration gets for a field the user left out. Not argument-spec defaults: a spec default
# cannot be told from a value the user gave, and an update sends only what the user gave (a default
# sent on update would overwrite the stored value, e.g. remote-port 2022 with 22).
CREATE_DEFAULTS = {"remote_port": 22}

# One migration's options: the module's own, and each element of its list form ``migrations``.
# No option that is sent to the service has a spec default (see CREATE_DEFAULTS).
_MIGRATION_OPTIONS = dict(
    site=dict(type="str"),
    migration_id=dict(type="int"),
    remote_host=dict(type="str"),
    remote_user=dict(type="str"),
    remote_port=dict(type="int"),
    remote_pass=dict(type="str", no_log=True),
    remote_docroot=dict(type="str"),
    remote_domain=dict(type="str"),
    ssh_id=dict(type="str", no_log=True),
    ssh_id_pass=dict(type="str", no_log=True),
    update_secret=dict(type="str", default="on_create", choices=["always", "on_create"]),
    state_file=dict(type="path"),
)
MUTUALLY_EXCLUSIVE = [("remote_pass", "ssh_id"), ("remote_pass", "ssh_id_pass")]
REQUIRED_BY = {"ssh_id_pass": ("ssh_id",)}

# In ``migrations`` the task's options are the defaults of every element, so elements have none.
_ELEMENT_OPTIONS = dict((name, dict((k, v) for k, v in spec.items() if k != "default"))
                        for name, spec in _MIGRATION_OPTIONS.items())
ARGUMENT_SPEC = dict(
    _MIGRATION_OPTIONS,
    migrations=dict(type="list", elements="dict", options=_ELEMENT_OPTIONS,
                    mutually_exclusive=MUTUALLY_EXCLUSIVE,
                    required_by=REQUIRED_BY, required_one_of=[("site", "migration_id")]),
)
MUTUALLY_EXCLUSIVE = MUTUALLY_EXCLUSIVE + [("migrations", "site"), ("migrations", "migration_id"),
                                           ("migrations", "state_file")]
REQUIRED_ONE_OF = [("site", "migration_id", "migrations")]
# Only these are the element's own; the others default to the task's value.
ELEMENT_ONLY = ("site", "migration_id", "state_file")

INFO_ARGUMENT_SPEC = dict(
    site=dict(type="str"),
    sites=dict(type="list", elements="str"),
    migration_id=dict(type="int"),
)
# site and migration_id together stay allowed (resolve_migration checks that they match).
INFO_MUTUALLY_EXCLUSIVE = [("sites", "site"), ("sites", "migration_id")]
INFO_REQUIRED_ONE_OF = [("site", "migration_id", "sites")]


# -- SSH keys ------------------------------------------------------------------------------------------

def _load_private_key(text, password):
    data = text.encode("utf-8")
    if b"BEGIN OPENSSH PRIVATE KEY" in data:
        return serialization.load_ssh_private_key(data, password=password)
    return serialization.load_pem_private_key(data, password=password)


def inspect_ssh_id(ssh_id, ssh_id_pass):
    """Check the key locally before anything is sent; return its public key's SHA256 fingerprint.

    Error texts never contain the key or the passphrase.
    """
    if not HAS_CRYPTOGRAPHY:
        raise ModuleFailure("ssh_id needs the Python library 'cryptography' on the controller to check the key "
                            "(pip install cryptography).")
    if not ssh_id.strip():
        raise ModuleFailure("ssh_id is empty: pass the text of an SSH private key (OpenSSH or PEM format).")
    unreadable = ModuleFailure("ssh_id could not be read as an SSH private key (OpenSSH or PEM format). "
                               "Pass the key's text, for example with lookup('file', 'id_ed25519').")
    # First without a passphrase: that tells an encrypted key from one that is not.
    try:
        key = _load_private_key(ssh_id, None)
        encrypted = False
    except TypeError:
        encrypted = True
    except Exception:  # pylint: disable=broad-exception-caught
        # cryptography raises ValueError and a few other types for malformed input; never echo it.
        raise unreadable
    if not encrypted and ssh_id_pass is not None:
        raise ModuleFailure("ssh_id_pass was given but ssh_id is not encrypted: remove ssh_id_pass "
                            "(the service must only get a passphrase for a protected key).")
    if encrypted:
        if ssh_id_pass is None:
            raise ModuleFailure("ssh_id is an encrypted private key: pass its passphrase in ssh_id_pass.")
        try:
            key = _load_private_key(ssh_id, ssh_id_pass.encode("utf-8"))
        except Exception as exc:  # pylint: disable=broad-exception-caught
            if type(exc).__name__ == "UnsupportedAlgorithm":
                # OpenSSH's own key encryption uses bcrypt_pbkdf, which cryptography delegates to bcrypt.
                raise ModuleFailure("ssh_id is a passphrase-protected OpenSSH key; checking its passphrase needs "
                                    "the Python library 'bcrypt' on the controller (pip install bcrypt).")
            raise ModuleFailure("ssh_id_pass does not open ssh_id: the passphrase is wrong.")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    blob = base64.b64decode(public.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


def auth_method(remote_pass=None, ssh_id=None, ssh_id_pass=None):
    if remote_pass is not None:
        return "password"
    if ssh_id is not None:
        return "key-passphrase" if ssh_id_pass is not None else "key"
    return "generated"


# -- records -------------------------------------------------------------------------------------------

def redact_record(record):
    """A migration record safe to return: credential fields always read [redacted]."""
    if not isinstance(record, dict):
        return record
    safe = {}
    for name, value in record.items():
        if name in SECRET_PARAMS or name == "generated-ssh-id":
            safe[name] = REDACTED
        elif isinstance(value, dict):
            safe[name] = redact_record(value)
        else:
            safe[name] = value
    return safe


def record_args(record):
    args = record.get("args") if isinstance(record, dict) else None
    return args if isinstance(args, dict) else {}


def record_state(record):
    state = record.get("state") if isinstance(record, dict) else None
    return str(state) if state is not None else None


def get_migration(client, migration_id, missing_ok=False):
    try:
        resp = client.call("migration.get", accept_status=(404,), migration_id=migration_id)
    except WPCloudAPIError as exc:
        raise api_failure(exc, "Reading migration %s" % migration_id)
    if resp.status == 404:
        if missing_ok:
            return None
        raise ModuleFailure("migration_id %s was not found (HTTP 404): check the ID recorded for this site."
                            % migration_id, failure={"status": 404, "operation": "migration.get"})
    return resp.data if isinstance(resp.data, dict) else {}


def migration_id_of(record, fallback=None):
    value = None
    for name in ("atomic_site_migration_id", "migration-id", "migration_id", "id"):
        if isinstance(record, dict) and record.get(name) not in (None, ""):
            value = record[name]
            break
    return as_int_or_str(value) if value is not None else fallback


def resolve_migration(client, params):
    """(migration_id, record) from migration_id, or from the site's allow_site_migration; (None, None)."""
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
    enabled, attached = read_allow_site_migration(client, site)
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


# -- the state file: the migration ID kept with the destination site ---------------------------------------

def read_state_file(path):
    """The recorded state of a site, or {} when there is none yet."""
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ModuleFailure("state_file %s could not be read as JSON (%s): fix or remove it; it holds the "
                            "migration ID of the site." % (path, exc.__class__.__name__))
    return data if isinstance(data, dict) else {}


def write_state_file(path, site, migration_id, **extra):
    """Atomically record the migration ID (write to a temporary file, fsync, rename)."""
    directory = os.path.dirname(os.path.abspath(path))
    # Many sites of one play write their files at once: tolerate the directory appearing meanwhile.
    os.makedirs(directory, mode=0o700, exist_ok=True)
    data = read_state_file(path)
    data.update(extra)
    data.update(site=site, migration_id=migration_id,
                updated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise ModuleFailure("state_file %s could not be written (%s). The migration ID is %s: record it."
                            % (path, exc.__class__.__name__, migration_id), migration_id=migration_id)
    return data


# -- the migration module ---------------------------------------------------------------------------------

def _validate(params):
    if params.get("site") is not None:
        validate_site(params["site"])
    if params.get("remote_host") is not None:
        validate_host(params["remote_host"], "remote_host")
    if params.get("remote_user") is not None and not _USER_RE.match(params["remote_user"]):
        raise ModuleFailure("remote_user must be an SSH user name (letters, digits, '_', '.', '@' and '-', "
                            "at most 64 characters), got an invalid value.")
    if params.get("remote_port") is not None and not 1 <= params["remote_port"] <= 65535:
        raise ModuleFailure("remote_port must be between 1 and 65535 (SSH usually listens on 22), got %d."
                            % params["remote_port"])
    docroot = params.get("remote_docroot")
    if docroot is not None:
        if not docroot.strip() or len(docroot) > 4096 or any(ord(c) < 32 for c in docroot):
            raise ModuleFailure("remote_docroot must be a directory path on the source host, without control "
                                "characters; leave it out to let the service try the common paths.")
    domain = params.get("remote_domain")
    if domain not in (None, ""):
        try:
            validate_site(domain, "remote_domain")
        except ModuleFailure:
            raise ModuleFailure("remote_domain must be the source's domain name like example.com, or an empty "
                                "string to use the destination site's default domain.")
        if domain.isdigit():
            raise ModuleFailure("remote_domain must be a domain name, not a number.")
    if params.get("remote_pass") is not None and params["remote_pass"] == "":
        raise ModuleFailure("remote_pass is empty: pass the SSH password, or leave it out.")
    if params.get("ssh_id_pass") is not None and params["ssh_id_pass"] == "":
        raise ModuleFailure("ssh_id_pass is empty: leave it out for a key without a passphrase.")
    if params.get("ssh_id") is not None:
        return inspect_ssh_id(params["ssh_id"], params.get("ssh_id_pass"))
    return None


def _desired_plain(params, create=False):
    """The readable fields the user gave, by the service's names, as typed (remote-port stays a number).

    ``create`` adds CREATE_DEFAULTS for the fields left out; an update sends only what was given.
    """
    wanted = {}
    for field in PLAIN_FIELDS:
        value = params.get(field)
        if value is None and create:
            value = CREATE_DEFAULTS.get(field)
        if value is None:
            continue
        wanted[FIELD_NAMES[field]] = value
    return wanted


def _same(current, wanted):
    """A stored field equals a wanted one: the service may return 2022 or "2022"."""
    return current is not None and str(current) == str(wanted)


def _shown(value, like):
    """A stored value in the diff, typed like the wanted value (2022, never "2022", next to 22)."""
    if isinstance(like, int) and not isinstance(like, bool):
        return as_int_or_str(value)
    return value


def _secret_form(params):
    return dict((FIELD_NAMES[f], params[f]) for f in SECRET_FIELDS if params.get(f) is not None)


def run(params, ctx):
    if params.get("migrations") is not None:
        return _run_migrations(params, ctx)
    result, note = _run_one(params, ctx)
    if result.get("credentials_not_sent"):
        ctx.warn(note or unsent_warning(result["credentials_not_sent"], [result["migration_id"]]))
    return result


def _null_target(params, ctx, fingerprint):
    """site and migration_id both null: the ID of a migration an earlier task only pretended to create
    (check mode), or a playbook error."""
    if not ctx.check_mode:
        raise ModuleFailure(NULL_ID_MSG % "migration_id (or site)")
    given = sorted(FIELD_NAMES[f] for f in PLAIN_FIELDS + SECRET_FIELDS if params.get(f) is not None)
    result = dict(changed=True, operation="update", migration_id=None, updated_fields=given,
                  msg="check mode: migration_id is null, as an earlier task in check mode only pretended to "
                      "create the migration; the fields given would be sent to it")
    if fingerprint:
        result["ssh_id_fingerprint"] = fingerprint
    if ctx.diff:
        result["diff"] = {"before": {}, "after": dict(_desired_plain(params), auth=auth_method(
            params.get("remote_pass"), params.get("ssh_id"), params.get("ssh_id_pass")))}
    return result


def _unsent(params, migration_id, recorded, fingerprint):
    """(credential options given but not sent under update_secret=on_create, warning for a known change).

    Credentials cannot be read back, so a given one may have changed, except an ssh_id whose fingerprint
    is the one the state file recorded when it was last sent: then the module can tell (same key: nothing
    to say; another key: the warning says so).
    """
    given = [f for f in SECRET_FIELDS if params.get(f) is not None]
    known = recorded.get("ssh_id_fingerprint") if recorded.get("migration_id") == migration_id else None
    if not (fingerprint and known):
        return given, None
    if known == fingerprint:
        return [], None
    return given, ("ssh_id is not the key last sent to migration %s (fingerprint %s; last sent %s), and it was "
                   "not sent because update_secret is on_create. Run this task once with update_secret: always "
                   "to send it, then run preflight again." % (migration_id, fingerprint, known))


def unsent_warning(fields, migration_ids):
    """The warning for credentials given and not sent (update_secret=on_create) to these migrations."""
    ids = ", ".join(str(m) for m in migration_ids[:10])
    if len(migration_ids) > 10:
        ids += " and %d more" % (len(migration_ids) - 10)
    where = "migration %s" % ids if len(migration_ids) == 1 else "%d migrations (%s)" % (len(migration_ids), ids)
    verb = "was" if len(fields) == 1 else "were"
    return "%s %s given but not sent to %s: %s" % ("/".join(fields), verb, where, UNSENT_HINT)


def _record_fingerprint(params, recorded, migration_id, fingerprint):
    """Keep the fingerprint of the key sent (None after a switch away from a key) in the state file."""
    if params.get("state_file") and recorded.get("ssh_id_fingerprint") != fingerprint:
        site = validate_site(params["site"]) if params.get("site") else recorded.get("site")
        write_state_file(params["state_file"], site, migration_id, ssh_id_fingerprint=fingerprint)


def _run_one(params, ctx):
    """One migration: (result, warning or None)."""
    fingerprint = _validate(params)
    recorded = read_state_file(params.get("state_file"))
    if params.get("migration_id") is None and recorded.get("migration_id") is not None:
        params = dict(params, migration_id=int(recorded["migration_id"]))
    if params.get("site") is None and params.get("migration_id") is None:
        return _null_target(params, ctx, fingerprint), None
    client = ctx.client()
    for field in SECRET_FIELDS:
        client.add_secret(params.get(field))
    migration_id, record = resolve_migration(client, params)
    if record is not None and params.get("state_file") and recorded.get("migration_id") != migration_id \
            and not ctx.check_mode:
        recorded = write_state_file(params["state_file"], validate_site(params["site"]) if params.get("site")
                                    else None, migration_id)
    desired_auth = auth_method(params.get("remote_pass"), params.get("ssh_id"), params.get("ssh_id_pass"))
    creds_given = desired_auth != "generated"
    result = dict(changed=False, operation="none", updated_fields=[])
    if fingerprint:
        result["ssh_id_fingerprint"] = fingerprint

    if record is None:
        for field in ("remote_host", "remote_user"):
            if params.get(field) is None:
                raise ModuleFailure("%s is required to create a migration for site %s." % (field, params["site"]))
        form = _desired_plain(params, create=True)
        form.update(_secret_form(params))
        result.update(changed=True, operation="create", migration_id=None, site=validate_site(params["site"]))
        if ctx.diff:
            result["diff"] = {"before": {}, "after": dict(_desired_plain(params, create=True), auth=desired_auth)}
        if ctx.check_mode:
            return result, None
        try:
            resp = client.call("migration.create", params=form, site=result["site"])
        except WPCloudAPIError as exc:
            raise api_failure(exc, "Creating a migration for site %s" % result["site"])
        data = resp.data if isinstance(resp.data, dict) else {}
        migration_id = migration_id_of(data)
        if migration_id is None:
            raise ModuleFailure("The service created a migration but returned no migration-id; read it from the "
                                "site's allow_site_migration with wpcloud.hosting.migration_info.",
                                failure={"operation": "migration.create", "message": resp.message})
        if params.get("state_file"):
            # Recorded before anything else can fail, so that a re-run manages this migration.
            write_state_file(params["state_file"], result["site"], migration_id, ssh_id_fingerprint=fingerprint)
        if data.get("ssh-id-pub"):
            result["ssh_id_pub"] = data["ssh-id-pub"]
        record = get_migration(client, migration_id, missing_ok=True) or {}
        result.update(public_record(record, migration_id))
        if "ssh_id_pub" not in result and record.get("ssh-id-pub"):
            result["ssh_id_pub"] = record["ssh-id-pub"]
        return result, None

    # Existing migration: compare what can be read, send only the differences in what the user gave.
    current = record_args(record)
    wanted = _desired_plain(params)
    if wanted.get("remote-port") == CREATE_DEFAULTS["remote_port"] and "remote-port" not in current:
        wanted.pop("remote-port")  # the service's default; nothing to change
    changes = dict((k, v) for k, v in wanted.items() if not _same(current.get(k), v) or (
        k == "remote-domain" and k not in current))
    current_auth = record.get("auth")
    note = None
    if creds_given and (params["update_secret"] == "always" or current_auth != desired_auth):
        changes.update(_secret_form(params))
    elif creds_given:
        unsent, note = _unsent(params, migration_id, recorded, fingerprint)
        if unsent:
            result["credentials_not_sent"] = unsent
    result.update(public_record(record, migration_id))
    if record.get("ssh-id-pub"):
        result["ssh_id_pub"] = record["ssh-id-pub"]
    result["updated_fields"] = sorted(k for k in changes)
    if ctx.diff:
        before = dict((k, _shown(current.get(k), v)) for k, v in changes.items() if k not in SECRET_PARAMS)
        after = dict((k, v) for k, v in changes.items() if k not in SECRET_PARAMS)
        if any(k in SECRET_PARAMS for k in changes):
            before["auth"] = current_auth
            after["auth"] = "%s (credentials replaced)" % desired_auth
        result["diff"] = {"before": before, "after": after}
    if not changes:
        return result, note
    if record_state(record) in RUNNING_STATES:
        raise ModuleFailure("Migration %s is actively running, so the service refuses updates. Wait for the run "
                            "to finish (wpcloud.hosting.response_ticket_wait or migration_ready with wait), or "
                            "pause it, then run this task again." % migration_id,
                            migration_id=migration_id, state=record_state(record))
    result.update(changed=True, operation="update")
    if ctx.check_mode:
        return result, note
    try:
        client.call("migration.update", params=changes, migration_id=migration_id)
    except WPCloudAPIError as exc:
        if exc.status == 409:
            raise ModuleFailure("The service refused to update migration %s (HTTP 409: %s). A run is probably "
                                "active: wait for it or pause it, then run this task again; the update was not "
                                "retried." % (migration_id, exc.api_message), failure=exc.to_dict(),
                                migration_id=migration_id)
        raise api_failure(exc, "Updating migration %s" % migration_id)
    if any(k in SECRET_PARAMS for k in changes):
        _record_fingerprint(params, recorded, migration_id, fingerprint)
    record = get_migration(client, migration_id, missing_ok=True) or record
    result.update(public_record(record, migration_id))
    return result, note


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


# -- the list form: many migrations in one task ----------------------------------------------------------

def _element_params(params, element):
    """One element of ``migrations`` as the options of a single migration.

    Unset element options take the task's value. Credentials are taken as a set: an element that
    gives any of remote_pass, ssh_id or ssh_id_pass takes none of the task's.
    """
    single = dict(params, migrations=None)
    if any(element.get(field) is not None for field in SECRET_FIELDS):
        for field in SECRET_FIELDS:
            single[field] = None
    for name, value in element.items():
        if value is not None or name in ELEMENT_ONLY:
            single[name] = value
    return single


def _label(params):
    if params.get("site") is not None:
        return "site %s" % params["site"]
    return "migration %s" % params.get("migration_id")


def _run_migrations(params, ctx):
    elements = [_element_params(params, element) for element in params["migrations"]]
    # Two elements for one site or one state file would race each other into two migrations.
    for key in ("site", "migration_id", "state_file"):
        seen = set()
        for single in elements:
            value = single.get(key)
            if value is None:
                continue
            value = str(value).strip().lower() if key == "site" else value
            if value in seen:
                raise ModuleFailure("migrations lists %s %s twice: give each site, migration and state_file "
                                    "once." % (key, single[key]))
            seen.add(value)
    client = ctx.client()
    # Registered before the threads start: every error text of every element is redacted.
    for single in elements:
        for field in SECRET_FIELDS:
            client.add_secret(single.get(field))

    notes = []

    def one(single):
        try:
            result, note = _run_one(single, ctx)
        except ModuleFailure as failure:
            for name in ("site", "migration_id"):
                if single.get(name) is not None:
                    failure.details.setdefault(name, single[name])
            raise
        if single.get("site") is not None:
            result.setdefault("site", single["site"])
        if result.get("credentials_not_sent"):
            notes.append((result["migration_id"], result["credentials_not_sent"], note))
        return result

    results = run_for_each(elements, one)
    # One warning for the fleet rather than one per migration; a key known to have changed gets its own.
    for known_change in [n[2] for n in notes if n[2]]:
        ctx.warn(known_change)
    generic = sorted((n[0], n[1]) for n in notes if not n[2])
    if generic:
        fields = sorted(set(f for item in generic for f in item[1]), key=SECRET_FIELDS.index)
        ctx.warn(unsent_warning(fields, [item[0] for item in generic]))
    return list_result(results, "migrations", _label)
