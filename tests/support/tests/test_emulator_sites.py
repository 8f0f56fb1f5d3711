"""The emulator's site side (create-site, jobs, get-site, get-sites, delete-site, site_provisioned)
against its README's "Contract" (tests/support/emulator/README.md): real HTTPS, real processes, no mocks."""

import hashlib
import hmac
import http.server
import json
import os
import re
import ssl
import statistics
import threading
import time

import pytest
import requests

import server
from launcher import start_emulator
from webhook_harness import ref_digest, tls, wait_for

ADMIN_PASS = "Adm1n-pass-canary-7f3e9d"
FIELDS = {"admin_user": "site-admin", "admin_email": "admin@example.org"}


def call(emu, method, path, data=None, session=None):
    url = emu.url + "/api/v1.0/" + path
    http = session or requests
    if method == "GET":
        return http.get(url, params=data, headers={"Auth": emu.api_key}, verify=emu.ca_path, timeout=15)
    return http.request(method, url, data=data, headers={"Auth": emu.api_key}, verify=emu.ca_path, timeout=15)


def hook(emu, method, name, body=None):
    response = requests.request(method, emu.url + "/_emulator/" + name, json=body, verify=emu.ca_path, timeout=15)
    return response.status_code, response.json()


def provisioning(emu, create=0.3, delete=0.2, queued=0.1, domains=None):
    status, body = hook(emu, "POST", "provisioning", {
        "default": {"create": {"outcome": "success", "queued": queued, "duration": create},
                    "delete": {"outcome": "success", "queued": queued, "duration": delete}},
        "domains": domains or {}})
    assert status == 200, body


def create_site(emu, domain, **fields):
    data = dict(FIELDS, domain_name=domain)
    data.update(fields)
    return call(emu, "POST", "create-site/%s" % emu.client, data)


def created(emu, domain, **fields):
    response = create_site(emu, domain, **fields)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def job_status(emu, job_id):
    response = call(emu, "GET", "job-status/%s" % job_id)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def wait_job(emu, job_id, timeout=15):
    """Poll job-status until the job is final; return the statuses seen, in order, without repeats."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = job_status(emu, job_id)["_status"]
        if not seen or seen[-1] != status:
            seen.append(status)
        if status in ("success", "failure"):
            return seen
        time.sleep(0.03)
    raise AssertionError("job %s not done: %s" % (job_id, seen))


def list_sites(emu, *keys, session=None, **query):
    path = "/".join(("get-sites", emu.client) + keys)
    response = call(emu, "GET", path, query or None, session=session)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def all_sites(emu, *keys, limit=100, session=None):
    """Page through get-sites with limit/after until an empty page; returns (items, pages)."""
    items, pages, after = [], 0, None
    while True:
        query = {"limit": limit} if after is None else {"limit": limit, "after": after}
        page = list_sites(emu, *keys, session=session, **query)
        pages += 1
        if not page:
            return items, pages
        items += page
        after = page[-1]["atomic_site_id"]


# --------------------------------------------------------------------------- create-site and its job
def test_create_site_answers_a_job_that_moves_queued_running_success(emu):
    # The states follow the clock, so each is read while its window is open: queued by the first read
    # after the create answered, running by one poll of wait_job in a 5 s window. The queued reads are not
    # repeated by wait_job: at load 17-20 its first poll came after the 2 s queued window had closed (v44).
    provisioning(emu, create=5.0, queued=3.0)
    started = time.monotonic()
    data = created(emu, "Fresh.Example", admin_pass=ADMIN_PASS, **{"meta[allow_site_migration]": "true"})
    assert set(data) == {"job_id", "atomic_site_id", "domain_name"}
    assert isinstance(data["job_id"], int) and isinstance(data["atomic_site_id"], int)
    assert data["domain_name"] == "fresh.example"  # stored lower-case
    job = job_status(emu, data["job_id"])
    assert job["_status"] == "queued" and job["id"] == str(data["job_id"])
    assert job["type"] == "create-site" and job["completed"] is None
    assert job["data"] == {"atomic_site_id": data["atomic_site_id"], "domain_name": "fresh.example"}
    assert call(emu, "GET", "job-completion/%s" % data["job_id"]).json()["data"] == "queued"
    assert wait_job(emu, data["job_id"])[-2:] == ["running", "success"]   # may start with more queued reads
    took = time.monotonic() - started
    assert took >= 8.0, took  # queued 3 s + running 5 s (no upper bound: it follows the machine's load)
    final = job_status(emu, data["job_id"])
    assert final["completed"] and final["completed"] >= final["created"]
    assert call(emu, "GET", "job-completion/%s" % data["job_id"]).json() == {"message": "OK", "data": "success"}
    flag = call(emu, "GET", "site-meta/fresh.example/allow_site_migration/get").json()["data"]
    assert flag == "true"


def test_a_site_still_provisioning_is_readable_but_locked_for_writes(emu):
    provisioning(emu, create=5.0, queued=0.1)   # still provisioning through every read below, under load too
    data = created(emu, "busy.example", **{"meta[allow_site_migration]": "1"})
    site = data["atomic_site_id"]
    record = call(emu, "GET", "get-site/%s" % site)
    assert record.status_code == 200 and record.json()["data"]["domain_name"] == "busy.example"
    assert call(emu, "GET", "site-meta/%s/allow_site_migration/get" % site).json()["data"] == "true"
    assert [s["atomic_site_id"] for s in list_sites(emu)][-1] == str(site)  # listed while provisioning
    for method, path, data_ in (("POST", "migration/create/%s" % site, {"remote-host": "h", "remote-user": "u"}),
                                ("POST", "site-allow-ssh-migration/%s" % site, None),
                                ("POST", "delete-site/%s/%s" % (emu.client, site), None)):
        response = call(emu, method, path, data_)
        assert response.status_code == 423, (path, response.text)
        assert "provisioning" in response.json()["message"] and response.json()["data"] == []
    wait_job(emu, data["job_id"])
    response = call(emu, "POST", "migration/create/%s" % site, {"remote-host": "h", "remote-user": "u"})
    assert response.status_code == 200, response.text


def test_create_fields_reach_the_record(emu):
    provisioning(emu, create=0.0, queued=0.0)
    data = created(emu, "full.example", php_version="8.2", db_charset="latin1", space_quota="50G",
                   geo_affinity="bur", **{"wordpress-version": "previous",
                                          "software[plugins/akismet/latest]": "activate",
                                          "meta[_data]": '{"v1": {"site_type": "internal"}}',
                                          "meta[do_not_delete]": "1"})
    wait_job(emu, data["job_id"])
    record = call(emu, "GET", "get-site/full.example/extra").json()["data"]
    assert record["atomic_site_id"] == data["atomic_site_id"]
    assert (record["php_version"], record["db_charset"], record["db_collate"], record["wp_version"]) == \
        ("8.2", "latin1", "latin1_swedish_ci", "previous")
    assert (record["wp_admin_user"], record["wp_admin_email"]) == ("site-admin", "admin@example.org")
    assert record["extra"]["server_pool"] == {"geo_affinity": "bur", "server_pool_id": record["server_pool_id"]}
    assert record["extra"]["software"] == {"plugins/akismet/latest": "activate"}
    assert record["extra"]["meta"]["_data"] == '{"v1": {"site_type": "internal"}}'
    assert "allow_site_migration" not in record["extra"]["meta"]  # not a documented get-site field
    assert "extra" not in call(emu, "GET", "get-site/full.example").json()["data"]
    assert call(emu, "GET", "site-meta/full.example/space_quota/get").json()["data"] == "50G"
    assert call(emu, "GET", "site-meta/full.example/allow_site_migration/get").json()["data"] is None
    # defaults (docs: PHP 8.4, latest, utf8mb4 with its collation) and generated credentials
    plain = created(emu, "plain.example")
    record = call(emu, "GET", "get-site/%s" % plain["atomic_site_id"]).json()["data"]
    assert (record["php_version"], record["wp_version"], record["db_charset"], record["db_collate"]) == \
        ("8.4", "latest", "utf8mb4", "utf8mb4_general_ci")
    assert all(isinstance(record[k], str) and len(record[k]) >= 16 for k in ("db_pass", "smtp_pass", "site_api_key"))
    assert ADMIN_PASS not in json.dumps(record)


@pytest.mark.parametrize("fields, status, text", [
    ({"domain_name": None}, 400, "Missing required parameter: domain_name"),
    ({"admin_user": None}, 400, "Missing required parameter: admin_user"),
    ({"admin_email": None}, 400, "Missing required parameter: admin_email"),
    ({"domain_name": "not a domain"}, 400, "Invalid domain_name"),
    ({"domain_name": "localhost"}, 400, "Invalid domain_name"),
    ({"admin_user": "two words"}, 400, "Invalid admin_user"),
    ({"admin_email": "nobody"}, 400, "Invalid admin_email"),
    ({"admin_pass": ""}, 400, "admin_pass must not be empty"),
    ({"php_version": "7.4"}, 400, "Invalid php_version 7.4"),
    ({"db_charset": "utf16"}, 400, "Invalid db_charset"),
    ({"db_charset": "utf8mb4", "db_collate": "latin1_swedish_ci"}, 400, "does not match db_charset"),
    ({"wordpress-version": "6.8"}, 400, "Invalid wordpress-version"),
    ({"space_quota": "lots"}, 400, "Invalid space_quota"),
    ({"geo_affinity": "mars"}, 400, "Invalid geo_affinity"),
    ({"software[plugins/akismet/latest]": "explode"}, 400, "Invalid action for software[plugins/akismet/latest]"),
    ({"software": "akismet"}, 400, "software must be sent as software[key]=value pairs"),
    ({"meta[allow_site_migration]": "maybe"}, 400, "Invalid value for meta[allow_site_migration]"),
    ({"clone_from": "1001"}, 400, "clone_from is not supported"),
    ({"domain_name": "dest1.example"}, 400,
     "Domain name already used [dest1.example]. TXT record verification is required to bypass this check."),
    ({"domain_name": "OTHER-client.example"}, 400,
     "Domain name already used [other-client.example]. TXT record verification is required to bypass this check."),
    ({"domain_name": "hosted-elsewhere.example"}, 400,
     "Domain name already used [hosted-elsewhere.example]. TXT record verification is required to bypass this check."),
])
def test_create_site_refusals_write_nothing(emu, fields, status, text):
    data = dict(FIELDS, domain_name="refused.example")
    data.update(fields)
    response = call(emu, "POST", "create-site/%s" % emu.client, {k: v for k, v in data.items() if v is not None})
    assert response.status_code == status, response.text
    assert response.json() == {"message": response.json()["message"], "data": []}
    assert text in response.json()["message"]
    assert [s["domain_name"] for s in list_sites(emu)] == ["dest1.example", "dest2.example", "dest3.example"]
    assert call(emu, "GET", "job-status").json()["data"] == []


def test_create_site_for_another_client_is_forbidden(emu):
    response = call(emu, "POST", "create-site/acme", dict(FIELDS, domain_name="mine.example"))
    assert response.status_code == 403 and response.json()["data"] == []
    assert call(emu, "GET", "get-sites/acme").status_code == 403
    assert call(emu, "GET", "get-php-versions/acme").status_code == 403


def test_scripted_provisioning_failure_leaves_no_site(emu):
    provisioning(emu, create=0.2, queued=0.0, domains={"doomed.example": {"create": {"outcome": "failure"}}})
    data = created(emu, "doomed.example")
    assert wait_job(emu, data["job_id"])[-1] == "failure"
    assert call(emu, "GET", "get-site/%s" % data["atomic_site_id"]).status_code == 404
    assert call(emu, "GET", "job-completion/%s" % data["job_id"]).json()["data"] == "failure"
    again = created(emu, "doomed.example")  # the domain is free again (and fails again: same script)
    assert again["atomic_site_id"] != data["atomic_site_id"]
    # the seed's demo domain fails the same way without any hook call
    provisioning(emu, create=0.1, queued=0.0, domains={"provfail.example": {"create": {"outcome": "failure"}}})
    assert wait_job(emu, created(emu, "provfail.example")["job_id"])[-1] == "failure"


def test_provisioning_hook_validates_and_reset_restores_it(emu):
    for bad in ({"default": {"create": {"outcome": "explode"}}}, {"default": {"create": {"duration": -1}}},
                {"default": {"rebuild": {}}}, {"domains": {"x.example": {"create": {"speed": 1}}}}, {"other": 1}):
        status, body = hook(emu, "POST", "provisioning", bad)
        assert status == 400, bad
    status, body = hook(emu, "POST", "provisioning", {"default": {"create": {"duration": 0.05}}})
    assert body["provisioning"]["default"]["create"] == {"outcome": "success", "queued": 0.2, "duration": 0.05}
    emu.reset()
    assert hook(emu, "GET", "provisioning")[1]["provisioning"]["default"]["create"]["duration"] == 1.0


# --------------------------------------------------------------------------- jobs: single, batch, completion
def test_job_status_batch_and_completion_forms(emu):
    provisioning(emu, create=5.0, queued=0.0)   # both still running through the reads below, under load too
    first, second = created(emu, "one.example")["job_id"], created(emu, "two.example")["job_id"]
    body = call(emu, "POST", "job-status", [("jobs[]", first), ("jobs[]", second), ("jobs[]", 999999)]).json()
    assert set(body["data"]) == {str(first), str(second)}  # unknown IDs are left out
    assert body["data"][str(first)]["_status"] in ("queued", "running")
    assert body["data"][str(second)]["id"] == str(second)
    indexed = call(emu, "POST", "job-status", {"jobs[0]": first, "jobs[1]": second}).json()["data"]
    assert set(indexed) == {str(first), str(second)}  # PHP indexed notation (the PHP SDK) works too
    scoped = call(emu, "POST", "job-status/%s" % first, {"jobs[]": second}).json()["data"]
    assert set(scoped) == {str(first), str(second)}
    completion = call(emu, "POST", "job-completion", [("jobs[]", first), ("jobs[]", second)]).json()["data"]
    assert set(completion.values()) <= {"queued", "running"} and set(completion) == {str(first), str(second)}
    recent = call(emu, "GET", "job-status").json()["data"]
    assert set(recent) == {str(first), str(second)}
    assert call(emu, "POST", "job-status", {"jobs[]": 999999}).json()["data"] == []  # PHP's empty array
    for data in ({}, {"jobs": "7001"}, {"jobs[]": "x"}):
        response = call(emu, "POST", "job-status", data)
        assert response.status_code == 400, data
    assert call(emu, "GET", "job-status/999999").status_code == 404
    assert call(emu, "GET", "job-status/abc").status_code == 404
    assert call(emu, "GET", "job-completion/999999").status_code == 404
    assert call(emu, "GET", "job-completion").status_code == 404
    wait_job(emu, second)
    done = call(emu, "POST", "job-completion/%s" % first, {"jobs[]": second}).json()["data"]
    assert done == {str(first): "success", str(second): "success"}


# --------------------------------------------------------------------------- get-site
def test_get_site_record_by_id_and_domain(emu):
    by_id = call(emu, "GET", "get-site/1002").json()["data"]
    by_domain = call(emu, "GET", "get-site/DEST2.example").json()["data"]
    assert by_id == by_domain and by_id["atomic_site_id"] == 1002 and by_id["atomic_client_id"] == 101
    for name in ("db_pass", "smtp_pass", "site_api_key", "chroot_path", "chroot_ssh_path", "static_file_404",
                 "cache_prefix", "wpcom_blog_id", "server_pool_id", "created"):
        assert by_id[name] not in (None, ""), name
    assert call(emu, "GET", "get-site/nowhere.example").status_code == 404


def test_sites_of_another_client_are_forbidden_and_external_domains_unknown(emu):
    for path in ("get-site/1900", "get-site/other-client.example", "site-meta/1900/allow_site_migration/get"):
        response = call(emu, "GET", path)
        assert response.status_code == 403 and response.json()["data"] == [], path
    for method, path in (("POST", "migration/create/1900"), ("POST", "site-allow-ssh-migration/1900"),
                         ("POST", "delete-site/domain/other-client.example")):
        assert call(emu, method, path, {"remote-host": "h", "remote-user": "u"}).status_code == 403, path
    assert call(emu, "GET", "get-site/hosted-elsewhere.example").status_code == 404
    # the hook adds sites of any client (for the module's "domain of another client" tests)
    view = emu.add_site(1901, "also-theirs.example")
    assert view["client"] == emu.client
    status, view = hook(emu, "POST", "sites", {"id": 1902, "domain": "theirs2.example", "client": "zeta"})
    assert status == 200 and view["client"] == "zeta"
    assert call(emu, "GET", "get-site/theirs2.example").status_code == 403
    assert create_site(emu, "theirs2.example").status_code == 400
    response = call(emu, "GET", "check-can-host-domain/%s/theirs2.example" % emu.client)
    assert response.status_code == 400 and "Domain name already used [theirs2.example]" in response.json()["message"]
    assert call(emu, "GET", "check-can-host-domain/%s/free.example" % emu.client).json()["data"] == {"allowed": True}
    assert call(emu, "GET", "get-php-versions/%s" % emu.client).json()["data"] == ["8.2", "8.3", "8.4", "8.5"]


# --------------------------------------------------------------------------- get-sites
def test_get_sites_list_items_and_meta_segments(emu):
    items = list_sites(emu)
    assert [i["atomic_site_id"] for i in items] == ["1001", "1002", "1003"]  # strings, as the docs show
    assert set(items[0]) == {"atomic_site_id", "domain_name", "created", "space_used"}
    items = list_sites(emu, "allow_site_migration", "php_version", "unset_key")
    assert [(i["allow_site_migration"], i["php_version"], i["unset_key"]) for i in items] == \
        [(None, "8.4", None), ("true", "8.4", None), ("true", "8.4", None)]
    response = call(emu, "POST", "migration/create/1002", {"remote-host": "h", "remote-user": "u"})
    mid = response.json()["data"]["migration-id"]
    assert list_sites(emu, "allow_site_migration")[1]["allow_site_migration"] == str(mid)
    assert list_sites(emu, limit=2, after=1001) == list_sites(emu)[1:3]
    assert list_sites(emu, after=1003) == []
    for query in ({"limit": 0}, {"limit": "x"}, {"after": "-1"}, {"after": "dest1.example"}):
        assert call(emu, "GET", "get-sites/%s" % emu.client, query).status_code == 400, query


def test_get_sites_pages_through_1000_sites(emu):
    started = time.monotonic()
    status, body = hook(emu, "POST", "sites", {"sites": [
        {"id": 30000 + i, "domain": "fleet%04d.example" % i, "allow_migration": i % 3 == 0} for i in range(1000)]
        + [{"id": 31500, "domain": "foreign.example", "client": "acme"}]})
    seeded = time.monotonic() - started
    assert status == 200 and len(body["sites"]) == 1001
    session = requests.Session()
    whole, pages = [], []
    for dummy in range(5):  # the whole listing, paged by 100, five times: median
        started = time.monotonic()
        items, count = all_sites(emu, "allow_site_migration", limit=100, session=session)
        pages.append(count)
        whole.append(time.monotonic() - started)
    ids = [int(i["atomic_site_id"]) for i in items]
    assert len(ids) == 1003 and ids == sorted(set(ids))  # no duplicates, ascending
    expected = [1001, 1002, 1003] + list(range(30000, 31000))
    assert ids == expected  # no gaps, and no site of another client
    assert pages == [12] * 5  # 10 full pages, one of 3, one empty
    assert sum(1 for i in items if i["allow_site_migration"] == "true") == 2 + 334
    single = []
    for dummy in range(5):
        started = time.monotonic()
        assert len(list_sites(emu, "allow_site_migration", session=session)) == 1003  # no limit: all
        single.append(time.monotonic() - started)
    assert len(list_sites(emu, session=session, limit=5000)) == 1000  # capped at list_max_limit
    print("\nsites: seeded 1001 in %.3f s; paged 1003 sites (12 pages of <= 100): median %.3f s, max %.3f s; "
          "unpaged: median %.3f s; load %s" % (seeded, statistics.median(whole), max(whole),
                                               statistics.median(single), os.getloadavg()))
    # The timings are printed, not asserted (they follow the machine's load); pages and order are checked above.


# --------------------------------------------------------------------------- delete-site
def test_delete_site_by_client_and_id_and_by_domain(emu, new_site):
    provisioning(emu, delete=5.0, queued=0.0)   # the site must still be there after three calls, under load too
    first, second = new_site(), new_site()
    response = call(emu, "POST", "delete-site/%s/%s" % (emu.client, first))
    assert response.status_code == 200 and set(response.json()["data"]) == {"job_id"}
    job = response.json()["data"]["job_id"]
    assert job_status(emu, job)["type"] == "delete-site"
    again = call(emu, "POST", "delete-site/%s/%s" % (emu.client, first))
    assert again.status_code == 400 and "already queued" in again.json()["message"]
    assert call(emu, "GET", "get-site/%s" % first).status_code == 200  # still there until the job ends
    assert wait_job(emu, job)[-1] == "success"
    assert call(emu, "GET", "get-site/%s" % first).status_code == 404
    assert str(first) not in [i["atomic_site_id"] for i in list_sites(emu)]
    assert not os.path.exists(os.path.join(emu.workdir, "sites", str(first)))
    job = call(emu, "POST", "delete-site/domain/site%d.example" % second).json()["data"]["job_id"]
    wait_job(emu, job)
    assert call(emu, "GET", "get-site/%s" % second).status_code == 404
    assert call(emu, "GET", "delete-site/%s/%s" % (emu.client, 1001)).status_code == 405
    assert call(emu, "POST", "delete-site/%s/999999" % emu.client).status_code == 404
    assert call(emu, "POST", "delete-site/acme/1001").status_code == 403
    assert call(emu, "POST", "delete-site/%s/dest1.example" % emu.client).status_code == 400


def test_delete_site_guards(emu, new_site):
    provisioning(emu, delete=0.2, queued=0.0,
                 domains={"keep.example": {"delete": {"outcome": "failure"}}})
    status, dummy = hook(emu, "POST", "sites", {"id": 40001, "domain": "guarded.example",
                                                "meta": {"do_not_delete": "1"}})
    response = call(emu, "POST", "delete-site/%s/40001" % emu.client)
    assert response.status_code == 400 and "do_not_delete" in response.json()["message"]
    hook(emu, "POST", "sites", {"id": 40002, "domain": "backedup.example", "ondemand_backups": 2})
    assert call(emu, "POST", "delete-site/%s/40002" % emu.client).status_code == 412
    emu.add_site(40003, "keep.example")
    job = call(emu, "POST", "delete-site/domain/keep.example").json()["data"]["job_id"]
    assert wait_job(emu, job)[-1] == "failure"
    assert emu.site(40003)["status"] == "active"  # a failed deletion leaves the site as it was
    site = new_site()
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 1.0},
                                  "run": {"outcome": "success", "duration": 0.1}}})
    mid = call(emu, "POST", "migration/create/%s" % site, {"remote-host": "h", "remote-user": "u"}).json()["data"]
    call(emu, "POST", "migration/preflight/%s" % mid["migration-id"])
    response = call(emu, "POST", "delete-site/%s/%s" % (emu.client, site))
    assert response.status_code == 423 and "is running" in response.json()["message"]


# --------------------------------------------------------------------------- site_provisioned webhook
class _Receiver(http.server.BaseHTTPRequestHandler):
    received = None

    def do_POST(self):
        self.received.append((time.time(), json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_site_provisioned_webhook_is_sent_once_when_ready_and_signed(tmp_path):
    files = tls(tmp_path / "tls")
    ca, cert, key = files["ca"], files["cert"], files["key"]
    received = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    receiver.socket = context.wrap_socket(receiver.socket, server_side=True)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hmac_key = "provisioned-hmac-key-0a1b2c3d4e5f"
    emu = start_emulator(tmp_path / "emu", extra_args=["--webhook-ca", ca])
    try:
        url = "https://127.0.0.1:%d/hook" % receiver.server_address[1]
        for meta, value in (("webhook_url", url), ("webhook_hmac_key", hmac_key)):
            assert call(emu, "POST", "client-meta/demo/%s/add" % meta, {"value": value}).status_code == 200
        provisioning(emu, create=0.5, queued=0.1, domains={"bad.example": {"create": {"outcome": "failure"}}})
        data = created(emu, "hooked.example")
        failed = created(emu, "bad.example")
        assert wait_job(emu, failed["job_id"])[-1] == "failure"
        assert wait_job(emu, data["job_id"])[-1] == "success"
        # Both jobs' effects are applied once the failed site is gone, so whatever they send (a duplicate, an
        # event for the failure) is queued before a later site's event, and the one sender delivers in order:
        # once that one arrives, nothing of theirs is still on its way, however slow the machine.
        assert call(emu, "GET", "get-site/bad.example").status_code == 404
        later = created(emu, "later.example")
        wait_for(lambda: any(body.get("atomic_site_id") == later["atomic_site_id"] for dummy, body in received),
                 30, what="the later site's site_provisioned event")
        deliveries = emu.deliveries()
    finally:
        emu.stop()
        receiver.shutdown()
    sent = [(body["event"], body["atomic_site_id"]) for dummy, body in received]
    # once each; none for the failure
    assert sent == [("site_provisioned", data["atomic_site_id"]), ("site_provisioned", later["atomic_site_id"])]
    arrived, body = received[0]
    assert body["atomic_site_id"] == data["atomic_site_id"] and body["data"] == []
    sig = body["signature"]
    assert sig["signature"] == ref_digest(hmac_key, "site_provisioned", sig["timestamp"], sig["salt"])
    forged = ref_digest("wrong", "site_provisioned", sig["timestamp"], sig["salt"])
    assert not hmac.compare_digest(sig["signature"], forged)
    assert [(d["event"], d["status"], d["signed"]) for d in deliveries] == [("site_provisioned", 200, True)] * 2
    assert hmac_key not in json.dumps(deliveries)
    assert hashlib.sha256(hmac_key.encode()).hexdigest() not in json.dumps(received)


def test_provisioned_webhook_without_a_receiver_is_not_needed(emu):
    """No webhook_url: the job still completes (the sender only logs that nothing was sent)."""
    provisioning(emu, create=0.1, queued=0.0)
    assert wait_job(emu, created(emu, "quiet.example")["job_id"])[-1] == "success"
    assert emu.deliveries() == []


# --------------------------------------------------------------------------- faults and the request log
def test_faults_apply_to_the_site_endpoints(emu):
    provisioning(emu, create=0.1, queued=0.0)
    emu.set_faults([{"endpoint": "site.create", "status": 503, "count": 1}])
    response = create_site(emu, "faulty.example")
    assert response.status_code == 503 and response.json()["message"] == "Service Unavailable (injected fault)"
    assert call(emu, "GET", "get-site/faulty.example").status_code == 404  # not processed
    emu.set_faults([{"endpoint": "site.create", "reset": "after", "count": 1}])
    with pytest.raises(requests.exceptions.ConnectionError):
        create_site(emu, "faulty.example")
    assert call(emu, "GET", "get-site/faulty.example").status_code == 200  # processed, answer lost
    assert create_site(emu, "faulty.example").status_code == 400  # a blind repeat is refused
    emu.set_faults([{"endpoint": "job.status", "status": 429, "retry_after": 2, "count": 1},
                    {"endpoint": "site.list", "latency": 0.3, "count": 1},
                    {"endpoint": "site.delete", "status": 500, "count": 1}])
    response = call(emu, "GET", "job-status/7001")
    assert response.status_code == 429 and response.headers["Retry-After"] == "2"
    started = time.monotonic()
    assert len(list_sites(emu)) == 4
    assert time.monotonic() - started >= 0.3
    assert call(emu, "POST", "delete-site/%s/1001" % emu.client).status_code == 500
    assert emu.site(1001)["status"] == "active"
    faults = {e["endpoint"]: e["fault"] for e in emu.requests_log() if e["fault"]}
    assert faults == {"site.create": "reset=after", "job.status": "status=429", "site.list": "latency=0.3",
                      "site.delete": "status=500"}


def test_request_log_names_write_flags_and_params_without_values(emu):
    provisioning(emu, create=0.0, queued=0.0)
    secrets_sent = [ADMIN_PASS, "admin-canary@example.org", "canary-site-type"]
    job = created(emu, "logged.example", admin_pass=ADMIN_PASS, admin_email=secrets_sent[1],
                  **{"meta[_data]": secrets_sent[2], "meta[allow_site_migration]": "true",
                     "software[plugins/akismet/latest]": "activate"})["job_id"]
    wait_job(emu, job)
    call(emu, "GET", "job-completion/%s" % job)
    call(emu, "POST", "job-status", {"jobs[]": job})
    call(emu, "GET", "get-site/logged.example")
    list_sites(emu, "allow_site_migration", limit=10, after=0)
    call(emu, "GET", "check-can-host-domain/%s/x.example" % emu.client)
    call(emu, "GET", "get-php-versions/%s" % emu.client)
    call(emu, "POST", "delete-site/domain/logged.example")
    log = emu.requests_log()
    writes = {e["endpoint"]: e["write"] for e in log}
    assert writes == {"site.create": True, "job.status": False, "job.completion": False, "site.get": False,
                      "site.list": False, "site.check_domain": False, "client.php_versions": False,
                      "site.delete": True}
    create = log[0]
    assert sorted(create["params"]) == ["admin_email", "admin_pass", "admin_user", "domain_name", "meta[_data]",
                                        "meta[allow_site_migration]", "software[plugins/akismet/latest]"]
    assert [e["params"] for e in log if e["endpoint"] == "site.list"] == [["limit", "after"]]
    assert [e["path"] for e in log if e["endpoint"] == "site.list"] == [
        "/api/v1.0/get-sites/demo/allow_site_migration"]
    server_log = open(os.path.join(emu.workdir, "emulator.log"), encoding="utf-8").read()
    for secret in secrets_sent:
        assert secret not in json.dumps(log) and secret not in server_log


# --------------------------------------------------------------------------- persistence
def test_state_file_keeps_sites_and_jobs_across_a_restart(tmp_path):
    state = tmp_path / "state.json"
    config = json.load(open(os.path.join(server.HERE, "seed.json")))
    config["provisioning"] = {"default": {"create": {"queued": 0.0, "duration": 1.5}}}
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config))
    emu = start_emulator(tmp_path / "one", state_file=state, config=config_path)
    try:
        data = created(emu, "durable.example", **{"meta[allow_site_migration]": "true"})
        record = call(emu, "GET", "get-site/durable.example").json()["data"]
    finally:
        emu.stop()
    assert oct(os.stat(state).st_mode & 0o777) == "0o600"
    emu = start_emulator(tmp_path / "two", state_file=state, config=config_path)
    try:
        assert wait_job(emu, data["job_id"])[-1] == "success"  # the job went on across the restart
        again = call(emu, "GET", "get-site/durable.example").json()["data"]
        assert again["db_pass"] == record["db_pass"] and again["atomic_site_id"] == data["atomic_site_id"]
        assert call(emu, "GET", "site-meta/durable.example/allow_site_migration/get").json()["data"] == "true"
        next_job = created(emu, "durable2.example")
        assert next_job["job_id"] == data["job_id"] + 1 and next_job["atomic_site_id"] > data["atomic_site_id"]
    finally:
        emu.stop()


# --------------------------------------------------------------------------- a public SDK's models
# The Python SDK (rtCamp/wp-cloud-atomic-sdk, package "atomic-sdk") is not on PyPI (pip finds no
# distribution), so its code is not installed here; these tables restate the field names and types
# its pydantic models declare, and the checks below are what model_validate would require of the
# emulator's answers (strictly: an int must be a JSON integer, not a numeric string).
#   atomic_sdk/models.py, class Site and class Job, commit 86fe40169c59a3a517185aa5f22380b0ac9cb642
#   (main); job status: atomic_sdk/api/sites.py get_job_status / get_job_statuses, Job.status and
#   Job.wait_all, commit 43acd5e07d5f893b512607e923eb13d84d042fee (branch feat/batched-jobs).
SDK_SITE = {"atomic_site_id": (int, True), "wpcom_blog_id": (int, False), "domain_name": (str, True),
            "server_pool_id": (int, True), "db_pass": (str, False), "cache_prefix": (str, True),
            "wp_admin_user": (str, True), "wp_admin_email": (str, True), "db_charset": (str, True),
            "db_collate": (str, True), "php_version": (str, True), "wp_version": (str, False),
            "migrate_to_pool": (int, False), "migrate_readonly": (int, False), "photon_subsizes": (int, False),
            "extra": (dict, False)}
SDK_JOB = {"job_id": (int, True), "wpcom_blog_id": (int, False), "atomic_site_id": (int, False),
           "domain_name": (str, False)}


def sdk_validate(model, data):
    assert isinstance(data, dict), data
    for name, (kind, required) in model.items():
        value = data.get(name)
        if value is None:
            assert not required, "required field %s missing" % name
            continue
        assert isinstance(value, kind) and not isinstance(value, bool), (name, value)


def test_answers_parse_with_the_public_sdk_models(emu):
    provisioning(emu, create=0.2, queued=0.0)
    job = created(emu, "sdk.example", **{"meta[allow_site_migration]": "true"})
    sdk_validate(SDK_JOB, job)  # SitesClient.create: Job.model_validate(data)
    status = job_status(emu, job["job_id"])  # Job.status(): get_job_status(id)["_status"]
    assert status["_status"] in ("queued", "running", "success", "failure")
    wait_job(emu, job["job_id"])
    batch = call(emu, "POST", "job-status/", {"jobs[0]": job["job_id"]}).json()["data"]
    assert batch[str(job["job_id"])]["_status"] == "success"  # Job.wait_all: map str(id) -> {"_status"}
    for path in ("get-site/%s" % job["atomic_site_id"], "get-site/sdk.example/extra"):
        sdk_validate(SDK_SITE, call(emu, "GET", path).json()["data"])  # SitesClient.get
    extra = call(emu, "GET", "get-site/sdk.example/extra").json()["data"]["extra"]
    assert extra.get("server_pool", {}).get("geo_affinity") == "dfw"  # examples/sites/01: get_extra(...)
    for item in list_sites(emu):  # examples/sites/07_site_list.py reads these two keys of each dict
        assert isinstance(item["atomic_site_id"], str) and item["atomic_site_id"].isdigit()
        assert isinstance(item["domain_name"], str)
    delete = call(emu, "POST", "delete-site/domain/sdk.example").json()["data"]
    sdk_validate(SDK_JOB, delete)  # SitesClient.delete: Job.model_validate(data)


# --------------------------------------------------------------------------- the contract table stays true
def test_contract_table_lists_every_endpoint():
    readme = open(os.path.join(os.path.dirname(server.__file__), "README.md"), encoding="utf-8").read()
    section = readme.split("\n## Contract", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \|", section, re.M))
    assert documented == server.ENDPOINTS
