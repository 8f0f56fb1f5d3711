# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""When a migration's credentials are sent (the migration module's update_secret), and what the state file
keeps of the ones last sent so that a re-run can tell a changed credential from the same one.

The service never shows a credential again, so an update cannot compare it with the stored one. The state file
keeps the fingerprint of the key and a salted digest of the password last sent (runtime/state_file.py); what
they tell decides (docs/migration.md, "When credentials are sent"):

- ``when_changed`` (the default): sent when the migration is created, when the authentication method changes,
  and when the record shows the credential differs from the one last sent (spec 4.5 rule 4: correct with an
  update, then preflight again). Where nothing can be compared, as ``on_create``.
- ``on_create``: sent when the migration is created or the method changes. A credential known to differ is not
  sent, and the migration fails before any write: a preflight would use the stale one.
- ``always``: sent on every run (a secret rotated where no record can tell).

A passphrase (``ssh_id_pass``) goes with its key: the key's fingerprint judges both, and they are sent together.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.state_file import same_secret, secret_digest
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import OPTION_NAMES, SECRET_PARAMS

PASSWORD, KEY, KEY_PASS = SECRET_PARAMS

# The choices of update_secret (the migration module's and, by ROLE_VARIABLES, site_migration_update_secret).
WHEN_CHANGED = "when_changed"
ON_CREATE = "on_create"
ALWAYS = "always"
UPDATE_SECRET_CHOICES = [WHEN_CHANGED, ON_CREATE, ALWAYS]
UPDATE_SECRET_DEFAULT = WHEN_CHANGED

# What the state file keeps of the credentials last sent: never a credential.
FINGERPRINT_KEY = "ssh_id_fingerprint"
DIGEST_KEY = "remote_pass_digest"
# A state file that records another migration than the one managed now: what it kept is not this one's.
FORGOTTEN = {FINGERPRINT_KEY: None, DIGEST_KEY: None}

# What the record tells of the credentials given.
SAME, CHANGED, UNKNOWN = "same", "changed", "unknown"

UNSENT_HINT = ("credentials cannot be read back, and no record of the ones last sent tells whether they changed "
               "(no state_file, or none recorded in it for this migration yet), so the service keeps the ones it "
               "has. If they changed, set update_secret: always for one run, then run preflight again.")


def auth_method(remote_pass=None, ssh_id=None, ssh_id_pass=None):
    """The service's ``auth`` of a migration with these credentials."""
    if remote_pass is not None:
        return "password"
    if ssh_id is not None:
        return "key-passphrase" if ssh_id_pass is not None else "key"
    return "generated"


def given_options(params):
    """The module options of the credentials given, in the order the messages name them."""
    return [OPTION_NAMES[f] for f in SECRET_PARAMS if params.get(f) is not None]


def compare(params, recorded, migration_id, fingerprint):
    """SAME, CHANGED or UNKNOWN: the credentials given against the state file's record of those last sent to
    this migration (``fingerprint``: the given ssh_id's; a passphrase goes with its key)."""
    if not given_options(params) or recorded.get("migration_id") != migration_id:
        return UNKNOWN
    if params.get(KEY) is not None:
        known = recorded.get(FINGERPRINT_KEY)
        return UNKNOWN if not known else SAME if known == fingerprint else CHANGED
    known = recorded.get(DIGEST_KEY)
    return UNKNOWN if not known else SAME if same_secret(params[PASSWORD], known) else CHANGED


class Decision:
    """What happens to the credentials given to an existing migration.

    ``send``: they go with the update (``why``: ``always``, ``method`` or ``changed``). Otherwise ``why`` is
    ``none`` (none given), ``same`` (the ones last sent: nothing to say) or ``unknown`` (not sent, and
    ``not_sent`` names them for the warning)."""

    def __init__(self, send, why, not_sent=None):
        self.send, self.why, self.not_sent = send, why, list(not_sent or [])


def decide(params, migration_id, recorded, fingerprint, current_auth):
    """The Decision for the credentials in ``params`` (fields by the service's names, and update_secret) on
    migration ``migration_id``, whose record says ``current_auth``; ``recorded``: the state file's content.

    Raises ModuleFailure, before any write, when update_secret is on_create and a credential is known to
    differ from the one last sent: a preflight would use the stale one (issue 40)."""
    given = given_options(params)
    if not given:
        return Decision(False, "none")
    policy = params.get("update_secret") or UPDATE_SECRET_DEFAULT
    if policy == ALWAYS:
        return Decision(True, ALWAYS)
    if current_auth != auth_method(params.get(PASSWORD), params.get(KEY), params.get(KEY_PASS)):
        return Decision(True, "method")
    verdict = compare(params, recorded, migration_id, fingerprint)
    if verdict == SAME:
        return Decision(False, SAME)
    if verdict == UNKNOWN:
        return Decision(False, UNKNOWN, given)
    if policy == WHEN_CHANGED:
        return Decision(True, CHANGED)
    raise ModuleFailure(stale_message(params, migration_id, recorded, fingerprint), migration_id=migration_id,
                        credentials_not_sent=given)


def stale_message(params, migration_id, recorded, fingerprint):
    """Why a credential known to differ from the one last sent stops the migration (update_secret on_create)."""
    if params.get(KEY) is not None:
        what = ("ssh_id is not the key last sent to migration %s (fingerprint %s; last sent %s)"
                % (migration_id, fingerprint, recorded.get(FINGERPRINT_KEY)), "key")
    else:
        what = ("remote_pass is not the password last sent to migration %s (state_file %s keeps a digest of the "
                "one sent)" % (migration_id, params.get("state_file")), "password")
    return ("%s, and update_secret is on_create, so it is not sent: the migration keeps the %s sent before, which "
            "a preflight would use. Nothing was sent. Set update_secret: when_changed (the default) to send it, or "
            "give the %s last sent." % (what[0], what[1], what[1]))


def unsent_warning(fields, migration_ids):
    """The warning for credentials given and not sent (nothing to compare them with) to these migrations."""
    ids = ", ".join(str(m) for m in migration_ids[:10])
    if len(migration_ids) > 10:
        ids += " and %d more" % (len(migration_ids) - 10)
    where = "migration %s" % ids if len(migration_ids) == 1 else "%d migrations (%s)" % (len(migration_ids), ids)
    verb = "was" if len(fields) == 1 else "were"
    return "%s %s given but not sent to %s: %s" % ("/".join(fields), verb, where, UNSENT_HINT)


def sent_record(params, recorded, fingerprint):
    """What the state file keeps of the credentials sent now: the key's fingerprint and the password's digest
    (None for the kind not sent: after a switch the other kind's record is gone). A password that matches the
    recorded digest keeps that digest (no new salt, no rewrite)."""
    digest = None
    if params.get(PASSWORD) is not None:
        known = (recorded or {}).get(DIGEST_KEY)
        digest = known if known and same_secret(params[PASSWORD], known) else secret_digest(params[PASSWORD])
    return {FINGERPRINT_KEY: fingerprint, DIGEST_KEY: digest}
