#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site_allow_migration
short_description: Let a WP Cloud site accept an incoming SSH migration
version_added: 0.1.0
description:
  - Enables C(allow_site_migration) on an existing destination site, so that a migration can target it.
  - B(Destructive and cannot be undone.) Every later run of a migration into the site replaces its files
    and database. The module refuses to run unless O(confirm_overwrite=true).
  - Reads C(allow_site_migration) first. When it is already enabled, or already holds a migration ID,
    nothing is sent and C(changed) is false.
  - With O(sites) instead of O(site), one task handles a whole fleet. The sites are handled at the same time
    (16 at once) on one connection, so the task takes about as long as the slowest site. One failed site
    does not stop the others; the task fails afterwards and names each failed site.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  site:
    description:
      - The destination site, by numeric site ID or by domain name.
      - Exactly one of O(site) and O(sites) is required.
    type: str
  sites:
    description:
      - Many destination sites, each by numeric site ID or by domain name. Each is handled as O(site) would be.
      - Results come back in RV(results), one per site in the same order. An empty list changes nothing.
      - Mutually exclusive with O(site).
    type: list
    elements: str
  confirm_overwrite:
    description:
      - Must be V(true). Confirms that migrations into O(site), or into every site of O(sites), will replace
        their files and database.
    type: bool
    default: false
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description: Predicts C(changed) without writing.
    support: full
  diff_mode:
    description: Shows whether C(allow_site_migration) goes from disabled to enabled; with O(sites), one diff per site.
    support: full
  idempotent:
    description: A second run makes no call that writes.
    support: full
seealso:
  - module: wpcloud.hosting.migration
'''

EXAMPLES = r'''
- name: Accept migrations (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Accept a migration into the destination site
      wpcloud.hosting.site_allow_migration:
        site: dest1.example
        confirm_overwrite: true
      register: allow

    - name: Show whether a migration is attached already
      ansible.builtin.debug:
        msg: "ready={{ allow.ready }} migration={{ allow.migration_id }}"

    - name: Accept migrations into a whole fleet in one task
      wpcloud.hosting.site_allow_migration:
        sites:
          - dest1.example
          - dest2.example
        confirm_overwrite: true
      register: fleet

    - name: Show which sites accept a new migration
      ansible.builtin.debug:
        msg: "{{ fleet.results | items2dict(key_name='site', value_name='ready') }}"
'''

RETURN = r'''
site:
  description: The site as addressed.
  returned: when site is given
  type: str
  sample: "1001"
ready:
  description: Whether the site accepts a new migration (enabled and no migration attached).
  returned: success, when site is given (with sites, in each item of results)
  type: bool
  sample: true
migration_id:
  description: The migration attached to the site, when there is one.
  returned: success, when site is given (with sites, in each item of results)
  type: int
  sample: 42
failure:
  description: Machine-readable detail of an API error.
  returned: on API failure
  type: dict
  sample: {"status": 404, "operation": "site_meta.get", "message": "Site not found"}
results:
  description:
    - With O(sites), one result per site, in the order of O(sites).
    - Each holds the keys a single O(site) returns, plus RV(results[].failed) and, for a failed site,
      RV(results[].msg).
  returned: when sites is given
  type: list
  elements: dict
  contains:
    failed:
      description: Whether this site failed.
      type: bool
      sample: false
    msg:
      description: Why this site failed.
      type: str
      returned: when the site failed
      sample: "site 999999 was not found (HTTP 404): check the site ID or domain."
  sample: [{"site": "1001", "ready": true, "migration_id": null, "changed": true, "failed": false}]
failed_count:
  description: With O(sites), how many sites failed. The task fails when it is not 0.
  returned: when sites is given
  type: int
  sample: 0
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import SITE_ARGUMENT_SPEC, api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import run_allow as run_logic

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(SITE_ARGUMENT_SPEC, confirm_overwrite=dict(type="bool", default=False))),
    mutually_exclusive=[("site", "sites")],
    required_one_of=[("site", "sites")],
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
