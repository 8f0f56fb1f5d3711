# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's version is written once, in galaxy.yml (MANIFEST.json once built), and read from there."""

from __future__ import annotations

import json
import os
import re

from ansible_collections.wpcloud.hosting.plugins.module_utils.api import version
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.version import COLLECTION_ROOT, collection_version


def test_the_checkout_reads_galaxy_yml():
    with open(os.path.join(COLLECTION_ROOT, "galaxy.yml")) as handle:
        written = re.search(r"^version: (\S+)$", handle.read(), re.MULTILINE).group(1)
    assert collection_version() == written


def test_an_installed_collection_reads_its_manifest(tmp_path):
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"collection_info": {"version": "2.3.4"}}))
    (tmp_path / "galaxy.yml").write_text("version: 9.9.9\n")
    assert collection_version(str(tmp_path)) == "2.3.4"


def test_a_quoted_version_and_no_manifest(tmp_path):
    (tmp_path / "galaxy.yml").write_text("namespace: wpcloud\nversion: '1.2.0'  # next\n")
    assert collection_version(str(tmp_path)) == "1.2.0"


def test_neither_file_at_hand_is_an_unknown_version(tmp_path):
    # A classic module process runs from a zip of Python files only.
    assert collection_version(str(tmp_path / "payload.zip" / "ansible_collections")) is None


def test_no_other_file_writes_the_version():
    for root, dirs, names in os.walk(os.path.join(COLLECTION_ROOT, "plugins")):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(root, name)) as handle:
                    assert not re.search(r"VERSION\s*=\s*['\"]\d", handle.read()), name
    assert version.collection_version is collection_version
