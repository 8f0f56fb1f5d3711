# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
name: sites
short_description: The sites of a WP Cloud client account as inventory hosts
version_added: 0.1.0
description:
  - Lists every site of a WP Cloud client account (the service's C(get-sites), page after page) and adds each
    as a host, named by its domain (or its site ID, O(hostname)), with host variables C(wpcloud_site_id),
    C(wpcloud_domain), C(wpcloud_allow_site_migration), C(wpcloud_migration_id) and the other fields the
    service lists (C(wpcloud_created), C(wpcloud_space_used), ...). Every host is in the group
    C(wpcloud_account_sites).
  - Each site is one host whether the service pages, ignores C(limit)/C(after) or refuses them. When the service's
    listing does not carry the C(allow_site_migration) column, C(wpcloud_allow_site_migration) is null (unknown).
  - No host variable ever holds a credential (the site records' passwords and keys are left out) or the API key.
  - A site host is a record of the service, not a machine Ansible logs in to; the collection's modules reach it
    over the API from the controller. So the group C(wpcloud_account_sites) runs on the controller
    (see O(connection)), and a play over the sites with Ansible's default fact gathering does not reach for SSH
    to the sites' domains. Such a play needs no facts (C(gather_facts=false) saves a module run per site).
  - The connection options take the same environment variables as the modules, so an AWX / Automation
    Controller inventory source needs only the C(WP Cloud API) credential.
  - The inventory file's name must end in C(.wpcloud.yml) or C(.wpcloud.yaml).
requirements:
  - requests (Python library, on the controller)
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  plugin:
    description: The name of this plugin; it must be C(wpcloud.hosting.sites).
    type: str
    required: true
    choices: [wpcloud.hosting.sites]
  client:
    description: The client identifier of the partner account (lowercase) whose sites to list.
    type: str
    required: true
    env:
      - name: WPCLOUD_CLIENT
  api_url:
    description: Base URL of the partner API, without C(/api/v1.0).
    type: str
    default: https://atomic-api.wordpress.com
    env:
      - name: WPCLOUD_API_URL
  api_key:
    description:
      - The partner API key. Keep it out of the inventory file; the environment variable is the way an
        AWX / Automation Controller credential passes it.
    type: str
    env:
      - name: WPCLOUD_API_KEY
  ca_path:
    description: A PEM file of the certificate authority to trust instead of the system store.
    type: path
    env:
      - name: WPCLOUD_CA_PATH
  validate_certs:
    description: Verify the service's TLS certificate. Only for tests.
    type: bool
    default: true
    env:
      - name: WPCLOUD_VALIDATE_CERTS
  timeout:
    description: Seconds one call may take.
    type: int
    default: 30
  hostname:
    description: What names a host, the site's V(domain) or its V(site_id).
    type: str
    choices: [domain, site_id]
    default: domain
  page_size:
    description: How many sites each call asks for, between 1 and 1000 (the service's cap per page).
    type: int
    default: 1000
  connection:
    description:
      - How Ansible reaches the site hosts. V(local) gives the group C(wpcloud_account_sites) the variables
        C(ansible_connection=local) and C(ansible_python_interpreter) set to the controller's Python
        (C(ansible_playbook_python), as Ansible's implicit localhost has), so that a task or fact gathering for a
        site runs on the controller.
      - V(none) sets neither; the hosts then take their connection from the rest of the inventory.
      - As group variables they give way to C(group_vars/) files of the inventory (of any group of the sites),
        host variables, O(compose) and play variables.
    type: str
    choices: [local, none]
    default: local
extends_documentation_fragment:
  - constructed
  - inventory_cache
'''

EXAMPLES = r'''
# sites.wpcloud.yml: every site of the account, grouped by whether it takes a migration
plugin: wpcloud.hosting.sites
client: acme
keyed_groups:
  - key: wpcloud_allow_site_migration | ternary('migration_destinations', 'other_sites')
    prefix: ''
    separator: ''
compose:
  site_migration_site: wpcloud_site_id
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/wpcloud-inventory
cache_timeout: 300
'''

from ansible import constants as C
from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 templates an inventory's strings as they are
    def trust_as_template(value):
        return value

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import mask
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.site import list_sites

GROUP = "wpcloud_account_sites"
PREFIX = "wpcloud_"
# The group's variables of option connection=local: the controller, with the Python that runs the play (a template,
# as the job that uses an AWX inventory may run another Python than its sync; ours, so trusted: never the
# service's values, which stay untrusted).
LOCAL_CONNECTION = {"ansible_connection": "local",
                    "ansible_python_interpreter": trust_as_template("{{ ansible_playbook_python }}")}


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "wpcloud.hosting.sites"

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith((".wpcloud.yml", ".wpcloud.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        config = self._read_config_data(path) or {}
        # The options DOCUMENTATION declares (its fragments' too): Ansible itself ignores other keys.
        unknown = sorted(set(config) - set(C.config.get_configuration_definitions("inventory", self._load_name)))
        if unknown:
            raise AnsibleParserError("%s: unknown option %s of the wpcloud.hosting.sites inventory; the options are "
                                     "documented in ansible-doc -t inventory wpcloud.hosting.sites."
                                     % (path, ", ".join(unknown)))
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        sites = None
        if use_cache:
            try:
                sites = self._cache[cache_key]
            except KeyError:
                sites = None
        if sites is None:
            sites = self._fetch()
            if self.get_option("cache"):
                self._cache[cache_key] = sites
        self._populate(sites)

    def _fetch(self):
        client_name = self.get_option("client")
        if not client_name or not str(client_name).strip():
            raise AnsibleParserError("client is empty: set client (or WPCLOUD_CLIENT) to the client identifier of "
                                     "the partner account.")
        api_key = self.get_option("api_key")
        if not api_key:
            raise AnsibleParserError("api_key is required: set the WPCLOUD_API_KEY environment variable (in AWX, the "
                                     "WP Cloud API credential of the inventory source).")
        try:
            client = WPCloudClient(api_url=self.get_option("api_url"), api_key=api_key,
                                   validate_certs=self.get_option("validate_certs"), ca_path=self.get_option("ca_path"),
                                   timeout=self.get_option("timeout"))
            try:
                return list_sites(client, client_name, self.get_option("page_size"))
            finally:
                client.close()
        except WPCloudAPIError as exc:
            raise AnsibleParserError(mask(exc.message, [api_key]))
        except ModuleFailure as failure:
            raise AnsibleParserError(mask(failure.msg, [api_key]))

    def _populate(self, sites):
        strict = self.get_option("strict")
        self.inventory.add_group(GROUP)
        if self.get_option("connection") == "local":
            for key, value in LOCAL_CONNECTION.items():
                self.inventory.set_variable(GROUP, key, value)
        by_id = self.get_option("hostname") == "site_id"
        for site in sites:
            name = str(site["site_id"] if by_id else site["domain"])
            self.inventory.add_host(name, group=GROUP)
            hostvars = dict((PREFIX + key, value) for key, value in site.items())
            for key, value in hostvars.items():
                self.inventory.set_variable(name, key, value)
            self._set_composite_vars(self.get_option("compose"), hostvars, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, name, strict=strict)
