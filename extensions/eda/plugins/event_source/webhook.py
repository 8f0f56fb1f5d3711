# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""wpcloud.hosting.webhook: receive signed WP Cloud webhooks, store them durably, emit them."""

from __future__ import annotations

DOCUMENTATION = r"""
---
short_description: Receive signed WP Cloud webhooks over HTTPS, store them durably, emit them until processed.
description:
  - An ansible-rulebook event source that receives the webhooks a WP Cloud client account sends to
    its C(webhook_url), verifies the HMAC-SHA256 signature carried in the body
    (C({event}:{signature.timestamp}:{signature.salt}) keyed with the C(webhook_hmac_key)),
    and puts each accepted event on the rulebook queue.
  - An event is answered with exactly HTTP 200 only after it has been appended to a spool file and
    the file has been synced to disk (requests that arrive together share one fsync). Events are
    then emitted in order.
  - An event is done only when its processing is done (at least once, keyed by C(meta.delivery_id));
    the rulebook's action acknowledges it last, with M(wpcloud.hosting.webhook_ack) (the sample
    playbooks do). An event not acknowledged within O(ack_timeout) seconds, or not acknowledged
    before a crash or restart, is emitted again with the same C(meta.delivery_id) and a higher
    C(meta.attempt); after O(max_attempts) it is given up (a dead letter, logged as an error) and
    waits for the operator. Actions must therefore be idempotent. O(ack_timeout=0) turns this off, and
    an event is then done once it was handed to the rulebook (and confirmed, O(emit_confirm_delay)).
  - The operator command C(python webhook.py events list|replay|ack --spool-dir DIR) (or the playbook
    C(wpcloud.hosting.webhook_events)) lists stored deliveries by time range, state or delivery id,
    hands them over again, or marks them done.
  - The HTTPS listener runs in a child process of the rulebook (same Python), so acknowledging
    deliveries never waits for the rule engine; the child ends with the rulebook. The keys reach
    it through a pipe, never through the command line or the environment. The source removes
    C(WPCLOUD_WEBHOOK_HMAC_KEYS), C(WPCLOUD_WEBHOOK_HMAC_KEY) and C(WPCLOUD_WEBHOOK_ACK_TOKEN) from the
    rulebook's environment once it has read them, so the playbooks and modules the rulebook runs
    (which inherit that environment) never see them.
  - Each event carries a stable delivery id in C(meta.delivery_id), C(sig-) and the first 32 hex
    digits of the SHA-256 of C({signature.timestamp}:{signature.salt}) (the C(delivery_id) the
    C(wpcloud.hosting.webhook_verify) filter returns), or, for an unsigned delivery, C(body-) and the
    first 32 hex digits of the SHA-256 of the body. A redelivery of a stored
    event (the service retries up to two more times after a non-200 answer) is answered 200 and
    not emitted again. The same signature with a different body is answered 409 and never emitted
    (the signature does not cover C(data) or C(atomic_site_id)).
  - With keys configured, unsigned or badly signed deliveries get 401 and are never stored or
    emitted. Without a key the source refuses to start unless O(allow_unsigned=true).
  - Unknown event types and unknown fields pass through untouched. The event has the body in
    C(payload) and C(event), C(endpoint), C(headers), C(delivery_id), C(signature) (C(verified), C(key_index),
    C(location)), C(received_at) and C(uuid) in C(meta); with acknowledgements on also C(attempt)
    (1 the first time) and C(ack) (C(spool_dir) and C(url), where M(wpcloud.hosting.webhook_ack) records
    the acknowledgement).
    Authorization, cookie, token and signature headers are never copied into C(meta.headers).
  - C(meta.event) is the normalised event name, hyphens turned into underscores (the owner's panel
    does the same, so the service may send C(site-provisioned) for C(site_provisioned)); match rules
    on it. C(payload.event) stays as sent, and the signature is checked over that exact text.
  - C(GET /healthz) answers 200 with counters (no secrets), including C(key_count) and
    C(verified_by_key), the deliveries stored per matching key position (used to check a key rotation).
  - Bodies larger than O(max_body_size) get 413; a body that is not a JSON object (malformed, nested
    too deeply to parse, an array) gets 400, whatever its C(Content-Type) (the service promises only
    "a JSON body"; a missing, C(text/plain) or form-encoded type is accepted when the body is a JSON
    object). A full disk under the spool gets 503 (the service retries), never a 200 without a store.
  - Slow or idle clients are disconnected, 10 seconds each for the TLS handshake, a request's headers
    (also between two requests of a connection) and its body (408); at most 512 connections are
    served at once, more are closed when accepted.
  - Option names follow C(eda.builtin.webhook) where they mean the same (host, port, token,
    certfile, keyfile, password, cafile, capath, hmac_secret).
requirements:
  - aiohttp (Python library; ansible-rulebook installs it)
options:
  host:
    description: The address to listen on.
    type: str
    default: "0.0.0.0"
  port:
    description: The TCP port to listen on.
    type: int
    required: true
  certfile:
    description:
      - Path to the server certificate (PEM, chain allowed). Required unless
        O(allow_insecure_http=true).
    type: str
  keyfile:
    description: Path to the private key of O(certfile) (when not inside O(certfile)).
    type: str
  password:
    description: Password of O(keyfile).
    type: str
  cafile:
    description:
      - CA certificates used to require and validate client certificates (mutual TLS), as in
        C(eda.builtin.webhook). WP Cloud itself does not send a client certificate; use this only
        behind a proxy that does.
    type: str
  capath:
    description: Directory of CA certificates for client-certificate validation (mutual TLS).
    type: str
  allow_insecure_http:
    description:
      - Listen on plain HTTP when no O(certfile) is given. Only for a receiver behind a TLS
        terminating proxy or for local tests; WP Cloud requires an HTTPS C(webhook_url).
    type: bool
    default: false
  hmac_secret:
    description:
      - The client account's C(webhook_hmac_key). A list, or a comma-separated string, gives
        several active keys during a rotation; the matching position is in
        C(meta.signature.key_index). Entries are stripped of surrounding blanks.
      - Every key must be strong, as M(wpcloud.hosting.client_meta) requires of a C(webhook_hmac_key),
        that is at least 32 characters, 10 of them distinct. The source refuses to start with a weaker one
        (a short key can be guessed offline from one signed delivery); a changed O(hmac_secret_file)
        with one is ignored with a warning.
      - When not set or blank, the environment variable C(WPCLOUD_WEBHOOK_HMAC_KEYS) (or
        C(WPCLOUD_WEBHOOK_HMAC_KEY)) is read, so the key need not appear in the rulebook.
    type: list
    elements: str
  hmac_secret_file:
    description:
      - A file with the active key(s), one per line (blank lines and lines starting with C(#) are
        ignored), used when O(hmac_secret) is not set. The receiver re-reads it when it changes
        (checked at most once a second), so a key rotation needs no restart; see
        C(playbooks/rotate_webhook_key.yml). Keep it mode 0600.
    type: path
  allow_unsigned:
    description:
      - Start without any key and accept unsigned deliveries (delivery id = body hash). Never for
        production.
    type: bool
    default: false
  token:
    description:
      - Optional bearer token expected in the C(Authorization) header (compared in constant time),
        for a proxy that adds one. WP Cloud does not send one.
    type: str
  spool_dir:
    description:
      - Directory of the spool (C(spool.log), C(spool.log.1), C(emitted.log), C(lock)). One
        receiver per directory (it is locked).
      - Default C(WPCLOUD_WEBHOOK_SPOOL_DIR), else C($XDG_STATE_HOME/wpcloud.hosting/webhook-<port>)
        (C(~/.local/state/...)).
    type: str
  spool_max_bytes:
    description:
      - Size after which the spool file is rotated to C(spool.log.1) (when every stored event has
        been emitted). Two segments are kept; they also rebuild the duplicate memory on restart.
    type: int
    default: 67108864
  dedupe_size:
    description: How many delivery ids are remembered to answer redeliveries without emitting twice.
    type: int
    default: 100000
  max_age:
    description:
      - Optional freshness window in seconds. The unit of the signature timestamp is not
        documented, so it is never compared with the clock; a delivery is refused (401, reason
        stale) when its signature timestamp is lower than the highest one this receiver had
        already seen O(max_age) seconds earlier. Keep it above the service's retry delays.
    type: int
  max_body_size:
    description: Largest accepted body in bytes (413 above).
    type: int
    default: 1048576
  content_types:
    description:
      - Restrict the accepted request content types (media type only; C(+json) suffixes also match
        C(application/json)); others get 415. Not set (the default), a delivery is judged by its body
        alone, whatever its C(Content-Type).
    type: list
    elements: str
  emit_confirm_delay:
    description:
      - With O(ack_timeout=0) only. Seconds after an event was handed to the rulebook before its
        emitted position is recorded. Events handed over in that window before a crash are emitted
        again after the restart (at least once, with the same C(meta.delivery_id)).
    type: float
    default: 1.0
  ack_timeout:
    description:
      - Seconds an emitted event may wait for its acknowledgement (M(wpcloud.hosting.webhook_ack)) before
        it is emitted again. Keep it above the time the rulebook needs for O(max_unacked) events'
        actions (they queue behind each other with the default sequential execution).
      - C(0) turns acknowledgements off; an event is then done once it was handed to the rulebook,
        whether or not an action ran (a crash while actions queue loses those events).
    type: float
    default: 600
  max_unacked:
    description:
      - How many emitted events may wait for their acknowledgement at once; the source emits the
        next one when one is acknowledged. It bounds the rule engine's queue of actions, and so the
        work repeated after a crash.
    type: int
    default: 32
  max_attempts:
    description:
      - How many times an event is emitted (the first time, after each O(ack_timeout), after each
        restart) before it is given up as a dead letter. Dead letters stay in C(dead.log) and in the
        operator command's C(list --state dead) until the operator replays or dismisses them.
    type: int
    default: 5
  ack_token:
    description:
      - Enables the receiver's acknowledgement endpoint C(POST /_wpcloud/ack) for actions that run on
        another node (an AAP job template). They send a JSON object with their C(delivery_id) and the header
        C(Authorization) set to C(Bearer) and the token. At least 32 characters, 10 of them distinct.
      - When not set, the environment variable C(WPCLOUD_WEBHOOK_ACK_TOKEN) is read. Without either
        the endpoint answers 404 and acknowledgements go into O(spool_dir) directly.
    type: str
  ack_url:
    description:
      - The URL of this receiver's acknowledgement endpoint as the actions reach it (for example
        C(https://eda.example.com:8443/_wpcloud/ack)); put into each event's C(meta.ack.url), where
        M(wpcloud.hosting.webhook_ack) finds it.
    type: str
"""

EXAMPLES = r"""
- name: WP Cloud webhooks
  hosts: localhost
  sources:
    - wpcloud.hosting.webhook:
        host: 0.0.0.0
        port: 8443
        certfile: /etc/eda/tls/webhook.crt
        keyfile: /etc/eda/tls/webhook.key
        # hmac_secret omitted: read from WPCLOUD_WEBHOOK_HMAC_KEYS (credential type injects it)
        spool_dir: /var/lib/eda/wpcloud-webhook
        ack_timeout: 900      # the longest action, times the actions that may queue ahead of it
  rules:
    - name: site provisioned
      condition: event.meta.event == "site_provisioned"     # normalised: site-provisioned matches too
      action:
        run_playbook:
          name: wpcloud.hosting.on_site_provisioned   # its last task: wpcloud.hosting.webhook_ack
"""

# The source's parts live in plugins/module_utils/webhook/ (their map: docs/design.md, Layout). It runs in two
# processes: this one, inside ansible-rulebook (main: check the options, start the receiver, hand the
# stored events to the rulebook), and the receiver, a child started as "webhook.py --receiver"
# (HTTPS, the request checks, the durable spool). "webhook.py events ..." is the operator command.

import asyncio
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import sys
from typing import Any

logger = logging.getLogger(__name__)


def _webhook_package() -> str:
    """The name plugins/module_utils/webhook of this collection is imported under.

    ansible-rulebook runs source plugins with runpy and does not install Ansible's collection
    loader, so ``ansible_collections.wpcloud.hosting...`` is usually not importable here. The
    package is imported by its path in the (fixed) collection layout, the same in a checkout, an
    installed tarball and an execution environment; the import is a fallback.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "plugins", "module_utils", "webhook"))
    init = os.path.join(path, "__init__.py")
    if not os.path.isfile(init):
        return "ansible_collections.wpcloud.hosting.plugins.module_utils.webhook"
    name = "_wpcloud_hosting_webhook_" + hashlib.sha256(path.encode()).hexdigest()[:12]   # one per checkout
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[path])
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)
    return name


_PACKAGE = _webhook_package()
options = importlib.import_module(_PACKAGE + ".options")
pipe = importlib.import_module(_PACKAGE + ".pipe")
emitters = importlib.import_module(_PACKAGE + ".acking_emitter")


async def main(queue: asyncio.Queue, args: dict[str, Any]) -> None:
    """Receive WP Cloud webhooks (see DOCUMENTATION)."""
    args, keys, ack_token = options.read(args)
    if options.ssl_context(args) is None:
        logger.warning("wpcloud.hosting.webhook: listening on plain HTTP (allow_insecure_http)")
    spool_dir = options.spool_dir_of(args)
    emitter = emitters.make_emitter(args, spool_dir)
    emitter.read_mark()
    emitter.recover()
    receiver = pipe.ReceiverProcess(emitter, os.path.abspath(__file__))
    tasks = []
    try:
        await receiver.start(pipe.receiver_config(args, keys, spool_dir, emitter, ack_token))
        emitter.on_mark = receiver.mark
        if emitter.recovered:
            logger.info("wpcloud.hosting.webhook: %d stored event(s) not yet done will be emitted", emitter.recovered)
        logger.info("wpcloud.hosting.webhook listening on %s:%s (%s, %d key(s), %s)", args.get("host") or "0.0.0.0",
                    args["port"], "https" if args.get("certfile") else "http", len(keys),
                    "acknowledgements within %gs" % emitter.ack_timeout if isinstance(emitter, emitters.AckingEmitter)
                    else "acknowledgements off")
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(receiver.watch()), loop.create_task(emitter.run(queue))]
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()           # the receiver exited, or the emitter failed: raise it
    except asyncio.CancelledError:
        logger.info("wpcloud.hosting.webhook cancelled")
        raise
    finally:
        for task in tasks:
            task.cancel()
        await emitter.stop()
        await receiver.stop()


if __name__ == "__main__":
    if "--receiver" in sys.argv[1:]:
        sys.exit(asyncio.run(importlib.import_module(_PACKAGE + ".receiver").run_receiver()))
    if sys.argv[1:2] == ["events"]:
        sys.exit(importlib.import_module(_PACKAGE + ".operator_command").main(sys.argv[2:]))

    class MockQueue(asyncio.Queue):
        """Writes events to stdout instead of a rulebook."""

        async def put(self, item: Any) -> None:
            sys.stdout.write(json.dumps(item) + "\n")
            sys.stdout.flush()

    asyncio.run(main(MockQueue(), {"port": 5000, "host": "127.0.0.1", "allow_insecure_http": True,
                                   "allow_unsigned": True, "spool_dir": "./webhook-spool", "ack_timeout": 0}))
