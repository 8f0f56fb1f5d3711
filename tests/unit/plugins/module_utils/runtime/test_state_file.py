# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""_state_file: the migration ID kept with a destination site, written atomically, read back, and the errors
that say what to do (a write that fails still names the migration ID); the salted digest of the password last
sent, which tells the same password from another and never holds it."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.state_file import (
    read_state_file,
    same_secret,
    secret_digest,
    write_state_file,
)

PASSWORD = "vaulted-Pass-1"


def test_a_missing_file_is_no_state(tmp_path):
    assert read_state_file(str(tmp_path / "none.json")) == {} and read_state_file(None) == {}


def test_written_atomically_in_a_new_directory_and_read_back(tmp_path):
    path = str(tmp_path / "state" / "1002.json")
    written = write_state_file(path, "1002", 5001, ssh_id_fingerprint="SHA256:x")
    assert read_state_file(path) == written
    assert written["site"] == "1002" and written["migration_id"] == 5001 and written["updated"].endswith("Z")
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    assert os.listdir(os.path.dirname(path)) == ["1002.json"]   # no temporary file left


def test_a_rewrite_keeps_what_it_does_not_change(tmp_path):
    path = str(tmp_path / "1002.json")
    write_state_file(path, "1002", 5001, ssh_id_fingerprint="SHA256:x")
    assert write_state_file(path, "1002", 5002)["ssh_id_fingerprint"] == "SHA256:x"
    assert json.load(open(path))["migration_id"] == 5002


def test_a_file_that_is_not_json_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "1002.json"
    path.write_text("{not json")
    with pytest.raises(ModuleFailure, match="could not be read as JSON .*fix or remove it"):
        read_state_file(str(path))


def test_a_failed_write_names_the_migration_id(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(ModuleFailure) as raised:
        write_state_file(str(tmp_path / "1002.json"), "1002", 5001)
    assert "The migration ID is 5001: record it." in raised.value.msg
    assert raised.value.details["migration_id"] == 5001 and os.listdir(str(tmp_path)) == []


def test_the_digest_tells_the_same_secret_from_another_and_never_holds_it():
    digest = secret_digest(PASSWORD)
    assert PASSWORD not in digest and digest.startswith("pbkdf2-sha256$")
    assert same_secret(PASSWORD, digest) and not same_secret("other", digest)
    assert secret_digest(PASSWORD) != digest                    # a new salt each time
    assert not same_secret(PASSWORD, "garbage") and not same_secret(PASSWORD, None)
