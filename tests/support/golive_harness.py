"""What the go-live tests of the emulator share (tests/support/tests/test_emulator_domains.py,
test_emulator_backups.py): one emulator per test module, started with short windows (so that reset keeps
them), a TLS webhook receiver it delivers to, and small API helpers.

A test module imports the fixtures: ``from golive_harness import gl, live  # noqa: F401``; ``live`` is
the module's harness, ``gl`` the same after a reset with webhooks pointed at its receiver.

Windows (seconds): domain and restore jobs queued 0.1 + running 0.3; SSL first attempt 0.1, retries 0.4 x 2^n;
backups acknowledged 0.05, created 0.25, deleted 0.2, list lag 0.3; tickets 202 for 0.2.
"""

import http.server
import json
import os
import ssl
import threading
import time

import pytest
import requests

from launcher import start_emulator
from webhook_harness import tls, wait_for

HMAC_KEY = "golive-hmac-key-5e1d9c7b3a"
SHORT = {
    "provisioning": {"default": {"create": {"queued": 0.05, "duration": 0.2},
                                 "delete": {"queued": 0.05, "duration": 0.2},
                                 "domain": {"queued": 0.1, "duration": 0.3},
                                 "restore": {"queued": 0.1, "duration": 0.3}},
                     "domains": {"domainfail.example": {"domain": {"outcome": "failure"}}}},
    "ssl": {"attempt": 0.1, "retry_base": 0.4, "retry_cap": 5.0},
    "backups": {"create": {"acknowledged": 0.05, "duration": 0.25}, "delete": {"acknowledged": 0.05, "duration": 0.2},
                "list_lag": 0.3, "domains": {"backupfail.example": {"create": {"outcome": "failure"}}}},
}


class _Receiver(http.server.BaseHTTPRequestHandler):
    received = None

    def do_POST(self):
        self.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class Live:
    """One emulator with short windows and a receiver; ``events`` are the bodies received, in order."""

    def __init__(self, workdir):
        seed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "emulator", "seed.json")
        with open(seed, encoding="utf-8") as handle:
            config = json.load(handle)
        config.update({k: v for k, v in SHORT.items() if k != "provisioning"})
        config["provisioning"]["default"].update(SHORT["provisioning"]["default"])
        config["provisioning"]["domains"].update(SHORT["provisioning"]["domains"])
        os.makedirs(workdir, exist_ok=True)
        config_path = os.path.join(workdir, "config.json")
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        files = tls(os.path.join(workdir, "tls"))
        self.events = []
        handler = type("Receiver", (_Receiver,), {"received": self.events})
        self.receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(files["cert"], files["key"])
        self.receiver.socket = context.wrap_socket(self.receiver.socket, server_side=True)
        threading.Thread(target=self.receiver.serve_forever, daemon=True).start()
        self.emu = start_emulator(os.path.join(workdir, "emu"), config=config_path,
                                  extra_args=["--accept-delay", "0.2", "--webhook-ca", files["ca"]])
        self.client = self.emu.client

    def fresh(self, webhooks=True):
        """Reset the emulator (its windows stay short), forget received events, point webhooks here."""
        self.emu.reset()
        del self.events[:]
        if webhooks:
            url = "https://127.0.0.1:%d/hook" % self.receiver.server_address[1]
            for key, value in (("webhook_url", url), ("webhook_hmac_key", HMAC_KEY)):
                assert self.call("POST", "client-meta/demo/%s/add" % key, {"value": value}).status_code == 200
        return self

    def stop(self):
        self.emu.stop()
        self.receiver.shutdown()

    # -- API
    def call(self, method, path, data=None):
        url = self.emu.url + "/api/v1.0/" + path
        if method == "GET":
            return requests.get(url, params=data, headers={"Auth": self.emu.api_key}, verify=self.emu.ca_path,
                                timeout=15)
        return requests.request(method, url, data=data, headers={"Auth": self.emu.api_key},
                                verify=self.emu.ca_path, timeout=15)

    def ok(self, method, path, data=None):
        """The data of a 200 answer (fails the test otherwise)."""
        response = self.call(method, path, data)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()["data"]

    def refused(self, status, method, path, data=None):
        """The message of an answer with ``status`` (fails the test otherwise)."""
        response = self.call(method, path, data)
        assert response.status_code == status, (path, response.status_code, response.text)
        return response.json()["message"]

    def hook(self, method, name, body=None):
        response = requests.request(method, self.emu.url + "/_emulator/" + name, json=body, verify=self.emu.ca_path,
                                    timeout=15)
        return response.status_code, response.json()

    def wait_job(self, job_id, timeout=15):
        """Poll job-status until final; the statuses seen, in order, without repeats."""
        seen, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.ok("GET", "job-status/%s" % job_id)["_status"]
            if not seen or seen[-1] != status:
                seen.append(status)
            if status in ("success", "failure"):
                return seen
            time.sleep(0.02)
        raise AssertionError("job %s not done: %s" % (job_id, seen))

    def wait_events(self, predicate, timeout=15, what="events"):
        """Wait until ``predicate(events)`` holds; returns the events then."""
        wait_for(lambda: predicate(list(self.events)), timeout, what=what)
        return list(self.events)

    def of(self, event):
        return [body for body in list(self.events) if body["event"] == event]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """One emulator (short windows) and receiver per test module."""
    harness = Live(str(tmp_path_factory.mktemp("golive")))
    yield harness
    harness.stop()


@pytest.fixture
def gl(live):  # pylint: disable=redefined-outer-name
    """The module's harness, reset, its webhooks signed and sent to the receiver."""
    return live.fresh()
