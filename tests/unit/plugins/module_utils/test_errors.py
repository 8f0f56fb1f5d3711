# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Errors that say what to do: an unreachable API names api_url and the URL; a missing key names
WPCLOUD_API_KEY. No server: a closed port on 127.0.0.1 refuses the connection."""

from __future__ import annotations

import socket

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils._client import WPCloudAPIError, WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils._common import ModuleContext, ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_info


@pytest.fixture()
def closed_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def run_info(args, env=None, monkeypatch=None):
    for name in ("WPCLOUD_API_KEY", "WPCLOUD_API_URL", "WPCLOUD_CA_PATH", "WPCLOUD_VALIDATE_CERTS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    validation = ArgumentSpecValidator(**migration_info.MODULE_SPEC).validate(dict(args))
    assert not validation.error_messages, validation.error_messages
    ctx = ModuleContext(validation.validated_parameters)
    try:
        return migration_info.run_logic(validation.validated_parameters, ctx)
    except ModuleFailure as failure:
        return failure
    finally:
        ctx.close()


@pytest.mark.parametrize("operation,path", [("migration.get", {"migration_id": 5}),
                                            ("migration.update", {"migration_id": 5})])
def test_an_unreachable_api_names_the_url_and_api_url(closed_port, operation, path):
    client = WPCloudClient(api_url="https://127.0.0.1:%d" % closed_port, api_key="unit-test-key", retries=0)
    with pytest.raises(WPCloudAPIError) as caught:
        client.call(operation, **path)
    message = caught.value.message
    assert message.startswith("Could not reach https://127.0.0.1:%d/api/v1.0/migration/" % closed_port), message
    assert "connection refused; check api_url" in message
    assert caught.value.effect == "none"


def test_the_url_in_the_message_carries_no_credentials_or_query(closed_port):
    client = WPCloudClient(api_url="https://user:pw-Secret-1@127.0.0.1:%d" % closed_port, api_key="unit-test-key", retries=0)
    with pytest.raises(WPCloudAPIError) as caught:
        client.call("ticket.summary", params={"response-ticket-id": "t.1"})
    assert "pw-Secret-1" not in caught.value.message and "user" not in caught.value.message
    assert "https://127.0.0.1:%d/api/v1.0/response-ticket/get/summary:" % closed_port in caught.value.message


def test_the_module_says_it_too(closed_port, monkeypatch):
    failure = run_info({"migration_id": 5, "api_key": "k", "api_url": "https://127.0.0.1:%d" % closed_port,
                        "retries": 0}, monkeypatch=monkeypatch)
    assert isinstance(failure, ModuleFailure)
    assert "Could not reach https://127.0.0.1:%d/" % closed_port in failure.msg
    assert "connection refused; check api_url" in failure.msg


def test_a_missing_api_key_names_the_environment_variable(monkeypatch):
    failure = run_info({"migration_id": 5}, monkeypatch=monkeypatch)
    assert isinstance(failure, ModuleFailure)
    assert "api_key is required" in failure.msg and "WPCLOUD_API_KEY" in failure.msg


def test_an_empty_api_key_is_an_error_not_a_fallback(monkeypatch):
    failure = run_info({"migration_id": 5, "api_key": ""}, env={"WPCLOUD_API_KEY": "from-env"},
                       monkeypatch=monkeypatch)
    assert isinstance(failure, ModuleFailure)
    assert "api_key is empty" in failure.msg


def test_the_environment_variable_is_used_when_api_key_is_left_out(monkeypatch, closed_port):
    failure = run_info({"migration_id": 5, "retries": 0}, monkeypatch=monkeypatch,
                       env={"WPCLOUD_API_KEY": "from-env", "WPCLOUD_API_URL": "https://127.0.0.1:%d" % closed_port})
    # the key was found: the task got as far as the connection
    assert isinstance(failure, ModuleFailure) and "Could not reach" in failure.msg
