#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: migration_preflight
short_description: Test a WP Cloud migration's connection and source before it runs
version_added: 0.1.0
description:
  - Runs the service's preflight for a migration. It tests the saved SSH connection, finds the document
    root and checks that the source has WP-CLI and rsync. Each call gets a new response ticket.
  - With O(wait), waits for the ticket. On failure the task fails with a RV(diagnosis) whose stable code
    says what to change (C(auth_failed), C(docroot_missing), C(wp_cli_missing), C(rsync_missing) or
    C(unknown)), the ticket's messages and a hint.
  - Run it again after every update of the migration.
  - With O(migration_ids), one task tests a whole fleet. Every preflight is started first (16 at a time on one
    connection), then all tickets are waited on at once, so O(wait_timeout) is shared and the task takes
    about as long as the slowest preflight. One failed preflight does not stop the others; the task fails
    afterwards and names each, and each failed item of RV(results) carries its diagnosis.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  migration_id:
    description:
      - The migration to test.
      - Exactly one of O(migration_id) and O(migration_ids) is required.
    type: int
  migration_ids:
    description:
      - Many migrations to test in one task. Results come back in RV(results), one per migration in the same
        order. An empty list starts nothing.
      - A migration listed twice is refused before any call.
      - Mutually exclusive with O(migration_id).
    type: list
    elements: int
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.api.WAIT
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description: >-
      In check mode no preflight is started; the task reports that one would be. A null O(migration_id)
      (or null items of O(migration_ids)), as a migration task returns in check mode before the migration
      exists, is accepted in check mode only.
    support: full
  diff_mode:
    description: A preflight changes no configuration.
    support: none
  idempotent:
    description: Every run starts a new preflight, by design.
    support: none
seealso:
  - module: wpcloud.hosting.migration_ready
  - module: wpcloud.hosting.response_ticket_wait
'''

EXAMPLES = r'''
- name: Test migrations before they run (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Find the migration of the site
      wpcloud.hosting.migration_info:
        site: dest2.example
      register: info

    - name: Run preflight and stop with the diagnosis on failure
      wpcloud.hosting.migration_preflight:
        migration_id: "{{ info.migration_id }}"
        wait_timeout: 600
        progress_interval: 30
      register: preflight
      ignore_errors: true

    - name: Say what to fix
      ansible.builtin.debug:
        msg: "{{ preflight.diagnosis.code }}: {{ preflight.diagnosis.hint }}"
      when: preflight is failed and preflight.diagnosis is defined

    - name: Find the migrations of a fleet
      wpcloud.hosting.migration_info:
        sites:
          - dest2.example
          - dest3.example
      register: fleet_info

    - name: Preflight the whole fleet in one task; one failure does not stop the others
      wpcloud.hosting.migration_preflight:
        migration_ids: "{{ fleet_info.results | map(attribute='migration_id') | list }}"
        wait_timeout: 600
      register: fleet
      ignore_errors: true

    - name: Say what to fix, migration by migration
      ansible.builtin.debug:
        msg: "{{ item.migration_id }}: {{ item.diagnosis.code | default('ok') }} {{ item.diagnosis.hint | default('') }}"
      loop: "{{ fleet.results }}"
      loop_control:
        label: "{{ item.migration_id }}"
'''

RETURN = r'''
migration_id:
  description: The migration tested.
  returned: always, with migration_id (with migration_ids, in each item of results)
  type: int
  sample: 42
ticket_id:
  description: The new response ticket.
  returned: success, with migration_id (with migration_ids, in each item of results)
  type: str
  sample: 697101d62363a84200817088867.243054b9b46e78e7.1
ticket:
  description: What the wait saw of the ticket.
  returned: when wait is true, with migration_id (with migration_ids, in each item of results)
  type: dict
  contains:
    ticket_id:
      description: The ticket.
      type: str
      sample: 697101d62363a84200817088867.243054b9b46e78e7.1
    state:
      description: V(success), V(failure), V(running), V(pending) (no response yet) or V(error).
      type: str
      sample: success
    response_count:
      description: Responses attached to the ticket.
      type: int
      sample: 4
    elapsed:
      description: Seconds from the start of the wait to the completion seen.
      type: float
      sample: 2.03
    polls:
      description: Summary requests made.
      type: int
      sample: 3
    messages:
      description: The ticket's messages, when fetched.
      type: list
      elements: str
      sample: ["Connecting to www@source.example.net:22", "Preflight succeeded"]
diagnosis:
  description: Why the preflight failed and what to change.
  returned: when the preflight failed, with migration_id (with migration_ids, in each failed item of results)
  type: dict
  contains:
    code:
      description: V(auth_failed), V(docroot_missing), V(wp_cli_missing), V(rsync_missing) or V(unknown).
      type: str
      sample: auth_failed
    hint:
      description: What to change.
      type: str
      sample: Add the returned ssh_id_pub to ~/.ssh/authorized_keys of remote_user on remote_host.
    matched:
      description: The part of a message that gave the code.
      type: str
      sample: Permission denied
    messages:
      description: The ticket's messages.
      type: list
      elements: str
      sample: ["Permission denied (publickey,password)."]
results:
  description:
    - With O(migration_ids), one result per migration, in the order of O(migration_ids).
    - Each holds the keys a single O(migration_id) returns, plus RV(results[].failed) and, for a failed
      preflight, RV(results[].msg).
  returned: when migration_ids is given
  type: list
  elements: dict
  contains:
    failed:
      description: Whether this preflight failed, could not start or did not finish in time.
      type: bool
      sample: true
    msg:
      description: Why this preflight failed.
      type: str
      returned: when the preflight failed
      sample: "The preflight failed (auth_failed): Add the returned ssh_id_pub to ~/.ssh/authorized_keys ..."
  sample: [{"migration_id": 42, "ticket_id": "697101d6.1", "ticket_state": "success", "failed": false}]
failed_count:
  description: With O(migration_ids), how many preflights failed. The task fails when it is not 0.
  returned: when migration_ids is given
  type: int
  sample: 0
api_load:
  description:
    - The load the task put on the service, its reads, starts and polls together (retries too) - C(calls) sent
      and C(peak_per_second), the most within any one second. A fleet's rate is the sum over the tasks that
      run at once.
  returned: when the task called the API
  type: dict
  sample: {"calls": 1206, "peak_per_second": 300}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import START_ARGUMENT_SPEC, START_RULES, api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_runs import run_preflight as run_logic

MODULE_SPEC = dict(START_RULES, argument_spec=api_spec_with(START_ARGUMENT_SPEC))
# Check mode across a workflow: null items of these lists are IDs an earlier task only pretended to create
# (see plugins/plugin_utils/_controller_action.py); what the module would do with them.
CHECK_MODE_NULLS = dict(options=("migration_ids",), changed=True, note="their preflights would be started")


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
