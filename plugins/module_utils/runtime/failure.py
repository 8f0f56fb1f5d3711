# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The failure a module reports: what every piece of module logic raises.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations


class ModuleFailure(Exception):
    """A failure the module reports with ``msg`` and structured details (never a secret)."""

    def __init__(self, msg, **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


def api_failure(exc, what=None):
    """Turn a client error (WPCloudAPIError) into a ModuleFailure with a machine-readable ``failure`` detail."""
    msg = exc.message if not what else "%s: %s" % (what, exc.message)
    if what and exc.status in (401, 403):
        # A refused key leads the message (issue 23); what was refused follows.
        msg = "%s (%s)" % (exc.message, what)
    return ModuleFailure(msg, failure=exc.to_dict())
