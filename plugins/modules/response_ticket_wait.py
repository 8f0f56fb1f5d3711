#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: response_ticket_wait
short_description: Wait for one or many WP Cloud response tickets
version_added: 0.1.0
description:
  - Polls response tickets until each reports C(success) or C(failure). A 202 from the service means no
    response yet; the ticket is polled again after O(poll_interval).
  - A list of tickets is polled concurrently, so waiting on 100 tickets takes about as long as the slowest.
    Start every site's preflight or run with O(wpcloud.hosting.migration_ready#module:wait=false), then wait
    on all tickets in one task.
  - Returns per ticket its state, response count, elapsed time and, on failure (or on request), its
    messages with a diagnosis.
  - With O(migration_ids), follows migrations by their state and returns RV(migrations) instead.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  ticket_id:
    description:
      - One response ticket ID.
    type: str
  ticket_ids:
    description:
      - Several response ticket IDs, polled concurrently.
    type: list
    elements: str
  migration_ids:
    description:
      - Migrations to follow by their state instead of a ticket, polled concurrently, until none is
        running (C(migration-running) or C(preflight-running)).
      - For runs whose ticket is not known, for example after an interrupted playbook. A migration
        counts as failed in state C(migration-failed) or C(preflight-failed).
    type: list
    elements: int
  fail_on_failure:
    description:
      - Fail the task when a ticket reports C(failure). With V(false) the task succeeds and RV(failed_count) counts them.
    type: bool
    default: true
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.api.WAIT
  - wpcloud.hosting.attributes
  - wpcloud.hosting.attributes.CHECK_MODE_READ_ONLY
notes:
  - With O(wait=false) each ticket is polled once and its current state returned.
'''

EXAMPLES = r'''
- name: Wait for tickets (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Find the migrations of a fleet
      wpcloud.hosting.migration_info:
        sites:
          - dest2.example
          - dest3.example
      register: fleet_info

    - name: Start their preflights without waiting
      wpcloud.hosting.migration_preflight:
        migration_ids: "{{ fleet_info.results | map(attribute='migration_id') | list }}"
        wait: false
      register: started

    - name: Wait for one ticket
      wpcloud.hosting.response_ticket_wait:
        ticket_id: "{{ started.results[0].ticket_id }}"
        wait_timeout: 600
      register: one

    - name: Wait for every site's ticket at once, reporting failures instead of failing
      wpcloud.hosting.response_ticket_wait:
        ticket_ids: "{{ started.results | map(attribute='ticket_id') | list }}"
        fail_on_failure: false
      register: all_tickets

    - name: Follow migrations whose run ticket is unknown, by their state
      wpcloud.hosting.response_ticket_wait:
        migration_ids: "{{ fleet_info.results | map(attribute='migration_id') | list }}"
        wait_timeout: 600
'''

RETURN = r'''
tickets:
  description: One entry per ticket, in the order given.
  returned: when ticket_id or ticket_ids is given
  type: list
  elements: dict
  contains:
    ticket_id:
      description: The ticket.
      type: str
      sample: 697101d62363a84200817088867.243054b9b46e78e7.1
    state:
      description: V(success), V(failure), V(running), V(pending) (no response yet) or V(error) (not found, unreadable).
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
      description: Summary requests made for this ticket.
      type: int
      sample: 3
    messages:
      description: The ticket's messages, when fetched.
      type: list
      elements: str
      sample: ["Preflight succeeded"]
    diagnosis:
      description: Code and hint for a failed ticket (see M(wpcloud.hosting.migration_preflight)).
      type: dict
      sample: {"code": "rsync_missing", "hint": "Install rsync on the source host.", "matched": "rsync: command not found"}
    error:
      description: Why the ticket could not be read.
      type: str
      sample: Response ticket 'x' was not found (HTTP 404)
migrations:
  description: One entry per migration of O(migration_ids), in the order given.
  returned: when migration_ids is given
  type: list
  elements: dict
  contains:
    migration_id:
      description: The migration.
      type: int
      sample: 42
    state:
      description: The last state seen, or V(error) when the migration could not be read.
      type: str
      sample: migration-succeeded
    elapsed:
      description: Seconds from the start of the wait to the end of the run seen.
      type: float
      sample: 8.1
    polls:
      description: Reads of the migration made.
      type: int
      sample: 9
    error:
      description: Why the migration could not be read.
      type: str
      sample: Migration 42 was not found (HTTP 404).
ticket:
  description: The entry of O(ticket_id), when a single ticket was given.
  returned: when ticket_id is given
  type: dict
  sample: {"ticket_id": "697101d6.1", "state": "success", "response_count": 4, "elapsed": 2.0, "polls": 3}
succeeded_count:
  description: Tickets that reported success (migrations in C(migration-succeeded)).
  returned: always
  type: int
  sample: 100
failed_count:
  description: Tickets that reported failure or could not be read (migrations failed or unreadable).
  returned: always
  type: int
  sample: 0
pending_count:
  description: Tickets not finished when the wait ended.
  returned: always
  type: int
  sample: 0
timed_out:
  description: Whether the deadline ended the wait.
  returned: always
  type: bool
  sample: false
api_load:
  description:
    - The load of the wait on the service - C(calls), the polls and message reads sent (retries too), and
      C(peak_per_second), the most within any one second.
  returned: when the task called the API
  type: dict
  sample: {"calls": 5500, "peak_per_second": 100}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import WAIT_ARGUMENT_SPEC, api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_runs import run_wait as run_logic

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(
        WAIT_ARGUMENT_SPEC,
        ticket_id=dict(type="str"),
        ticket_ids=dict(type="list", elements="str"),
        migration_ids=dict(type="list", elements="int"),
        fail_on_failure=dict(type="bool", default=True),
    )),
    mutually_exclusive=[("ticket_id", "ticket_ids", "migration_ids")],
    required_one_of=[("ticket_id", "ticket_ids", "migration_ids")],
)
# Null items of these lists in check mode (see plugins/plugin_utils/_controller_action.py).
CHECK_MODE_NULLS = dict(options=("ticket_ids", "migration_ids"), changed=False, note="there is nothing to wait for yet")


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
