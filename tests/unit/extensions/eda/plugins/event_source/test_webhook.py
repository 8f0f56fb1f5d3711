# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The wpcloud.hosting.webhook event source file itself: its DOCUMENTATION, how it finds its parts
(plugins/module_utils/webhook, imported by path as ansible-rulebook needs) and what ``main`` does
before anything starts. The parts are tested in tests/unit/plugins/module_utils/webhook/; the whole
source (real HTTPS, the receiver process, ansible-rulebook) in tests/system/test_webhook_*.py."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("aiohttp")

SOURCE = Path(__file__).resolve().parents[6] / "extensions" / "eda" / "plugins" / "event_source" / "webhook.py"
PACKAGE = SOURCE.parents[4] / "plugins" / "module_utils" / "webhook"
KEY = "unit-source-key-0123456789abcdef0123"


def _load(path):
    """The plugin's namespace, loaded from its file as ansible-rulebook loads it (runpy.run_path
    cannot be used under ansible-test: the collection loader's path hook claims every path)."""
    spec = importlib.util.spec_from_file_location("wpcloud_hosting_webhook_source", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


W = _load(SOURCE)


def test_documentation_is_yaml_with_every_option():
    doc = yaml.safe_load(W["DOCUMENTATION"])
    assert {"port", "certfile", "hmac_secret", "spool_dir", "ack_timeout", "max_unacked"} <= set(doc["options"])
    assert yaml.safe_load(W["EXAMPLES"])[0]["rules"][0]["condition"] == 'event.meta.event == "site_provisioned"'


def test_the_parts_are_imported_by_path_not_through_the_collection_loader():
    """ansible-rulebook does not install Ansible's collection loader: the source imports the package
    from the file next to it, once per checkout, and its modules import each other relatively."""
    for part in ("options", "pipe", "emitters"):
        module = W[part]
        assert module.__name__.startswith("_wpcloud_hosting_webhook_")
        assert os.path.dirname(module.__file__) == str(PACKAGE)
    assert W["emitters"].AckingEmitter.__mro__[1] is sys.modules[W["_PACKAGE"] + ".emitter"].Emitter
    package = sys.modules[W["_PACKAGE"]]
    assert list(package.__path__) == [str(PACKAGE)]
    assert _load(SOURCE)["_PACKAGE"] == W["_PACKAGE"]          # loaded again: the same package


def test_main_takes_the_key_out_of_the_environment_even_when_it_refuses_to_start(monkeypatch):
    monkeypatch.setenv("WPCLOUD_WEBHOOK_HMAC_KEYS", KEY)
    with pytest.raises(ValueError, match="port must be"):
        asyncio.run(W["main"](asyncio.Queue(), {"port": 0}))
    assert "WPCLOUD_WEBHOOK_HMAC_KEYS" not in os.environ


def test_the_file_stays_a_short_wiring_of_the_parts():
    code = SOURCE.read_text().split('"""\n', 4)[-1]          # after DOCUMENTATION and EXAMPLES
    assert len(code.splitlines()) < 130
    assert "class " not in code.replace("class MockQueue", "")
