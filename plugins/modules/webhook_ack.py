#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: webhook_ack
short_description: Acknowledge a WP Cloud webhook event once its processing is done
version_added: 0.1.0
description:
  - The last task of a playbook that an Event-Driven Ansible rulebook runs for an event of the
    C(wpcloud.hosting.webhook) event source. It records that the event's processing is done, keyed by
    the event's C(meta.delivery_id).
  - The source emits an event again when it is not acknowledged within the source's C(ack_timeout),
    or not before the rulebook stops or crashes, up to C(max_attempts) times (at least once). Make
    the tasks before this one idempotent, keyed by the delivery id; see C(docs/webhooks.md).
  - With ansible-rulebook's C(run_playbook) or C(run_module) the playbook runs on the machine of the
    event source, and the acknowledgement goes into the source's spool directory (named in the event's
    C(meta.ack.spool_dir)). A playbook that runs elsewhere (an AAP job template started with
    C(run_job_template)) sends it over HTTPS to the receiver's acknowledgement endpoint (the source's
    C(ack_url), in C(meta.ack.url)) with the source's C(ack_token).
  - An event from a source with C(ack_timeout=0) carries no C(meta.ack); the task then does nothing
    (such an event was done when it was handed over).
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  event:
    description:
      - The event as the rulebook passes it to the playbook, C(ansible_eda.event). Its C(meta) gives the
        delivery id and where to record the acknowledgement.
      - Exactly one of O(event) and O(delivery_id) is required.
    type: dict
  delivery_id:
    description:
      - The delivery id (C(ansible_eda.event.meta.delivery_id)), when the event itself is not at hand.
        Then O(spool_dir) or O(url) says where to record it.
    type: str
  spool_dir:
    description:
      - The source's spool directory, when it is on the machine that runs this task. Default the
        event's C(meta.ack.spool_dir).
    type: path
  url:
    description:
      - The receiver's acknowledgement endpoint, for example C(https://eda.example.com:8443/_wpcloud/ack).
        Default the event's C(meta.ack.url) (the source's C(ack_url)), else the environment variable
        E(WPCLOUD_WEBHOOK_ACK_URL). Used when O(spool_dir) is not on this machine.
    type: str
  token:
    description:
      - The source's C(ack_token), sent as a bearer token over HTTPS. Default the environment variable
        E(WPCLOUD_WEBHOOK_ACK_TOKEN) (a credential of the job template). Not needed for O(spool_dir).
    type: str
  ca_path:
    description:
      - A PEM file of the certificate authority to trust for O(url) instead of the system store. Default
        the environment variable E(WPCLOUD_WEBHOOK_ACK_CA_PATH).
    type: path
  validate_certs:
    description: Verify the receiver's certificate. Only for tests.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the receiver's answer; an unanswered or 5xx acknowledgement is sent up to 3 times.
    type: float
    default: 30
  via:
    description:
      - C(auto) records into O(spool_dir) when it is on this machine, else posts to O(url). C(file) and
        C(http) force one way.
    type: str
    choices: [auto, file, http]
    default: auto
attributes:
  action:
    description: Served by an action plugin of the same name, which records the acknowledgement on the controller.
    support: full
  action_group:
    description: >-
      Not in C(group/wpcloud.hosting.all): it has no API connection options, so module defaults for
      that group (C(api_url), C(api_key)) would be unknown options here.
    support: none
    membership: []
  async:
    description: Not supported; an acknowledgement takes milliseconds.
    support: none
  check_mode:
    description: Reports whether it would record the acknowledgement (the file is read; nothing is sent over HTTPS).
    support: full
  diff_mode:
    description: There is nothing to compare.
    support: none
  idempotent:
    description: An event whose latest state already is acknowledged is reported unchanged (file); the receiver says so over HTTPS.
    support: full
  platform:
    description: Runs on the controller, where ansible-rulebook keeps the spool.
    support: full
    platforms: posix
notes:
  - Acknowledge last, after every task that must have happened for the event; a failed task before it
    leaves the event unacknowledged, so the source emits it again after C(ack_timeout).
seealso:
  - name: Webhooks guide (acknowledgements, the at-least-once contract, the operator command)
    description: docs/webhooks.md in the collection.
    link: https://github.com/wpcloud-hosting/wpcloud.hosting/blob/main/docs/webhooks.md
'''

EXAMPLES = r'''
# In a playbook that a rulebook runs (run_playbook) for a wpcloud.hosting.webhook event:
- name: Record the provisioned site, one file per delivery (idempotent)
  ansible.builtin.copy:
    dest: "/var/lib/wpcloud/provisioned/{{ ansible_eda.event.meta.delivery_id }}.json"
    content: "{{ ansible_eda.event.payload | to_json }}"
    mode: "0600"

- name: Acknowledge the event, the last task
  wpcloud.hosting.webhook_ack:
    event: "{{ ansible_eda.event }}"

# In an AAP job template started by run_job_template: the event names the source's ack_url; the
# token comes from the job's credential (WPCLOUD_WEBHOOK_ACK_TOKEN).
- name: Acknowledge the event over HTTPS
  wpcloud.hosting.webhook_ack:
    event: "{{ ansible_eda.event }}"
    via: http
'''

RETURN = r'''
delivery_id:
  description: The delivery id acknowledged.
  returned: always
  type: str
  sample: sig-6c1b0b1a2f6d4ab2a3c1e9f0d8b7a6c5
via:
  description: C(file) (into the spool directory), C(http) (to the receiver), or null when the event's source has acknowledgements off.
  returned: always
  type: str
  sample: file
recorded:
  description: Whether an acknowledgement was recorded now (false when the delivery already was acknowledged).
  returned: always
  type: bool
  sample: true
attempt:
  description: The event's C(meta.attempt), 1 the first time it was emitted.
  returned: when event is given
  type: int
  sample: 1
spool_dir:
  description: The spool directory the acknowledgement went into.
  returned: when via is file
  type: str
  sample: /var/lib/eda/wpcloud-webhook
url:
  description: The endpoint the acknowledgement was sent to.
  returned: when via is http
  type: str
  sample: https://eda.example.com:8443/_wpcloud/ack
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.parameters import env_fallback

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import ack

ARGUMENT_SPEC = dict(
    event=dict(type="dict"),
    delivery_id=dict(type="str"),
    spool_dir=dict(type="path"),
    url=dict(type="str"),
    token=dict(type="str", no_log=True, fallback=(env_fallback, [ack.ENV_TOKEN])),
    ca_path=dict(type="path"),
    validate_certs=dict(type="bool", default=True),
    timeout=dict(type="float", default=30.0),
    via=dict(type="str", default="auto", choices=list(ack.VIAS)),
)
MODULE_SPEC = dict(argument_spec=ARGUMENT_SPEC, mutually_exclusive=[("event", "delivery_id")],
                   required_one_of=[("event", "delivery_id")])


def main():
    module = AnsibleModule(supports_check_mode=True, **MODULE_SPEC)
    try:
        result = ack.run(module.params, check_mode=module.check_mode)
    except ack.AckError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
