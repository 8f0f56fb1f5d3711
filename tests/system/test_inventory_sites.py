"""The sites inventory plugin against the emulator: 1,000 sites through several pages, grouped by a
keyed_groups rule, in ansible-inventory itself; no credential in any host variable; the cache; an
unknown option and a missing key refused by name."""

import json
import re
import statistics
import subprocess
import time

import pytest

from playbooks import BIN, ansible_env

SITES = 1000
FIRST = 610001
PAGE = 400


@pytest.fixture(scope="module")
def thousand(emulator):
    emulator.reset()
    status, body = emulator._request("POST", "/_emulator/sites", json_body={"sites": [
        {"id": FIRST + n, "domain": "inv-%d.example" % (FIRST + n), "allow_migration": n % 3 == 0,
         "provisioned": True} for n in range(SITES)]})
    assert status == 200, body
    yield emulator
    emulator.reset()


def inventory_file(tmp_path, emu, **extra):
    config = dict({"plugin": "wpcloud.hosting.sites", "client": emu.client, "page_size": PAGE,
                   "keyed_groups": [{"key": "wpcloud_allow_site_migration | ternary('destinations', 'others')",
                                     "prefix": "", "separator": ""}],
                   "compose": {"site_migration_site": "wpcloud_site_id"}}, **extra)
    path = tmp_path / "sites.wpcloud.yml"
    path.write_text(json.dumps(config))
    return path


def ansible_inventory(tmp_path, emu, path, *args, env_extra=None):
    given = dict({"WPCLOUD_API_URL": emu.url, "WPCLOUD_API_KEY": emu.api_key, "WPCLOUD_CA_PATH": emu.ca_path},
                 **(env_extra or {}))
    env = ansible_env(tmp_path, **given)
    env["ANSIBLE_INVENTORY_ENABLED"] = "wpcloud.hosting.sites"
    started = time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(path)] + list(args), env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return proc, time.monotonic() - started


def test_a_thousand_sites_in_pages_grouped(thousand, tmp_path):
    emu = thousand
    path = inventory_file(tmp_path, emu)
    walls = []
    for dummy in range(3):
        since = emu.requests_log()[-1]["seq"] if emu.requests_log() else 0
        proc, wall = ansible_inventory(tmp_path, emu, path, "--graph")
        assert proc.returncode == 0, proc.stderr[-3000:]
        walls.append(wall)
    pages = [e for e in emu.requests_log(since) if e["endpoint"] == "site.list"]
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[0]
    print("ansible-inventory --graph, %d sites, %d pages: %s s (median %.2f s), load %s"
          % (SITES, len(pages), ", ".join("%.2f" % w for w in walls), statistics.median(walls), load))
    assert len(pages) == SITES // PAGE + 2 or len(pages) >= 3          # 400, 400, 200+seed, then an empty page
    assert "@destinations:" in proc.stdout and "@others:" in proc.stdout, proc.stderr[-2000:]
    assert len(set(re.findall(r"inv-\d+\.example", proc.stdout))) == SITES
    # The walls are printed, not asserted (they follow the machine's load): a page per request, not a call
    # per site, is what the page count above checks.


def test_no_credential_or_key_in_any_host_variable(thousand, tmp_path):
    emu = thousand
    proc, wall = ansible_inventory(tmp_path, emu, inventory_file(tmp_path, emu), "--list")
    assert proc.returncode == 0, proc.stderr[-3000:]
    listed = json.loads(proc.stdout)
    hostvars = listed["_meta"]["hostvars"]
    assert len([h for h in hostvars if h.startswith("inv-")]) == SITES
    one = hostvars["inv-%d.example" % FIRST]
    assert one["wpcloud_site_id"] == FIRST and one["wpcloud_allow_site_migration"] is True
    assert one["site_migration_site"] == FIRST
    for field in ("db_pass", "smtp_pass", "site_api_key"):
        assert field not in proc.stdout
    assert emu.api_key not in proc.stdout and emu.api_key not in proc.stderr
    site = emu.site(FIRST)
    for secret in [v for k, v in site.items() if k in ("db_pass", "smtp_pass", "site_api_key") and v]:
        assert secret not in proc.stdout


def test_the_cache_answers_the_second_run(thousand, tmp_path):
    emu = thousand
    path = inventory_file(tmp_path, emu, cache=True, cache_plugin="ansible.builtin.jsonfile",
                          cache_connection=str(tmp_path / "cache"), cache_timeout=300)
    first, dummy = ansible_inventory(tmp_path, emu, path, "--graph")
    assert first.returncode == 0, first.stderr[-3000:]
    since = emu.requests_log()[-1]["seq"]
    second, dummy = ansible_inventory(tmp_path, emu, path, "--graph")
    assert second.returncode == 0 and second.stdout == first.stdout
    assert [e for e in emu.requests_log(since) if e["endpoint"] == "site.list"] == []


def test_an_unknown_option_and_a_missing_key_are_refused_by_name(thousand, tmp_path):
    emu = thousand
    path = inventory_file(tmp_path, emu, page_sise=10)
    proc, dummy = ansible_inventory(tmp_path, emu, path, "--graph")
    assert "page_sise" in proc.stderr
    path = inventory_file(tmp_path, emu)
    env_extra = {"WPCLOUD_API_KEY": ""}
    proc, dummy = ansible_inventory(tmp_path, emu, path, "--graph", env_extra=env_extra)
    assert "WPCLOUD_API_KEY" in proc.stderr
