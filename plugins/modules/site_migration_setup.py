#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site_migration_setup
short_description: "Internal: set up the migrations of the site_migration role's sites, up to the key install, in one task"
version_added: 0.1.0
description:
  - The phase of the C(wpcloud.hosting.site_migration) role that runs before a generated key is installed on the
    source hosts, as one task on the controller. Used by the role; not meant for playbooks of your own.
  - Reads every host's role variables (the options of O(argument_spec)) as that host's own task would see them
    (role defaults, play and host vars, extra vars), checks them against O(argument_spec), against empty values and
    the rules between variables, and resolves them against the source host. A site with a problem is done, with a
    message that names the role variable and the fix, before anything is written.
  - Then, one call of each module for all the sites that take the step, in this order. With
    C(site_migration_client), the client's sites are listed (M(wpcloud.hosting.site_info)) and the missing
    destinations created ready for a migration (M(wpcloud.hosting.site)); the same listing says where the sites of
    the going-live steps are and whether each is live (its primary domain is its C(site_migration_production_domain),
    or the one its state file recorded at its cutover), and a live site that the run would migrate without
    C(site_migration_overwrite_live) is done there, before any write. The migrations of the sites that are
    not refreshed are read (M(wpcloud.hosting.migration_info)). The migrations' inputs are checked
    (M(wpcloud.hosting.migration) in check mode). The destinations are allowed to take a migration
    (M(wpcloud.hosting.site_allow_migration)), and the migrations created or updated (M(wpcloud.hosting.migration)).
  - Each step's result is taken into the fleet once; a site whose step failed is done, the others go on. A line
    shows each step as it starts, and the site creation's wait shows its progress.
  - With C(--diff), one diff per site, the cutover's domain change that the role makes after the run included (the
    task is C(changed) for it).
  - The credentials are read from the hosts' variables and sent; the result never holds one.
  - The connection of each module it calls comes from the task's own connection options, else the hosts'
    C(wpcloud_*) variables (the same for every host), else the play's C(module_defaults) for that module, then for
    C(group/wpcloud.hosting.all), else the C(WPCLOUD_*) environment. When these would give the modules different
    URLs, keys or CAs, or the default address while the play's C(module_defaults) name another for other modules,
    every site is done before any call with a message that names the sources.
  - A host variable that starts with C(site_migration_) and is not an option of O(argument_spec), or a C(wpcloud_)
    one that reads like a connection variable, gives one warning naming the closest known one.
  - Under a strategy that runs each host alone (C(free), C(host_pinned)), the task fails before any call and says
    to use C(linear).
requirements:
  - cryptography (Python library, on the controller; ansible-core depends on it), to check C(site_migration_ssh_id) before it is sent
  - bcrypt (Python library, on the controller), only to check the passphrase of a passphrase-protected C(site_migration_ssh_id) in
    OpenSSH format (what C(ssh-keygen) writes by default); a PEM key or a key without a passphrase does without it
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  argument_spec:
    description:
      - The role's argument spec, its C(main) entry point (the one with C(options)). Every option is read for each
        host and checked against it.
    type: dict
    required: true
  hosts:
    description:
      - The sites' inventory hosts, in this order. Default the play batch (C(ansible_play_batch)).
      - An explicitly empty list is an error.
    type: list
    elements: str
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description: Nothing is written; the fleet says what would happen to each site.
    support: full
  diff_mode:
    description: One diff per site, of the site created, its C(allow_site_migration) and its migration's fields.
    support: full
  idempotent:
    description: A re-run writes only what changed (with C(site_migration_refresh=false), nothing for a migration
      that succeeded).
    support: full
notes:
  - It reads the hosts' variables through the variable manager that C(hostvars) holds, as
    M(wpcloud.hosting.fleet_vars) does (ansible-core 2.16 to 2.21).
  - It runs in the controller process only; C(wpcloud_hosting_execution=module) does not apply.
seealso:
  - name: The site_migration role
    description: Runs this task, installs the generated keys, then the preflights and runs.
    link: https://github.com/wpcloud-hosting/wpcloud.hosting/blob/main/docs/migration.md
'''

EXAMPLES = r'''
# The role wpcloud.hosting.site_migration runs it with its own argument spec (meta/argument_specs.yml); here a
# play gives the few options it sets, as variables of the task (they could be host_vars, group_vars, ...).
- name: Set up the migration of the play's site (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Check the site's inputs, then allow and create or update its migration
      wpcloud.hosting.site_migration_setup:
        argument_spec:
          options:
            site_migration_site: {type: str}
            site_migration_auth: {type: str, choices: [password, key, generated]}
            site_migration_remote_host: {type: str}
            site_migration_remote_user: {type: str}
            site_migration_confirm_overwrite: {type: bool}
            site_migration_install_key: {type: bool}
            site_migration_state_dir: {type: path}
      vars:
        site_migration_site: dest1.example
        site_migration_auth: generated
        site_migration_remote_host: src.example
        site_migration_remote_user: www
        site_migration_confirm_overwrite: true
        site_migration_install_key: false
        site_migration_state_dir: "{{ playbook_dir }}/wpcloud-state"
      register: setup
      run_once: true

    - name: Show how far each site got (preflight next, or done with its result and message)
      ansible.builtin.debug:
        msg: "{{ setup.fleet | items2dict(key_name='host', value_name='stage') }}"
      run_once: true
'''

RETURN = r'''
fleet:
  description:
    - One entry per host of O(hosts), in order, with the site's resolved inputs (no credential) and how far it got
      (C(stage)), its C(result) and C(message) when it is done, and what the steps returned for it (C(info),
      C(migration), C(new_site), C(uncertain)). The role's filter C(wpcloud.hosting.site_migration_step) takes it
      on to the key install.
  returned: success
  type: list
  elements: dict
  sample: [{"host": "dest1.example", "site": "1001", "stage": "preflight", "migration_id": 42, "result": null}]
going_live:
  description:
    - Whether a site of the fleet may take a going-live step in this run (a backup before its run, a restore, a
      cutover or its preview). The role runs those steps only when one may.
  returned: success
  type: bool
  sample: false
steps:
  description: What each step that ran did, by step (V(find), V(new), V(info), V(check), V(allow), V(create)).
  returned: success
  type: dict
  contains:
    sites:
      description: How many sites took the step.
      type: int
    changed:
      description: Whether it changed a site (never for V(check)).
      type: bool
    api_load:
      description: The load a waiting step put on the service, as the module returned it.
      type: dict
      returned: when the step waited
  sample: {"allow": {"sites": 2, "changed": true}, "create": {"sites": 2, "changed": true}}
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import api_spec_with

MODULE_SPEC = dict(argument_spec=api_spec_with(dict(
    argument_spec=dict(type="dict", required=True),
    hosts=dict(type="list", elements="str"),
)))


def main():
    AnsibleModule(supports_check_mode=True, **MODULE_SPEC).fail_json(
        msg="wpcloud.hosting.site_migration_setup runs as an action plugin on the controller; call it as a task of "
            "a play (it has no module process).")


if __name__ == "__main__":
    main()
