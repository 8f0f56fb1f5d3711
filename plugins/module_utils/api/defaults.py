# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The connection's defaults: the client's (api/client.py) and those of the connection options
(runtime/arguments.py API_ARGUMENT_SPEC).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

A leaf of its own, standard library only: the role's decisions read the wait contract of runtime/arguments.py,
which takes these, without importing the HTTP client (requests) into every process that renders a template.
"""

from __future__ import annotations

DEFAULT_API_URL = "https://atomic-api.wordpress.com"
DEFAULT_TIMEOUT = 30
DEFAULT_RETRIES = 5
DEFAULT_RETRY_TIMEOUT = 120
