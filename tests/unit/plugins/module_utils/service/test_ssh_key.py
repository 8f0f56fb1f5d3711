# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""_ssh_key: an ssh_id checked on the controller before anything is sent (its format, its passphrase), its
fingerprint as ssh-keygen shows it, and error texts that never hold the key or the passphrase."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.ssh_key import inspect_ssh_id

PHRASE = "phrase-Canary-7"


@pytest.fixture(scope="module")
def key():
    return ed25519.Ed25519PrivateKey.generate()


def text(key, fmt=serialization.PrivateFormat.OpenSSH, phrase=None):
    encryption = serialization.BestAvailableEncryption(phrase.encode()) if phrase else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, fmt, encryption).decode()


def test_the_fingerprint_is_the_one_ssh_keygen_shows(key, tmp_path):
    if not shutil.which("ssh-keygen"):
        pytest.skip("ssh-keygen not installed")
    public = tmp_path / "id.pub"
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH))
    shown = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(public)], check=True, capture_output=True,
                           text=True).stdout.split()[1]
    assert inspect_ssh_id(text(key), None) == shown
    assert inspect_ssh_id(text(key, serialization.PrivateFormat.PKCS8), None) == shown           # PEM
    assert inspect_ssh_id(text(key, serialization.PrivateFormat.PKCS8, PHRASE), PHRASE) == shown  # encrypted PEM
    assert inspect_ssh_id(text(key, phrase=PHRASE), PHRASE) == shown                             # OpenSSH, bcrypt


@pytest.mark.parametrize("ssh_id, ssh_id_pass, message", [
    ("  \n", None, "ssh_id is empty"),
    ("not a key " + PHRASE, None, "ssh_id could not be read as an SSH private key"),
    ("KEY", PHRASE, "ssh_id_pass was given but ssh_id is not encrypted"),
    ("KEY-ENCRYPTED", None, "ssh_id is an encrypted private key: pass its passphrase in ssh_id_pass"),
    ("KEY-ENCRYPTED", "wrong-" + PHRASE, "ssh_id_pass does not open ssh_id: the passphrase is wrong"),
])
def test_a_bad_key_is_refused_by_option_name_without_its_text(key, ssh_id, ssh_id_pass, message):
    ssh_id = {"KEY": text(key), "KEY-ENCRYPTED": text(key, phrase=PHRASE)}.get(ssh_id, ssh_id)
    with pytest.raises(ModuleFailure) as raised:
        inspect_ssh_id(ssh_id, ssh_id_pass)
    assert message in raised.value.msg
    assert PHRASE not in raised.value.msg and "PRIVATE KEY" not in raised.value.msg
