# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: webhook_verify
short_description: Verify the HMAC signature of a WP Cloud webhook delivery
version_added: 0.1.0
description:
  - Checks the C(signature) object of a WP Cloud webhook body, that is the HMAC-SHA256 of
    C({event}:{signature.timestamp}:{signature.salt}) keyed with the client account's
    C(webhook_hmac_key), compared in constant time with C(signature.signature) (hex, any case).
  - The C(signature) object is looked for at the top level, then inside C(data).
  - The signature covers only the event name, the signature timestamp and the salt. It does
    B(not) cover C(data), C(atomic_site_id) or the top-level C(timestamp); use O(replay_file) (or
    the C(wpcloud.hosting.webhook) event source, which rejects a reused signature with another
    body) to stop a captured signature from being replayed.
  - Returns a dictionary; it never contains a key.
options:
  _input:
    description:
      - The webhook body. Prefer the B(raw) body (a string), which is parsed so that a numeric
        signature timestamp keeps every digit.
      - An already-parsed dictionary also works while its numbers are exact integers; a timestamp
        that was turned into a float has lost digits and gives RV(_value.reason=malformed).
    type: raw
    required: true
  hmac_keys:
    description:
      - The active C(webhook_hmac_key) value, or a list of them during a key rotation (the
        position of the matching key is returned in RV(_value.key_index)).
      - Surrounding blanks are not part of a key (a valid key has none) and are removed; empty
        entries are ignored. A single string is one key, even with a comma in it.
    type: raw
    required: true
  replay_file:
    description:
      - Optional path of a file that remembers accepted signature C((timestamp, salt)) pairs; a pair
        seen before gives RV(_value.reason=replayed). Each call records the pair, so verify a
        delivery once and keep the result (for example with C(ansible.builtin.set_fact)).
    type: path
  max_age:
    description:
      - Optional freshness window in seconds, used with O(replay_file). A signature whose
        timestamp is lower than the highest one the file had already recorded O(max_age) seconds
        earlier gives RV(_value.reason=stale). The timestamp unit is undocumented, so it is never
        compared with the clock.
    type: int
  max_entries:
    description: How many pairs O(replay_file) keeps (oldest forgotten first).
    type: int
    default: 100000
seealso:
  - name: WP Cloud webhooks
    description: How the service signs webhook payloads.
    link: https://wp.cloud/docs/
author:
  - wpcloud.hosting contributors
"""

EXAMPLES = r"""
- name: Verify a delivery kept as raw text
  ansible.builtin.set_fact:
    webhook_check: "{{ raw_body | wpcloud.hosting.webhook_verify(webhook_hmac_keys) }}"
  no_log: true

- name: Act only on a valid signature
  ansible.builtin.debug:
    msg: "{{ webhook_check.event }} signed with key #{{ webhook_check.key_index }}"
  when: webhook_check.valid

- name: During a rotation, accept the new and the old key and refuse replays
  ansible.builtin.set_fact:
    webhook_check: >-
      {{ raw_body | wpcloud.hosting.webhook_verify([new_key, old_key],
                                                   replay_file='/var/lib/wpcloud/replay.tsv') }}
  no_log: true
"""

RETURN = r"""
_value:
  description: The verification result.
  type: dict
  contains:
    valid:
      description: Whether the signature matched one of the keys (and, with O(replay_file), was not seen before).
      type: bool
      returned: always
      sample: true
    reason:
      description:
        - Why the delivery is not valid; V(null) when it is.
        - One of V(missing_signature), V(malformed), V(mismatch), V(replayed), V(stale).
      type: str
      returned: always
      sample: mismatch
    key_index:
      description: Position in O(hmac_keys) of the key that matched (never the key itself).
      type: int
      returned: always
      sample: 0
    event:
      description: The event name as sent (the signature is checked over this exact text).
      type: str
      returned: always
      sample: site-provisioned
    event_name:
      description:
        - The normalised event name, hyphens turned into underscores (as the owner's panel does), to
          match on; the same as the event source's C(meta.event).
      type: str
      returned: always
      sample: site_provisioned
    timestamp:
      description: The signature timestamp exactly as signed (a string).
      type: str
      returned: always
      sample: "29848839199040411"
    salt:
      description: The signature salt.
      type: str
      returned: always
      sample: 3cfd5d7d47e0b3f79d8890bd9b344db0
    location:
      description: Where the signature object was found, V(top) or V(data).
      type: str
      returned: always
      sample: top
    delivery_id:
      description:
        - Stable id of the delivery, C(sig-) and the first 32 hex digits of the SHA-256 of
          C({signature.timestamp}:{signature.salt}), the same as the event source's C(meta.delivery_id).
      type: str
      returned: always
      sample: sig-6c1b0b1a2f6d4ab2a3c1e9f0d8b7a6c5
    replay:
      description: With O(replay_file), V(new), V(duplicate), V(conflict) (same signature, other body) or V(stale).
      type: str
      returned: always
      sample: new
    detail:
      description: A human-readable explanation of the reason.
      type: str
      returned: always
      sample: signature does not match any of the 2 active key(s)
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.replay import ReplayStore
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.signature import (
    body_fingerprint,
    parse_keys,
    verify_signature,
)


def webhook_verify(body, hmac_keys, replay_file=None, max_age=None, max_entries=100000):
    """Verify a WP Cloud webhook body; see DOCUMENTATION."""
    keys = parse_keys(hmac_keys)
    if not keys:
        raise AnsibleFilterError("webhook_verify: no webhook HMAC key given")
    if not isinstance(body, (str, bytes, dict)):
        raise AnsibleFilterError("webhook_verify: the body must be the raw text or a dictionary")
    if isinstance(body, dict):
        body = dict(body)
    elif not isinstance(body, bytes):
        body = str(body)
    store = None
    if replay_file:
        store = ReplayStore(max_entries=int(max_entries), max_age=max_age, path=str(replay_file))
    try:
        result = verify_signature(body, keys)
        if store is not None:
            # a raw body has a fingerprint (a reused signature with another body is a conflict); a dict has none
            store.admit(result, None if isinstance(body, dict) else body_fingerprint(body))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("webhook_verify: %s" % exc) from None
    return result.to_dict()


class FilterModule:
    """wpcloud.hosting webhook filters."""

    def filters(self):
        return {"webhook_verify": webhook_verify}
