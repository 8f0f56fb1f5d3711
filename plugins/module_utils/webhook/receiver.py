# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The receiver process: HTTPS, the request checks (one aiohttp middleware each), the acknowledgement
endpoint, health counters and the key file's reload. It runs in its own process (started by the
rulebook side with ``--receiver``, see ``pipe.py``) so that answering deliveries never waits for the
rule engine, which shares the rulebook's event loop and Python thread.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import re
import signal
import sys
import time
import uuid
from datetime import datetime, timezone
from typing import Any

try:
    from aiohttp import web
except ImportError:  # pragma: no cover - the operator command and the module need only the standard library
    web = None

from . import options, pipe, replay, signature, spool
from .spool_writer import SpoolWriter

logger = logging.getLogger(__name__)


SECRET_HEADER = re.compile(r"auth|cookie|token|secret|signature|api-key|apikey|hmac|password", re.I)

_UUID_NAMESPACE = uuid.NAMESPACE_URL.bytes


def event_uuid(delivery_id: str) -> str:
    """``str(uuid.uuid5(uuid.NAMESPACE_URL, "wpcloud-webhook:" + delivery_id))``, the event's
    ``meta.uuid``, computed without the uuid module's checks (a third of the time, same value)."""
    digest = bytearray(hashlib.sha1(_UUID_NAMESPACE + b"wpcloud-webhook:" + delivery_id.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50        # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80        # RFC 4122 variant
    text = digest.hex()
    return "%s-%s-%s-%s-%s" % (text[:8], text[8:12], text[12:16], text[16:20], text[20:])


class Delivery:
    """What the request checks learn about one delivery, kept on the request (``request[DELIVERY]``)."""

    __slots__ = ("body", "payload", "delivery_id", "fingerprint", "signature", "timestamp", "key_index", "stored")

    def __init__(self, body: bytes, payload: dict) -> None:
        self.body = body
        self.payload = payload
        self.delivery_id = ""
        self.fingerprint = ""
        self.signature: dict[str, Any] = {"verified": False}
        self.timestamp = None
        self.key_index = None
        self.stored = False


DELIVERY = web.RequestKey("wpcloud_delivery", Delivery) if hasattr(web, "RequestKey") else "wpcloud_delivery"
as_middleware = web.middleware if web is not None else (lambda function: function)


def media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


def wrap_handler(middleware, handler):
    """``middleware(request, handler)`` as a handler of its own, as aiohttp chains middlewares."""
    def chained(request):
        return middleware(request, handler)
    return chained


class Receiver:
    """The receiver's HTTP side: a delivery (a POST to any path) passes the checks below in this
    order, each an aiohttp middleware; the first that fails answers. Then :meth:`store` spools it.

    ===================  ==============================================================  ======
    check                refuses                                                         status
    ===================  ==============================================================  ======
    check_size           a Content-Length above max_body_size                            413
    check_token          (with ``token``) a missing or wrong ``Authorization: Bearer``   401
    check_content_type   (with ``content_types``) a content type not in that list          415
    read_json            a body above max_body_size or not sent within options.REQUEST_DEADLINE  413/408
                         a body that is not a JSON object (or is nested too deeply)      400
    verify_signature     (with keys) a missing, malformed or wrong signature             401
    drop_duplicates      a known delivery id: same body 200 (not stored again),          200/409
                         another body 409
    check_freshness      (with ``max_age``) a signature older than the window            401
    ===================  ==============================================================  ======

    aiohttp applies an application's middlewares to every route, and looks the chain up for each
    request; these checks belong to the delivery route only (``GET /healthz`` has none), so
    :meth:`app` composes them around that route's handler once, at start.
    """

    def __init__(self, args: dict[str, Any], writer: SpoolWriter, keys: list[str], recovered: int = 0,
                 ack_token: str | None = None) -> None:
        self.spool = writer
        self.keys = keys
        self.recovered = recovered
        self.token = str(args["token"]).encode() if args.get("token") is not None else None
        self.ack_token = ack_token.encode() if ack_token else None
        self.max_body = int(args.get("max_body_size", 1048576))
        # The spec says only "a JSON body": a delivery is judged by its body, whatever its
        # Content-Type (a missing or other type would make the service retry and then drop the event).
        # content_types, when set, restricts the types (415 for the others).
        types = args.get("content_types") or []
        if isinstance(types, str):
            types = [t.strip() for t in types.split(",")]
        self.content_types = {t.lower() for t in types if t}
        max_age = args.get("max_age")
        self.freshness = replay.FreshnessWindow(float(max_age)) if max_age else None
        # Stored deliveries per matching key position: a key rotation checks that the new key (0) is in use.
        self.verified_by_key = [0] * len(keys)
        self.keys_file = args.get("hmac_secret_file")
        self._keys_mtime = os.stat(self.keys_file).st_mtime_ns if self.keys_file else None
        self._keys_checked = time.monotonic()
        self._deliver = self.store

    def checks(self) -> list:
        """The middlewares of a delivery, outermost first (options that are not set add none)."""
        checks = [self.check_size]
        if self.token is not None:
            checks.append(self.check_token)
        if self.content_types:
            checks.append(self.check_content_type)
        checks += [self.read_json, self.verify_signature, self.drop_duplicates]
        if self.freshness is not None:
            checks.append(self.check_freshness)
        return checks

    def app(self) -> web.Application:
        handler = self.store
        for check in reversed(self.checks()):
            handler = wrap_handler(check, handler)
        self._deliver = handler
        app = web.Application(client_max_size=self.max_body)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_post(options.ACK_PATH, self.acknowledge)          # before the catch-all delivery route
        app.router.add_post(r"/{endpoint:.*}", self.deliver)
        return app

    async def deliver(self, request: web.Request) -> web.StreamResponse:
        """The delivery route's handler: the checks, then :meth:`store`."""
        return await self._deliver(request)

    # -- answers ---------------------------------------------------------------------------
    @staticmethod
    def _reply(status: int, text: str) -> web.Response:
        return web.Response(status=status, text=text + "\n")

    def _reject(self, status: int, text: str) -> web.Response:
        self.spool.stats["rejected"] += 1
        return self._reply(status, text)

    # -- the checks, outermost first -------------------------------------------------------
    @as_middleware
    async def check_size(self, request: web.Request, handler) -> web.StreamResponse:
        if request.content_length is not None and request.content_length > self.max_body:
            return self._reject(413, "body too large")
        return await handler(request)

    @as_middleware
    async def check_token(self, request: web.Request, handler) -> web.StreamResponse:
        scheme, _sep, value = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(value.strip().encode(), self.token):
            return self._reject(401, "invalid authorization")
        return await handler(request)

    @as_middleware
    async def check_content_type(self, request: web.Request, handler) -> web.StreamResponse:
        media = media_type(request.headers.get("Content-Type"))
        if media not in self.content_types and not (media.endswith("+json")
                                                    and "application/json" in self.content_types):
            return self._reject(415, "content type must be one of %s" % ", ".join(sorted(self.content_types)))
        return await handler(request)

    @as_middleware
    async def read_json(self, request: web.Request, handler) -> web.StreamResponse:
        try:
            body = await asyncio.wait_for(request.read(), options.REQUEST_DEADLINE)
        except web.HTTPRequestEntityTooLarge:
            return self._reject(413, "body too large")
        except asyncio.TimeoutError:
            response = self._reject(408, "request body not received within %gs" % options.REQUEST_DEADLINE)
            response.force_close()
            return response
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):    # RecursionError: nested too deeply
            return self._reject(400, "body is not valid JSON")
        if not isinstance(payload, dict):
            return self._reject(400, "body is not a JSON object")
        request[DELIVERY] = Delivery(body, payload)
        return await handler(request)

    @as_middleware
    async def verify_signature(self, request: web.Request, handler) -> web.StreamResponse:
        delivery = request[DELIVERY]
        self._reload_keys()
        if not self.keys:        # allow_unsigned without a key
            delivery.delivery_id = signature.unsigned_delivery_id(delivery.body)
            delivery.fingerprint = signature.body_fingerprint(delivery.body)
            return await handler(request)
        result = signature.verify_signature(signature.exact_payload(delivery.body, delivery.payload), self.keys)
        if not result.valid:
            logger.warning("wpcloud.hosting.webhook: rejected delivery (%s) for event %r", result.reason, result.event)
            return self._reject(401, "signature %s" % result.reason)
        delivery.fingerprint = signature.body_fingerprint(delivery.body)
        delivery.delivery_id = result.delivery_id
        delivery.timestamp = result.timestamp
        delivery.key_index = result.key_index
        delivery.signature = {"verified": True, "key_index": result.key_index, "location": result.location}
        keys = self.keys
        response = await handler(request)
        if delivery.stored and keys is self.keys:       # not counted across a key reload
            self.verified_by_key[result.key_index] += 1
        return response

    @as_middleware
    async def drop_duplicates(self, request: web.Request, handler) -> web.StreamResponse:
        delivery = request[DELIVERY]
        answer, pending = self.spool.check(delivery.delivery_id, delivery.fingerprint)
        if answer == replay.NEW:
            return await handler(request)
        if answer == replay.CONFLICT:
            self.spool.stats["conflicts"] += 1
            logger.warning("wpcloud.hosting.webhook: signature reused with another body (%s)", delivery.delivery_id)
            return self._reply(409, "signature already used for another body")
        if pending is not None:         # the first copy is still being stored: answer as it will be
            try:
                await asyncio.shield(pending)
            except Exception:  # pylint: disable=broad-except
                return self._reply(503, "not stored")
        self.spool.stats["duplicates"] += 1
        return self._reply(200, "OK (duplicate)")

    @as_middleware
    async def check_freshness(self, request: web.Request, handler) -> web.StreamResponse:
        delivery = request[DELIVERY]
        if self.freshness.is_stale(delivery.timestamp):
            return self._reject(401, "signature stale")
        response = await handler(request)
        if delivery.stored:
            self.freshness.observe(delivery.timestamp)
        return response

    # -- handlers --------------------------------------------------------------------------
    async def store(self, request: web.Request) -> web.Response:
        """A delivery that passed every check: answered 200 once it is durably spooled."""
        delivery = request[DELIVERY]
        headers = {k: v for k, v in request.headers.items() if not SECRET_HEADER.search(k)}
        event = {
            "payload": delivery.payload,
            "meta": {
                "endpoint": request.match_info.get("endpoint", ""),
                "headers": headers,
                "delivery_id": delivery.delivery_id,
                "signature": delivery.signature,
                "received_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
                "uuid": event_uuid(delivery.delivery_id),
            },
        }
        try:
            await self.spool.store(delivery.delivery_id, delivery.fingerprint, event)
        except Exception:  # pylint: disable=broad-except
            return self._reply(503, "could not store the event")
        delivery.stored = True
        return self._reply(200, "OK")

    async def acknowledge(self, request: web.Request) -> web.Response:
        """POST options.ACK_PATH ``{"delivery_id": ...}`` with ``Authorization: Bearer <ack_token>``: an action
        that ran on another node says the delivery was processed (recorded in processing.log)."""
        if self.ack_token is None:
            return self._reply(404, "acknowledgements over HTTPS are off (no ack_token)")
        scheme, _sep, value = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(value.strip().encode(), self.ack_token):
            return self._reject(401, "invalid authorization")
        if request.content_length is not None and request.content_length > options.ACK_MAX_BODY:
            return self._reject(413, "body too large")
        try:
            body = await asyncio.wait_for(request.content.read(options.ACK_MAX_BODY + 1), options.REQUEST_DEADLINE)
        except asyncio.TimeoutError:
            response = self._reject(408, "request body not received within %gs" % options.REQUEST_DEADLINE)
            response.force_close()
            return response
        if len(body) > options.ACK_MAX_BODY:
            return self._reject(413, "body too large")
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            payload = None
        delivery_id = payload.get("delivery_id") if isinstance(payload, dict) else None
        if not isinstance(delivery_id, str) or not signature.is_delivery_id(delivery_id):
            return self._reject(400, 'body must be {"delivery_id": "sig-<32 hex digits>"}')
        if delivery_id not in self.spool.memory:
            return self._reply(404, "unknown delivery id %s" % delivery_id)
        try:
            recorded = await asyncio.get_running_loop().run_in_executor(
                None, spool.acknowledge, self.spool.dir, delivery_id, "http")
        except OSError as exc:
            logger.error("wpcloud.hosting.webhook: cannot record an acknowledgement: %s", exc)
            return self._reply(503, "could not record the acknowledgement")
        self.spool.stats["acks"] += 1
        return web.json_response({"delivery_id": delivery_id, "recorded": recorded})

    async def healthz(self, request: web.Request) -> web.Response:  # pylint: disable=unused-argument
        self._reload_keys()
        body = dict(self.spool.stats)
        body.update(status="ok", backlog=self.spool.durable_seq - self.spool.marked_seq,
                    recovered=self.recovered, key_count=len(self.keys),
                    verified_by_key=list(self.verified_by_key))
        return web.json_response(body)

    def _reload_keys(self) -> None:
        """Pick up a changed hmac_secret_file (at most one stat a second)."""
        now = time.monotonic()
        if self.keys_file is None or now - self._keys_checked < 1.0:
            return
        self._keys_checked = now
        try:
            mtime = os.stat(self.keys_file).st_mtime_ns
            if mtime == self._keys_mtime:
                return
            keys = signature.read_key_file(self.keys_file)
        except OSError as exc:
            logger.warning("wpcloud.hosting.webhook: keeping the current keys; hmac_secret_file unreadable (%s)",
                           exc.__class__.__name__)
            return
        if not keys:
            logger.warning("wpcloud.hosting.webhook: keeping the current keys; hmac_secret_file is empty")
            return
        weak = signature.weak_keys(keys)
        if weak:
            logger.warning("wpcloud.hosting.webhook: keeping the current keys; in hmac_secret_file %s too weak. %s",
                           weak, signature.KEY_RULE)
            return
        self.keys, self._keys_mtime = keys, mtime
        self.verified_by_key = [0] * len(keys)
        logger.info("wpcloud.hosting.webhook: %d key(s) loaded from hmac_secret_file", len(keys))


class RefuseConnection(asyncio.Protocol):
    """What a connection over options.MAX_CONNECTIONS gets: closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


class BoundedSite(web.TCPSite if web is not None else object):
    """web.TCPSite with the bounds aiohttp leaves open: a TLS handshake deadline and a connection cap."""

    __slots__ = ()

    async def start(self) -> None:
        await super(web.TCPSite, self).start()        # web.BaseSite: registers the site with the runner
        server = self._runner.server

        def protocol():
            return RefuseConnection() if len(server.connections) >= options.MAX_CONNECTIONS else server()

        bounds = {"ssl_handshake_timeout": options.REQUEST_DEADLINE} if self._ssl_context else {}
        self._server = await asyncio.get_running_loop().create_server(
            protocol, self._host, self._port, ssl=self._ssl_context, backlog=self._backlog, **bounds)
        self._bound_port = self._server.sockets[0].getsockname()[1] if self._server.sockets else self._port


async def run_receiver() -> int:
    """Entry point of the receiver process (``webhook.py --receiver``): the config on the first stdin
    line, then "M" lines (``pipe.py``)."""
    ppid = os.getppid()
    pipe.die_with_parent()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, _protocol = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout)
    notify = pipe.Notifier(transport)

    if os.getppid() != ppid:
        return 1
    config = json.loads(await reader.readline())
    args, keys = config["args"], config["keys"]
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, config.get("log_level", "WARNING")),
                        format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
    writer = SpoolWriter(config["spool_dir"], int(args.get("spool_max_bytes", 64 << 20)),
                         int(args.get("dedupe_size", 100000)), notify)
    writer.marked_seq = int(config.get("marked_seq", 0))
    runner = None
    stop = asyncio.Event()
    try:
        # Ctrl-C reaches the whole process group: the rulebook side decides when the receiver stops
        loop.add_signal_handler(signal.SIGINT, lambda: None)
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - non-POSIX
        pass
    try:
        ssl_context = options.ssl_context(args)
        writer.open()
        receiver = Receiver(args, writer, keys, recovered=int(config.get("recovered", 0)),
                            ack_token=config.get("ack_token"))
        # keepalive_timeout: aiohttp closes a connection that has not sent a whole request's headers
        # within it (from its start, or since its last response).
        runner = web.AppRunner(receiver.app(), access_log=None, keepalive_timeout=options.REQUEST_DEADLINE)
        await runner.setup()
        site = BoundedSite(runner, args.get("host") or "0.0.0.0", int(args["port"]),  # nosec B104
                           ssl_context=ssl_context, backlog=1024)
        await site.start()
    except Exception as exc:  # pylint: disable=broad-except
        notify.failed(str(exc))
        if runner is not None:
            await runner.cleanup()
        writer.close_files()
        await notify.drain()
        return 1
    notify.ready(writer.durable_seq, writer.durable_offset)
    stopper = loop.create_task(stop.wait())
    try:
        while True:
            reading = loop.create_task(reader.readline())
            await asyncio.wait({reading, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():
                reading.cancel()
                break                     # SIGTERM
            line = reading.result()
            if not line:                  # the rulebook is gone or stopping
                break
            if line.startswith(pipe.MSG_MARKED):
                writer.marked_seq = max(writer.marked_seq, int(line[len(pipe.MSG_MARKED):]))
    finally:
        stopper.cancel()
        await runner.cleanup()          # stops accepting; in-flight requests finish their fsync
        await writer.close()
    return 0
