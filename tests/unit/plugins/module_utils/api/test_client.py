# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The API client on a faked HTTP layer (tests/unit/plugins/fake_service.py): envelope, statuses, the retry
rules, TLS and connection failures, secrets. The same over real HTTPS: tests/system/test_client_https.py."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import (
    OPERATIONS,
    WPCloudClient,
    WRITE,
    WRITE_SESSION_MAX_AGE,
    parse_envelope,
    php_form,
)
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.pace import Pace
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import Secrets
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.version import collection_version

SECRET_PASS = "canary-remote-pass-7f3a9"


@pytest.fixture()
def client_for(fake_api):
    made = []

    def make(**kwargs):
        slept = []
        options = dict(api_url=fake_api.url, api_key=fake_api.api_key, retries=3, retry_timeout=20, sleep=slept.append)
        options.update(kwargs)
        client = WPCloudClient(**options)
        client.slept = slept
        made.append(client)
        return client
    yield make
    for client in made:
        client.close()


def statuses(fake_api):
    return [(c["operation"], c["status"]) for c in fake_api.log]


# -- pure functions ---------------------------------------------------------------------------------

def test_php_form_flattens_lists_and_maps():
    assert php_form({"a": 1, "b": [1, 2], "m": {"k": "v"}, "n": None, "t": True}) == [
        ("a", "1"), ("b[]", "1"), ("b[]", "2"), ("m[k]", "v"), ("t", "true")]


@pytest.mark.parametrize("body,expected", [
    (b'{"message": "OK", "data": {"a": 1}}', ("OK", {"a": 1})),
    (b'{"message": "OK", "data": []}', ("OK", [])),
    (b'{"message": "OK", "data": null}', ("OK", None)),
    (b'{"message": "OK", "data": "8.4"}', ("OK", "8.4")),
    (b'<html><body>502 Bad Gateway</body></html>', ("<html><body>502 Bad Gateway</body></html>", None)),
    (b'', ("", None)),
    (b'[1, 2]', ("", [1, 2])),
])
def test_parse_envelope_tolerates_every_shape(body, expected):
    assert parse_envelope(200, body) == expected


def test_every_operation_that_carries_credentials_is_a_post():
    # Credentials never travel in a URL.
    for name in ("migration.create", "migration.update", "client_meta.add", "client_meta.update"):
        assert OPERATIONS[name][0] == "POST"
        assert OPERATIONS[name][2] == WRITE


# -- the request ------------------------------------------------------------------------------------

def test_envelope_unwrapped_and_headers_sent(fake_api, client_for):
    fake_api.add_site("1001")
    resp = client_for().call("site.get", site="1001")
    assert resp.status == 200 and resp.message == "OK" and resp.data["atomic_site_id"] == 1001
    headers = fake_api.log[0]["headers"]
    assert headers["Auth"] == fake_api.api_key and headers["Accept"] == "application/json"
    assert headers["User-Agent"] == "wpcloud.hosting/%s" % collection_version()


def test_credentials_go_in_the_form_body_never_in_the_url(fake_api, client_for):
    fake_api.add_site("1002", allow="true")
    client_for().call("migration.create", params={"remote-host": "h.example", "remote-user": "u",
                                                  "remote-pass": SECRET_PASS}, site="1002")
    create = fake_api.log[0]
    assert create["method"] == "POST" and create["sent"]["remote-pass"] == SECRET_PASS
    assert SECRET_PASS not in create["path"] + create["query"]


def test_path_arguments_are_quoted(fake_api, client_for):
    with pytest.raises(WPCloudAPIError):
        client_for().call("site.get", site="../x?y")
    assert fake_api.log[0]["path"] == "/api/v1.0/get-site/..%2Fx%3Fy"


def test_ca_path_is_passed_on_every_request(fake_api, client_for):
    fake_api.add_site("1001")
    client_for(ca_path="/etc/ca.pem").call("site.get", site="1001")
    client_for(ca_path="/etc/ca.pem", validate_certs=False).call("site.get", site="1001")
    assert fake_api.verified == ["/etc/ca.pem", False]


def test_reads_share_one_session_and_writes_one_that_is_replaced_when_old(fake_api, client_for, monkeypatch):
    fake_api.add_site("1001")
    client = client_for()
    made, now = [], [1000.0]
    real = client._new_session
    monkeypatch.setattr(client, "_new_session", lambda: made.append(1) or real())
    client.clock = lambda: now[0]
    for dummy in range(3):
        client.call("site.get", site="1001")
    client.call("site.allow_migration", site="1001")
    now[0] += WRITE_SESSION_MAX_AGE
    client.call("site.allow_migration", site="1001")
    assert len(made) == 2  # one read session, one write session (still young)
    first = client._writes[0]
    now[0] += 0.001
    client.call("site.allow_migration", site="1001")
    assert len(made) == 3 and client._writes[0] is not first  # older than the limit: replaced
    client.close()
    assert client._writes is None and client._session is None


# -- statuses ---------------------------------------------------------------------------------------

def test_wrong_key_is_403_with_advice_and_no_key_in_text(fake_api, client_for):
    client = client_for(api_key="wrong-key-canary-123")
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.get", site="1001")
    assert info.value.status == 403 and info.value.effect == "none"
    assert "api_key" in info.value.message
    assert "wrong-key-canary-123" not in str(info.value) + repr(info.value.to_dict())
    assert len(fake_api.log) == 1  # not retried


def test_404_raises_or_is_returned_when_accepted(fake_api, client_for):
    client = client_for()
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.get", site="999999")
    assert info.value.status == 404 and info.value.effect == "none"
    assert client.call("site.get", accept_status=(404,), site="999999").status == 404


def test_a_pending_ticket_is_a_202(fake_api, client_for):
    mid = fake_api.add_migration()
    fake_api.script("preflight", steps=["pending", "success"])
    client = client_for()
    ticket = client.call("migration.preflight", migration_id=mid).data["response-ticket-id"]
    first = client.call("ticket.summary", params={"response-ticket-id": ticket})
    assert first.status == 202 and first.pending and first.data is None
    assert not client.call("ticket.summary", params={"response-ticket-id": ticket}).pending


def test_an_error_page_that_is_not_json_gives_a_short_excerpt(fake_api, client_for):
    fake_api.fault("site.get", status=400, body="<html><body>\n  Bad request  </body></html>")
    with pytest.raises(WPCloudAPIError) as info:
        client_for().call("site.get", site="1001")
    assert info.value.message == "HTTP 400 from site.get: <html><body> Bad request </body></html>"


# -- retry rules ------------------------------------------------------------------------------------

def test_reads_are_retried_on_503_and_429(fake_api, client_for):
    fake_api.add_site("1001")
    fake_api.fault("site.get", status=503, count=2)
    fake_api.fault("site_meta.get", status=429, retry_after=0)
    client = client_for()
    assert client.call("site.get", site="1001").status == 200
    assert client.call("site_meta.get", site="1001", key="allow_site_migration").status == 200
    assert statuses(fake_api) == [("site.get", 503), ("site.get", 503), ("site.get", 200),
                                  ("site_meta.get", 429), ("site_meta.get", 200)]


@pytest.mark.parametrize("status", [500, 502, 504, 599])
def test_reads_are_retried_on_every_5xx(fake_api, client_for, status):
    fake_api.add_site("1001")
    fake_api.fault("site.get", status=status)
    assert client_for().call("site.get", site="1001").status == 200


def test_a_read_that_keeps_failing_is_retry_safe_for_the_wait(fake_api, client_for):
    fake_api.add_site("1001")
    fake_api.fault("site.get", status=500, count=99)
    with pytest.raises(WPCloudAPIError) as info:
        client_for().call("site.get", site="1001")
    assert info.value.status == 500 and info.value.retry_safe and info.value.effect == "rejected"


def test_retry_after_on_a_503_is_honoured(fake_api, client_for):
    fake_api.add_site("1001")
    fake_api.fault("site.get", status=503, retry_after=3)
    client = client_for()
    client.call("site.get", site="1001")
    assert client.slept == [3.0]


def test_retry_after_is_honoured_and_said(fake_api, client_for):
    fake_api.add_site("1001")
    fake_api.fault("site.get", status=429, retry_after=2)
    said = []
    client = client_for(on_retry=said.append)
    client.call("site.get", site="1001")
    assert client.slept == [2.0]
    assert said == ["site.get: HTTP 429 from site.get: fault; retrying in 2.0s (attempt 2 of 4)"]


def test_backoff_is_capped_exponential_with_jitter(fake_api, client_for):
    fake_api.add_site("1001")
    fake_api.fault("site.get", status=503, count=3)
    client = client_for(retries=5)
    client.call("site.get", site="1001")
    assert [0.25 <= client.slept[0] <= 0.5, 0.5 <= client.slept[1] <= 1.0, 1.0 <= client.slept[2] <= 2.0] == [True] * 3


def test_retries_stop_at_the_number_given(fake_api, client_for):
    fake_api.fault("site.get", status=503, count=99)
    with pytest.raises(WPCloudAPIError) as info:
        client_for(retries=2).call("site.get", site="1001")
    assert info.value.attempts == 3 and len(fake_api.log) == 3 and info.value.retry_safe


def test_retries_are_bounded_by_the_deadline(fake_api, client_for, fake_time):
    fake_api.fault("site.get", status=429, retry_after=5, count=99)
    with pytest.raises(WPCloudAPIError) as info:
        client_for(retries=10, retry_timeout=12, sleep=None).call("site.get", site="1001")
    assert info.value.status == 429 and info.value.attempts == 3  # 0 s, 5 s, 10 s; 15 s would pass the deadline
    assert fake_time.naps == [5.0, 5.0]


def test_a_write_is_retried_on_429_only_and_its_effect_is_none(fake_api, client_for):
    fake_api.add_site("1002")
    fake_api.fault("site.allow_migration", status=429, retry_after=0)
    client_for().call("site.allow_migration", site="1002")
    assert statuses(fake_api) == [("site.allow_migration", 429), ("site.allow_migration", 200)]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_write_is_not_repeated_on_5xx(fake_api, client_for, status):
    fake_api.add_site("1002")
    fake_api.fault("site.allow_migration", status=status)
    with pytest.raises(WPCloudAPIError) as info:
        client_for().call("site.allow_migration", site="1002")
    assert info.value.effect == "unknown" and not info.value.retry_safe
    assert "not repeated" in info.value.message
    assert len(fake_api.writes) == 1


def test_a_write_whose_answer_is_lost_is_not_repeated(fake_api, client_for):
    fake_api.add_site("1002", allow="true")
    fake_api.fault("migration.create", error="reset", after=True)
    with pytest.raises(WPCloudAPIError) as info:
        client_for().call("migration.create", params={"remote-host": "h.example", "remote-user": "u",
                                                      "remote-pass": SECRET_PASS}, site="1002")
    assert info.value.effect == "unknown" and not info.value.retry_safe
    assert "connection reset" in info.value.message and "Run the task again" in info.value.message
    assert len(fake_api.writes) == 1 and SECRET_PASS not in str(info.value)
    # The service did create it: a re-run finds it through the site.
    assert str(fake_api.sites["1002"]).isdigit()


@pytest.mark.parametrize("error", ["reset", "read-timeout", "tls-record"])
def test_a_read_whose_connection_failed_is_retried(fake_api, client_for, error):
    fake_api.add_site("1001")
    fake_api.fault("site.get", error=error)
    assert client_for().call("site.get", site="1001").status == 200
    assert [c["operation"] for c in fake_api.log] == ["site.get", "site.get"]


@pytest.mark.parametrize("error", ["read-timeout", "tls-record"])
def test_a_write_whose_connection_failed_after_sending_is_not_repeated(fake_api, client_for, error):
    fake_api.add_site("1002")
    fake_api.fault("site.allow_migration", error=error)
    with pytest.raises(WPCloudAPIError) as info:
        client_for().call("site.allow_migration", site="1002")
    assert info.value.effect == "unknown" and len(fake_api.writes) == 1


@pytest.mark.parametrize("error,words", [("refused", "connection refused"),
                                         ("connect-timeout", "no connection within the timeout")])
def test_a_write_that_provably_was_not_sent_is_retried(fake_api, client_for, error, words):
    fake_api.add_site("1002")
    fake_api.fault("site.allow_migration", error=error, count=99)
    client = client_for(retries=2)
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.allow_migration", site="1002")
    assert info.value.effect == "none" and info.value.retry_safe
    assert info.value.attempts == 3 and len(client.slept) == 2
    assert info.value.message == ("Could not reach %s/api/v1.0/site-allow-ssh-migration/1002: %s; check api_url (the "
                                  "service's base URL, without /api/v1.0) and that the controller can connect to it."
                                  % (fake_api.url, words))


def test_an_unreachable_url_is_shown_without_credentials_or_query(fake_api, client_for):
    fake_api.fault("*", error="refused")
    with pytest.raises(WPCloudAPIError) as info:
        client_for(api_url="https://user:pw-Secret-1@api.wpcloud.test", retries=0).call(
            "ticket.summary", params={"response-ticket-id": "t.1"})
    assert "pw-Secret-1" not in info.value.message and "user" not in info.value.message
    assert "https://api.wpcloud.test/api/v1.0/response-ticket/get/summary:" in info.value.message


def test_a_certificate_problem_is_not_retried_and_names_the_options(fake_api, client_for):
    fake_api.fault("site.get", error="tls", count=99)
    with pytest.raises(WPCloudAPIError) as info:
        client_for().call("site.get", site="1001")
    assert info.value.effect == "none" and info.value.attempts == 1 and len(fake_api.log) == 1
    assert "TLS certificate verification failed" in info.value.message
    assert "validate_certs" in info.value.message and "ca_path" in info.value.message


# -- secrets ----------------------------------------------------------------------------------------

def test_the_api_key_and_the_tasks_secrets_are_masked_in_error_texts(fake_api, client_for):
    fake_api.fault("migration.create", status=400, body='{"message": "bad remote-pass %s (%s) for key %s", "data": []}'
                   % (SECRET_PASS, "canary%2Fpass%20x", fake_api.api_key))
    client = client_for(secrets=Secrets([SECRET_PASS, "canary/pass x"]))
    with pytest.raises(WPCloudAPIError) as info:
        client.call("migration.create", params={"remote-pass": SECRET_PASS}, site="1002")
    assert info.value.message == "HTTP 400 from migration.create: bad remote-pass ******** (********) for key ********"
    assert info.value.to_dict()["message"] == "bad remote-pass ******** (********) for key ********"


def test_a_client_without_a_key_is_refused():
    with pytest.raises(WPCloudAPIError) as info:
        WPCloudClient(api_key="")
    assert "api_key is required" in info.value.message and "WPCLOUD_API_KEY" in info.value.message


# -- being a good citizen: the client-wide gate --------------------------------------------------------

def test_the_ceiling_spaces_requests_evenly():
    now, naps = [100.0], []

    def sleep(seconds):
        naps.append(round(seconds, 6))
        now[0] += seconds
    pace = Pace(rate=4, clock=lambda: now[0], sleep=sleep)
    for dummy in range(5):
        pace.admit()
    assert naps == [0.25, 0.25, 0.25, 0.25] and now[0] == 101.0     # 5 requests in 1 s at 4/s
    assert Pace(rate=0, clock=lambda: now[0], sleep=sleep).admit() is None and len(naps) == 4


def test_a_pause_holds_every_request_until_it_ends():
    now, naps = [0.0], []

    def sleep(seconds):
        naps.append(seconds)
        now[0] += seconds
    pace = Pace(rate=0, clock=lambda: now[0], sleep=sleep)
    pace.pause(2.0)
    pace.pause(1.0)                        # a shorter pause never shortens the one that holds
    pace.admit()
    assert naps == [2.0] and pace.pauses == 2 and pace.waited == 2.0


def test_a_429_slows_down_every_worker_of_the_client_not_only_the_one_that_got_it(fake_api, client_for):
    fake_api.add_site("1001")
    fake_api.fault("site.get", status=429, retry_after=1)
    client = client_for(sleep=None)                      # real time: two threads
    got = threading.Event()
    timings = {}

    def first():
        client.call("site.get", site="1001")

    def second():
        got.wait(5)
        started = time.monotonic()
        client.call("site_meta.get", site="1001", key="allow_site_migration")
        timings["second"] = time.monotonic() - started
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    # Released once the pause has begun (not once the 429 is logged: the client pauses just after it),
    # so the second call always meets the pause; how much of its 1 s is left depends on how soon this
    # thread sees it, hence a bound well under 1 s.
    deadline = time.monotonic() + 5
    while client.pace.pauses < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    got.set()
    for thread in threads:
        thread.join(10)
    assert timings["second"] >= 0.5, timings        # held by the pause the other call's 429 started
    assert client.pace.pauses == 1
    assert statuses(fake_api)[0] == ("site.get", 429)


def test_the_ceiling_holds_for_concurrent_calls(fake_api, client_for):
    fake_api.add_site("1001")
    client = client_for(sleep=None, rate_limit=20)
    started = time.monotonic()
    threads = [threading.Thread(target=client.call, args=("site.get",), kwargs={"site": "1001"}) for dummy in range(21)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(fake_api.log) == 21 and time.monotonic() - started >= 0.95     # 21 requests at 20/s: >= 1 s


# -- the hot reads' transport (urllib3 directly): the same answers and failures as through requests ----------

def on_requests_only(client):
    """The client with its hot reads sent through requests too (as when a proxy applies)."""
    client._hot = (None,)
    return client


def ticket_for(fake_api, steps=("pending", "success")):
    mid = fake_api.add_migration()
    fake_api.script("preflight", steps=list(steps))
    return mid


def test_hot_reads_go_through_the_pool_and_everything_else_through_requests(fake_api, client_for):
    mid = ticket_for(fake_api)
    client = client_for()
    ticket = client.call("migration.preflight", migration_id=mid).data["response-ticket-id"]
    pending = client.call("ticket.summary", params={"response-ticket-id": ticket})
    done = client.call("ticket.summary", params={"response-ticket-id": ticket})
    state = client.call("migration.get", migration_id=mid)
    full = client.call("ticket.full", params={"response-ticket-id": ticket})
    assert [(c["operation"], c["transport"]) for c in fake_api.log] == [
        ("migration.preflight", "urllib3"), ("ticket.summary", "urllib3"), ("ticket.summary", "urllib3"),
        ("migration.get", "urllib3"), ("ticket.full", "requests")]
    assert pending.status == 202 and pending.pending and done.data["status"] == "success"
    assert state.data["state"] == "preflight-succeeded" and full.status == 200
    assert client.load()["calls"] == 5            # the gate counts both transports


def test_hot_reads_send_the_same_request_through_either_transport(fake_api, client_for):
    fake_api.jobs[701] = {"id": "701", "steps": ["running"], "data": {}}
    mid = ticket_for(fake_api, steps=["running"])
    for client in (client_for(), on_requests_only(client_for())):
        ticket = client.call("migration.preflight", migration_id=mid).data["response-ticket-id"]
        client.call("ticket.summary", params={"response-ticket-id": ticket})
        client.call("job.status", params={"detail": "x"}, job_id=701)
        fake_api.log = [c for c in fake_api.log if c["operation"] != "migration.preflight"]
    lean, plain = fake_api.log[:2], fake_api.log[2:]
    assert [c["transport"] for c in lean + plain] == ["urllib3"] * 2 + ["requests"] * 2
    for mine, theirs in zip(lean, plain):
        assert (mine["method"], mine["path"], mine["query"], mine["params"]) == \
            (theirs["method"], theirs["path"], theirs["query"], theirs["params"])
        assert mine["sent"].keys() == theirs["sent"].keys() and mine["query"] == theirs["query"]
        for header in ("Auth", "User-Agent", "Accept", "Accept-Encoding", "Connection", "Content-Type"):
            assert mine["headers"].get(header) == theirs["headers"].get(header), header


def failure(client, operation, **args):
    with pytest.raises(WPCloudAPIError) as info:
        client.call(operation, **args)
    error = info.value
    return (error.message, error.to_dict(), error.in_flight, list(client.calls), len(client.slept))


@pytest.mark.parametrize("fault", [dict(error="refused", count=99), dict(error="connect-timeout", count=99),
                                   dict(error="read-timeout", count=99), dict(error="reset", count=99),
                                   dict(error="tls"), dict(error="tls-record", count=99),
                                   dict(status=503, count=99), dict(status=502, count=99),
                                   dict(status=429, retry_after=0, count=99), dict(status=404),
                                   dict(status=403), dict(status=400, body="<html>proxy says no</html>")])
def test_a_hot_read_fails_through_the_pool_as_through_requests(fake_api, client_for, fault):
    outcomes = []
    for client in (client_for(retries=2), on_requests_only(client_for(retries=2))):
        fake_api.fault("ticket.summary", **fault)
        outcomes.append(failure(client, "ticket.summary", params={"response-ticket-id": "t.1"}))
        fake_api.faults = []
    assert [c["transport"] for c in fake_api.log][0] == "urllib3" and fake_api.log[-1]["transport"] == "requests"
    assert outcomes[0] == outcomes[1]


def test_a_hot_read_whose_connection_failed_is_retried_through_the_pool(fake_api, client_for):
    mid = ticket_for(fake_api, steps=["running"])
    fake_api.fault("migration.get", error="reset")
    assert client_for().call("migration.get", migration_id=mid).data["state"] == "new"
    assert [(c["transport"], c["status"]) for c in fake_api.log] == [("urllib3", "reset"), ("urllib3", 200)]


def test_the_pool_verifies_as_requests_would(fake_api, client_for, tmp_path, monkeypatch):
    ca, bundle = tmp_path / "ca.pem", tmp_path / "bundle.pem"
    ca.write_text("x")
    bundle.write_text("x")
    mid = ticket_for(fake_api)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    for options in (dict(ca_path=str(ca)), dict(ca_path=str(ca), validate_certs=False), dict()):
        client_for(**options).call("migration.get", migration_id=mid)
        on_requests_only(client_for(**options)).call("migration.get", migration_id=mid)
    # ca_path over the environment's bundle; no verification; without ca_path the environment's bundle (what
    # requests makes of verify=True: its adapter sees the bundle).
    assert fake_api.verified == [str(ca), str(ca), False, False, str(bundle), str(bundle)]
    assert [c["transport"] for c in fake_api.log] == ["urllib3", "requests"] * 3


@pytest.mark.parametrize("environment", [{"HTTPS_PROXY": "http://proxy.example:3128"},
                                         {"REQUESTS_CA_BUNDLE": "/nonexistent/bundle.pem"}])
def test_hot_reads_go_through_requests_where_a_proxy_or_a_missing_ca_bundle_applies(fake_api, client_for,
                                                                                    monkeypatch, environment):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    mid = ticket_for(fake_api)
    client_for().call("migration.get", migration_id=mid)
    assert [c["transport"] for c in fake_api.log] == ["requests"]


# -- the starts (HOT_STARTS) through a urllib3 pool that is replaced when old, as the write session is -------

def test_starts_go_through_a_pool_replaced_when_older_than_the_writes_limit(fake_api, client_for, monkeypatch):
    mid = ticket_for(fake_api, steps=["running"])
    fake_api.add_site("1001")
    client = client_for()
    made, now, real = [], [1000.0], client._pool
    monkeypatch.setattr(client, "_pool", lambda **tls: made.append(tls) or real(**tls))
    client.clock = lambda: now[0]
    client.call("migration.get", migration_id=mid)                       # the hot reads' pool
    client.call("migration.preflight", migration_id=mid)                 # the starts' pool
    now[0] += WRITE_SESSION_MAX_AGE
    client.call("migration.preflight", migration_id=mid)
    assert len(made) == 2 and made[0] == made[1]                         # still young; the same TLS settings
    first, cleared = client._hot_starts[0], []
    first.clear = lambda: cleared.append(1)
    now[0] += 0.001
    client.call("migration.ready", migration_id=mid)
    assert len(made) == 3 and client._hot_starts[0] is not first and cleared == [1]   # older: replaced, closed
    client.call("site.allow_migration", site="1001")                     # other writes: requests
    assert [c["transport"] for c in fake_api.log] == ["urllib3"] * 4 + ["requests"]
    client.close()
    assert client._hot_starts is None


@pytest.mark.parametrize("fault", [dict(error="refused", count=99), dict(error="connect-timeout", count=99),
                                   dict(error="read-timeout"), dict(error="reset", after=True),
                                   dict(error="tls-record"), dict(status=503), dict(status=429, retry_after=0, count=99),
                                   dict(status=409)])
def test_a_start_fails_through_the_pool_as_through_requests(fake_api, client_for, fault):
    """Sent or not, effect unknown or none, repeated or not: the same outcome and message on either transport."""
    outcomes = []
    for client in (client_for(retries=2), on_requests_only(client_for(retries=2))):
        mid = ticket_for(fake_api, steps=["running"])
        fake_api.fault("migration.preflight", **fault)
        error = failure(client, "migration.preflight", migration_id=mid)
        outcomes.append((error[0].replace(str(mid), "M"), error[1]["effect"], error[2], error[3], error[4]))
        fake_api.faults = []
    transports = [c["transport"] for c in fake_api.log if c["operation"] == "migration.preflight"]
    assert transports[0] == "urllib3" and transports[-1] == "requests"
    assert outcomes[0] == outcomes[1]


def test_closing_the_client_closes_the_pool(fake_api, client_for):
    mid = ticket_for(fake_api)
    client = client_for()
    client.call("migration.get", migration_id=mid)
    pool = client._hot[0]
    cleared = []
    pool.clear = lambda: cleared.append(1)
    client.close()
    assert cleared == [1] and client._hot is None
    client.call("migration.get", migration_id=mid)          # a closed client makes a new pool when used again
    assert client._hot[0] is not pool
