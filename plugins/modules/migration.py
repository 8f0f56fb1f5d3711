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
    When it says the site does not accept a migration (V(false)), the module fails before the create and
    names the fix, M(wpcloud.hosting.site_allow_migration); with an unset flag the create is sent and the
    service decides.
  - With an existing migration, only the options given are compared, and only their differences are sent.
    An option left out keeps the stored value; a default such as V(22) for O(remote_port) applies only
    when the migration is created. Credentials cannot be read back; O(update_secret) decides when they
    are sent, from what O(state_file) recorded of the ones last sent.
  - Authentication is exactly one of O(remote_pass); O(ssh_id); O(ssh_id) with O(ssh_id_pass); or none,
    in which case the service generates an identity and the module returns its public key RV(ssh_id_pub),
    which must be added to the source user's C(authorized_keys) before preflight.
  - O(ssh_id) is checked locally before anything is sent; only its fingerprint is returned.
  - With O(migrations), one task manages the migrations of a whole fleet. Each element is one migration; the
    task's own options are the defaults of every element. The migrations are handled 16 at a time on one
    connection. One failed migration does not stop the others; the task fails afterwards and names each.
requirements:
  - cryptography (Python library, on the controller; ansible-core depends on it), to check O(ssh_id) before it is sent
  - bcrypt (Python library, on the controller), only to check the passphrase of a passphrase-protected O(ssh_id) in
    OpenSSH format (what C(ssh-keygen) writes by default); a PEM key or a key without a passphrase does without it
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  site:
    description:
      - The destination site, by numeric site ID or domain. Required unless O(migration_id) or O(migrations)
        is given.
      - Mutually exclusive with O(migrations).
    type: str
  migration_id:
    description:
      - The migration to manage. Without it, the migration attached to O(site) is managed, or a new one created.
      - Mutually exclusive with O(migrations).
    type: int
  migrations:
    description:
      - Many migrations in one task, one element each. Results come back in RV(results), in the same order.
        An empty list changes nothing.
      - An option an element leaves out takes the task's value, so options shared by the fleet are given once.
        O(migrations[].site), O(migrations[].migration_id) and O(migrations[].state_file) are the element's own.
      - Credentials are taken as a set. An element that gives any of O(migrations[].remote_pass),
        O(migrations[].ssh_id) or O(migrations[].ssh_id_pass) takes none of the task's credentials; this way a
        task-level password never mixes with an element's key.
      - Two elements for the same site, migration or state file are refused before any call, as they would
        race each other into two migrations.
      - Mutually exclusive with O(site), O(migration_id) and O(state_file).
    type: list
    elements: dict
    suboptions:
      site:
        description:
          - The destination site, by numeric site ID or domain. Required unless O(migrations[].migration_id)
            is given.
        type: str
      migration_id:
        description:
          - The migration to manage.
        type: int
      remote_host:
        description:
          - As O(remote_host).
        type: str
      remote_user:
        description:
          - As O(remote_user).
        type: str
      remote_port:
        description:
          - As O(remote_port). Left out, the task's O(remote_port) when the task gives one; else the stored
            port is kept (V(22) on create).
        type: int
      remote_pass:
        description:
          - As O(remote_pass). Never logged or returned.
          - Mutually exclusive with O(migrations[].ssh_id) and O(migrations[].ssh_id_pass).
        type: str
      remote_docroot:
        description:
          - As O(remote_docroot).
        type: str
      remote_domain:
        description:
          - As O(remote_domain).
        type: str
      ssh_id:
        description:
          - As O(ssh_id). Never logged or returned.
        type: str
      ssh_id_pass:
        description:
          - As O(ssh_id_pass). Never logged or returned. Requires O(migrations[].ssh_id).
        type: str
      update_secret:
        description:
          - As O(update_secret). Left out, the task's O(update_secret).
        type: str
        choices: [when_changed, on_create, always]
      state_file:
        description:
          - As O(state_file), for this migration only.
        type: path
  remote_host:
    description:
      - SSH host name or address of the source server. Required to create a migration.
      - With O(migrations), the default of every element; the same holds for every option below but O(state_file).
    type: str
  remote_user:
    description:
      - SSH user on the source server. Required to create a migration.
    type: str
  remote_port:
    description:
      - SSH port of the source server.
      - Left out when the migration is created, V(22). Left out on an update, the stored port is kept.
    type: int
  remote_pass:
    description:
      - SSH password of O(remote_user). Never logged or returned.
      - Mutually exclusive with O(ssh_id) and O(ssh_id_pass).
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
        Never logged or returned. Requires O(ssh_id).
    type: str
  update_secret:
    description:
      - Decides when the credentials given (O(remote_pass), O(ssh_id), O(ssh_id_pass)) are sent to an
        existing migration. They cannot be read back from the service; O(state_file) keeps the fingerprint
        of the O(ssh_id) and a salted digest of the O(remote_pass) last sent, so that a changed one can be
        told from the same one. Every choice sends them when the migration is created and when the
        authentication method changes (password, key, key with passphrase). The table in docs/migration.md,
        "When credentials are sent", has the three cases side by side.
      - V(when_changed) (the default) sends a credential that differs from the one last sent, in an update
        (run preflight again afterwards). The same one again sends nothing and says nothing, so a re-run is
        idempotent. With nothing to compare with, it acts as V(on_create).
      - V(on_create) never sends a credential that differs from the one last sent. The task fails before
        any write, naming this option, since a preflight would use the stale credential. With nothing to
        compare with, it sends nothing, and RV(credentials_not_sent) and a warning name the credential.
      - V(always) sends them on every run, which then always reports a change and requires a new
        preflight. For a secret rotated where no state file can tell (a task without O(state_file), a
        password changed outside Ansible).
      - Nothing to compare with means no O(state_file), or none recorded in it for this migration yet (a
        migration created elsewhere, a state file of an earlier version). Once a credential is sent, its
        record is kept.
      - O(ssh_id_pass) goes with its key. The key's fingerprint judges both, and both are sent together.
    type: str
    choices: [when_changed, on_create, always]
    default: when_changed
  state_file:
    description:
      - JSON file that keeps the migration ID with the destination site, on the host that runs the module
        (the controller, unless C(wpcloud_hosting_execution=module)).
      - Read when O(migration_id) is not given; written atomically right after a create, and whenever the
        managed migration differs from the recorded one. Other keys in the file are kept.
      - Also records the fingerprint (not the key) of the O(ssh_id) last sent, and a salted digest (not the
        password; PBKDF2-HMAC-SHA256) of the O(remote_pass) last sent, so that a changed credential can be
        told from the same one (O(update_secret)). A file that recorded another migration forgets them.
      - A recorded migration ID that the service no longer knows (HTTP 404, after a deleted migration or a service
        reset) is forgotten, with a warning, when the site's C(allow_site_migration) does not hold it; the
        site's own migration is managed instead, or a new one created. When the site still holds it, the
        module writes nothing and fails with a message that names the file.
      - Mutually exclusive with O(migrations); give each element its own O(migrations[].state_file).
    type: path
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description: Predicts C(changed) and the fields it would send, without writing.
    support: full
  diff_mode:
    description: >-
      Shows the readable fields before and after; credentials show only as the authentication method.
      With O(migrations), one diff per migration.
    support: full
  idempotent:
    description: >-
      Idempotent unless O(update_secret=always) is used with credentials. A changed credential is sent once
      (O(update_secret=when_changed)); the run after sends nothing.
    support: partial
seealso:
  - module: wpcloud.hosting.migration_info
  - module: wpcloud.hosting.migration_preflight
'''

EXAMPLES = r'''
- name: Set up migrations (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Create a migration with an identity the service generates
      wpcloud.hosting.migration:
        site: dest2.example
        remote_host: source.example.net
        remote_user: www
        remote_port: 2022
        remote_docroot: /home/www/public_html
      register: created

    - name: Show the public key to add to the source's authorized_keys
      ansible.builtin.debug:
        var: created.ssh_id_pub

    - name: Switch it to a passphrase-protected key (vaulted variables); remote_port and the rest are kept
      wpcloud.hosting.migration:
        migration_id: "{{ created.migration_id }}"
        ssh_id: "{{ vault_source_ssh_key }}"
        ssh_id_pass: "{{ vault_source_ssh_key_passphrase }}"

    - name: Manage a fleet's migrations in one task; the shared options are given once
      wpcloud.hosting.migration:
        remote_host: source.example.net
        remote_user: www
        migrations:
          - site: dest2.example
            remote_docroot: /home/www/public_html
          - site: dest3.example
            remote_docroot: /home/shop/public_html
      register: fleet

    - name: Show each site's migration
      ansible.builtin.debug:
        msg: "site {{ item.site }}: migration {{ item.migration_id }} ({{ item.operation }})"
      loop: "{{ fleet.results }}"
      loop_control:
        label: "{{ item.site }}"
'''

RETURN = r'''
migration_id:
  description:
    - The migration's ID; keep it with the destination site. Null in check mode before creation.
    - In check mode, a later task may pass this null on (for example to M(wpcloud.hosting.migration_preflight));
      it then reports what it would do. Outside check mode a null ID is an error.
  returned: success, without migrations (with migrations, in each item of results)
  type: int
  sample: 42
site_id:
  description: The destination site's ID as the service reports it.
  returned: success, without migrations (with migrations, in each item of results)
  type: int
  sample: 1002
state:
  description: The migration's state, for example V(new), V(preflight-succeeded), V(migration-succeeded).
  returned: success, without migrations (with migrations, in each item of results)
  type: str
  sample: new
operation:
  description: What the module did or would do.
  returned: always, without migrations (with migrations, in each item of results)
  type: str
  choices: [none, create, update]
  sample: create
updated_fields:
  description: The service's names of the fields sent in an update (credentials by name only).
  returned: always, without migrations (with migrations, in each item of results)
  type: list
  elements: str
  sample: [remote-docroot]
ssh_id_pub:
  description: Public key of the identity the service generated; add it to the source user's authorized_keys.
  returned: when the service generated an identity
  type: str
  sample: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI... wpcloud-migration-42
credentials_not_sent:
  description:
    - Credential options that were given but not sent because nothing tells whether they differ from the
      ones the migration has (no O(state_file), or no record in it yet; see O(update_secret)). A warning says
      how to send them.
  returned: when credentials were given and not sent
  type: list
  elements: str
  sample: [remote_pass]
ssh_id_fingerprint:
  description: SHA256 fingerprint of the public half of O(ssh_id). The key itself is never returned.
  returned: when ssh_id is given
  type: str
  sample: SHA256:2mRkVJqk2mC2bYq3v0p3Y2VdZf2e4yA4nL0m0JmQ3sU
record:
  description: The migration record as the service returns it, with every credential field redacted.
  returned: success, without migrations (with migrations, in each item of results)
  type: dict
  sample: {"atomic_site_migration_id": "42", "state": "new", "args": {"remote-host": "source.example.net"}}
failure:
  description: Machine-readable detail of an API error.
  returned: on API failure
  type: dict
  sample: {"status": 409, "operation": "migration.update", "message": "Migration 42 is actively running"}
results:
  description:
    - With O(migrations), one result per element, in the order of O(migrations).
    - Each holds the keys a single migration returns, plus RV(results[].failed) and, for a failed element,
      RV(results[].msg). Credentials are never returned.
  returned: when migrations is given
  type: list
  elements: dict
  contains:
    site:
      description: The element's site, when it gave one.
      type: str
      returned: when the element gives a site
      sample: "1002"
    failed:
      description: Whether this migration failed.
      type: bool
      sample: false
    msg:
      description: Why this migration failed.
      type: str
      returned: when the migration failed
      sample: "remote_host is required to create a migration for site 1003."
  sample: [{"site": "1002", "migration_id": 42, "operation": "create", "changed": true, "failed": false}]
failed_count:
  description: With O(migrations), how many migrations failed. The task fails when it is not 0.
  returned: when migrations is given
  type: int
  sample: 0
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_credentials import (
    UPDATE_SECRET_CHOICES,
    UPDATE_SECRET_DEFAULT,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_module import (
    field_spec,
    run as run_logic,
    run_fields,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module

# One migration's options: the module's own, and each element of its list form ``migrations``. No option
# that is sent to the service has a spec default: an update sends only what the user gave (the defaults
# of a new migration are CREATE_DEFAULTS in module_utils/service/migration.py).
_ONE_MIGRATION = dict(
    site=dict(type="str"),
    migration_id=dict(type="int"),
    remote_host=dict(type="str"),
    remote_user=dict(type="str"),
    remote_port=dict(type="int"),
    remote_pass=dict(type="str", no_log=True),
    remote_docroot=dict(type="str"),
    remote_domain=dict(type="str"),
    ssh_id=dict(type="str", no_log=True),
    ssh_id_pass=dict(type="str", no_log=True),
    update_secret=dict(type="str", default=UPDATE_SECRET_DEFAULT, choices=UPDATE_SECRET_CHOICES),
    state_file=dict(type="path"),
)
_CREDENTIALS_EXCLUSIVE = [("remote_pass", "ssh_id"), ("remote_pass", "ssh_id_pass")]
_REQUIRED_BY = {"ssh_id_pass": ("ssh_id",)}

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(
        _ONE_MIGRATION,
        # In migrations the task's options are the defaults of every element, so elements have none.
        migrations=dict(type="list", elements="dict",
                        options=dict((name, dict((k, v) for k, v in spec.items() if k != "default"))
                                     for name, spec in _ONE_MIGRATION.items()),
                        mutually_exclusive=_CREDENTIALS_EXCLUSIVE, required_by=_REQUIRED_BY,
                        required_one_of=[("site", "migration_id")]),
    )),
    mutually_exclusive=_CREDENTIALS_EXCLUSIVE + [("migrations", "site"), ("migrations", "migration_id"),
                                                 ("migrations", "state_file")],
    required_by=_REQUIRED_BY,
    required_one_of=[("site", "migration_id", "migrations")],
)
# The same options and logic with each migration option under the service's field name (remote-pass), for a
# caller that holds the fields by those names: the site_migration role's setup phase (run_in_controller with
# by_field), so that a value carries one name from the role's variable to the form.
FIELD_SPEC = field_spec(MODULE_SPEC)
FIELD_LOGIC = run_fields


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
