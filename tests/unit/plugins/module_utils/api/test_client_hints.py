# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a newcomer's first connection mistakes get (issue 25): a refused connection (a wrong port) is
reported after two quick retries, each retry is said when it starts, and a 404 from an api_url that
ends in /api/v1.0 says so. On the fake service (tests/unit/plugins/fake_service.py)."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import validate_connection_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import READ, REFUSED_RETRIES, WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure


def _client(fake_api, **options):
    slept = []
    client = WPCloudClient(**dict(dict(api_url=fake_api.url, api_key=fake_api.api_key, sleep=slept.append), **options))
    client.slept = slept
    return client


def test_a_refused_connection_is_reported_after_two_quick_retries(fake_api):
    fake_api.fault("*", error="refused", count=99)
    client = _client(fake_api)                                  # the default: 5 retries
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.get", site="1001")
    assert info.value.attempts == REFUSED_RETRIES + 1 == 3 and len(client.slept) == 2
    assert sum(client.slept) < 1.6 and "connection refused" in info.value.message
    client.close()


def test_other_lost_connections_keep_every_retry(fake_api):
    fake_api.fault("*", error="connect-timeout", count=99)
    client = _client(fake_api)
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.get", site="1001")
    assert info.value.attempts == 6
    client.close()


def test_each_retry_is_a_progress_line_when_it_starts_and_a_warning(fake_api):
    fake_api.fault("*", error="refused", count=99)
    shown = []
    ctx = ModuleContext({"api_url": fake_api.url, "api_key": fake_api.api_key, "validate_certs": True,
                         "timeout": 5, "retries": 5, "retry_timeout": 60}, progress=shown.append)
    client = ctx.client()
    client.sleep = lambda seconds: None
    with pytest.raises(WPCloudAPIError):
        client.call("site.get", site="1001")
    assert len(shown) == 2 and all(line.startswith("retrying site.get: Could not reach") for line in shown), shown
    assert "connection refused" in shown[0] and "attempt 2 of 6" in shown[0]
    assert len(ctx.warnings) == 2
    ctx.close()


@pytest.mark.parametrize("suffix", ["/api/v1.0", "/api/v1.0/", "/api"])
def test_a_404_from_an_api_url_with_the_prefix_says_to_remove_it(fake_api, suffix):
    client = _client(fake_api, api_url=fake_api.url + suffix)
    error = client._status_error("site.get", READ, 404, "Not found: no such endpoint", [], 1)
    assert error.message.startswith("HTTP 404 from site.get: Not found: no such endpoint; check api_url: it ends in")
    assert "the collection adds /api/v1.0 itself" in error.message
    client.close()


def test_a_404_from_a_base_url_has_no_such_hint(fake_api):
    client = _client(fake_api)
    error = client._status_error("site.get", READ, 404, "Not found", [], 1)
    assert error.message == "HTTP 404 from site.get: Not found"
    client.close()


@pytest.mark.parametrize("url", ["https://api.wpcloud.test/api/v1.0", "https://api.wpcloud.test/api/v1.0/"])
def test_an_api_url_with_the_prefix_is_refused_before_any_call(url):
    with pytest.raises(ModuleFailure) as info:
        validate_connection_options({"api_key": "k", "api_url": url, "validate_certs": True})
    assert info.value.msg == ("api_url ends in /api/v1.0, which the collection adds itself: give the service's base "
                              "URL, such as https://api.wpcloud.test.")


def test_a_base_url_with_a_path_of_its_own_is_accepted():
    validate_connection_options({"api_key": "k", "api_url": "https://gateway.example/wpcloud", "validate_certs": True})
