"""docs/examples/inventory.yml, the layout docs/fleet.md teaches, accepted by every slice of an AWX sliced job
template (issue 38 item 5).

The example is read the way AWX imports a project's inventory file (``ansible-inventory --list --export``,
its group_vars/ and host_vars/ beside it, the examples' vault password of docs/migration.md), sliced the way
AWX slices it (tests/support/awx_slicing.py: every host sorted by name, slice k takes every K-th, groups keep
their variables in every slice), and each slice previews ``wpcloud.hosting.migrate_site --check`` against the
emulator. With two slices, the shared host's sites (news, shop) are in the slice without their source host,
``old-shared-host``: the layout where a site takes its address from the source host's variables refuses them
there ("not an inventory host of this run"); the example's group per source server carries the address into
every slice.
"""

import json
import subprocess

from awx_slicing import awx_slice, write_script
from playbooks import BIN, ROOT, ansible_env

EXAMPLES = ROOT / "docs" / "examples"
VAULT_PASSWORD = "example-vault-password"      # docs/migration.md: "vault password of the examples"
SITES = {"shop.example.com": (3001, "shop.example.com"), "news.example.com": (12345678, "news.example.com"),
         "blog.example.org": (3002, "blog.example.org")}


def imported(tmp_path):
    """The example as AWX's inventory import sees it: (hostvars, groups, inventory vars)."""
    password = tmp_path / "vault-password"
    password.write_text(VAULT_PASSWORD + "\n")
    proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(EXAMPLES / "inventory.yml"), "--list", "--export",
                           "--vault-password-file", str(password)], capture_output=True, text=True,
                          env=ansible_env(tmp_path), check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    hostvars = dict(data["_meta"]["hostvars"])
    groups = {}
    for name, group in data.items():
        if name in ("_meta", "all"):
            continue
        groups[name] = {key: group[key] for key in ("hosts", "children", "vars") if group.get(key)}
        for host in group.get("hosts", []):
            hostvars.setdefault(host, {})
    return hostvars, groups, data["all"].get("vars", {}), password


def test_every_slice_of_the_example_inventory_previews_its_sites(emu, tmp_path):
    for site_id, domain in SITES.values():
        emu.add_site(site_id, domain, allow_migration=False)
    hostvars, groups, inventory_vars, password = imported(tmp_path)
    assert set(SITES) <= set(hostvars)
    connection = {"wpcloud_api_url": emu.url, "wpcloud_api_key": emu.api_key, "wpcloud_ca_path": emu.ca_path}
    seen, count = {}, 2
    for number in range(1, count + 1):
        pdd = tmp_path / ("slice%d" % number)
        inventory = awx_slice(hostvars, groups, inventory_vars, number, count)
        script = write_script(pdd, inventory)
        in_slice = set(inventory["_meta"]["hostvars"])
        proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(script), "wpcloud.hosting.migrate_site", "--check",
                               "--vault-password-file", str(password), "-e", json.dumps(connection)],
                              capture_output=True, text=True, env=ansible_env(pdd), cwd=str(pdd), check=False, timeout=300)
        output = proc.stdout + proc.stderr
        sites_here = in_slice & set(SITES)
        if not sites_here:
            continue
        assert proc.returncode == 0, output[-5000:]
        [report] = (pdd / "inventory" / "wpcloud-reports").glob("*.json")
        results = {site["host"]: site["result"] for site in json.loads(report.read_text())["sites"]}
        assert results == dict.fromkeys(sites_here, "checked"), output[-5000:]
        seen.update(results)
    assert set(seen) == set(SITES)
    # the case this layout is for: a slice holds sites of old-shared-host but not the host itself
    slices = [set(awx_slice(hostvars, groups, inventory_vars, k, count)["_meta"]["hostvars"]) for k in range(1, count + 1)]
    assert any({"news.example.com", "shop.example.com"} & hosts and "old-shared-host" not in hosts for hosts in slices)
    assert [e for e in emu.requests_log() if e["write"]] == []
