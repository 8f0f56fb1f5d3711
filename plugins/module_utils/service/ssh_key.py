# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""SSH private keys given in ssh_id: checked on the controller before anything is sent.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import base64
import hashlib

try:
    from cryptography.hazmat.primitives import serialization
    HAS_CRYPTOGRAPHY = True
except ImportError:  # pragma: no cover - reported when ssh_id is used
    serialization = None
    HAS_CRYPTOGRAPHY = False

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure


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
