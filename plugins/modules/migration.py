#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: migration
short_description: Create or update a native SSH migration into a WP Cloud site
version_added: 0.1.0
description:
  - Creates the migration that copies a site from a source server over SSH into a destination site, or
    updates the one that exists. Does not start it; see M(wpcloud.hosting.migration_preflight) and
    M(wpcloud.hosting.migration_ready).
  - Without O(migration_id) the module first reads the destination's C(allow_site_migration); when it holds
    a migration ID, that migration is managed, so a re-run never creates a second migration for the site.
  - With an existing migration, the readable fields are compared and only differences are sent.
    Credentials cannot be read back; O(update_secret) decides when they are sent.
  - Authentication is exactly one of O(remote_pass); O(ssh_id); O(ssh_id) with O(ssh_id_pass); or none,
    in which case the service generates an identity and the module returns its public key RV(ssh_id_pub),
    which must be added to the source user's C(authorized_keys) before preflight.
  - O(ssh_id) is checked locally before anything is sent; only its fingerprint is returned.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  site:
    description:
      - The destination site, by numeric site ID or domain. Required unless O(migration_id) is given.
    type: str
  migration_id:
    description:
      - The migration to manage. Without it, the migration attached to O(site) is managed, or a new one created.
    type: int
  remote_host:
    description:
      - SSH host name or address of the source server. Required to create a migration.
    type: str
  remote_user:
    description:
      - SSH user on the source server. Required to create a migration.
    type: str
  remote_port:
    description:
      - SSH port of the source server.
    type: int
    default: 22
  remote_pass:
    description:
      - SSH password of O(remote_user). Never logged or returned.
    type: str
  remote_docroot:
    description:
      - Document root of the source site. Left out, the service tries common paths.
    type: str
  remote_domain:
    description:
      - Domain of the source site when it differs from the destination's.
      - Left out, nothing is sent. An empty string is sent as empty, which makes the migration use the
        destination site's default domain.
    type: str
  ssh_id:
    description:
      - Text of an SSH private key (OpenSSH or PEM) for O(remote_user). Never logged or returned.
    type: str
  ssh_id_pass:
    description:
      - Passphrase of O(ssh_id). Only for a protected key; a passphrase for a key without one is refused.
    type: str
  update_secret:
    description:
      - Credentials cannot be read back from the service. V(on_create) sends them when the migration is
        created or when the authentication method changes; V(always) sends them on every run, which then
        always reports a change and requires a new preflight.
    type: str
    choices: [always, on_create]
    default: on_create
  state_file:
    description:
      - JSON file that keeps the migration ID with the destination site, on the host that runs the module
        (the controller, unless C(wpcloud_hosting_execution=module)).
      - Read when O(migration_id) is not given; written atomically right after a create, and whenever the
        managed migration differs from the recorded one. Other keys in the file are kept.
    type: path
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description: Predicts C(changed) and the fields it would send, without writing.
    support: full
  diff_mode:
    description: Shows the readable fields before and after; credentials show only as the authentication method.
    support: full
  idempotent:
    description: Idempotent unless O(update_secret=always) is used with credentials.
    support: partial
seealso:
  - module: wpcloud.hosting.migration_info
  - module: wpcloud.hosting.migration_preflight
'''

EXAMPLES = r'''
- name: Create a migration with an identity the service generates
  wpcloud.hosting.migration:
    api_url: "{{ wpcloud_api_url }}"
    api_key: "{{ wpcloud_api_key }}"
    ca_path: "{{ wpcloud_ca_path | default(omit) }}"
    site: "{{ wpcloud_example_site | default('dest2.example') }}"
    remote_host: source.example.net
    remote_user: www
    remote_docroot: /home/www/public_html
  register: created

- name: Show the public key to add to the source's authorized_keys
  ansible.builtin.debug:
    var: created.ssh_id_pub

- name: Switch it to a passphrase-protected key (vaulted variables)
  wpcloud.hosting.migration:
    api_url: "{{ wpcloud_api_url }}"
    api_key: "{{ wpcloud_api_key }}"
    ca_path: "{{ wpcloud_ca_path | default(omit) }}"
    migration_id: "{{ created.migration_id }}"
    ssh_id: "{{ vault_source_ssh_key }}"
    ssh_id_pass: "{{ vault_source_ssh_key_passphrase }}"
  when: vault_source_ssh_key is defined
'''

RETURN = r'''
migration_id:
  description: The migration's ID; keep it with the destination site. Null in check mode before creation.
  returned: success
  type: int
  sample: 42
site_id:
  description: The destination site's ID as the service reports it.
  returned: success
  type: int
  sample: 1002
state:
  description: The migration's state, for example V(new), V(preflight-succeeded), V(migration-succeeded).
  returned: success
  type: str
  sample: new
operation:
  description: What the module did or would do.
  returned: always
  type: str
  choices: [none, create, update]
  sample: create
updated_fields:
  description: The service's names of the fields sent in an update (credentials by name only).
  returned: always
  type: list
  elements: str
  sample: [remote-docroot]
ssh_id_pub:
  description: Public key of the identity the service generated; add it to the source user's authorized_keys.
  returned: when the service generated an identity
  type: str
  sample: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI... wpcloud-migration-42
ssh_id_fingerprint:
  description: SHA256 fingerprint of the public half of O(ssh_id). The key itself is never returned.
  returned: when ssh_id is given
  type: str
  sample: SHA256:2mRkVJqk2mC2bYq3v0p3Y2VdZf2e4yA4nL0m0JmQ3sU
record:
  description: The migration record as the service returns it, with every credential field redacted.
  returned: success
  type: dict
  sample: {"atomic_site_migration_id": "42", "state": "new", "args": {"remote-host": "source.example.net"}}
failure:
  description: Machine-readable detail of an API error.
  returned: on API failure
  type: dict
  sample: {"status": 409, "operation": "migration.update", "message": "Migration 42 is actively running"}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils._common import api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils._migration import (
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    REQUIRED_BY,
    REQUIRED_ONE_OF,
    run as run_logic,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils._runner import run_module

MODULE_SPEC = dict(
    argument_spec=api_spec_with(ARGUMENT_SPEC),
    mutually_exclusive=MUTUALLY_EXCLUSIVE,
    required_by=REQUIRED_BY,
    required_one_of=REQUIRED_ONE_OF,
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
