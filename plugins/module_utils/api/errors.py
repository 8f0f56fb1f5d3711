# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a failed call says: the one error type of the client, the wording of a missing or refused API key,
and the connection failures a user can act on, named in words.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

The client (api/client.py) decides whether and when to retry; this file only says what went wrong. Its texts
never hold a secret: the client masks the service's message before it reaches them.
"""

from __future__ import annotations

import socket
import ssl


MISSING_KEY = ("api_key is required: set the api_key option (once per play with module_defaults for "
               "group/wpcloud.hosting.all) or the WPCLOUD_API_KEY environment variable on the controller.")

# HTTP statuses of a refused key. The owner's panel treats 401 and 403 alike as a refused request; the
# PHP SDK documents 403 as "key not authorized for the requested resource" (docs/api-choices.md).
KEY_REFUSED_STATUS = (401, 403)


def refused_key(status, api_message=None, resource=None, also=None):
    """The one wording of a 401/403 (every module, the sites inventory and the role show it): the API key
    first, the service's own message quoted, the other causes named only as possibilities. ``resource``
    (e.g. "site example.com") says what the key was refused for; ``also`` adds a possible cause of a 403
    (a 401 is about the key alone)."""
    return ("The service refused the API key%s (HTTP %d%s). Check api_key (WPCLOUD_API_KEY): it may be "
            "wrong, revoked, or without access to %s. Other possible causes: the key's IP allow list or "
            "endpoint access in the partner portal%s." % (
                " for " + resource if resource else "", status,
                ', the service says: "%s"' % api_message if api_message else "",
                resource or "this client account", ", or " + also if also and status == 403 else ""))


class WPCloudAPIError(Exception):
    """Any failed call. Carries what a user needs and never a secret.

    ``effect`` is ``none`` when the service provably did not apply the call, ``unknown`` when it may
    have (a write must not be repeated blindly), ``rejected`` when the service answered with an error.
    """

    def __init__(self, message, status=None, operation=None, api_message=None, data=None,
                 retry_safe=False, effect="rejected", attempts=1):
        super().__init__(message)
        self.message, self.data = message, data
        # What a result shows as ``failure`` (to_dict).
        self.status, self.operation, self.api_message = status, operation, api_message
        self.retry_safe, self.effect, self.attempts = retry_safe, effect, attempts
        # For an unknown effect: how long after this error the service may still apply the write (the
        # client's request timeout: a request can arrive as late as the client waited for its answer).
        self.in_flight = None

    def to_dict(self):
        return {
            "status": self.status,
            "operation": self.operation,
            "message": self.api_message,
            "retry_safe": self.retry_safe,
            "effect": self.effect,
            "attempts": self.attempts,
        }


def exception_chain(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        reason = getattr(exc, "reason", None)
        if isinstance(reason, BaseException):
            yield reason
        for arg in getattr(exc, "args", ()):
            if isinstance(arg, BaseException):
                yield arg
                reason = getattr(arg, "reason", None)
                if isinstance(reason, BaseException):
                    yield reason
        exc = exc.__cause__ or exc.__context__


def connection_refused(exc):
    return any(isinstance(item, ConnectionRefusedError) for item in exception_chain(exc))


# The causes a user can act on, most specific first (urllib3's own names are matched by name).
CONNECTION_WORDS = (
    (ConnectionRefusedError, "connection refused"),
    (ConnectionResetError, "connection reset"),
    (socket.gaierror, "the host name does not resolve"),
    ("NameResolutionError", "the host name does not resolve"),
    ("ConnectTimeoutError", "no connection within the timeout"),
    (socket.timeout, "timed out"),
)


def certificate_problem(exc):
    for item in exception_chain(exc):
        if isinstance(item, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(item):
            return True
        if "hostname" in str(item).lower() and "match" in str(item).lower():
            return True
    return False
