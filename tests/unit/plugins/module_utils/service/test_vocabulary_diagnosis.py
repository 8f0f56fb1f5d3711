# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The diagnosis table (module_utils/service/vocabulary.py) on the emulator's own message texts."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import diagnose

# The emulator's message texts: a plain module of constants and formatters, imported, never run as a server.
EMULATOR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "support", "emulator"))


@pytest.fixture(scope="module")
def texts():
    sys.path.insert(0, EMULATOR)
    try:
        from executors import messages  # pylint: disable=import-error
    finally:
        sys.path.remove(EMULATOR)
    return messages


def test_each_cause_from_the_emulator_texts(texts):
    progress = [texts.connecting("www", "h", 22), texts.authenticated("h", 22, "publickey"),
                texts.looking_for(texts.COMMON_DOCROOTS_TEXT), texts.docroot_found("public_html")]
    assert diagnose(progress[:1] + [texts.permission_denied("www", "h"), texts.auth_failed("h", "www")])["code"] \
        == "auth_failed"
    assert diagnose(progress[:3] + [texts.docroot_missing(texts.COMMON_DOCROOTS_TEXT), texts.DOCROOT_MISSING_HINT])[
        "code"] == "docroot_missing"
    assert diagnose(progress + [texts.WP_NOT_FOUND, texts.WP_CLI_MISSING])["code"] == "wp_cli_missing"
    assert diagnose(progress + [texts.RSYNC_NOT_FOUND, texts.RSYNC_MISSING])["code"] == "rsync_missing"
    assert diagnose(progress[:1] + [texts.key_not_loaded("incorrect passphrase supplied to decrypt private key")])[
        "code"] == "auth_failed"


def test_progress_lines_alone_are_not_a_cause(texts):
    # "Found WordPress installation" must not read as a missing docroot.
    result = diagnose([texts.docroot_found("public_html"), "Migration failed: disk full"])
    assert result["code"] == "unknown" and result["matched"] is None
    assert "ticket messages" in result["hint"]


def test_last_message_wins():
    assert diagnose(["rsync: command not found", "Permission denied (publickey)."])["code"] == "auth_failed"
    assert diagnose([])["code"] == "unknown"
