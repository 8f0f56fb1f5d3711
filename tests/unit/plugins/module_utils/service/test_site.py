# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""service/site.py on the fake service: every spelling of allow_site_migration read as the service may give it.
(The modules' logic: tests/unit/plugins/modules/test_site.py, test_site_allow_migration.py, test_site_info.py.)"""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import read_allow_site_migration


@pytest.mark.parametrize("value,expected", [
    (None, (False, None)), ("", (False, None)), ("false", (False, None)), ("off", (False, None)), ([], (False, None)),
    ("true", (True, None)), ("1", (True, None)), ("Enabled", (True, None)), (True, (True, None)),
    ("5001", (True, 5001)), (5001, (True, 5001)),
])
def test_every_spelling_of_allow_site_migration(fake_api, value, expected):
    fake_api.sites["1002"] = value
    client = WPCloudClient(api_url=fake_api.url, api_key=fake_api.api_key)
    assert read_allow_site_migration(client, "1002") == expected
