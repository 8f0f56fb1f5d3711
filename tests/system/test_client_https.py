"""The API client against the emulator over real HTTPS: the envelope, statuses, retry rules, TLS and
secrets on a real TLS connection with a locally made CA, and real network failures (a refused
connection, resets, timeouts).

The same rules without a server, on a faked HTTP layer: tests/unit/plugins/module_utils/api/test_client.py.
"""

import atexit
import shutil
import socket
import sys
import tempfile
import time

import pytest

from launcher import start_emulator
from webhook_harness import wait_for
from playbooks import collection_tree

# The collection of this checkout, importable as ansible_collections.wpcloud.hosting.
_COLLECTIONS = tempfile.mkdtemp(prefix="wpcloud-client-https-")
atexit.register(shutil.rmtree, _COLLECTIONS, True)
sys.path.insert(0, str(collection_tree(_COLLECTIONS)))

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient  # noqa: E402
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.errors import WPCloudAPIError  # noqa: E402
from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import Secrets  # noqa: E402

SECRET_PASS = "canary-remote-pass-7f3a9"


def client_for(emu, **kwargs):
    options = dict(api_url=emu.url, api_key=emu.api_key, ca_path=emu.ca_path, retries=3, retry_timeout=20,
                   sleep=lambda s: None)
    options.update(kwargs)
    return WPCloudClient(**options)


def writes(emu, since):
    return [r["endpoint"] for r in emu.requests_log(since) if r["write"]]


@pytest.fixture()
def closed_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_envelope_unwrapped_and_auth_header_sent(emu):
    resp = client_for(emu).call("site.get", site="1001")
    assert resp.status == 200 and resp.message == "OK"
    assert resp.data["atomic_site_id"] == 1001


def test_wrong_key_is_403_with_advice_and_no_key_in_text(emu):
    client = client_for(emu, api_key="wrong-key-canary-123")
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.get", site="1001")
    assert info.value.status == 403
    assert "api_key" in info.value.message
    assert "wrong-key-canary-123" not in str(info.value) + repr(info.value.to_dict())


def test_404_raises_or_is_returned_when_accepted(emu):
    client = client_for(emu)
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.get", site="999999")
    assert info.value.status == 404 and info.value.effect == "none"
    assert client.call("site.get", accept_status=(404,), site="999999").status == 404


def test_ticket_202_then_final_and_400_404(emu, new_site):
    client = client_for(emu)
    site = new_site()
    created = client.call("migration.create", params={"remote-host": "src.example", "remote-user": "www"}, site=site)
    ticket = client.call("migration.preflight", migration_id=created.data["migration-id"]).data["response-ticket-id"]
    # One more 202 for the ticket's first summary, should the 0.3 s accept window have passed already (the
    # call came too late on a loaded machine once): the answer then does not depend on the machine's load.
    emu.set_faults([{"endpoint": "ticket.summary", "extra_202": 1}])
    first = client.call("ticket.summary", params={"response-ticket-id": ticket})
    assert first.status == 202 and first.pending and first.data is None
    with pytest.raises(WPCloudAPIError) as omitted:
        client.call("ticket.summary", params={})
    assert omitted.value.status == 400
    with pytest.raises(WPCloudAPIError) as unknown:
        client.call("ticket.summary", params={"response-ticket-id": "nope.1"})
    assert unknown.value.status == 404


def test_read_retried_on_503_and_429(emu):
    client = client_for(emu)
    since = emu.last_seq()
    emu.set_faults([{"endpoint": "site.get", "status": 503, "count": 2},
                    {"endpoint": "site_meta.get", "status": 429, "retry_after": 0, "count": 1}])
    assert client.call("site.get", site="1001").status == 200
    assert client.call("site_meta.get", site="1001", key="allow_site_migration").status == 200
    statuses = [(r["endpoint"], r["status"]) for r in emu.requests_log(since)]
    assert statuses == [("site.get", 503), ("site.get", 503), ("site.get", 200),
                        ("site_meta.get", 429), ("site_meta.get", 200)]


def test_retry_after_is_honoured(emu):
    slept = []
    client = client_for(emu, sleep=slept.append)
    emu.set_faults([{"endpoint": "site.get", "status": 429, "retry_after": 2, "count": 1}])
    client.call("site.get", site="1001")
    assert slept == [2.0]


def test_write_retried_on_429_only_once_effect_is_none(emu, new_site):
    client = client_for(emu)
    site = new_site(allow_migration=False)
    since = emu.last_seq()
    emu.set_faults([{"endpoint": "site.allow_migration", "status": 429, "retry_after": 0, "count": 1}])
    client.call("site.allow_migration", site=site)
    assert writes(emu, since) == ["site.allow_migration", "site.allow_migration"]
    assert [r["status"] for r in emu.requests_log(since)] == [429, 200]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_write_not_repeated_on_5xx(emu, new_site, status):
    client = client_for(emu)
    site = new_site(allow_migration=False)
    since = emu.last_seq()
    emu.set_faults([{"endpoint": "site.allow_migration", "status": status, "count": 1}])
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.allow_migration", site=site)
    assert info.value.effect == "unknown" and not info.value.retry_safe
    assert "not repeated" in info.value.message
    assert writes(emu, since) == ["site.allow_migration"]


def test_write_reset_after_processing_is_not_repeated(emu, new_site):
    client = client_for(emu)
    site = new_site()
    since = emu.last_seq()
    # A reset after the service processed the create: the effect is unknown, so it is not repeated.
    emu.set_faults([{"endpoint": "migration.create", "reset": "after", "count": 1}])
    with pytest.raises(WPCloudAPIError) as info:
        client.call("migration.create", params={"remote-host": "h.example", "remote-user": "u",
                                                "remote-pass": SECRET_PASS}, site=site)
    assert info.value.effect == "unknown"
    assert writes(emu, since) == ["migration.create"]
    assert SECRET_PASS not in str(info.value)
    # The site now holds the migration the lost answer created: a re-run finds it.
    meta = client.call("site_meta.get", site=site, key="allow_site_migration")
    assert str(meta.data).isdigit()


def test_writes_share_young_connections_and_survive_the_servers_idle_close(tmp_path):
    """Writes reuse a kept-alive connection while their session is younger than WRITE_SESSION_MAX_AGE. A
    server that closes idle connections sooner (here after 0.3 s) must not turn a write into one of unknown
    effect: the closed connection is noticed before the write is sent on it."""
    emu = start_emulator(tmp_path / "emulator", extra_args=["--idle-timeout", "0.3"])
    try:
        client = client_for(emu)
        for key in ("k1", "k2"):
            client.call("client_meta.add", params={"value": "v0"}, client=emu.client, key=key)
        since = emu.last_seq()
        for value in range(6):
            time.sleep(0.5 if value % 2 else 0.05)   # every other write after the server closed the connection
            client.call("client_meta.update", params={"value": "v%d" % value}, client=emu.client, key="k1")
        assert [status for op, status in client.calls if op == "client_meta.update"] == [200] * 6
        assert writes(emu, since) == ["client_meta.update"] * 6      # each applied once
        connections = set(r.get("connection") for r in emu.requests_log(since))
        assert len(connections) >= 3, connections  # the idle closes made new connections
    finally:
        emu.stop()


def test_read_reset_is_retried(emu):
    client = client_for(emu)
    since = emu.last_seq()
    emu.set_faults([{"endpoint": "site.get", "reset": "before", "count": 1}])
    assert client.call("site.get", site="1001").status == 200
    assert [r["endpoint"] for r in emu.requests_log(since)] == ["site.get", "site.get"]


def logged_slow(emu, since, endpoint):
    """Wait until the emulator has finished (and so logged) the request it held past the client's timeout."""
    wait_for(lambda: any(r["fault"] and r["endpoint"] == endpoint for r in emu.requests_log(since)), 60, 0.1,
             "the held %s in the request log" % endpoint)


# Timeouts: the client gives up after SLOW_TIMEOUT s, the emulator holds a faulted request SLOW_LATENCY s;
# both far enough from how long an answer takes on a loaded machine that only the faulted requests time out.
SLOW_TIMEOUT, SLOW_LATENCY = 3, 6


def test_read_timeout_retried_write_timeout_not(emu, new_site):
    client = client_for(emu, timeout=SLOW_TIMEOUT)
    emu.set_faults([{"endpoint": "site.get", "latency": SLOW_LATENCY, "count": 1}])
    assert client.call("site.get", site="1001").status == 200
    site = new_site(allow_migration=False)
    since = emu.last_seq()
    emu.set_faults([{"endpoint": "site.allow_migration", "latency": SLOW_LATENCY, "count": 1}])
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.allow_migration", site=site)
    assert info.value.effect == "unknown"
    logged_slow(emu, since, "site.allow_migration")
    assert writes(emu, since) == ["site.allow_migration"]


def test_connection_refused_is_retried_even_for_writes_and_reported_as_not_sent(closed_port):
    calls = []
    client = WPCloudClient(api_url="https://127.0.0.1:%d" % closed_port, api_key="k", retries=2, retry_timeout=10,
                           sleep=calls.append)
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.allow_migration", site="1")
    assert info.value.effect == "none" and info.value.retry_safe
    assert info.value.attempts == 3 and len(calls) == 2
    assert info.value.message.startswith("Could not reach https://127.0.0.1:%d/api/v1.0/site-allow-ssh-migration/1: "
                                         "connection refused; check api_url" % closed_port)


def test_retries_bounded_by_deadline(emu):
    client = client_for(emu, retries=10, retry_timeout=1, sleep=lambda s: None)
    emu.set_faults([{"endpoint": "site.get", "status": 503, "retry_after": 5}])
    with pytest.raises(WPCloudAPIError) as info:
        client.call("site.get", site="1001")
    assert info.value.status == 503 and info.value.attempts <= 11


def test_tls_verified_against_the_ca_and_refused_without_it(emu, monkeypatch):
    # Environment CA bundles must not override ca_path.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent.pem")
    assert client_for(emu).call("site.get", site="1001").status == 200
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    with pytest.raises(WPCloudAPIError) as info:
        client_for(emu, ca_path=None).call("site.get", site="1001")
    assert "TLS" in info.value.message and "ca_path" in info.value.message


def test_api_key_and_the_tasks_secrets_never_in_error_text(emu, new_site):
    client = client_for(emu, secrets=Secrets([SECRET_PASS]))
    emu.set_faults([{"endpoint": "migration.create", "status": 400}])
    with pytest.raises(WPCloudAPIError) as info:
        client.call("migration.create", params={"remote-host": "h", "remote-user": "u", "remote-pass": SECRET_PASS},
                    site=new_site())
    text = str(info.value) + repr(info.value.to_dict())
    assert emu.api_key not in text and SECRET_PASS not in text


# -- the hot reads' transport (a urllib3 pool) on real HTTPS: the same outcomes as through requests ------------

def on_requests_only(client):
    """The client with its hot reads sent through requests too (as when a proxy applies)."""
    client._hot = (None,)
    return client


def a_ticket(emu, client, new_site):
    created = client.call("migration.create", params={"remote-host": "src.example", "remote-user": "www"},
                          site=new_site())
    mid = created.data["migration-id"]
    return mid, client.call("migration.preflight", migration_id=mid).data["response-ticket-id"]


def outcome(client, operation, **args):
    with pytest.raises(WPCloudAPIError) as info:
        client.call(operation, **args)
    return info.value.message, info.value.to_dict(), [status for op, status in client.calls if op == operation]


def test_hot_reads_keep_their_connection_alive_and_survive_the_servers_idle_close(tmp_path):
    emu = start_emulator(tmp_path / "emulator", extra_args=["--idle-timeout", "0.3"])
    try:
        emu.add_site(300001, "hot.example", allow_migration=True)
        client = client_for(emu)
        mid, ticket = a_ticket(emu, client, lambda: "300001")
        since = emu.last_seq()
        for poll in range(6):
            time.sleep(0.5 if poll % 2 else 0.05)   # every other poll after the server closed the connection
            client.call("ticket.summary", params={"response-ticket-id": ticket})
            client.call("migration.get", migration_id=mid)
        log = emu.requests_log(since)
        assert [r["endpoint"] for r in log] == ["ticket.summary", "migration.get"] * 6     # none repeated
        assert not [status for op, status in client.calls if not isinstance(status, int)], client.calls
        assert client._hot[0] is not None and len(client._hot[0].pools) == 1
        connections = [r.get("connection") for r in log]
        assert connections[0] == connections[1] and 3 <= len(set(connections)) <= 7, connections
    finally:
        emu.stop()


def test_starts_go_through_their_pool_and_survive_the_servers_idle_close(tmp_path):
    """The starts (HOT_STARTS) through their urllib3 pool: kept alive while it is young, each sent once
    when the server closed the connection in between (noticed before the start is sent on it)."""
    emu = start_emulator(tmp_path / "emulator", extra_args=["--idle-timeout", "0.3"])
    try:
        client = client_for(emu)
        ids = []
        for number in range(6):
            emu.add_site(300101 + number, "start%d.example" % number, allow_migration=True)
            ids.append(client.call("migration.create", params={"remote-host": "src.example", "remote-user": "www"},
                                   site=str(300101 + number)).data["migration-id"])
        since = emu.last_seq()
        for number, mid in enumerate(ids):
            time.sleep(0.5 if number % 2 else 0.05)   # every other start after the server closed the connection
            assert client.call("migration.preflight", migration_id=mid).data["response-ticket-id"]
        assert [status for op, status in client.calls if op == "migration.preflight"] == [200] * 6
        assert writes(emu, since) == ["migration.preflight"] * 6         # each applied once
        assert client._hot_starts is not None
        connections = [r.get("connection") for r in emu.requests_log(since)]
        assert 3 <= len(set(connections)) <= 6, connections
    finally:
        emu.stop()


def test_a_hot_read_reset_or_timed_out_is_retried_through_the_pool(emu, new_site):
    client = client_for(emu, timeout=SLOW_TIMEOUT)
    mid, ticket = a_ticket(emu, client, new_site)
    since = emu.last_seq()
    emu.set_faults([{"endpoint": "ticket.summary", "reset": "before", "count": 1},
                    {"endpoint": "migration.get", "latency": SLOW_LATENCY, "count": 1}])
    assert client.call("ticket.summary", params={"response-ticket-id": ticket}).status in (200, 202)
    assert client.call("migration.get", migration_id=mid).status == 200
    summaries = [status for op, status in client.calls if op == "ticket.summary"]
    assert summaries[0] == "no-answer" and summaries[1] in (200, 202) and len(summaries) == 2
    assert [status for op, status in client.calls if op == "migration.get"] == ["no-answer", 200]
    assert client._hot[0] is not None
    logged_slow(emu, since, "migration.get")
    assert [r["endpoint"] for r in emu.requests_log(since)].count("migration.get") == 2


def test_hot_read_failures_through_the_pool_are_those_through_requests(emu, new_site, closed_port, monkeypatch):
    mid, ticket = a_ticket(emu, client_for(emu), new_site)
    args = {"params": {"response-ticket-id": ticket}}
    for make in (lambda **kw: client_for(emu, **kw), lambda **kw: on_requests_only(client_for(emu, **kw))):
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent.pem")
        assert make().call("ticket.summary", **args).status in (200, 202)          # ca_path over the environment
        monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    outcomes = []
    for make in (lambda **kw: client_for(emu, **kw), lambda **kw: on_requests_only(client_for(emu, **kw))):
        tls = outcome(make(ca_path=None), "ticket.summary", **args)
        refused = outcome(make(api_url="https://127.0.0.1:%d" % closed_port, retries=1), "migration.get",
                          migration_id=mid)
        emu.set_faults([{"endpoint": "ticket.summary", "reset": "before", "count": 99}])
        reset = outcome(make(retries=1), "ticket.summary", **args)
        emu.set_faults([{"endpoint": "migration.get", "latency": 1.5, "count": 99}])
        slow = outcome(make(retries=0, timeout=0.5), "migration.get", migration_id=mid)
        emu.set_faults([{"endpoint": "ticket.summary", "status": 503, "count": 99}])
        unavailable = outcome(make(retries=1), "ticket.summary", **args)
        emu.set_faults([])
        outcomes.append((tls, refused, reset, slow, unavailable))
    assert outcomes[0] == outcomes[1]
    tls, refused, reset, slow, unavailable = outcomes[0]
    assert "TLS certificate verification failed" in tls[0] and tls[1]["effect"] == "none"
    assert "connection refused" in refused[0] and refused[1]["effect"] == "none" and refused[2] == ["not-sent"] * 2
    assert reset[1]["effect"] == "unknown" and reset[1]["retry_safe"] and reset[2] == ["no-answer"] * 2
    assert slow[1]["effect"] == "unknown" and slow[2] == ["no-answer"]
    assert unavailable[1]["status"] == 503 and unavailable[2] == [503, 503]
