# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pipe between the event source's two processes: what the receiver is given (keys and tokens only
in their own fields), and the receiver's messages coalesced while the pipe is busy."""

from __future__ import annotations

import asyncio
from unittest import mock

import pytest

pytest.importorskip("aiohttp")

from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.emitter import Emitter  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.pipe import Notifier, receiver_config  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.wpcloud.hosting.tests.unit.plugins.module_utils.webhook.source_parts import (  # noqa: E402  pylint: disable=wrong-import-position
    ACK_TOKEN, KEY, run,
)


def test_receiver_config_carries_keys_only_in_their_own_field(tmp_path):
    emitter = Emitter(str(tmp_path), 0)
    args = {"port": 1, "hmac_secret": [KEY], "hmac_secret_file": "/k", "token": 123, "max_age": 5}
    config = receiver_config(args, [KEY], str(tmp_path), emitter)
    assert config["keys"] == [KEY]
    assert "hmac_secret" not in config["args"] and "hmac_secret_file" not in config["args"]
    assert config["args"]["token"] == "123" and config["args"]["max_age"] == 5
    assert config["log_level"] in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    # without explicit keys the file is watched by the receiver
    assert receiver_config({"port": 1, "hmac_secret_file": "/k"}, [KEY], str(tmp_path),
                           emitter)["args"]["hmac_secret_file"] == "/k"


def test_receiver_config_carries_the_ack_token_only_in_its_own_field(tmp_path):
    emitter = Emitter(str(tmp_path), 0)
    config = receiver_config({"port": 1, "ack_token": ACK_TOKEN}, [KEY], str(tmp_path), emitter, ACK_TOKEN)
    assert config["ack_token"] == ACK_TOKEN and "ack_token" not in config["args"]


def test_notifier_coalesces_durable_positions_while_the_pipe_is_busy():
    written = []
    transport = mock.Mock()
    transport.is_closing.return_value = False
    transport.write.side_effect = written.append
    transport.get_write_buffer_size.return_value = 0
    notify = Notifier(transport)

    async def scenario():
        notify.ready(0, 0)
        notify.durable(1, 10)
        transport.get_write_buffer_size.return_value = 100     # busy: later positions wait
        notify.durable(2, 20)
        notify.durable(3, 30)
        transport.get_write_buffer_size.return_value = 0
        await asyncio.sleep(0.05)
        notify.rotated()
        notify.failed("boom")
    run(scenario())
    assert written == [b"READY 0 0\n", b"D 1 10\n", b"D 3 30\n", b"R\n", b'E "boom"\n']
