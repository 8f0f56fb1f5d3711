# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The state file: the migration ID (and the fingerprint of the key last sent) kept with a destination site.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import binascii
import datetime
import hashlib
import hmac
import json
import os
import tempfile

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure


# A salted, slow digest of a password last sent (never the password): enough to tell whether a re-run
# gives the same one (why: docs/api-choices.md; its cost: docs/performance.md).
DIGEST_ITERATIONS = 10000


def secret_digest(value, salt=None):
    """``pbkdf2-sha256$ITERATIONS$SALT$DIGEST`` of a secret, with a new random salt unless one is given."""
    salt = os.urandom(16) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha256", str(value).encode("utf-8"), salt, DIGEST_ITERATIONS)
    return "pbkdf2-sha256$%d$%s$%s" % (DIGEST_ITERATIONS, binascii.hexlify(salt).decode(),
                                       binascii.hexlify(digest).decode())


def same_secret(value, digest):
    """True when ``digest`` (from secret_digest) is of ``value``; False for any other or unreadable digest."""
    try:
        kind, iterations, salt, expected = str(digest).split("$")
        salt = binascii.unhexlify(salt)
        iterations = int(iterations)
    except (ValueError, TypeError, binascii.Error):
        return False
    if kind != "pbkdf2-sha256":
        return False
    found = hashlib.pbkdf2_hmac("sha256", str(value).encode("utf-8"), salt, iterations)
    return hmac.compare_digest(binascii.hexlify(found).decode(), expected)


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
