"""The collection against other readings of the service (issue 23): real ansible-playbook and
ansible-inventory runs against the emulator switched to what the owner's panel or a public SDK suggests
the live service may do (tests/support/emulator/variants.py; docs/api-choices.md "Variants").

1. a wrong API key (401 or 403): every module, the sites inventory and the role lead with the key;
2. get-sites paging ignored or refused: each site listed once;
3. the allow_site_migration column refused or dropped, and a create that drops the flag;
4. job words of the PHP SDK's poller (done/failed) and an unknown word.
"""

import json
import secrets
import subprocess

import pytest

from playbooks import BIN, ansible_env, emulator_vars, run_playbook
from test_module_execution import PLAY
from test_role import Run, _explain, _writes, collections_root, run  # noqa: F401 pylint: disable=unused-import

KEY_FIRST = "The service refused the API key"
BAD_KEY = "wrong-key-canary-9d41e2"

# One task per module that reads before it writes, each allowed to fail; every result goes to a file.
PLAYBOOK = PLAY + """%s
    - name: Write the results
      ansible.builtin.copy:
        content: "{{ {%s} | to_json }}"
        dest: "{{ results_file }}"
"""


def play(tmp_path, emu, tasks, extra_vars=None, api_key=None, timeout=300):
    """Run ``tasks`` ({name: (module, args)}), each with ignore_errors; return ({name: result}, output)."""
    body = "".join("\n    - name: %s\n      %s: %s\n      register: r_%s\n      ignore_errors: true" % (
        name, module, json.dumps(args), name) for name, (module, args) in tasks.items())
    path = tmp_path / ("play-%s.yml" % secrets.token_hex(3))
    path.write_text(PLAYBOOK % (body, ", ".join("'%s': r_%s" % (name, name) for name in tasks)))
    results_file = tmp_path / "results.json"
    given = dict(emulator_vars(emu), results_file=str(results_file), **(extra_vars or {}))
    if api_key is not None:
        given["wpcloud_api_key"] = api_key
    proc, output = run_playbook(tmp_path, path, given, check=False, timeout=timeout)
    assert proc.returncode == 0, output[-6000:]
    return json.loads(results_file.read_text()), output


# -- 1. a wrong or revoked API key -------------------------------------------------------------------------

MODULE_TASKS = {
    "site": ("wpcloud.hosting.site", {"client": "demo", "domain": "new-shop.example", "admin_user": "admin",
                                      "admin_email": "admin@new-shop.example"}),
    "site_info_site": ("wpcloud.hosting.site_info", {"site": "dest1.example"}),
    "site_info_client": ("wpcloud.hosting.site_info", {"client": "demo"}),
    "site_allow_migration": ("wpcloud.hosting.site_allow_migration", {"site": "1001", "confirm_overwrite": True}),
    "migration": ("wpcloud.hosting.migration", {"site": "1002", "remote_host": "src.example", "remote_user": "www"}),
    "migration_info": ("wpcloud.hosting.migration_info", {"site": "1002"}),
    "migration_preflight": ("wpcloud.hosting.migration_preflight", {"migration_id": 5001}),
    "client_meta": ("wpcloud.hosting.client_meta", {"client": "demo", "key": "webhook_url",
                                                    "value": "https://hooks.example/x"}),
}


@pytest.mark.parametrize("status", ["403", "401"])
def test_a_wrong_key_is_named_first_by_every_module(emu, tmp_path, status):
    emu.set_variants(bad_key_status=status)
    results, output = play(tmp_path, emu, MODULE_TASKS, api_key=BAD_KEY)
    table = dict((name, r.get("msg")) for name, r in results.items())
    print(json.dumps({"bad_key_status": status, "messages": table}, indent=1))  # the table of the report
    for name, result in results.items():
        assert result.get("failed"), (name, result)
        msg = result["msg"]
        assert msg.startswith(KEY_FIRST), (name, msg)
        assert "(HTTP %s, the service says: \"" % status in msg and "missing or invalid API key" in msg, (name, msg)
        assert "another domain" not in msg.lower(), (name, msg)
    assert ("belongs to another client account" in table["site_info_site"]) is (status == "403")
    assert BAD_KEY not in output and BAD_KEY not in json.dumps(results)
    assert _writes(emu.requests_log()) == []


def test_another_domain_is_advised_only_when_proven(emu, tmp_path):
    """The right key, a domain of another client: the key lists the client's sites without it and the
    service says it is used, so the message says choose another domain; site_info names it as possible."""
    tasks = {"site": ("wpcloud.hosting.site", {"client": "demo", "domain": "other-client.example",
                                               "admin_user": "admin", "admin_email": "a@b.example"}),
             "site_info": ("wpcloud.hosting.site_info", {"site": "other-client.example"})}
    results, output = play(tmp_path, emu, tasks)
    assert results["site"]["failed"] and results["site"]["msg"].startswith("domain other-client.example is used by")
    assert "Choose another domain" in results["site"]["msg"] and "Domain name already used" in results["site"]["msg"]
    assert results["site_info"]["msg"].startswith(KEY_FIRST + " for site other-client.example (HTTP 403")
    assert _writes(emu.requests_log()) == []


@pytest.mark.parametrize("status", ["403", "401"])
def test_a_wrong_key_in_the_inventory_plugin(emu, tmp_path, status):
    emu.set_variants(bad_key_status=status)
    path = tmp_path / "sites.wpcloud.yml"
    path.write_text(json.dumps({"plugin": "wpcloud.hosting.sites", "client": emu.client}))
    env = ansible_env(tmp_path, WPCLOUD_API_URL=emu.url, WPCLOUD_API_KEY=BAD_KEY, WPCLOUD_CA_PATH=emu.ca_path,
                      ANSIBLE_INVENTORY_ENABLED="wpcloud.hosting.sites", ANSIBLE_INVENTORY_UNPARSED_FAILED="1")
    proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(path), "--list"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())
    print(json.dumps({"inventory %s" % status: text[text.find(KEY_FIRST):][:400]}))
    assert KEY_FIRST + " for client demo (HTTP %s" % status in text and "missing or invalid API key" in text
    assert BAD_KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize("status", ["403", "401"])
def test_a_wrong_key_in_the_role(run, emu, status):  # noqa: F811 - the fixture of test_role
    emu.set_variants(bad_key_status=status)
    tag = secrets.token_hex(3)
    new = {"site_migration_client": emu.client, "site_migration_admin_user": "admin",
           "site_migration_admin_email": "admin@example.com"}
    sites = {"dest2.example": {"site_migration_site": "1002"}, "new-%s.example" % tag: new}
    run.inventory(emu, sites, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False})
    proc = run.play(extra=["-e", "wpcloud_api_key=%s" % BAD_KEY])
    assert proc.returncode != 0, _explain(proc)
    report, by_host = run.last_report()
    messages = dict((host, entry["message"]) for host, entry in by_host.items())
    print(json.dumps({"role %s" % status: messages}, indent=1))
    for host, message in messages.items():
        assert message.startswith("site %s: %s" % (by_host[host]["site"], KEY_FIRST)), (host, message)
        assert "wpcloud_api_key" in message, (host, message)
        assert "missing or invalid API key" in message and "another domain" not in message.lower()
    assert BAD_KEY not in proc.stdout + proc.stderr + json.dumps(report)


# -- 2. paging ignored or refused --------------------------------------------------------------------------

@pytest.mark.parametrize("paging", ["ignore", "refuse"])
def test_site_info_lists_each_site_once_whatever_the_paging(emu, tmp_path, paging):
    for n in range(5):
        emu.add_site(42001 + n, "paged-%d.example" % n, allow_migration=n % 2 == 0)
    emu.set_variants(paging=paging)
    tasks = {"small": ("wpcloud.hosting.site_info", {"client": "demo", "page_size": 2}),
             "whole": ("wpcloud.hosting.site_info", {"client": "demo"})}
    results, output = play(tmp_path, emu, tasks)
    for name in ("small", "whole"):
        ids = [s["site_id"] for s in results[name]["sites"]]
        assert ids == [1001, 1002, 1003] + list(range(42001, 42006)), (name, ids)
        assert results[name]["count"] == 8


@pytest.mark.parametrize("paging", ["ignore", "refuse"])
def test_the_inventory_lists_each_site_once_whatever_the_paging(emu, tmp_path, paging):
    for n in range(5):
        emu.add_site(43001 + n, "inv-paged-%d.example" % n)
    emu.set_variants(paging=paging)
    path = tmp_path / "sites.wpcloud.yml"
    path.write_text(json.dumps({"plugin": "wpcloud.hosting.sites", "client": emu.client, "page_size": 3}))
    env = ansible_env(tmp_path, WPCLOUD_API_URL=emu.url, WPCLOUD_API_KEY=emu.api_key, WPCLOUD_CA_PATH=emu.ca_path,
                      ANSIBLE_INVENTORY_ENABLED="wpcloud.hosting.sites")
    proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(path), "--list"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    hosts = json.loads(proc.stdout)["wpcloud_account_sites"]["hosts"]
    assert sorted(hosts) == sorted(["dest1.example", "dest2.example", "dest3.example"]
                                   + ["inv-paged-%d.example" % n for n in range(5)])


# -- 3. the allow_site_migration column and flag -----------------------------------------------------------

@pytest.mark.parametrize("variant", ["refused", "dropped"])
def test_a_listing_without_the_flag_column_still_lists(emu, tmp_path, variant):
    emu.set_variants(list_allow_key=variant)
    tasks = {"list": ("wpcloud.hosting.site_info", {"client": "demo"}),
             "one": ("wpcloud.hosting.site_info", {"site": "1002"})}
    results, output = play(tmp_path, emu, tasks)
    assert [s["site_id"] for s in results["list"]["sites"]] == [1001, 1002, 1003]
    assert all(s["allow_site_migration"] is None for s in results["list"]["sites"])
    assert results["one"]["allow_site_migration"] is True   # read per site where it is needed


def test_a_created_site_that_lost_its_flag_is_reported_by_the_site_module(emu, tmp_path):
    emu.set_variants(create_allow_meta="dropped")
    tasks = {"new": ("wpcloud.hosting.site", {"client": "demo", "domain": "flagless.example", "admin_user": "admin",
                                              "admin_email": "admin@flagless.example", "poll_interval": 1})}
    results, output = play(tmp_path, emu, tasks)
    assert results["new"]["changed"] and results["new"]["allow_site_migration"] is False, results
    assert "did not keep its allow_site_migration" in " ".join(output.split())


def test_the_role_allows_a_created_site_that_lost_its_flag_and_migrates_it(run, emu):  # noqa: F811
    emu.set_variants(create_allow_meta="dropped")
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 0.5},
                                  "run": {"outcome": "success", "duration": 0.5}}})
    host = "lost-flag-%s.example" % secrets.token_hex(3)
    run.inventory(emu, {host: {}}, {"src.example": {"ansible_user": "www"}},
                  site_vars={"site_migration_source_host": "src.example", "site_migration_install_key": False,
                             "site_migration_client": emu.client, "site_migration_admin_user": "admin",
                             "site_migration_admin_email": "admin@example.com"})
    since = emu.requests_log()[-1]["seq"] if emu.requests_log() else 0
    proc = run.play()
    assert proc.returncode == 0, _explain(proc)
    log = emu.requests_log(since)
    assert len(_writes(log, "site.create")) == 1 and len(_writes(log, "site.allow_migration")) == 1
    allowed = [e["answered"] for e in _writes(log, "site.allow_migration")][0]   # cause and effect: not seq
    assert all(e["received"] > allowed for e in _writes(log, "migration.create"))
    assert [e["status"] for e in _writes(log, "migration.create")] == [200]
    report, by_host = run.last_report()
    assert by_host[host]["result"] == "succeeded" and by_host[host]["destination"] == "created"


# -- 4. job words ------------------------------------------------------------------------------------------

def _create(domain, **extra):
    return ("wpcloud.hosting.site", dict({"client": "demo", "domain": domain, "admin_user": "admin",
                                          "admin_email": "admin@%s" % domain, "poll_interval": 1,
                                          "wait_timeout": 20, "progress_interval": 1}, **extra))


def test_the_php_sdks_job_words_end_the_wait_at_once(emu, tmp_path):
    emu.set_variants(job_words="wpconcierge")
    results, output = play(tmp_path, emu, {"ok": _create("words-done.example"), "bad": _create("provfail.example")})
    assert not results["ok"].get("failed"), results["ok"]
    job = results["ok"]["job"]
    assert (job["status"], job["outcome"]) == ("done", "success") and job["elapsed"] < 10
    assert results["bad"]["failed"] and "failed (status failed)" in results["bad"]["msg"]
    assert results["bad"]["job"]["elapsed"] < 10


def test_an_unknown_job_word_keeps_polling_and_is_named(emu, tmp_path):
    emu.set_variants(job_words="Finished/Broken")
    results, output = play(tmp_path, emu, {"odd": _create("words-odd.example", wait_timeout=6)})
    assert results["odd"]["failed"] and results["odd"].get("timed_out")
    assert "still Finished (a status this collection does not know" in results["odd"]["msg"]
    assert "Finished (a status this collection does not know; still polling)" in output
