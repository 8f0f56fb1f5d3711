#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: fleet_vars
short_description: 'Internal: read variables as every host of the play sees them, in one task'
version_added: 0.1.0
description:
  - Internal to the collection. The C(wpcloud.hosting.site_migration) role reads its sites' variables with the
    same code (in M(wpcloud.hosting.site_migration_setup)). Documented so that the role can be read; its options
    may change in any release.
  - Returns, for every host of the play batch, the values of the variables named in O(names) exactly as a
    task of that host would see them at this point of the play (role defaults and role parameters, play,
    block and task vars, inventory and C(host_vars), facts and C(set_fact), extra vars), with Ansible's own
    precedence, templated in that host's context.
  - Runs once (C(run_once)), in one worker on the controller. A task that runs for each host costs the
    controller a worker process per host, run or skipped (the collection's docs/performance.md has the
    figures); C(hostvars) shows neither role defaults nor play vars. The C(wpcloud.hosting.site_migration)
    role reads its sites' inputs with it.
  - The values may be credentials; give the task C(no_log) when they are.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  names:
    description:
      - The variables to read. A variable that is not defined for a host is left out of that host's
        entry; a defined one is templated.
    type: list
    elements: str
    required: true
  hosts:
    description:
      - The hosts to read them for, in this order. Default the play batch (C(ansible_play_batch)).
      - An explicitly empty list is an error.
    type: list
    elements: str
extends_documentation_fragment:
  - wpcloud.hosting.attributes.CONTROLLER_ONLY
attributes:
  async:
    description: Not supported; it takes milliseconds per host.
    support: none
  check_mode:
    description: Reads only; the same in check mode.
    support: full
  diff_mode:
    description: There is nothing to compare.
    support: none
  idempotent:
    description: Reads only.
    support: full
  platform:
    description: Runs on the controller.
    support: full
    platforms: posix
notes:
  - Ansible gives action plugins no public handle on its variable manager; this one uses the one that
    C(hostvars) holds, which ansible-core 2.16 to 2.21 have. The task fails with a clear message if a
    future ansible-core does not.
seealso:
  - name: The site_migration role
    description: Resolves every site's inputs with this module, then runs each API step once for the fleet.
    link: https://github.com/wpcloud-hosting/wpcloud.hosting/blob/main/docs/migration.md
'''

EXAMPLES = r'''
# Every host's own values of two variables, whether they come from a role default, the play, host_vars
# or the command line, in one task whatever the number of hosts.
- name: Read the destination and source of every site
  wpcloud.hosting.fleet_vars:
    names:
      - destination
      - source_host
  register: fleet
  run_once: true

- name: Show which source each destination migrates from
  ansible.builtin.debug:
    msg: "{{ item.0 }}: {{ item.1.destination | default('(no destination)') }} from {{ item.1.source_host | default('(no source)') }}"
  loop: "{{ fleet.hosts | zip(fleet.host_vars) | list }}"
  run_once: true
'''

RETURN = r'''
hosts:
  description: The hosts read, in order.
  returned: success
  type: list
  elements: str
  sample: [site1, site2]
host_vars:
  description: One dict per host of RV(hosts), in the same order, of the variables of O(names) defined for that host.
  returned: success
  type: list
  elements: dict
  sample: [{destination: dest1.example, source_host: src1}, {destination: dest2.example}]
'''

from ansible.module_utils.basic import AnsibleModule

ARGUMENT_SPEC = dict(
    names=dict(type="list", elements="str", required=True),
    hosts=dict(type="list", elements="str"),
)
MODULE_SPEC = dict(argument_spec=ARGUMENT_SPEC)


def main():
    module = AnsibleModule(supports_check_mode=True, **MODULE_SPEC)
    module.fail_json(msg="wpcloud.hosting.fleet_vars runs as an action plugin on the controller; "
                         "call it as a task of a play (it has no module process).")


if __name__ == "__main__":
    main()
