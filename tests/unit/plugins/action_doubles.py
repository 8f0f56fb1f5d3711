# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-ins for what Ansible hands an action plugin, for the unit tests that build one directly."""

from __future__ import annotations


class Templar(object):
    """A templar for arguments that are already plain values: gives each back as it is."""

    @staticmethod
    def template(value):
        return value
