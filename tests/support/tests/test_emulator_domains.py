"""The emulator's domain side (issue 37): the primary domain switch (a job), aliases, SSL per domain, get-ips,
the verification code, site-meta writes, the signed domain_name_changed event and every switch of section
"Variants" that touches them, against tests/support/emulator/README.md "Contract" over real HTTPS."""

import os
import time

import pytest

from golive_harness import HMAC_KEY, gl, live  # noqa: F401 pylint: disable=unused-import
from webhook_harness import ref_digest, wait_for


def signed_ok(body):
    sig = body["signature"]
    return sig["signature"] == ref_digest(HMAC_KEY, body["event"], sig["timestamp"], sig["salt"])


def domain_events(gl):  # pylint: disable=redefined-outer-name
    return [(b["atomic_site_id"], b["data"]) for b in gl.of("domain_name_changed")]


def switch(gl, site, domain, keep=None, service=None):  # pylint: disable=redefined-outer-name
    where = service or "%s/%s" % (gl.client, site)      # service: a whole {service}/{identifier} pair
    path = "update-site-domain/%s/%s" % (where, domain) + ("/%s" % keep if keep else "")
    return gl.ok("POST", path)


# --------------------------------------------------------------------------- primary domain
def test_switch_is_a_job_with_windows_then_the_old_domain_is_an_alias(gl):
    # Windows long enough for the reads inside them on a loaded machine (2 cores shared by several runs).
    gl.emu.set_provisioning({"default": {"domain": {"queued": 2.0, "duration": 1.0}}})
    answer = switch(gl, 1002, "Prod.Example", keep="keep")
    assert answer == {"job_id": answer["job_id"], "atomic_site_id": 1002, "domain_name": "prod.example",
                      "old_domain_name": "dest2.example"}
    assert isinstance(answer["job_id"], int)
    first = gl.ok("GET", "job-status/%s" % answer["job_id"])
    assert first["_status"] == "queued" and first["type"] == "update-site-domain"
    assert first["data"] == {"atomic_site_id": 1002, "domain_name": "prod.example", "old_domain_name": "dest2.example"}
    assert gl.ok("GET", "get-site/1002")["domain_name"] == "dest2.example"   # not before the job ends
    # the new domain is promised to this site meanwhile; a second domain write waits for the job
    assert "already used" in gl.refused(400, "GET", "check-can-host-domain/demo/prod.example")
    assert "being changed" in gl.refused(423, "POST", "update-site-domain/demo/1002/other.example")
    assert "being changed" in gl.refused(423, "GET", "site-alias/demo/1002/add/www.dest2.example")
    seen = gl.wait_job(answer["job_id"])
    assert seen[-1] == "success" and seen in (["queued", "running", "success"], ["queued", "success"],
                                              ["running", "success"], ["success"]), seen
    assert gl.ok("GET", "get-site/1002")["domain_name"] == "prod.example"
    assert gl.ok("GET", "get-site/prod.example")["atomic_site_id"] == 1002
    assert gl.ok("GET", "site-alias/demo/1002/list") == {"domains": ["dest2.example"]}
    events = gl.wait_events(lambda ev: ev, what="domain_name_changed")
    assert [b["event"] for b in events] == ["domain_name_changed"]
    assert events[0]["atomic_site_id"] == 1002 and signed_ok(events[0])
    assert events[0]["data"] == {"passed_old": "dest2.example", "passed_new": "prod.example",
                                 "then_api_current": "prod.example", "then_db_siteurl": "dest2.example"}
    # a re-run: already primary -> data [] (no job, nothing changes)
    assert switch(gl, 1002, "prod.example", keep="keep") == []


def test_switch_without_keep_drops_and_frees_the_old_domain(gl):
    for site, new, keep in ((1002, "a.example", None), (1003, "b.example", "false")):
        gl.wait_job(switch(gl, site, new, keep=keep)["job_id"])
    for old in ("dest2.example", "dest3.example"):
        assert gl.ok("GET", "check-can-host-domain/demo/%s" % old) == {"allowed": True}
        gl.refused(404, "POST", "ssl-info/%s" % old)
        gl.refused(404, "GET", "get-site/%s" % old)
    assert gl.ok("GET", "site-alias/demo/1002/list") == {"domains": []}
    assert gl.ok("GET", "get-site/1003")["domain_name"] == "b.example"


def test_an_alias_can_be_promoted_and_leaves_the_alias_list(gl):
    gl.ok("GET", "site-alias/demo/1002/add/www.dest2.example")
    gl.wait_job(switch(gl, 1002, "www.dest2.example", keep="keep", service="domain/dest2.example")["job_id"])
    assert gl.ok("GET", "get-site/1002")["domain_name"] == "www.dest2.example"
    assert gl.ok("GET", "site-alias/demo/1002/list") == {"domains": ["dest2.example"]}
    # the promoted domain kept its certificate record; the old primary keeps its own
    for domain in ("www.dest2.example", "dest2.example"):
        assert gl.call("POST", "ssl-info/%s" % domain).status_code == 200


def test_switch_refusals(gl):
    used = "Setting domain-as-primary failed: Domain name already used [%s]. TXT record verification is " \
           "required to bypass this check."
    for domain in ("dest1.example", "other-client.example", "hosted-elsewhere.example"):
        assert gl.refused(400, "POST", "update-site-domain/demo/1002/%s" % domain) == used % domain
    for bad in ("not_a_domain", "-x.example", "localhost"):
        assert "Invalid domain" in gl.refused(400, "POST", "update-site-domain/demo/1002/%s" % bad)
    assert "keep" in gl.refused(400, "POST", "update-site-domain/demo/1002/new.example/maybe")
    gl.refused(404, "POST", "update-site-domain/demo/4242/new.example")
    gl.refused(403, "POST", "update-site-domain/demo/1900/new.example")      # another client's site
    gl.refused(403, "POST", "update-site-domain/acme/1002/new.example")      # another client's name
    gl.refused(405, "GET", "update-site-domain/demo/1002/new.example")
    gl.emu.set_provisioning({"default": {"create": {"queued": 5, "duration": 5}}})
    fields = {"domain_name": "young.example", "admin_user": "a", "admin_email": "a@b.example"}
    site = gl.ok("POST", "create-site/demo", fields)["atomic_site_id"]
    assert "provisioning" in gl.refused(423, "POST", "update-site-domain/demo/%s/new.example" % site)
    assert gl.ok("GET", "get-site/1002")["domain_name"] == "dest2.example"
    assert domain_events(gl) == []


def test_a_failed_domain_job_changes_nothing_and_frees_the_new_domain(gl):
    job = switch(gl, 1002, "domainfail.example", keep="keep")["job_id"]
    assert gl.wait_job(job)[-1] == "failure"
    assert gl.ok("GET", "get-site/1002")["domain_name"] == "dest2.example"
    assert gl.ok("GET", "site-alias/demo/1002/list") == {"domains": []}
    assert gl.ok("GET", "check-can-host-domain/demo/domainfail.example") == {"allowed": True}
    assert gl.ok("GET", "site-alias/demo/1002/add/www.dest2.example")  # not locked any more
    gl.wait_events(lambda ev: len(ev) == 1, what="the alias event")      # the alias's, none for the failure
    assert [data["passed_new"] for _site, data in domain_events(gl)] == ["www.dest2.example"]


@pytest.mark.parametrize("answer", ["job", "refused"])
def test_same_domain_answer_switch(gl, answer):
    gl.emu.set_variants(same_domain_answer=answer)
    if answer == "refused":
        assert "already the primary domain" in gl.refused(400, "POST", "update-site-domain/demo/1002/dest2.example")
        return
    job = switch(gl, 1002, "dest2.example", keep="keep")["job_id"]
    assert gl.wait_job(job)[-1] == "success"
    assert gl.ok("GET", "site-alias/demo/1002/list") == {"domains": []}
    assert gl.ok("GET", "get-site/1002")["domain_name"] == "dest2.example"


def test_domain_job_answer_switch(gl):
    gl.emu.set_variants(domain_job_answer="minimal")
    minimal = switch(gl, 1002, "m.example")
    assert set(minimal) == {"job_id"} and isinstance(minimal["job_id"], int)
    gl.emu.set_variants(domain_job_answer="string-id")
    text = switch(gl, 1003, "s.example")
    assert set(text) == {"job_id"} and text["job_id"].isdigit()
    assert gl.wait_job(text["job_id"])[-1] == "success"


def _write_dump(gl, site, host):  # pylint: disable=redefined-outer-name
    storage = gl.emu.site(site)["storage"]
    os.makedirs(storage, exist_ok=True)
    dump = ("INSERT INTO `wp_options` VALUES (1,'siteurl','https://%s','yes'),(2,'home','https://%s/blog','yes'),"
            "(3,'blogname','Mirror of %s','yes');\n" % (host, host, host))
    with open(os.path.join(storage, "db.sql"), "w", encoding="utf-8") as handle:
        handle.write(dump)
    return os.path.join(storage, "db.sql"), dump


@pytest.mark.parametrize("update", ["none", "siteurl"])
def test_domain_db_update_switch_and_then_db_siteurl(gl, update):
    gl.emu.set_variants(domain_db_update=update)
    path, dump = _write_dump(gl, 1002, "dest2.example")
    gl.wait_job(switch(gl, 1002, "shop.example")["job_id"])
    data = gl.wait_events(lambda ev: ev, what="domain_name_changed")[0]["data"]
    with open(path, encoding="utf-8") as handle:
        after = handle.read()
    if update == "none":
        assert after == dump and data["then_db_siteurl"] == "dest2.example"
    else:
        assert after == dump.replace("https://dest2.example", "https://shop.example")
        assert "Mirror of dest2.example" in after           # only the siteurl and home rows
        assert data["then_db_siteurl"] == "shop.example"
    assert data["then_api_current"] == "shop.example"


# --------------------------------------------------------------------------- aliases
def test_aliases_add_list_remove_and_their_events(gl):
    assert gl.ok("GET", "site-alias/demo/1002/list") == {"domains": []}
    assert gl.ok("GET", "site-alias/demo/1002/add/WWW.dest2.example") == {"domains": ["www.dest2.example"]}
    assert gl.ok("GET", "site-alias/domain/dest2.example/add/shop.example") == {
        "domains": ["www.dest2.example", "shop.example"]}
    assert gl.ok("GET", "site-alias/demo/1002/add/shop.example") == {   # again: unchanged, no event
        "domains": ["www.dest2.example", "shop.example"]}
    assert "primary domain" in gl.refused(400, "GET", "site-alias/demo/1002/add/dest2.example")
    assert "already used" in gl.refused(400, "GET", "site-alias/demo/1002/add/dest1.example")
    assert "already used" in gl.refused(400, "GET", "site-alias/demo/1003/add/shop.example")  # 1002's alias
    assert "cannot be removed" in gl.refused(400, "GET", "site-alias/demo/1002/remove/dest2.example")
    assert "not an alias" in gl.refused(404, "GET", "site-alias/demo/1002/remove/nope.example")
    gl.refused(404, "GET", "site-alias/domain/shop.example/list")    # an alias is no identifier
    gl.refused(405, "POST", "site-alias/demo/1002/add/x.example")
    assert gl.ok("GET", "site-alias/demo/1002/remove/shop.example") == {"domains": ["www.dest2.example"]}
    assert gl.ok("GET", "check-can-host-domain/demo/shop.example") == {"allowed": True}
    events = gl.wait_events(lambda ev: len(ev) == 3, what="three alias events")
    assert all(b["event"] == "domain_name_changed" and b["atomic_site_id"] == 1002 and signed_ok(b) for b in events)
    assert [b["data"] for b in events] == [
        {"passed_old": "", "passed_new": new, "then_api_current": "dest2.example", "then_db_siteurl": "dest2.example"}
        for new in ("www.dest2.example", "shop.example")] + [
        {"passed_old": "shop.example", "passed_new": "", "then_api_current": "dest2.example",
         "then_db_siteurl": "dest2.example"}]


def test_alias_switches(gl):
    gl.emu.set_variants(alias_list="with-primary", alias_repeat="refused", alias_event="none")
    assert gl.ok("GET", "site-alias/demo/1002/add/www.dest2.example") == {
        "domains": ["dest2.example", "www.dest2.example"]}
    assert "already an alias" in gl.refused(400, "GET", "site-alias/demo/1002/add/www.dest2.example")
    assert gl.ok("GET", "site-alias/demo/1002/list") == {"domains": ["dest2.example", "www.dest2.example"]}
    gl.wait_job(switch(gl, 1002, "p.example")["job_id"])   # the primary switch still sends its event
    gl.wait_events(lambda ev: ev, what="the switch's event")
    assert [data["passed_new"] for _site, data in domain_events(gl)] == ["p.example"]


@pytest.mark.parametrize("form, accepted, refused", [
    ("both", ["demo/1002", "domain/dest2.example"], ["acme/1002", "site/1002", "demo/dest2.example"]),
    ("client-id", ["demo/1002"], ["domain/dest2.example"]),
    ("domain", ["domain/dest2.example"], ["demo/1002"]),
    ("any-service", ["site/1002", "atomic/1002", "domain/dest2.example"], ["site/dest2.example"]),
])
def test_service_form_switch(gl, form, accepted, refused):
    gl.emu.set_variants(service_form=form)
    for pair in accepted:
        assert gl.ok("GET", "site-alias/%s/list" % pair) == {"domains": []}
        assert gl.ok("GET", "site-backups-list/%s" % pair) == []
    for pair in refused:
        status = gl.call("GET", "site-alias/%s/list" % pair).status_code
        assert status in (400, 403), (pair, status)
        assert gl.call("POST", "update-site-domain/%s/new.example" % pair).status_code == status


# --------------------------------------------------------------------------- SSL
def ssl_state(info):
    if not info:
        return "pending"
    if info.get("acme_certificate_id") or info.get("ssl_certificate_id"):
        return "issued"
    return "failed" if info.get("broken_record") else "pending"


def test_ssl_pending_failed_retry_then_issued_when_dns_arrives(gl):
    issued = gl.ok("POST", "ssl-info/dest2.example")       # a site's creation domain has its certificate
    assert ssl_state(issued) == "issued" and issued["ca_provider"] == "letsencrypt"
    assert issued["broken_record"] is None and issued["certificate_expiration_date"]
    gl.emu.set_ssl({"attempt": 30})          # pending for certain while the next lines read it
    gl.ok("GET", "site-alias/demo/1002/add/shop.example")
    first = gl.ok("POST", "ssl-info/shop.example")
    assert ssl_state(first) == "pending" and first["acme_certificate_id"] is None and first["broken_record"] is None
    assert gl.ok("POST", "ssl-retry/shop.example") == {"queued": False}   # nothing failed yet
    gl.emu.set_ssl({"attempt": 0.1, "retry_base": 0.4, "retry_cap": 5})
    gl.ok("GET", "site-alias/demo/1002/add/www.dest2.example")
    wait_for(lambda: ssl_state(gl.ok("POST", "ssl-info/www.dest2.example")) == "failed", 10, what="a failure")
    broken = gl.ok("POST", "ssl-info/www.dest2.example")["broken_record"]
    assert broken["reason"] == "not hosted here" and broken["failcount"] >= 1
    assert broken["retry_date"] and "www.dest2.example" in broken["last_error"]
    gl.emu.set_ssl({"attempt": 30})
    assert gl.ok("POST", "ssl-retry/www.dest2.example") == {"queued": True}
    assert ssl_state(gl.ok("POST", "ssl-info/www.dest2.example")) == "pending"   # the retry is queued
    gl.emu.set_ssl({"attempt": 0.1})         # DNS arriving queues an attempt this soon (ssl_after_dns=at-once)
    gl.emu.set_dns("www.dest2.example", arrived=True)
    wait_for(lambda: ssl_state(gl.ok("POST", "ssl-info/www.dest2.example")) == "issued", 10, what="issued")
    assert gl.ok("POST", "ssl-retry/www.dest2.example") == {"queued": False}
    assert "Not Found" in gl.refused(404, "POST", "ssl-info/nowhere.example")
    gl.refused(404, "POST", "ssl-retry/nowhere.example")
    gl.refused(403, "POST", "ssl-info/other-client.example")
    gl.refused(404, "POST", "ssl-info/1002")             # a site ID is no domain (default)
    gl.refused(405, "GET", "ssl-info/dest2.example")


def test_ssl_after_dns_next_retry_waits_for_the_retry_date_or_ssl_retry(gl):
    gl.emu.set_variants(ssl_after_dns="next-retry")
    gl.emu.set_ssl({"attempt": 0.1, "retry_base": 30, "retry_cap": 60})
    gl.ok("GET", "site-alias/demo/1002/add/late.example")
    wait_for(lambda: ssl_state(gl.ok("POST", "ssl-info/late.example")) == "failed", 10, what="a failure")
    gl.emu.set_dns("late.example", arrived=True)
    time.sleep(0.3)       # past the at-once attempt's 0.1 s: this reading makes none
    assert ssl_state(gl.ok("POST", "ssl-info/late.example")) == "failed"
    assert gl.ok("POST", "ssl-retry/late.example") == {"queued": True}
    wait_for(lambda: ssl_state(gl.ok("POST", "ssl-info/late.example")) == "issued", 10, what="issued after retry")


def test_ssl_answer_switches(gl):
    gl.emu.set_variants(ssl_cert_field="ssl", ssl_pending_answer="empty", ssl_info_key="domain-or-id")
    by_id = gl.ok("POST", "ssl-info/1002")
    assert by_id["domain"] == "dest2.example" and by_id["ssl_certificate_id"] and "acme_certificate_id" not in by_id
    gl.emu.set_ssl({"attempt": 30})
    gl.ok("GET", "site-alias/demo/1002/add/www.dest2.example")
    assert gl.ok("POST", "ssl-info/www.dest2.example") == []
    gl.refused(403, "POST", "ssl-info/1900")


# --------------------------------------------------------------------------- DNS answers
def test_get_ips_and_the_verification_code(gl):
    assert gl.ok("GET", "get-ips/demo") == {"ips": ["198.51.100.0/25"]}
    assert gl.ok("GET", "get-ips/demo/") == {"ips": ["198.51.100.0/25"]}   # the panel's trailing slash
    one = gl.ok("GET", "get-ips/demo/prod.example")
    assert one["ips"] == ["198.51.100.0/25"] and len(set(one["suggested"])) == 2
    assert all(ip.startswith("198.51.100.") and 0 < int(ip.rsplit(".", 1)[1]) < 127 for ip in one["suggested"])
    assert gl.ok("GET", "get-ips/demo/prod.example") == one                # stable per domain
    gl.emu.set_variants(ips_shape="list")
    assert gl.ok("GET", "get-ips/demo/prod.example") == [one]
    gl.refused(400, "GET", "get-ips/demo/bad_domain")
    gl.refused(403, "GET", "get-ips/acme/prod.example")
    code = gl.ok("GET", "get-domain-verification-code/demo/hosted-elsewhere.example")
    assert isinstance(code, str) and code.startswith("atomic-domain-") and len(code) == 46
    assert gl.ok("GET", "get-domain-verification-code/demo/www.hosted-elsewhere.example") != code
    gl.refused(403, "GET", "get-domain-verification-code/acme/hosted-elsewhere.example")
    # claiming a domain held elsewhere: refused until its TXT record holds this client's code
    gl.refused(400, "GET", "site-alias/demo/1002/add/hosted-elsewhere.example")
    gl.emu.set_dns("hosted-elsewhere.example", txt="atomic-domain-wrong")
    gl.refused(400, "GET", "check-can-host-domain/demo/hosted-elsewhere.example")
    gl.emu.set_dns("hosted-elsewhere.example", txt=code)
    assert gl.ok("GET", "check-can-host-domain/demo/hosted-elsewhere.example") == {"allowed": True}
    assert gl.ok("GET", "site-alias/demo/1002/add/hosted-elsewhere.example") == {
        "domains": ["hosted-elsewhere.example"]}


# --------------------------------------------------------------------------- site-meta writes
def test_site_meta_update_and_remove(gl):
    assert gl.ok("GET", "site-meta/1002/suspended/get") is None
    assert gl.ok("POST", "site-meta/1002/suspended/update", {"value": "503"}) == []
    assert gl.ok("GET", "site-meta/dest2.example/suspended/get") == "503"
    assert gl.ok("GET", "site-meta/1002/suspended/remove") == []
    assert gl.ok("GET", "site-meta/1002/suspended/get") is None
    assert gl.ok("POST", "site-meta/1002/suspended/remove") == []            # unset, and by POST (the panel)
    assert gl.ok("POST", "site-meta/1002/php_version/update", {"value": "8.3"}) == []
    assert gl.ok("GET", "get-site/1002")["php_version"] == "8.3"
    assert gl.ok("POST", "site-meta/1002/allow_restore/update", {"value": "1700000000"}) == []
    assert gl.ok("GET", "site-meta/1002/allow_restore/get") == "1700000000"
    for key, value in (("php_version", "7.0"), ("suspended", "soon"), ("allow_site_migration", "true"),
                       ("wp_version", "beta"), ("space_quota", "lots")):
        gl.refused(400, "POST", "site-meta/1002/%s/update" % key, {"value": value})
    assert "value" in gl.refused(400, "POST", "site-meta/1002/suspended/update")
    gl.refused(400, "GET", "site-meta/1002/php_version/remove")
    gl.refused(404, "POST", "site-meta/4242/suspended/update", {"value": "503"})
    gl.refused(403, "POST", "site-meta/1900/suspended/update", {"value": "503"})
    log = [e for e in gl.emu.requests_log() if e["endpoint"] and e["endpoint"].startswith("site_meta.")]
    assert {e["endpoint"]: e["write"] for e in log} == {"site_meta.get": False, "site_meta.update": True,
                                                        "site_meta.remove": True}
