#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site
short_description: Create a WP Cloud site by domain (a migration destination), or delete one
version_added: 0.1.0
description:
  - With O(state=present), creates a site for O(domain) in the client account and waits for the service's
    creation job. By default the site accepts an incoming migration from its creation
    (O(allow_site_migration)), the way the service recommends a destination is made; no call to the
    irreversible allow endpoint is needed.
  - A site that exists is read, never created again. Options that differ from it (admin user, e-mail, PHP
    version, the migration flag) are reported in RV(differences) with a warning; this module does not change
    an existing site.
  - With O(state=absent), deletes the site, only with O(confirm_delete=true), and waits for the deletion job.
  - With O(sites), creates (or deletes) many sites in one task, 16 at a time on one connection; each element
    takes the task's options as its defaults. One failed site does not stop the others; the task fails
    afterwards and names each failed site.
  - A create or delete whose answer was lost (reset, timeout, 5xx) is resolved by reading the site, and sent
    again only when the read proves it did not happen (RV(uncertain)).
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  client:
    description:
      - The client identifier of the partner account (lowercase) that owns the site.
    type: str
    required: true
  domain:
    description:
      - The site's domain name, for example C(shop.example.com). Required unless O(sites) is given.
      - A domain the service knows under another client is refused before any write. When the service refuses
        the key for the domain (HTTP 401/403), the message leads with the API key; it advises another domain only
        when this key lists the client's sites without it and the service says the domain is already used.
    type: str
  state:
    description:
      - V(present) creates the site when it does not exist; V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  admin_user:
    description:
      - The WordPress administrator's user name (letters, digits and C(. _ @ -), no spaces). Required to create.
    type: str
  admin_email:
    description:
      - The WordPress administrator's e-mail address. Required to create.
    type: str
  admin_pass:
    description:
      - The administrator's password. Left out, the service generates one. Only sent when the site is created;
        never returned or logged.
    type: str
  php_version:
    description:
      - The PHP version of a new site, for example V(8.3). Left out, the service's default. The service refuses a
        version it does not offer.
    type: str
  allow_site_migration:
    description:
      - Create the site as a migration destination (C(meta[allow_site_migration]=true)). Only applies when the
        site is created.
      - With O(wait), the created site's flag is read back once its job succeeded; a service that did not keep it
        gets a warning and RV(allow_site_migration=false) (then use M(wpcloud.hosting.site_allow_migration)).
    type: bool
    default: true
  confirm_delete:
    description:
      - Must be V(true) with O(state=absent). Deleting a site removes its files and database for good.
    type: bool
    default: false
  sites:
    description:
      - Many sites, each a dict with O(sites[].domain) and any of the other suboptions; the task's options are
        the defaults of each. Mutually exclusive with O(domain).
    type: list
    elements: dict
    suboptions:
      domain:
        description: As O(domain).
        type: str
      state:
        description: As O(state).
        type: str
        choices: [present, absent]
      admin_user:
        description: As O(admin_user).
        type: str
      admin_email:
        description: As O(admin_email).
        type: str
      admin_pass:
        description: As O(admin_pass). Never returned or logged.
        type: str
      php_version:
        description: As O(php_version).
        type: str
      allow_site_migration:
        description: As O(allow_site_migration).
        type: bool
  wait:
    description:
      - Wait for the creation (or deletion) job to end before returning.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for the job. Past the deadline the task fails and reports the job's last state.
    type: int
    default: 1800
  poll_interval:
    description:
      - Seconds between two polls of the job while it is young. Never below V(1). After the first 12 seconds
        the gap grows (O(poll_interval) + 0.65 x sqrt(age - 12 s)), up to O(poll_max_interval).
    type: float
    default: 1.0
  poll_max_interval:
    description:
      - The longest gap, in seconds, between two polls of a job that has been running for a while; also the
        latest its end is seen after it happens. Set it equal to O(poll_interval) to poll at a fixed rhythm.
      - If not set, the value of the E(WPCLOUD_POLL_MAX_INTERVAL) environment variable is used; else V(12),
        or O(poll_interval) when that is longer.
    type: float
  progress_interval:
    description:
      - While it waits, the task prints a progress line at least every this many seconds (the job's state and the
        elapsed time); V(0) turns them off. Only when the module runs in the controller (the default).
    type: float
    default: 15.0
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description:
      - Reads the site and reports what it would create or delete, without a write.
      - The domains it would create are set as the fact C(wpcloud_check_mode_created_sites) (merged across
        the site tasks of the run), so that the role C(wpcloud.hosting.site_migration) in a later play of
        the same C(--check) run previews them as about to exist instead of "not found".
    support: full
  diff_mode:
    description: Shows the site before and after (never the password).
    support: full
  idempotent:
    description: An existing site is never created twice; a deleted one is not deleted again.
    support: full
seealso:
  - module: wpcloud.hosting.site_info
  - module: wpcloud.hosting.migration
'''

EXAMPLES = r'''
- name: Create destinations and migrate into them (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Create the destination site, ready to take a migration
      wpcloud.hosting.site:
        client: "{{ wpcloud_client }}"
        domain: shop.example
        admin_user: shopadmin
        admin_email: admin@shop.example
        php_version: "8.3"
      register: shop

    - name: Create a whole fleet in one task
      wpcloud.hosting.site:
        client: "{{ wpcloud_client }}"
        admin_user: webadmin
        admin_email: ops@example.com
        sites:
          - domain: blog.example
          - domain: news.example
            php_version: "8.4"
      register: fleet

    - name: Show the new sites
      ansible.builtin.debug:
        msg: "{{ fleet.results | map(attribute='site_id') | list }} (and {{ shop.site_id }})"

    - name: Delete a site that is no longer needed
      wpcloud.hosting.site:
        client: "{{ wpcloud_client }}"
        domain: news.example
        state: absent
        confirm_delete: true
'''

RETURN = r'''
domain:
  description: The site's domain.
  returned: always
  type: str
  sample: shop.example
site_id:
  description: The numeric site ID (null in check mode before the site exists).
  returned: always
  type: int
  sample: 1004
operation:
  description: V(create), V(delete) or V(none).
  returned: always
  type: str
  sample: create
allow_site_migration:
  description:
    - Whether the site accepts (or holds) a migration. For a created site waited for, as read back from the
      service.
  returned: with state=present
  type: bool
  sample: true
migration_id:
  description: The migration the site holds, or null.
  returned: with state=present
  type: int
  sample: null
job_id:
  description: The service's creation or deletion job.
  returned: when a site was created or deleted
  type: int
  sample: 17
job:
  description:
    - The waited job, C(status) (the service's word), C(outcome) (V(success), V(failure), or null while the
      status is not one that ends a job), C(elapsed), C(polls).
    - A job ends on V(success), V(done), V(complete), V(completed), V(ok), or V(failure), V(failed), V(error), in
      any case; another status keeps the wait polling and is named in its progress and its message.
  returned: when the module waited for a job
  type: dict
  sample: {"job_id": 17, "status": "success", "elapsed": 3.2, "polls": 4}
differences:
  description: For an existing site, each option of the task that differs from it, with the site's value and the given one.
  returned: when an existing site differs
  type: dict
  sample: {"php_version": {"site": "8.4", "given": "8.3"}}
record:
  description: An existing site's record without its credential fields.
  returned: when the site existed
  type: dict
  sample: {"atomic_site_id": 1004, "domain_name": "shop.example"}
uncertain:
  description: Writes whose answer was lost, and how a read resolved them.
  returned: when a write's effect was unknown
  type: list
  elements: dict
  sample: [{"write": "site.create", "outcome": "happened", "resolved_by": "read", "sends": 1}]
results:
  description: With O(sites), one result per element, in order, each as a single site returns, plus C(failed) and C(msg).
  returned: when sites is given
  type: list
  elements: dict
  sample: [{"domain": "blog.example", "site_id": 1005, "operation": "create", "failed": false}]
failed_count:
  description: With O(sites), how many sites failed. The task fails when it is not 0.
  returned: when sites is given
  type: int
  sample: 0
api_load:
  description:
    - The load of the task on the service - C(calls), its reads, writes and job polls (retries too), and
      C(peak_per_second), the most within any one second.
  returned: when the task called the API
  type: dict
  sample: {"calls": 412, "peak_per_second": 40}
ansible_facts:
  description: In check mode, the domains the task (and earlier site tasks of the run) would create.
  returned: in check mode, when a site would be created
  type: dict
  contains:
    wpcloud_check_mode_created_sites:
      description: The domains, lowercase, sorted.
      type: list
      elements: str
      sample: ["blog.example", "shop.example"]
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import JOB_WAIT_ARGUMENT_SPEC, api_spec_with, list_form_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import run_site as run_logic

_ONE_SITE = dict(
    domain=dict(type="str"),
    state=dict(type="str", default="present", choices=["present", "absent"]),
    admin_user=dict(type="str"),
    admin_email=dict(type="str"),
    admin_pass=dict(type="str", no_log=True),
    php_version=dict(type="str"),
    allow_site_migration=dict(type="bool", default=True),
)

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(
        _ONE_SITE,
        client=dict(type="str", required=True),
        confirm_delete=dict(type="bool", default=False),
        sites=dict(type="list", elements="dict", options=list_form_options(_ONE_SITE)),
        **JOB_WAIT_ARGUMENT_SPEC)),
    mutually_exclusive=[("domain", "sites")],
    required_one_of=[("domain", "sites")],
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
