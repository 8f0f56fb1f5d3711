#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: migration_info
short_description: Read a WP Cloud migration's record and state
version_added: 0.1.0
description:
  - Returns a migration's record, with credentials redacted, and its state.
  - With O(site) instead of O(migration_id), reads the migration attached to the destination site, if any.
  - With O(sites), reads the migration of every site of a fleet in one task, 16 sites at a time on one
    connection. One failed site does not stop the others; the task fails afterwards and names each failed site.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  site:
    description:
      - The destination site, by numeric site ID or domain. Required unless O(migration_id) or O(sites) is given.
      - With O(migration_id) too, a numeric O(site) must be the migration's own site.
    type: str
  sites:
    description:
      - Many destination sites, each read as O(site) would be. Results come back in RV(results), one per site
        in the same order. An empty list reads nothing.
      - Mutually exclusive with O(site) and O(migration_id).
    type: list
    elements: str
  migration_id:
    description:
      - The migration to read.
    type: int
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
  - wpcloud.hosting.attributes.CHECK_MODE_READ_ONLY
'''

EXAMPLES = r'''
- name: Read migrations (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Read the migration attached to a site
      wpcloud.hosting.migration_info:
        site: dest2.example
      register: info

    - name: Show its state
      ansible.builtin.debug:
        msg: "{{ info.migration_id }} is {{ info.state | default('absent') }}"

    - name: Read the migrations of a whole fleet in one task
      wpcloud.hosting.migration_info:
        sites:
          - dest2.example
          - dest3.example
      register: fleet

    - name: Show each site's migration state
      ansible.builtin.debug:
        msg: "site {{ item.site }}: {{ item.state | default('no migration') }}"
      loop: "{{ fleet.results }}"
      loop_control:
        label: "{{ item.site }}"
'''

RETURN = r'''
exists:
  description: Whether a migration was found.
  returned: success, when site or migration_id is given (with sites, in each item of results)
  type: bool
  sample: true
migration_id:
  description: The migration's ID, or null when the site has none.
  returned: success, when site or migration_id is given (with sites, in each item of results)
  type: int
  sample: 42
site_id:
  description: The destination site's ID.
  returned: when exists
  type: int
  sample: 1002
state:
  description: The migration's state.
  returned: when exists
  type: str
  sample: preflight-succeeded
ssh_id_pub:
  description: Public key of the identity the service generated.
  returned: when the service generated an identity
  type: str
  sample: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI... wpcloud-migration-42
record:
  description: The record as the service returns it, every credential field redacted.
  returned: when exists
  type: dict
  sample: {"atomic_site_migration_id": "42", "state": "new"}
results:
  description:
    - With O(sites), one result per site, in the order of O(sites).
    - Each holds the keys a single O(site) returns, plus RV(results[].site), RV(results[].failed) and, for a
      failed site, RV(results[].msg).
  returned: when sites is given
  type: list
  elements: dict
  contains:
    site:
      description: The site as given in O(sites).
      type: str
      sample: "1002"
    failed:
      description: Whether reading this site failed.
      type: bool
      sample: false
    msg:
      description: Why reading this site failed.
      type: str
      returned: when the site failed
      sample: "site 999999 was not found (HTTP 404): check the site ID or domain."
  sample: [{"site": "1002", "exists": true, "migration_id": 42, "state": "new", "failed": false}]
failed_count:
  description: With O(sites), how many sites could not be read. The task fails when it is not 0.
  returned: when sites is given
  type: int
  sample: 0
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import SITE_ARGUMENT_SPEC, api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration import run_info as run_logic
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(SITE_ARGUMENT_SPEC, migration_id=dict(type="int"))),
    # site and migration_id together stay allowed (the migration must belong to the site).
    mutually_exclusive=[("sites", "site"), ("sites", "migration_id")],
    required_one_of=[("site", "migration_id", "sites")],
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
