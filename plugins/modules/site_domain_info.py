#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site_domain_info
short_description: Read a WP Cloud site's domains, their certificates, and the DNS records to set before a cutover
version_added: 0.1.0
description:
  - Reads the site's primary domain and its aliases, the state of each domain's certificate (issued, pending,
    failed) and, for each domain without a certificate yet, the A records the service suggests for it.
  - With O(domains), also previews domains the site does not hold yet (the production domain before the switch) -
    the A records to set for each and, when the service says the domain is used elsewhere, the TXT record that lets
    this account claim it. So a partner can print what to put in DNS before the switch.
  - With O(sites), reads many sites in one task, 16 at a time on one connection.
  - A separate module from M(wpcloud.hosting.site_info), whose reads stay one call per site; this one makes one
    call per domain (its certificate) and one per domain without a certificate (its addresses).
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  client:
    description:
      - The client identifier of the partner account (lowercase) that owns the site.
    type: str
    required: true
  site:
    description:
      - The site, by numeric site ID or primary domain. Required unless O(sites) is given.
    type: str
  domains:
    description:
      - Domains to preview that the site does not hold yet, for example the production domain before the cutover.
        A domain the site already holds is reported once, as what it is.
      - Checked and normalised as M(wpcloud.hosting.site_domain) does (lower case, no trailing dot, the ASCII form
        of an internationalised name; a URL, a path, a port or a wildcard is refused).
    type: list
    elements: str
  sites:
    description:
      - Many sites, each a dict with O(sites[].site) and optionally O(sites[].domains). Mutually exclusive with O(site)
        and O(domains).
    type: list
    elements: dict
    suboptions:
      site:
        description: As O(site).
        type: str
      domains:
        description: As O(domains).
        type: list
        elements: str
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
  - wpcloud.hosting.attributes.CHECK_MODE_READ_ONLY
seealso:
  - module: wpcloud.hosting.site_domain
  - module: wpcloud.hosting.site_info
'''

EXAMPLES = r'''
- name: Prepare a cutover (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Read the site's domains and what the production domain needs in DNS
      wpcloud.hosting.site_domain_info:
        client: "{{ wpcloud_client }}"
        site: dest1.example
        domains:
          - shop.example.com
          - www.shop.example.com
      register: before_cutover

    - name: Print the DNS records to set before the switch
      ansible.builtin.debug:
        msg: "{{ item.name }} {{ item.type }} {{ item.value }}"
      loop: "{{ before_cutover.dns_records }}"

    - name: Read the certificates of a whole fleet
      wpcloud.hosting.site_domain_info:
        client: "{{ wpcloud_client }}"
        sites:
          - site: dest2.example
          - site: dest3.example
      register: fleet

    - name: Name the domains still without a certificate
      ansible.builtin.debug:
        msg: "{{ fleet.results | map(attribute='domains') | flatten | rejectattr('ssl', 'equalto', 'issued') | map(attribute='domain') | list }}"
'''

RETURN = r'''
site:
  description: The site as given.
  returned: always
  type: str
  sample: dest1.example
site_id:
  description: The numeric site ID.
  returned: when the site was found
  type: int
  sample: 1001
domain:
  description: The site's primary domain.
  returned: when the site was found
  type: str
  sample: dest1.example
aliases:
  description: The site's aliases, sorted.
  returned: when the site was found
  type: list
  elements: str
  sample: ["www.dest1.example"]
domains:
  description: The primary domain, each alias, then each previewed domain of O(domains) that the site does not hold.
  returned: when the site was found
  type: list
  elements: dict
  contains:
    domain:
      description: The domain (an internationalised one in its ASCII form).
      type: str
    role:
      description: V(primary), V(alias), or V(planned) (a domain of O(domains) that the site does not hold).
      type: str
    ssl:
      description:
        - V(issued), V(pending), V(failed) or V(unknown), as M(wpcloud.hosting.site_domain) returns it; null for a
          planned domain.
      type: str
    ssl_detail:
      description: As M(wpcloud.hosting.site_domain) returns it.
      type: dict
    dns_records:
      description:
        - The records to set (C(type), C(name), C(value)) - the A records the service suggests, while the domain has no
          certificate; for a planned domain the service says is used elsewhere, first the TXT record that claims it.
      type: list
      elements: dict
    attachable:
      description: For a planned domain, whether the service lets this account attach it now (else see C(refusal)).
      type: bool
    refusal:
      description: For a planned domain the service refuses, its reason.
      type: str
    ip_ranges:
      description: The client's address ranges, when the service suggested no address for the domain.
      type: list
      elements: str
  sample: [{"domain": "shop.example.com", "role": "planned", "ssl": null, "attachable": true,
            "dns_records": [{"type": "A", "name": "shop.example.com", "value": "198.51.100.23"}]}]
dns_records:
  description: Every record of RV(domains[].dns_records), in one list.
  returned: when the site was found
  type: list
  elements: dict
  sample: [{"type": "A", "name": "shop.example.com", "value": "198.51.100.23"},
           {"type": "A", "name": "shop.example.com", "value": "198.51.100.30"}]
results:
  description: With O(sites), one result per element, in order, each as a single site returns, plus C(failed) and C(msg).
  returned: when sites is given
  type: list
  elements: dict
  sample: [{"site": "dest2.example", "site_id": 1002, "domain": "dest2.example", "failed": false}]
failed_count:
  description: With O(sites), how many sites failed. The task fails when it is not 0.
  returned: when sites is given
  type: int
  sample: 0
api_load:
  description: The load of the task on the service - C(calls) and C(peak_per_second).
  returned: when the task called the API
  type: dict
  sample: {"calls": 5, "peak_per_second": 5}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.domain import run_info as run_logic

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(
        client=dict(type="str", required=True),
        site=dict(type="str"),
        domains=dict(type="list", elements="str"),
        sites=dict(type="list", elements="dict", options=dict(
            site=dict(type="str"), domains=dict(type="list", elements="str"))))),
    mutually_exclusive=[("site", "sites"), ("domains", "sites")],
    required_one_of=[("site", "sites")],
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
