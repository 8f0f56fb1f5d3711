# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import ControllerModuleAction


class ActionModule(ControllerModuleAction):
    MODULE = "site_domain_info"
