# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Errors that say what to do: an unreachable API names api_url and the URL; a missing key names
WPCLOUD_API_KEY. The connection is refused by the fake HTTP layer (a real refused connection:
tests/system/test_client_https.py)."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.modules import migration_info

UNREACHABLE = "https://127.0.0.1:9"


def run_info(args, monkeypatch, env=None):
    for name in ("WPCLOUD_API_KEY", "WPCLOUD_API_URL", "WPCLOUD_CA_PATH", "WPCLOUD_VALIDATE_CERTS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    spec = migration_info.MODULE_SPEC
    validation = ArgumentSpecValidator(**spec).validate(dict(args))
    assert not validation.error_messages, validation.error_messages
    ctx = ModuleContext(validation.validated_parameters, spec["argument_spec"])
    try:
        return migration_info.run_logic(validation.validated_parameters, ctx)
    except ModuleFailure as failure:
        return failure
    finally:
        ctx.close()


def test_the_module_names_the_url_and_api_url(fake_api, monkeypatch):
    fake_api.fault("*", error="refused")
    failure = run_info({"migration_id": 5, "api_key": fake_api.api_key, "api_url": UNREACHABLE, "retries": 0},
                       monkeypatch)
    assert isinstance(failure, ModuleFailure)
    assert failure.msg.startswith("Reading migration 5: Could not reach %s/api/v1.0/migration/get/5: " % UNREACHABLE)
    assert "connection refused; check api_url" in failure.msg
    assert failure.details["failure"]["effect"] == "none"


def test_a_missing_api_key_names_the_environment_variable(fake_api, monkeypatch):
    failure = run_info({"migration_id": 5}, monkeypatch)
    assert isinstance(failure, ModuleFailure)
    assert "api_key is required" in failure.msg and "WPCLOUD_API_KEY" in failure.msg
    assert fake_api.calls == []


def test_an_empty_api_key_is_an_error_not_a_fallback(fake_api, monkeypatch):
    failure = run_info({"migration_id": 5, "api_key": ""}, monkeypatch, env={"WPCLOUD_API_KEY": "from-env"})
    assert isinstance(failure, ModuleFailure)
    assert "api_key is empty" in failure.msg
    assert fake_api.calls == []


def test_the_environment_variables_are_used_when_the_options_are_left_out(fake_api, monkeypatch):
    fake_api.add_migration(site="1002")
    result = run_info({"migration_id": 5001}, monkeypatch,
                      env={"WPCLOUD_API_KEY": fake_api.api_key, "WPCLOUD_API_URL": "https://env.wpcloud.test"})
    assert result["exists"] is True and result["migration_id"] == 5001
    assert fake_api.log[0]["headers"]["Auth"] == fake_api.api_key


def test_plain_http_is_refused_before_any_call(fake_api, monkeypatch):
    failure = run_info({"migration_id": 5, "api_key": "k", "api_url": "http://api.wpcloud.test"}, monkeypatch)
    assert "plain http://" in failure.msg and fake_api.calls == []
