# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The logic of the wpcloud.hosting.webhook_ack module: say that a webhook event's processing is done.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Served by the module's action plugin on the controller (ansible-rulebook runs the playbook on the
machine of the event source, so the controller is where the spool is) and by the module itself.
Two ways to record the acknowledgement, one rule to choose:

- ``file``: an ``ack`` line in the spool directory's processing journal (``webhook/spool.py``), when
  that directory is on this machine (ansible-rulebook's run_playbook / run_module);
- ``http``: ``POST`` to the receiver's acknowledgement endpoint with the bearer token, when the
  playbook runs elsewhere (an AAP job template started by run_job_template).
"""

from __future__ import annotations

import json
import os
import time

from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import signature
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook import spool

ENV_URL = "WPCLOUD_WEBHOOK_ACK_URL"
ENV_TOKEN = "WPCLOUD_WEBHOOK_ACK_TOKEN"
ENV_CA_PATH = "WPCLOUD_WEBHOOK_ACK_CA_PATH"
HTTP_ATTEMPTS = 3          # an acknowledgement is idempotent: repeating it is safe
RETRY_STATUSES = (408, 429, 500, 502, 503, 504)
VIAS = ("auto", "file", "http")


class AckError(Exception):
    """A failure the task reports (its message names the option to fix)."""


def _event_meta(event):
    meta = event.get("meta") if isinstance(event, dict) else None
    if not isinstance(meta, dict):
        raise AckError("event has no meta: pass the event as the rulebook gives it (event: \"{{ ansible_eda.event }}\"), "
                       "or delivery_id")
    return meta


def where(params, environ=None):
    """(delivery_id, via, spool_dir, url) for these parameters; via None: nothing to acknowledge."""
    environ = os.environ if environ is None else environ
    ack = {}
    if params.get("event") is not None:
        meta = _event_meta(params["event"])
        delivery_id = meta.get("delivery_id")
        option = "event.meta.delivery_id"
        ack = meta.get("ack") if isinstance(meta.get("ack"), dict) else {}
        if not ack and not params.get("spool_dir") and not params.get("url"):
            return delivery_id, None, None, None          # acknowledgements are off for this source
    else:
        delivery_id = params.get("delivery_id")
        option = "delivery_id"
    if not signature.is_delivery_id(delivery_id):
        raise AckError("%s must be a delivery id (sig- or body- and 32 hex digits, the event's meta.delivery_id); "
                       "got %r" % (option, delivery_id))
    spool_dir = params.get("spool_dir") or ack.get("spool_dir")
    url = params.get("url") or ack.get("url") or environ.get(ENV_URL) or None
    via = params.get("via") or "auto"
    has_spool = bool(spool_dir) and os.path.isfile(os.path.join(spool_dir, spool.SPOOL_FILE))
    if via == "auto":
        via = "file" if has_spool else "http" if url else None
        if via is None:
            raise AckError("cannot acknowledge %s: %s, and no url is known. Where the playbook runs away from the "
                           "event source (an AAP job template), set the source's ack_url and ack_token, and give "
                           "this task the token (token or %s)"
                           % (delivery_id, "%s is not a spool directory on this machine" % spool_dir if spool_dir
                              else "no spool_dir", ENV_TOKEN))
    elif via == "file" and not has_spool:
        raise AckError("spool_dir %s is not the spool directory of a wpcloud.hosting.webhook source on this machine "
                       "(no %s); use via: http with url and token where the playbook runs elsewhere"
                       % (spool_dir, spool.SPOOL_FILE))
    elif via == "http" and not url:
        raise AckError("via: http needs url (the source's ack_url, e.g. https://eda.example.com:8443/_wpcloud/ack) "
                       "or %s" % ENV_URL)
    if via == "http" and not url.lower().startswith(("https://", "http://")):
        raise AckError("url must be an https:// URL of the receiver's acknowledgement endpoint; got %r" % url)
    return delivery_id, via, spool_dir, url


def _post(url, delivery_id, params, environ, sleep):
    token = params.get("token")
    if not token:
        raise AckError("token is required to acknowledge over HTTPS (or set %s): the source's ack_token" % ENV_TOKEN)
    ca_path = params.get("ca_path") or environ.get(ENV_CA_PATH) or None
    body = json.dumps({"delivery_id": delivery_id})
    last = None
    for attempt in range(1, HTTP_ATTEMPTS + 1):
        try:
            response = open_url(url, data=body, method="POST", timeout=params.get("timeout") or 30,
                                validate_certs=params.get("validate_certs", True), ca_path=ca_path,
                                headers={"Content-Type": "application/json", "Authorization": "Bearer " + token},
                                follow_redirects="none", use_proxy=True)
            answer = json.loads(to_text(response.read()) or "{}")
            return bool(answer.get("recorded", True))
        except HTTPError as exc:
            status = exc.code
            if status == 401:
                raise AckError("the receiver at %s refused the token (HTTP 401): token (or %s) must be the source's "
                               "ack_token" % (url, ENV_TOKEN))
            if status == 404:
                text = to_text(exc.read() or b"", errors="replace").strip()[:200]
                raise AckError("the receiver at %s answered 404 (%s): url must be the ack_url of the source that "
                               "emitted %s, with ack_token set there" % (url, text, delivery_id))
            if status not in RETRY_STATUSES:
                raise AckError("the receiver at %s refused the acknowledgement of %s (HTTP %d)" % (url, delivery_id, status))
            last = "HTTP %d" % status
        except (URLError, OSError, ValueError) as exc:
            last = "%s: %s" % (type(exc).__name__, to_text(getattr(exc, "reason", exc)))
        if attempt < HTTP_ATTEMPTS:
            sleep(attempt)
    raise AckError("could not reach the receiver at %s to acknowledge %s (%s, %d attempts); the event will be "
                   "emitted again after the source's ack_timeout" % (url, delivery_id, last, HTTP_ATTEMPTS))


def run(params, check_mode=False, environ=None, sleep=time.sleep):
    """The task's result (without ``failed``); raises AckError."""
    environ = os.environ if environ is None else environ
    delivery_id, via, spool_dir, url = where(params, environ)
    result = {"changed": False, "delivery_id": delivery_id, "via": via, "recorded": False}
    if params.get("event") is not None:
        result["attempt"] = _event_meta(params["event"]).get("attempt")
    if via is None:
        result["msg"] = ("the event carries no meta.ack: its source runs with ack_timeout: 0, so it was done when it "
                         "was handed over; nothing to acknowledge")
        return result
    if via == "file":
        try:
            recorded = spool.acknowledge(spool_dir, delivery_id, "file", check_mode=check_mode)
        except OSError as exc:
            raise AckError("could not record the acknowledgement of %s in %s: %s (the event will be emitted again "
                           "after the source's ack_timeout)" % (delivery_id, spool_dir, exc))
        result["spool_dir"] = spool_dir
    elif check_mode:
        recorded = True
        result["url"] = url
    else:
        recorded = _post(url, delivery_id, params, environ, sleep)
        result["url"] = url
    result.update(changed=recorded, recorded=recorded)
    return result
