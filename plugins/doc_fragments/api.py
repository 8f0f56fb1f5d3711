# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):
    # Connection options shared by every module of the collection.
    DOCUMENTATION = r'''
options:
  api_url:
    description:
      - Base URL of the WP Cloud partner API, without the C(/api/v1.0) prefix, which the collection adds.
      - Falls back to the E(WPCLOUD_API_URL) environment variable of the controller.
    type: str
    default: https://atomic-api.wordpress.com
  api_key:
    description:
      - The partner API key, sent in the C(Auth) header. Never logged or returned.
      - Required, here or in the E(WPCLOUD_API_KEY) environment variable of the controller, which is how an
        AWX / Automation Controller credential type injects it. Left out, the variable is used; given
        empty, the task fails.
    type: str
  validate_certs:
    description:
      - Verify the API's TLS certificate. Only turn this off against a test system.
      - Falls back to E(WPCLOUD_VALIDATE_CERTS).
    type: bool
    default: true
  ca_path:
    description:
      - PEM file of the certificate authorities to trust for the API, instead of the system store.
      - Falls back to E(WPCLOUD_CA_PATH).
    type: path
  timeout:
    description:
      - Seconds to wait for a connection and for each response.
    type: int
    default: 30
  retries:
    description:
      - How many more times a request may be sent when that is safe. V(0) turns retries off.
      - Reads are retried on connection errors, timeouts and HTTP 429, 502, 503 and 504, honouring C(Retry-After).
      - Writes are retried only when they provably did not take effect (connection refused, HTTP 429);
        a write whose effect is unknown is never repeated and fails with a message saying so.
    type: int
    default: 5
  retry_timeout:
    description:
      - Upper bound, in seconds, on the time spent retrying one request (jittered, capped exponential backoff).
    type: int
    default: 120
  rate_limit:
    description:
      - Most requests per second this task sends, all its concurrent calls and polls together, spaced evenly.
        V(0) (the default) sets no ceiling; the service's own limits are not documented.
      - Whatever the ceiling, an HTTP 429 pauses every call of the task for the C(Retry-After) the service gave
        (else the backoff), not only the call that got it.
      - The ceiling is per task. Runs that share one account at the same time (AWX job slices, several
        playbooks) each get their own, so give each its share (the account's ceiling divided by the runs).
      - If not set, the value of the E(WPCLOUD_RATE_LIMIT) environment variable is used.
    type: float
    default: 0
requirements:
  - requests (Python library, on the controller)
notes:
  - >-
    The connection options can be set once for a play with C(module_defaults) and the action group
    C(group/wpcloud.hosting.all).
seealso:
  - name: WP Cloud API access
    description: How partner API keys are created and restricted.
    link: https://wp.cloud/docs/
'''

    # Options of the modules that can wait for a response ticket (the wait contract, module_utils/runtime/arguments.py).
    WAIT = r'''
options:
  wait:
    description:
      - Wait for the response ticket to report C(success) or C(failure) before returning.
      - With V(false) the module returns the ticket ID at once; wait later with M(wpcloud.hosting.response_ticket_wait).
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait in all. Past the deadline the task fails and reports the last state it saw.
    type: int
    default: 1800
  poll_interval:
    description:
      - Seconds between two polls of the ticket while it is young. Never below V(1), the interval the service
        asks for.
      - After the first 12 seconds the gap grows with the square root of the time past them
        (O(poll_interval) + 0.65 x sqrt(age - 12 s)), up to O(poll_max_interval).
    type: float
    default: 1.0
  poll_max_interval:
    description:
      - The longest gap, in seconds, between two polls of a ticket (or of a migration followed by its state)
        that has been running for a while; also the latest an end is seen after it happens.
      - "With the defaults: a poll every second for the first 12 seconds, then a gap of 2.8 s at 20 s of age,
        5.5 s at 1 minute and 12 s from about 5 minutes on. A 1-minute run takes about 28 polls and is seen
        at most 6 s late, a 5-minute run about 55 polls (a fixed 1 s rhythm: 300), and a fleet of 1,000 runs
        polls under 100 times a second once they are past about 4 minutes."
      - Set it equal to O(poll_interval) to poll at a fixed rhythm. It cannot be below O(poll_interval).
      - If not set, the value of the E(WPCLOUD_POLL_MAX_INTERVAL) environment variable is used; else V(12),
        or O(poll_interval) when that is longer.
    type: float
  progress_interval:
    description:
      - >-
        While it waits, the task prints a progress line at least every this many seconds, at the default
        verbosity, for example C([localhost] migration_ready: 37/100 done (2 failed), 61 running, 124 s elapsed);
        a wait on one ticket shows its state. The lines never hold a secret. V(0) turns them off.
      - They reach the terminal, C(ansible-playbook) output piped to a file, and ansible-runner's stdout and
        its C(verbose) events, which AWX / Automation Controller shows while the job runs.
      - Only when the module runs in the controller (the default). With C(wpcloud_hosting_execution=module)
        the module is a separate process whose output Ansible reads when it ends, so no progress is shown.
    type: float
    default: 15.0
  messages:
    description:
      - When to fetch each ticket's messages (the full form of the ticket, where the service says why a
        preflight or run failed).
    type: str
    choices: [on_failure, always, never]
    default: on_failure
'''
