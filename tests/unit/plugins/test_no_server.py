# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The unit suite's guard (tests/unit/conftest.py) refuses a real connection: no unit test can need a server."""

from __future__ import annotations

import socket

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient


def test_a_socket_connection_is_refused(no_server):
    with pytest.raises(AssertionError, match="unit tests need no server"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert no_server == [("127.0.0.1", 9)]
    no_server.clear()  # opened on purpose


def test_a_client_without_the_fake_service_cannot_reach_anything(no_server):
    client = WPCloudClient(api_url="https://127.0.0.1:9", api_key="k", retries=0)
    with pytest.raises(AssertionError, match="unit tests need no server"):
        client.call("site.get", site="1")
    assert no_server
    no_server.clear()
