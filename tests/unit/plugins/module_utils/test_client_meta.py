# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""client_meta's write-only secret: sent once by default (on_create), and a secret not sent is said."""

from __future__ import annotations

import json

from ansible_collections.wpcloud.hosting.plugins.modules import client_meta

KEY_1 = "0f1e2d3c4b5a6978" * 3
KEY_2 = "a1b2c3d4e5f60718" * 3


def hmac_args(secret, **extra):
    return dict({"client": "demo", "key": "webhook_hmac_key", "secret_value": secret}, **extra)


def test_update_secret_defaults_to_on_create_in_the_spec_and_the_docs():
    import yaml
    spec = client_meta.MODULE_SPEC["argument_spec"]["update_secret"]
    documented = yaml.safe_load(client_meta.DOCUMENTATION)["options"]["update_secret"]
    assert spec["default"] == documented["default"] == "on_create"


def test_a_set_key_is_not_sent_again_and_the_warning_says_how(fake_api, run_logic):
    first, warnings = run_logic(client_meta, hmac_args(KEY_1))
    assert first["changed"] is True and warnings == []
    again, warnings = run_logic(client_meta, hmac_args(KEY_2))
    assert again["changed"] is False
    assert [c["operation"] for c in fake_api.writes] == ["client_meta.add"]
    assert len(warnings) == 1
    assert "secret_value was given but not sent" in warnings[0] and "update_secret: always" in warnings[0]
    assert KEY_1 not in json.dumps([again, warnings]) and KEY_2 not in json.dumps([again, warnings])


def test_always_sends_it_and_says_nothing(fake_api, run_logic):
    run_logic(client_meta, hmac_args(KEY_1))
    result, warnings = run_logic(client_meta, hmac_args(KEY_2, update_secret="always"))
    assert result["changed"] is True and result["operation"] == "update" and warnings == []
    assert fake_api.meta["webhook_hmac_key"] == KEY_2
