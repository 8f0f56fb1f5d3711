# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The collection's version, read from the one place it is written.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

galaxy.yml holds it in a checkout; an installed collection has the MANIFEST.json that
``ansible-galaxy collection build`` writes from it. A classic module process runs from a zip that holds
only Python, where neither is at hand: the version is then unknown (None).
"""

from __future__ import annotations

import functools
import json
import os
import re

COLLECTION_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@functools.lru_cache(maxsize=None)
def collection_version(root=COLLECTION_ROOT):
    """The version of the collection at ``root``, or None."""
    try:
        with open(os.path.join(root, "MANIFEST.json")) as handle:
            return str(json.load(handle)["collection_info"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, "galaxy.yml")) as handle:
            match = re.search(r"^version:[ \t]*['\"]?([^'\"\s#]+)", handle.read(), re.MULTILINE)
    except OSError:
        return None
    return match.group(1) if match else None
