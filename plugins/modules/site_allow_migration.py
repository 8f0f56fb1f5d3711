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
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  site:
    description:
      - The destination site, by numeric site ID or by domain name.
    type: str
    required: true
  confirm_overwrite:
    description:
      - Must be V(true). Confirms that migrations into O(site) will replace its files and database.
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
    description: Shows whether C(allow_site_migration) goes from disabled to enabled.
    support: full
  idempotent:
    description: A second run makes no call that writes.
    support: full
seealso:
  - module: wpcloud.hosting.migration
'''

EXAMPLES = r'''
- name: Accept a migration into the destination site
  wpcloud.hosting.site_allow_migration:
    api_url: "{{ wpcloud_api_url }}"
    api_key: "{{ wpcloud_api_key }}"
    ca_path: "{{ wpcloud_ca_path | default(omit) }}"
    site: "{{ wpcloud_example_site | default('dest1.example') }}"
    confirm_overwrite: true
  register: allow

- name: Show whether a migration is attached already
  ansible.builtin.debug:
    msg: "ready={{ allow.ready }} migration={{ allow.migration_id }}"
'''

RETURN = r'''
site:
  description: The site as addressed.
  returned: always
  type: str
  sample: "1001"
ready:
  description: Whether the site accepts a new migration (enabled and no migration attached).
  returned: success
  type: bool
  sample: true
migration_id:
  description: The migration attached to the site, when there is one.
  returned: success
  type: int
  sample: 42
failure:
  description: Machine-readable detail of an API error.
  returned: on API failure
  type: dict
  sample: {"status": 404, "operation": "site_meta.get", "message": "Site not found"}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils._common import api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils._runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils._site import (
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    REQUIRED_ONE_OF,
    run_allow as run_logic,
)

MODULE_SPEC = dict(argument_spec=api_spec_with(ARGUMENT_SPEC), mutually_exclusive=MUTUALLY_EXCLUSIVE,
                   required_one_of=REQUIRED_ONE_OF)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
