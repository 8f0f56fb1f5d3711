# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The operator command of the event source: list stored deliveries, replay them, mark them done.

    python webhook.py events list|replay|ack --spool-dir DIR [selectors]
    (or ansible-playbook wpcloud.hosting.webhook_events, which runs it)

It works on the spool directory's files alone (standard library only).

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import options, signature, spool


def command_line_parser():
    """The command line: list, replay or ack, each with the same selectors."""
    parser = argparse.ArgumentParser(
        prog="webhook.py events",
        description="List the WP Cloud webhook deliveries a wpcloud.hosting.webhook spool holds, hand them "
                    "to the rulebook again (replay) or mark them done (ack). Works while the rulebook runs "
                    "(it picks requests up within a second) or not (at its next start).")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("list", "list deliveries (oldest first)"),
                       ("replay", "hand the selected deliveries to the rulebook again (attempts start over)"),
                       ("ack", "mark the selected deliveries done without running anything (dismiss)")):
        command = commands.add_parser(name, help=text, description=text)
        where = command.add_mutually_exclusive_group(required=True)
        where.add_argument("--spool-dir", help="the source's spool_dir")
        where.add_argument("--port", type=int, help="the source's port, when spool_dir was left to its default")
        command.add_argument("--id", dest="ids", action="append", default=[], metavar="DELIVERY_ID",
                             help="a delivery id (repeat for several)")
        command.add_argument("--since", help="received at or after: ISO 8601 (2026-11-23T10:00Z) or an age (2h)")
        command.add_argument("--until", help="received before: ISO 8601 or an age")
        command.add_argument("--state", dest="states", action="append", default=[], choices=spool.STATES,
                             help="only deliveries in this state (repeat for several)")
        command.add_argument("--event", dest="events", action="append", default=[], metavar="NAME",
                             help="only this event name (repeat for several)")
        command.add_argument("--json", action="store_true", help="one JSON object per line")
        if name != "list":
            command.add_argument("--all", action="store_true", help="every delivery (no selector needed)")
    return parser


def main(argv: list[str]) -> int:
    """Run ``events ARGV``; the exit code (argparse exits 2 on a usage error)."""
    parser = command_line_parser()
    opts = parser.parse_args(argv)
    directory = os.path.abspath(opts.spool_dir or options.default_spool_dir(opts.port))
    if not os.path.isfile(os.path.join(directory, spool.SPOOL_FILE)):
        parser.error("%s holds no %s: not the spool_dir of a wpcloud.hosting.webhook source" % (directory, spool.SPOOL_FILE))
    bad = [i for i in opts.ids if not signature.is_delivery_id(i)]
    if bad:
        parser.error("--id %s is not a delivery id (sig- or body- and 32 hex digits)" % bad[0])
    try:
        since = spool.parse_time(opts.since) if opts.since else None
        until = spool.parse_time(opts.until) if opts.until else None
    except ValueError as exc:
        parser.error("--since/--until: %s" % exc)
    chosen = spool.select(spool.list_deliveries(directory), opts.ids, since, until, opts.states)
    if opts.events:           # either spelling of a name matches (site-provisioned is site_provisioned)
        wanted = {signature.event_name(name) for name in opts.events}
        chosen = [item for item in chosen if signature.event_name(item["event"]) in wanted]
    if opts.command != "list" and not (opts.all or opts.ids or opts.since or opts.until or opts.states
                                       or opts.events):
        parser.error("%s needs a selector (--id, --since, --until, --state, --event) or --all" % opts.command)
    missing = sorted(set(opts.ids) - {item["delivery_id"] for item in chosen})
    if opts.command == "replay" and chosen:
        spool.request_redo(directory, [item["delivery_id"] for item in chosen])
    elif opts.command == "ack":
        chosen = [item for item in chosen if item["state"] != spool.DONE]
        spool.record_acks(directory, [item["delivery_id"] for item in chosen])
    for item in chosen:
        if opts.json:
            sys.stdout.write(json.dumps({k: v for k, v in item.items() if k not in ("raw", "received_epoch")}) + "\n")
        else:
            sys.stdout.write("%-6s %-27s %-37s %-8s %-3s %-26s %s\n" % (
                item["seq"], item["received_at"], item["delivery_id"], item["state"], item["attempts"],
                item["event"], "" if item["atomic_site_id"] is None else item["atomic_site_id"]))
    counts = {}
    for item in chosen:
        counts[item["state"]] = counts.get(item["state"], 0) + 1
    summary = ", ".join("%d %s" % (n, state) for state, n in sorted(counts.items())) or "none"
    verb = {"list": "listed", "replay": "asked to be handed over again", "ack": "marked done"}[opts.command]
    sys.stderr.write("%d deliver%s %s (%s)\n" % (len(chosen), "y" if len(chosen) == 1 else "ies", verb, summary))
    for delivery_id in missing:
        sys.stderr.write("not in the spool: %s\n" % delivery_id)
    if opts.command != "list" and (missing or not chosen):
        return 1
    return 0
