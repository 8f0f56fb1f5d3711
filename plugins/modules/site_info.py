#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site_info
short_description: Read a WP Cloud site, or list every site of a client
version_added: 0.1.0
description:
  - With O(site), reads one site by numeric site ID or domain, with its C(allow_site_migration) flag and the
    ID of the migration it holds, if any. A site the service does not know returns RV(exists=false).
  - With O(client), lists every site of the client account, page after page (the service returns at most
    O(page_size) sites per call; the module follows the pages itself), each with its migration flag and
    migration ID. Each site is listed once, whether the service pages, ignores C(limit)/C(after) (the listing
    ends at the first page that brings no new site) or refuses them (then it lists without them).
  - The service's site record holds credentials (the database and SMTP passwords, the site's API key). They
    are never returned, shown or logged.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  site:
    description:
      - The site to read, by numeric site ID or domain. Mutually exclusive with O(client).
    type: str
  client:
    description:
      - The client identifier of the partner account (lowercase) whose sites to list. Mutually exclusive with
        O(site).
    type: str
  page_size:
    description:
      - With O(client), how many sites each call asks for, between 1 and 1000 (the service's cap per page).
    type: int
    default: 1000
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
  - wpcloud.hosting.attributes.CHECK_MODE_READ_ONLY
seealso:
  - module: wpcloud.hosting.site_allow_migration
  - module: wpcloud.hosting.migration_info
'''

EXAMPLES = r'''
- name: Read sites (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Read the destination site
      wpcloud.hosting.site_info:
        site: dest1.example
      register: dest

    - name: Say whether it accepts a migration
      ansible.builtin.debug:
        msg: "site {{ dest.site_id }} allows a migration: {{ dest.allow_site_migration }}"

    - name: List every site of the account
      wpcloud.hosting.site_info:
        client: "{{ wpcloud_client }}"
      register: account

    - name: Name the sites that hold no migration yet
      ansible.builtin.debug:
        msg: "{{ account.sites | selectattr('migration_id', 'none') | map(attribute='domain') | list }}"
'''

RETURN = r'''
exists:
  description: With O(site), whether the service knows the site.
  returned: when site is given
  type: bool
  sample: true
site_id:
  description: With O(site), the numeric site ID.
  returned: when the site exists
  type: int
  sample: 1001
domain:
  description: With O(site), the site's domain.
  returned: when the site exists
  type: str
  sample: dest1.example
allow_site_migration:
  description: With O(site), whether the site accepts an incoming migration (or already holds one).
  returned: when the site exists
  type: bool
  sample: true
migration_id:
  description: With O(site), the ID of the migration the site holds, or null.
  returned: when the site exists
  type: int
  sample: 42
record:
  description: With O(site), the service's site record without its credential fields.
  returned: when the site exists
  type: dict
  sample: {"atomic_site_id": 1001, "domain_name": "dest1.example", "php_version": "8.3"}
sites:
  description:
    - With O(client), every site of the account by ascending site ID, each with RV(sites[].site_id),
      RV(sites[].domain), RV(sites[].allow_site_migration), RV(sites[].migration_id) and the other fields the
      service lists (for example C(created), C(space_used)), never a credential.
  returned: when client is given
  type: list
  elements: dict
  contains:
    site_id:
      description: The numeric site ID.
      type: int
    domain:
      description: The site's domain.
      type: str
    allow_site_migration:
      description:
        - Whether the site accepts an incoming migration (or already holds one).
        - Null when the service's listing does not carry the flag (it refused or dropped the C(allow_site_migration)
          column); read one site with O(site) for its flag.
      type: bool
    migration_id:
      description: The ID of the migration the site holds, or null.
      type: int
  sample: [{"site_id": 1001, "domain": "dest1.example", "allow_site_migration": false, "migration_id": null}]
count:
  description: With O(client), how many sites were listed.
  returned: when client is given
  type: int
  sample: 3
pages:
  description: With O(client), how many pages (calls) the listing took (a refused first form not counted).
  returned: when client is given
  type: int
  sample: 1
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import run_info as run_logic

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(site=dict(type="str"), client=dict(type="str"),
                                     page_size=dict(type="int", default=1000))),
    mutually_exclusive=[("site", "client")],
    required_one_of=[("site", "client")],
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
