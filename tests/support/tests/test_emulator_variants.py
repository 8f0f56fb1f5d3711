"""The emulator's variant switches (variants.py): each answers as the other reading of the service,
the default is today's, reset restores it, and a bad switch is refused by name."""

import time

import pytest
import requests

from launcher import start_emulator
from test_emulator_sites import call, created, hook, provisioning

SEED_SITES = ["1001", "1002", "1003"]


def listed(emu, query=None, keys=""):
    response = call(emu, "GET", "get-sites/%s%s" % (emu.client, keys), query)
    return response.status_code, response.json()


def test_defaults_are_todays_and_reset_restores_them(emu):
    status, body = hook(emu, "GET", "variants")
    assert status == 200
    assert body["variants"] == {"bad_key_status": "403", "paging": "honour", "list_allow_key": "listed",
                                "create_allow_meta": "kept", "job_words": "doc",
                                # going live (issue 37): tests/support/tests/test_emulator_domains.py, _backups.py
                                "service_form": "both", "domain_job_answer": "doc", "same_domain_answer": "empty",
                                "domain_db_update": "none", "alias_list": "aliases", "alias_repeat": "ok",
                                "alias_event": "sent", "ssl_info_key": "domain", "ssl_pending_answer": "nulls",
                                "ssl_cert_field": "acme", "ssl_after_dns": "at-once", "ips_shape": "object",
                                "backup_request_answer": "doc", "backup_id_form": "numeric-string",
                                "backup_listing": "with-event", "backup_type_segments": "many",
                                "backup_timestamp_form": "datetime", "restore_answer": "ticket",
                                "restore_order": "any"}
    assert hook(emu, "POST", "variants", {"paging": "ignore"})[1]["variants"]["paging"] == "ignore"
    emu.reset()
    assert hook(emu, "GET", "variants")[1]["variants"]["paging"] == "honour"


def test_unknown_switch_or_value_is_refused_by_name(emu):
    status, body = hook(emu, "POST", "variants", {"pageing": "ignore"})
    assert status == 400 and "pageing" in body["message"]
    status, body = hook(emu, "POST", "variants", {"paging": "sometimes"})
    assert status == 400 and "paging" in body["message"] and "ignore" in body["message"]


def test_bad_key_status_401_and_another_clients_site_stays_403(emu):
    bad = {"Auth": "wrong-key"}
    url = emu.url + "/api/v1.0/get-site/dest1.example"
    assert requests.get(url, headers=bad, verify=emu.ca_path, timeout=10).status_code == 403
    emu.set_variants(bad_key_status="401")
    answer = requests.get(url, headers=bad, verify=emu.ca_path, timeout=10)
    assert answer.status_code == 401 and "API key" in answer.json()["message"]
    assert call(emu, "GET", "get-site/other-client.example").status_code == 403


def test_paging_honoured_ignored_or_refused(emu):
    assert [e["atomic_site_id"] for e in listed(emu, {"limit": 2})[1]["data"]] == SEED_SITES[:2]
    assert [e["atomic_site_id"] for e in listed(emu, {"limit": 2, "after": 1002})[1]["data"]] == ["1003"]
    emu.set_variants(paging="ignore")
    assert [e["atomic_site_id"] for e in listed(emu, {"limit": 2, "after": 1002})[1]["data"]] == SEED_SITES
    emu.set_variants(paging="refuse")
    status, body = listed(emu, {"limit": 2})
    assert status == 400 and "limit" in body["message"]
    assert [e["atomic_site_id"] for e in listed(emu)[1]["data"]] == SEED_SITES


def test_allow_key_listed_refused_or_dropped(emu):
    assert listed(emu, keys="/allow_site_migration")[1]["data"][1]["allow_site_migration"] == "true"
    emu.set_variants(list_allow_key="refused")
    status, body = listed(emu, keys="/allow_site_migration")
    assert status == 400 and "allow_site_migration" in body["message"]
    assert listed(emu, keys="/php_version")[0] == 200
    emu.set_variants(list_allow_key="dropped")
    status, body = listed(emu, keys="/allow_site_migration")
    assert status == 200 and all("allow_site_migration" not in entry for entry in body["data"])


def test_create_meta_dropped_leaves_the_flag_unset(emu):
    provisioning(emu, create=0.1, queued=0.0)
    emu.set_variants(create_allow_meta="dropped")
    created(emu, "no-flag.example", **{"meta[allow_site_migration]": "true"})
    assert call(emu, "GET", "site-meta/no-flag.example/allow_site_migration/get").json()["data"] in (None, "")


@pytest.mark.parametrize("words, success", [("wpconcierge", "done"), ("Completed/Error", "Completed")])
def test_job_words_rename_the_final_states(emu, words, success):
    provisioning(emu, create=0.1, queued=0.0, domains={"provfail.example": {"create": {"outcome": "failure"}}})
    emu.set_variants(job_words=words)
    good = created(emu, "words-ok.example")["job_id"]
    bad = created(emu, "provfail.example")["job_id"]
    time.sleep(0.4)
    failure = "failed" if words == "wpconcierge" else "Error"
    assert call(emu, "GET", "job-status/%s" % good).json()["data"]["_status"] == success
    assert call(emu, "GET", "job-completion/%s" % bad).json()["data"] == failure
    batch = call(emu, "POST", "job-status", [("jobs[]", good), ("jobs[]", bad)]).json()["data"]
    assert {batch[str(good)]["_status"], batch[str(bad)]["_status"]} == {success, failure}


def test_variant_on_the_command_line(tmp_path):
    emu = start_emulator(tmp_path, extra_args=["--variant", "paging=ignore", "--variant", "bad_key_status=401"])
    try:
        assert [e["atomic_site_id"] for e in listed(emu, {"limit": 1, "after": 1003})[1]["data"]] == SEED_SITES
        emu.reset()  # reset keeps the values the emulator started with
        assert hook(emu, "GET", "variants")[1]["variants"]["bad_key_status"] == "401"
        answer = requests.get(emu.url + "/api/v1.0/get-sites/demo", headers={"Auth": "x"}, verify=emu.ca_path,
                              timeout=10)
        assert answer.status_code == 401
    finally:
        emu.stop()
