# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):
    # Attributes every module shares: it is served by an action plugin and belongs to the all group.
    DOCUMENTATION = r'''
attributes:
  action:
    description: The module is served by an action plugin of the same name, which runs its logic on the controller.
    support: full
  action_group:
    description: Use C(group/wpcloud.hosting.all) in C(module_defaults) to set the connection options once.
    support: full
    membership:
      - wpcloud.hosting.all
  async:
    description: Not supported; waiting modules poll many tickets at once instead.
    support: none
  platform:
    description: Runs on the controller, talking to the API over HTTPS.
    support: full
    platforms: posix
'''

    CHECK_MODE_READ_ONLY = r'''
attributes:
  check_mode:
    description: >-
      The module only reads, so it runs fully in check mode. A null ID, which an earlier task returns in check
      mode before it created anything, has nothing to read: the task says so instead of failing.
    support: full
  diff_mode:
    description: The module changes nothing, so there is no diff.
    support: none
  idempotent:
    description: Reading changes nothing.
    support: full
'''

    # The modules that call no API and have no module process (fleet_vars, report_file).
    CONTROLLER_ONLY = r'''
attributes:
  action:
    description: An action plugin of the same name does the work in the controller process; there is no module process.
    support: full
  action_group:
    description: Not in C(group/wpcloud.hosting.all); it calls no API.
    support: none
    membership: []
'''
