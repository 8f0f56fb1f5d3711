#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: client_meta
short_description: Manage one metadata key of a WP Cloud client account
version_added: 0.1.0
description:
  - Adds, replaces or removes one metadata key of a partner's client account, for example the
    webhook receiver C(webhook_url) and the webhook signing key C(webhook_hmac_key).
  - Reads the key first and chooses add or update; copes with an add on an existing key and an
    update on a missing key by switching to the other operation.
  - Write-only keys (C(webhook_hmac_key)) are never returned by the service, so they cannot be
    compared. O(update_secret) decides whether they are sent only when not set (the default) or on
    every run, and C(changed) says whether they were sent.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  client:
    description:
      - The client identifier of the partner account (lowercase).
    type: str
    required: true
  key:
    description:
      - The metadata key, for example V(webhook_url) or V(webhook_hmac_key). Other keys are allowed.
    type: str
    required: true
  value:
    description:
      - The value of a readable key. Required with O(state=present) unless O(secret_value) is given.
      - For V(webhook_url) it must be an absolute C(https://) URL with a host; the account holds one URL,
        and a new one replaces the old.
    type: str
  secret_value:
    description:
      - The value of a secret key such as V(webhook_hmac_key). Never logged, returned or shown in a diff.
      - For V(webhook_hmac_key) it must be a strong random value of at least 32 characters, for example
        from C(openssl rand -hex 32).
    type: str
  update_secret:
    description:
      - For write-only keys, V(on_create) sends the secret only when the key is not set yet, so a re-run
        changes nothing; V(always) sends it on every run (the task then always reports a change). Use
        V(always) once to replace a key, see the C(wpcloud.hosting.rotate_webhook_key) playbook.
      - With V(on_create), a O(secret_value) given for a key that is set already is not sent, and a warning
        says so and how to send it (the module cannot tell whether it changed).
    type: str
    choices: [always, on_create]
    default: on_create
  state:
    description:
      - V(present) makes the key hold the value, V(absent) removes it (removing C(webhook_url) stops deliveries).
    type: str
    choices: [present, absent]
    default: present
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description: Predicts C(changed) without writing.
    support: full
  diff_mode:
    description: Shows the value before and after for readable keys; a secret shows only as set or absent.
    support: full
  idempotent:
    description: Readable keys are idempotent; write-only keys are when O(update_secret=on_create).
    support: partial
'''

EXAMPLES = r'''
- name: Configure the account's webhooks (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Point webhooks at our receiver
      wpcloud.hosting.client_meta:
        client: "{{ wpcloud_client }}"
        key: webhook_url
        value: https://hooks.example.com/wpcloud

    - name: Set the webhook signing key (vaulted variable); sent only when none is set
      wpcloud.hosting.client_meta:
        client: "{{ wpcloud_client }}"
        key: webhook_hmac_key
        secret_value: "{{ vault_webhook_hmac_key }}"

    - name: Stop webhooks
      wpcloud.hosting.client_meta:
        client: "{{ wpcloud_client }}"
        key: webhook_url
        state: absent
'''

RETURN = r'''
client:
  description: The client identifier.
  returned: always
  type: str
  sample: demo
key:
  description: The metadata key.
  returned: always
  type: str
  sample: webhook_url
state:
  description: The requested state.
  returned: always
  type: str
  sample: present
operation:
  description: The write the module made (or would make in check mode).
  returned: always
  type: str
  choices: [none, add, update, remove]
  sample: add
value:
  description: The value of a readable key after the task; null when absent.
  returned: when the key is not secret
  type: str
  sample: https://hooks.example.com/wpcloud
secret_set:
  description: Whether the secret key is set after the task. The secret itself is never returned.
  returned: when the key is secret
  type: bool
  sample: true
failure:
  description: Machine-readable detail of an API error.
  returned: on API failure
  type: dict
  sample: {"status": 403, "operation": "client_meta.get", "message": "Forbidden", "retry_safe": false, "effect": "none", "attempts": 1}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import api_spec_with
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.client_meta import run as run_logic
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(
        client=dict(type="str", required=True),
        key=dict(type="str", required=True, no_log=False),
        value=dict(type="str"),
        secret_value=dict(type="str", no_log=True),
        # on_create: a write-only secret cannot be compared, so the idempotent choice is to send it only when
        # the key is not set; replacing it is a deliberate act (update_secret: always, once).
        update_secret=dict(type="str", default="on_create", choices=["always", "on_create"]),
        state=dict(type="str", default="present", choices=["present", "absent"]),
    )),
    mutually_exclusive=[("value", "secret_value")],
    required_if=[("state", "present", ("value", "secret_value"), True)],
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
