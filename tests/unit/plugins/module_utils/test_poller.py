# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Diagnosis table and ticket parsing, on the emulator's own message texts and on tolerant shapes."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils._poller import (
    diagnose,
    parse_count,
    parse_messages,
    parse_status,
)

EXECUTORS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "support", "emulator"))


@pytest.fixture(scope="module")
def texts():
    sys.path.insert(0, EXECUTORS)
    try:
        from executors import messages  # pylint: disable=import-error
    finally:
        sys.path.remove(EXECUTORS)
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


@pytest.mark.parametrize("data,status,count,messages", [
    ({"status": "running", "response_count": 3}, "running", 3, []),
    ({"state": "SUCCESS", "response-count": "5"}, "success", 5, []),
    ({"status": "failure", "responses": [{"message": "a"}, {"text": "b"}, "c"]}, "failure", None, ["a", "b", "c"]),
    ({"messages": ["x"]}, "running", None, ["x"]),
    (None, "running", None, []),
    ([], "running", None, []),
])
def test_ticket_shapes(data, status, count, messages):
    assert parse_status(data) == status
    assert parse_count(data) == count
    assert parse_messages(data) == messages
