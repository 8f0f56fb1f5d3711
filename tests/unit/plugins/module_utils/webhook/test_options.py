# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The event source's options: cleaned and checked by name before anything starts, keys and the ack
token from the option, the file or the environment (then taken out of it)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("aiohttp")

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import options  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.webhook.source_parts import (  # noqa: E402  pylint: disable=wrong-import-position
    ACK_TOKEN, KEY, OLD_KEY,
)


def test_clean_args_drops_what_a_rulebook_rendered_empty():
    assert options.clean_args({"port": 1, "token": "", "spool_dir": "  ", "cafile": None, "max_age": 0}) == {"port": 1}
    assert options.clean_args({"max_age": "60"}) == {"max_age": "60"}
    with pytest.raises(ValueError, match="max_age must be a number of seconds"):
        options.clean_args({"max_age": "soon"})


@pytest.mark.parametrize("args,message", [
    ({}, "Missing required argument: port"),
    ({"port": 0}, "port must be an integer from 1 to 65535"),
    ({"port": 65536}, "port must be an integer from 1 to 65535"),
    ({"port": "https"}, "port must be an integer from 1 to 65535, got 'https'"),
    ({"port": True}, "port must be an integer"),
    ({"port": 1, "max_body_size": "big"}, "max_body_size must be a positive number of bytes"),
    ({"port": 1, "max_body_size": -1}, "max_body_size must be a positive number of bytes"),
    ({"port": 1, "dedupe_size": 0}, "dedupe_size must be a positive integer"),
    ({"port": 1, "emit_confirm_delay": -1}, "emit_confirm_delay must be a number of seconds"),
    ({"port": 1, "certfile": "/nonexistent/cert.pem"}, "certfile must be a readable file; /nonexistent/cert.pem"),
    ({"port": 1, "capath": "/nonexistent"}, "capath must be a directory"),
    ({"port": 1, "ack_timeout": -1}, "ack_timeout must be a number of seconds (0: acknowledgements off)"),
    ({"port": 1, "ack_timeout": "soon"}, "ack_timeout must be a number of seconds"),
    ({"port": 1, "max_unacked": 0}, "max_unacked must be a positive integer"),
    ({"port": 1, "max_attempts": "x"}, "max_attempts must be a positive integer"),
    ({"port": 1, "ack_url": "eda.example.com/ack"}, "ack_url must be the URL actions reach"),
])
def test_check_args_names_the_option(args, message):
    with pytest.raises(ValueError) as exc:
        options.check_args(args)
    assert message in str(exc.value)


def test_check_args_spool_dir_that_is_a_file(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    with pytest.raises(ValueError, match="spool_dir must be a directory"):
        options.check_args({"port": 1, "spool_dir": str(a_file)})
    options.check_args({"port": 1, "spool_dir": str(tmp_path / "new")})     # created later


def test_keys_from_args_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEYS", "env-a, env-b")
    keys_file = tmp_path / "keys"
    keys_file.write_text("# new first\nfile-a\n\nfile-b\n")
    keys = options.keys_from_args
    assert keys({"hmac_secret": ["a", " b "]}) == ["a", "b"]
    assert keys({"hmac_secret": "a, b", "hmac_secret_file": str(keys_file)}) == ["a", "b"]
    assert keys({"hmac_secret": " ", "hmac_secret_file": str(keys_file)}) == ["file-a", "file-b"]
    assert keys({}) == ["env-a", "env-b"]
    monkeypatch.delenv("WPCLOUD_WEBHOOK_HMAC_KEYS")
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEY", "single")
    assert keys({}) == ["single"]
    monkeypatch.delenv("WPCLOUD_WEBHOOK_HMAC_KEY")
    assert keys({}) == []


def test_check_keys():
    options.check_keys([KEY, OLD_KEY], False)
    options.check_keys([], True)
    with pytest.raises(ValueError, match="allow_unsigned"):
        options.check_keys([], False)
    with pytest.raises(ValueError) as exc:
        options.check_keys([KEY, "short-secret-value"], False)
    assert "key 2 of 2 is too weak" in str(exc.value) and "short-secret-value" not in str(exc.value)


def test_secrets_are_taken_out_of_the_environment(monkeypatch):
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEYS", KEY)
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEY", OLD_KEY)
    monkeypatch.setenv("WPCLOUD_WEBHOOK_ACK_TOKEN", ACK_TOKEN)
    assert options.keys_from_args({}) == [KEY] and options.ack_token_from_args({}) == ACK_TOKEN
    assert sorted(options.forget_secrets_in_environment()) == [
        "WPCLOUD_WEBHOOK_ACK_TOKEN", "WPCLOUD_WEBHOOK_HMAC_KEY", "WPCLOUD_WEBHOOK_HMAC_KEYS"]
    for name in ("WPCLOUD_WEBHOOK_HMAC_KEYS", "WPCLOUD_WEBHOOK_HMAC_KEY", "WPCLOUD_WEBHOOK_ACK_TOKEN"):
        assert name not in os.environ
    assert options.forget_secrets_in_environment() == []


def test_a_weak_ack_token_is_refused_without_echoing_it():
    with pytest.raises(ValueError) as exc:
        options.ack_token_from_args({"ack_token": "short-token"})
    assert "ack_token (or WPCLOUD_WEBHOOK_ACK_TOKEN) is too weak" in str(exc.value)
    assert "short-token" not in str(exc.value)
