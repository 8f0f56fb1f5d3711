#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: migration_ready
short_description: Start a WP Cloud migration run
version_added: 0.1.0
description:
  - Marks a migration ready, which starts it, and returns the run's response ticket. With O(wait), waits
    for the run to succeed or fail.
  - B(Each run overwrites the destination site's files and database) with a full copy of the source; runs
    are not incremental. Check mode never starts a run.
  - Partner rule; the run starts only when the migration's latest preflight succeeded and nothing was
    updated since (state C(preflight-succeeded)). Otherwise the task fails and says to run preflight.
    O(require_preflight=false) skips the rule, for experts.
  - When a run is already active, no second run is started; the task reports RV(already_running).
  - After a success or a failure, update, preflight and ready again to refresh the destination.
  - With O(migration_ids), one task starts the runs of a whole fleet. Every run is started first (16 at a time
    on one connection), then all of them are waited on at once, so O(wait_timeout) is shared and the task
    takes about as long as the slowest run. A run that was already active is followed by the migration's
    state, as its ticket is not known. One failed run does not stop the others; the task fails afterwards
    and names each.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  migration_id:
    description:
      - The migration to start.
      - Exactly one of O(migration_id) and O(migration_ids) is required.
    type: int
  migration_ids:
    description:
      - Many migrations to start in one task. Results come back in RV(results), one per migration in the same
        order. An empty list starts nothing.
      - A migration listed twice is refused before any call, so that no run is started twice.
      - Mutually exclusive with O(migration_id).
    type: list
    elements: int
  require_preflight:
    description:
      - Refuse to start unless the latest preflight succeeded after the last change. Turn off only if you
        know the service accepts the run and the source is ready.
    type: bool
    default: true
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.api.WAIT
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description: >-
      Predicts the start, without starting. As a preflight earlier in the play may have run in check mode
      only, a migration without a successful preflight is reported as a run that would start once one
      succeeds (outside check mode O(require_preflight) refuses it). A null O(migration_id) (or null items of
      O(migration_ids)), as a migration task returns in check mode, is accepted in check mode only.
    support: full
  diff_mode:
    description: A run changes the destination's content, not configuration.
    support: none
  idempotent:
    description: Every call after a successful preflight starts a new run, by design; an active run is never doubled.
    support: partial
seealso:
  - module: wpcloud.hosting.migration_preflight
  - module: wpcloud.hosting.response_ticket_wait
'''

EXAMPLES = r'''
- name: Run migrations (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Find the migration of the site
      wpcloud.hosting.migration_info:
        site: dest2.example
      register: info

    - name: Preflight it (a run needs a preflight that succeeded since the last change)
      wpcloud.hosting.migration_preflight:
        migration_id: "{{ info.migration_id }}"

    - name: Start the run and wait for it, with a progress line every minute
      wpcloud.hosting.migration_ready:
        migration_id: "{{ info.migration_id }}"
        wait_timeout: 7200
        progress_interval: 60
      register: run

    - name: Find the migrations of a fleet
      wpcloud.hosting.migration_info:
        sites:
          - dest2.example
          - dest3.example
      register: fleet_info

    - name: Preflight the fleet again before refreshing it
      wpcloud.hosting.migration_preflight:
        migration_ids: "{{ fleet_info.results | map(attribute='migration_id') | list }}"

    - name: Start the fleet's runs in one task and wait for all of them
      wpcloud.hosting.migration_ready:
        migration_ids: "{{ fleet_info.results | map(attribute='migration_id') | list }}"
        wait_timeout: 7200
      register: fleet
'''

RETURN = r'''
migration_id:
  description: The migration.
  returned: always, with migration_id (with migration_ids, in each item of results)
  type: int
  sample: 42
state_before:
  description: The migration's state before the call.
  returned: success, with migration_id (with migration_ids, in each item of results)
  type: str
  sample: preflight-succeeded
ticket_id:
  description: The run's response ticket; null when no run was started.
  returned: success, with migration_id (with migration_ids, in each item of results)
  type: str
  sample: 697101d62363a84200817088867.243054b9b46e78e7.2
already_running:
  description: True when a run was already active and none was started.
  returned: when a run was active, with migration_id (with migration_ids, in each item of results)
  type: bool
  sample: true
ticket:
  description: What the wait saw of the ticket (see M(wpcloud.hosting.response_ticket_wait)).
  returned: when wait is true and a run was started
  type: dict
  sample: {"ticket_id": "697101d6.2", "state": "success", "response_count": 6, "elapsed": 10.4, "polls": 11}
diagnosis:
  description: Code, hint and messages of a failed run.
  returned: when the run failed
  type: dict
  sample: {"code": "unknown", "hint": "Read the ticket messages.", "messages": ["rsync error"]}
results:
  description:
    - With O(migration_ids), one result per migration, in the order of O(migration_ids).
    - Each holds the keys a single O(migration_id) returns, plus RV(results[].failed) and, for a failed run,
      RV(results[].msg).
  returned: when migration_ids is given
  type: list
  elements: dict
  contains:
    state:
      description: With O(wait), the final state of a run that was already active, followed by the migration's state.
      type: str
      returned: when a run was already active and wait is true
      sample: migration-succeeded
    failed:
      description: Whether this run failed, could not start or did not finish in time.
      type: bool
      sample: false
    msg:
      description: Why this run failed.
      type: str
      returned: when the run failed
      sample: "migration 42 cannot start: its latest preflight has not succeeded since the last change ..."
  sample: [{"migration_id": 42, "state_before": "preflight-succeeded", "ticket_id": "697101d6.2", "failed": false}]
failed_count:
  description: With O(migration_ids), how many runs failed. The task fails when it is not 0.
  returned: when migration_ids is given
  type: int
  sample: 0
api_load:
  description:
    - The load of the task's reads, starts and polls on the service (retries too) - C(calls) sent and
      C(peak_per_second), the most within any one second; the role's report sums them over its steps.
  returned: when the task called the API
  type: dict
  sample: {"calls": 5612, "peak_per_second": 300}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import START_ARGUMENT_SPEC, START_RULES, api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_runs import run_ready as run_logic

MODULE_SPEC = dict(START_RULES, argument_spec=api_spec_with(dict(
    START_ARGUMENT_SPEC,
    require_preflight=dict(type="bool", default=True),
)))
# Null items of these lists in check mode (see plugins/plugin_utils/_controller_action.py).
CHECK_MODE_NULLS = dict(options=("migration_ids",), changed=True, note="their runs would be started")


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
