# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The webhook side of wpcloud.hosting: what the ``wpcloud.hosting.webhook`` event source, the
``webhook_verify`` filter and the ``webhook_ack`` module share, and the event source's parts.

Note that this package is PRIVATE to the collection. It can have breaking changes at any time.

Shared (standard library only): ``signature`` (verification, key rules, delivery ids), ``replay``
(duplicate rule, replay store, freshness window), ``spool`` (the spool directory's files and the
processing journal), ``ack`` (where an acknowledgement goes; the module's logic).

The event source (``extensions/eda/plugins/event_source/webhook.py`` wires them): ``options``, ``pipe``
(the messages between its two processes and each end), the receiver process (``receiver``: HTTPS and
the request checks; ``spool_writer``: durable appends), the rulebook side (``emitter``; ``acking_emitter`` with acknowledgements on) and the
operator command (``operator_command``).

The event source imports this package by its path (ansible-rulebook does not install Ansible's
collection loader), so its modules import each other relatively and nothing from the rest of
module_utils; ``ack`` alone is for the module and imports through ``ansible_collections``.
"""
