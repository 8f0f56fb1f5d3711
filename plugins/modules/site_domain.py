#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site_domain
short_description: Declare a WP Cloud site's primary domain and its aliases (the cutover to a production domain)
version_added: 0.1.0
description:
  - Makes O(domain) the site's primary domain, keeping the old one as an alias or releasing it
    (O(keep_old_domain)), and makes O(aliases) present, absent, or exactly the site's aliases (O(aliases_state)).
    The primary domain is never removed as an alias.
  - Reads first and writes only the difference; a re-run on a site that already looks as declared writes nothing.
    Aliases change at once; the primary domain changes through the service's job, which the module waits for
    (O(wait)) with progress lines. A switch is sent after the alias changes.
  - Before any write, every domain the task would attach is checked with the service (C(check-can-host-domain)). A
    domain held elsewhere is refused with the TXT record that claims it (RV(dns_records)); publish it and run again.
  - Returns every domain of the site with the state of its certificate (RV(domains[].ssl)) and, for each domain
    without a certificate yet, the DNS records to set (RV(dns_records)), the A records the service suggests for it.
  - Domains are normalised before any call (lower case, no trailing dot, an internationalised name in its ASCII
    form C(xn--...)); a URL, a path, a port, a wildcard or an IP address is refused, naming the option.
  - A switch or alias change whose answer was lost (reset, timeout, 5xx) is resolved by reading the site, its aliases
    and its recent jobs, and sent again only when the read proves it did not happen (RV(uncertain)). A switch an earlier
    run stopped waiting for (O(wait_timeout)) is found and followed, not sent again.
  - With O(sites), declares many sites in one task, 16 at a time on one connection, and waits for all their switches
    at once; each element takes the task's options as its defaults.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  client:
    description:
      - The client identifier of the partner account (lowercase) that owns the site. The service's paths for
        aliases name it (with the site ID), and the DNS records are read for it.
    type: str
    required: true
  site:
    description:
      - The site, by numeric site ID or primary domain (an alias does not name a site). Required unless O(sites)
        is given.
      - Given as a domain that an earlier run has already switched away from, the site is found under O(domain).
    type: str
  domain:
    description:
      - The primary domain the site must have, for example C(shop.example.com). Left out, the primary domain is not
        changed.
      - When it is one of the site's aliases, the alias becomes the primary domain (and leaves the aliases).
    type: str
  keep_old_domain:
    description:
      - When O(domain) changes the primary domain, keep the old one as an alias (V(true)) or release it (V(false)).
      - Left out, the old one is kept only when O(aliases) lists it (with O(aliases_state=present) or
        V(exact)), else released, as the service does by default.
      - With O(aliases_state=exact), a kept old domain counts among the aliases.
    type: bool
  aliases:
    description:
      - Aliases (secondary domains) of the site. What happens to them is O(aliases_state). Left out, the aliases are
        not changed.
      - Neither the primary domain nor O(domain) may be listed.
    type: list
    elements: str
  aliases_state:
    description:
      - V(present) adds each of O(aliases) the site lacks; V(absent) removes each it has; V(exact) makes them the
        site's only aliases (an empty list removes every alias). The primary domain is never removed.
    type: str
    choices: [present, absent, exact]
    default: present
  ssl_retry:
    description:
      - Ask the service for a new certificate attempt for every domain of the site whose last attempt failed (for
        example once its DNS points to the platform). Not idempotent by nature - a domain whose attempt failed
        again is retried again.
    type: bool
    default: false
  sites:
    description:
      - Many sites, each a dict with O(sites[].site) and any of the other suboptions; the task's options are the
        defaults of each. Mutually exclusive with O(site). A site, or a domain, declared twice is refused before any
        call.
    type: list
    elements: dict
    suboptions:
      site:
        description: As O(site).
        type: str
      domain:
        description: As O(domain).
        type: str
      keep_old_domain:
        description: As O(keep_old_domain).
        type: bool
      aliases:
        description: As O(aliases).
        type: list
        elements: str
      aliases_state:
        description: As O(aliases_state).
        type: str
        choices: [present, absent, exact]
      ssl_retry:
        description: As O(ssl_retry).
        type: bool
  wait:
    description:
      - Wait for the service's job that switches the primary domain. With V(false), the task returns the job's ID
        (RV(job_id)) and RV(domain_switch=started); a re-run follows the same job.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for the job. Past the deadline the task fails and reports the job's last state.
    type: int
    default: 1800
  poll_interval:
    description:
      - Seconds between two polls of the job while it is young. Never below V(1). After the first 12 seconds the
        gap grows (O(poll_interval) + 0.65 x sqrt(age - 12 s)), up to O(poll_max_interval).
    type: float
    default: 1.0
  poll_max_interval:
    description:
      - The longest gap, in seconds, between two polls of a job that has been running for a while.
      - If not set, the value of the E(WPCLOUD_POLL_MAX_INTERVAL) environment variable is used; else V(12), or
        O(poll_interval) when that is longer.
    type: float
  progress_interval:
    description:
      - While it waits, the task prints a progress line at least every this many seconds; V(0) turns them off. Only
        when the module runs in the controller (the default).
    type: float
    default: 15.0
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description:
      - Reads the site and reports what it would change (RV(actions)) without a write; the domains it would attach
        are shown as a new domain starts (certificate V(pending), the A records to set).
    support: full
  diff_mode:
    description: Shows the primary domain and the aliases before and after.
    support: full
  idempotent:
    description:
      - A site that already has the declared primary domain and aliases is not written to. O(ssl_retry=true) retries
        a certificate each time its last attempt failed.
    support: partial
notes:
  - The service switches the primary domain but does not rewrite the WordPress database; the C(domain_name_changed)
    webhook event (its C(then_db_siteurl)) tells what the site's own settings name.
  - A certificate is issued once the domain's DNS points to the platform; until then RV(domains[].ssl) is V(pending)
    (or V(failed), with the service's next attempt in RV(domains[].ssl_detail)). Set the A records of
    RV(dns_records), then run the task again (with O(ssl_retry) to ask for an attempt at once).
seealso:
  - module: wpcloud.hosting.site_domain_info
  - module: wpcloud.hosting.site_backup
  - module: wpcloud.hosting.site
'''

EXAMPLES = r'''
- name: Go live (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Make the production domain primary and keep the old one as an alias
      wpcloud.hosting.site_domain:
        client: "{{ wpcloud_client }}"
        site: dest1.example
        domain: shop.example.com
        keep_old_domain: true
        aliases:
          - www.shop.example.com
      register: cutover

    - name: Say what to put in DNS before the certificate can be issued
      ansible.builtin.debug:
        msg: "{{ item.name }} {{ item.type }} {{ item.value }}"
      loop: "{{ cutover.dns_records }}"

    - name: Cut a fleet over in one task, with exactly these aliases
      wpcloud.hosting.site_domain:
        client: "{{ wpcloud_client }}"
        aliases_state: exact
        sites:
          - site: dest2.example
            domain: blog.example.com
            aliases: [www.blog.example.com]
          - site: dest3.example
            domain: news.example.com
            aliases: []
      register: fleet

    - name: Show each site's certificates
      ansible.builtin.debug:
        msg: "{{ item.domain }}: {{ item.domains | map(attribute='ssl') | list }}"
      loop: "{{ fleet.results }}"
      loop_control:
        label: "{{ item.site }}"
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
  description:
    - The site's primary domain at the end of the task (in check mode, the one it would have). While a switch that
      was not waited for runs, still the old one.
  returned: when the site was found
  type: str
  sample: shop.example.com
previous_domain:
  description: The primary domain before the switch.
  returned: when the primary domain changes
  type: str
  sample: dest1.example
keep_old_domain:
  description: Whether the old primary domain stays as an alias.
  returned: when the primary domain changes
  type: bool
  sample: true
domain_switch:
  description:
    - V(none) (the primary domain was already O(domain), or none was given), V(switched) (the service's job
      succeeded; in check mode, would switch) or V(started) (O(wait=false)).
  returned: when the site was found
  type: str
  sample: switched
aliases:
  description: The site's aliases at the end of the task (in check mode, the ones it would have), sorted.
  returned: when the site was found
  type: list
  elements: str
  sample: ["dest1.example", "www.shop.example.com"]
actions:
  description: The writes made (in check mode, those it would make), in order. Empty when nothing changed.
  returned: when the site was found
  type: list
  elements: str
  sample: ["add alias www.shop.example.com", "switch the primary domain dest1.example -> shop.example.com (the old one kept as an alias)"]
job_id:
  description: The service's job that switches the primary domain.
  returned: when a switch was sent
  type: int
  sample: 7004
job:
  description:
    - The waited job, C(status) (the service's word), C(outcome) (V(success), V(failure), or null while the status
      is not one that ends a job), C(elapsed), C(polls).
  returned: when the module waited for a switch
  type: dict
  sample: {"job_id": 7004, "status": "success", "outcome": "success", "elapsed": 1.4, "polls": 3}
domains:
  description: Every domain of the site, the primary first, each with its certificate and the DNS records to set.
  returned: when the site was found
  type: list
  elements: dict
  contains:
    domain:
      description: The domain (an internationalised one in its ASCII form).
      type: str
    role:
      description: V(primary) or V(alias).
      type: str
    ssl:
      description:
        - V(issued) (a certificate), V(pending) (no attempt made yet, or a retry queued), V(failed) (the last attempt
          failed; the service tries again at C(retry_date)), or V(unknown) (the service did not know the domain).
      type: str
    ssl_detail:
      description:
        - Issued - C(certificate_id), C(ca_provider), C(certificate_expiration_date), C(validation_expiration).
          Failed - C(reason), C(last_error), C(retry_date), C(failcount).
      type: dict
    dns_records:
      description: While the domain has no certificate, the A records the service suggests for it (C(type), C(name), C(value)).
      type: list
      elements: dict
    ip_ranges:
      description: The client's address ranges, when the service suggested no address for the domain.
      type: list
      elements: str
  sample: [{"domain": "shop.example.com", "role": "primary", "ssl": "pending", "ssl_detail": {},
            "dns_records": [{"type": "A", "name": "shop.example.com", "value": "198.51.100.23"}]}]
dns_records:
  description:
    - Every DNS record to set for the site's domains, in one list (C(type), C(name), C(value)). On a refusal of a
      domain held elsewhere, the TXT record that claims it.
  returned: when the site was found
  type: list
  elements: dict
  sample: [{"type": "A", "name": "shop.example.com", "value": "198.51.100.23"}]
uncertain:
  description: Writes whose answer was lost, and how a read resolved them.
  returned: when a write's effect was unknown
  type: list
  elements: dict
  sample: [{"write": "site.update_domain", "outcome": "happened", "resolved_by": "read", "sends": 1}]
results:
  description: With O(sites), one result per element, in order, each as a single site returns, plus C(failed) and C(msg).
  returned: when sites is given
  type: list
  elements: dict
  sample: [{"site": "dest2.example", "site_id": 1002, "domain": "blog.example.com", "domain_switch": "switched", "failed": false}]
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
  sample: {"calls": 12, "peak_per_second": 6}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import JOB_WAIT_ARGUMENT_SPEC, api_spec_with, list_form_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.domain_switch import run_domain as run_logic

_ONE_SITE = dict(
    site=dict(type="str"),
    domain=dict(type="str"),
    keep_old_domain=dict(type="bool"),
    aliases=dict(type="list", elements="str"),
    aliases_state=dict(type="str", default="present", choices=["present", "absent", "exact"]),
    ssl_retry=dict(type="bool", default=False),
)

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(
        _ONE_SITE,
        client=dict(type="str", required=True),
        sites=dict(type="list", elements="dict", options=list_form_options(_ONE_SITE)),
        **JOB_WAIT_ARGUMENT_SPEC)),
    mutually_exclusive=[("site", "sites")],
    required_one_of=[("site", "sites")],
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
