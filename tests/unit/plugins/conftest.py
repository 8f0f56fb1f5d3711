# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fake service under every client a test makes, and the modules' logic run on it."""

from __future__ import annotations

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.tests.unit.plugins.fake_service import FakeService


@pytest.fixture()
def fake_api(monkeypatch):
    """A FakeService that every WPCloudClient of the test sends through (both transports)."""
    service = FakeService()
    monkeypatch.setattr(WPCloudClient, "_transport", lambda client: service.adapter())
    monkeypatch.setattr(WPCloudClient, "_pool", lambda client, **tls: service.pool(**tls))
    return service


@pytest.fixture()
def run_logic(fake_api):
    """run_logic(module, args, check_mode=False, diff=False, progress=None) -> (result or ModuleFailure, warnings):
    the module's logic on arguments validated by its own spec (as the action plugin does), on fake_api, with the
    result masked as the runners mask it."""

    def run(module, args, check_mode=False, diff=False, progress=None):
        spec = module.MODULE_SPEC
        validation = ArgumentSpecValidator(**spec).validate(dict({"api_key": fake_api.api_key, "api_url": fake_api.url},
                                                                 **args))
        assert not validation.error_messages, validation.error_messages
        params = validation.validated_parameters
        ctx = ModuleContext(params, spec["argument_spec"], check_mode=check_mode, diff=diff, progress=progress)
        try:
            outcome = ctx.secrets.mask(module.run_logic(params, ctx))
        except ModuleFailure as failure:
            outcome = ModuleFailure(ctx.secrets.mask(failure.msg), **ctx.secrets.mask(failure.details))
        finally:
            ctx.close()
        return outcome, ctx.warnings
    return run
