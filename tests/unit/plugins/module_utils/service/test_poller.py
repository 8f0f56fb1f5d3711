# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The poller on the fake service: ticket shapes, summary polls, messages, rounds and the deadline."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.poller import (
    parse_count,
    parse_messages,
    parse_status,
    wait_for_tickets,
    wait_summary,
)


@pytest.mark.parametrize("data,status,count,messages", [
    ({"status": "running", "response_count": 3}, "running", 3, []),
    ({"state": "SUCCESS", "response-count": "5"}, "success", 5, []),
    ({"status": "failure", "responses": [{"message": "a"}, {"text": "b"}, "c"]}, "failure", None, ["a", "b", "c"]),
    ({"messages": ["x"]}, "running", None, ["x"]),
    (None, "running", None, []),
    ([], "running", None, []),
])
def test_ticket_shapes(data, status, count, messages):
    assert parse_status(data) == status
    assert parse_count(data) == count
    assert parse_messages(data) == messages


@pytest.fixture()
def client(fake_api):
    client = WPCloudClient(api_url=fake_api.url, api_key=fake_api.api_key)
    yield client
    client.close()


def start(fake_api, client, steps, messages=()):
    mid = fake_api.add_migration(site=str(fake_api.next_id))
    fake_api.script("preflight", steps=steps, messages=messages, migration_id=mid)
    return client.call("migration.preflight", migration_id=mid).data["response-ticket-id"]


def test_tickets_are_polled_in_rounds_until_each_ends(fake_api, client, fake_time):
    fast = start(fake_api, client, ["pending", "success"])
    slow = start(fake_api, client, ["pending", "running", "running", "failure"], messages=["Permission denied"])
    tickets, timed_out = wait_for_tickets(client, [fast, slow], 60, 1.0)
    assert not timed_out and fake_time.naps == [1.0, 1.0, 1.0]
    assert [(t.status, t.polls) for t in tickets] == [("success", 2), ("failure", 4)]
    summary = wait_summary(tickets, timed_out)
    assert (summary["succeeded_count"], summary["failed_count"], summary["pending_count"]) == (1, 1, 0)
    # Messages of the failed ticket only (messages=on_failure), from the full form.
    assert [e.get("messages") for e in summary["results"]] == [None, ["Permission denied"]]
    summaries = [c for c in fake_api.log if c["operation"] == "ticket.summary"]
    assert len(summaries) == 6 and [c["operation"] for c in fake_api.log].count("ticket.full") == 1


@pytest.mark.parametrize("messages,fetched", [("always", 2), ("never", 0)])
def test_messages_always_or_never(fake_api, client, messages, fetched):
    ids = [start(fake_api, client, ["success"]), start(fake_api, client, ["failure"])]
    wait_for_tickets(client, ids, 60, 1.0, messages=messages)
    assert [c["operation"] for c in fake_api.log].count("ticket.full") == fetched


def test_the_deadline_ends_the_wait_with_the_last_state(fake_api, client, fake_time):
    ticket = start(fake_api, client, ["pending", "running"])
    tickets, timed_out = wait_for_tickets(client, [ticket], 3, 1.0)
    assert timed_out and tickets[0].status == "running" and tickets[0].polls == 4  # at 0, 1, 2 and 3 s
    assert wait_summary(tickets, timed_out)["pending_count"] == 1


def test_without_wait_one_poll(fake_api, client):
    ticket = start(fake_api, client, ["pending", "running", "success"])
    tickets, timed_out = wait_for_tickets(client, [ticket], 60, 1.0, wait=False)
    assert not timed_out and tickets[0].status == "pending" and tickets[0].polls == 1


@pytest.mark.parametrize("ticket_id,error", [
    ("", "The service says the response ticket ID is missing (HTTP 400): pass a non-empty ticket ID."),
    ("nope.1", "Response ticket 'nope.1' was not found (HTTP 404): check the ticket ID."),
])
def test_an_unreadable_ticket_is_an_error_of_its_own(fake_api, client, ticket_id, error):
    tickets, timed_out = wait_for_tickets(client, [ticket_id], 60, 1.0)
    assert tickets[0].done and tickets[0].failed and tickets[0].error == error
    assert wait_summary(tickets, timed_out)["results"][0]["state"] == "error"
