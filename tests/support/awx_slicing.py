"""The inventory AWX / Automation Controller gives one slice of a sliced job template, reproduced from AWX's
code (awx/main/models/inventory.py, Inventory.get_sliced_hosts and get_script_data(hostvars=True,
towervars=True, slice_number, slice_count), as awx/main/tasks/jobs.py build_inventory calls it for a job
with job_slice_number / job_slice_count), for tests/system/test_runner_slices.py and
tests/benchmarks/fleet/slices.py.

* every host of the inventory (sites and source hosts alike) sorted by name; slice k (1-based) takes
  hosts[k-1::K];
* each group lists only the slice's hosts and keeps its children and its variables, also when the slice
  leaves it without a host (AWX >= 4.0; AWX up to 3.0 dropped such a group with its variables);
* ``all`` has the inventory's variables, the slice's ungrouped hosts and every group as a child;
* ``_meta.hostvars`` holds the slice's hosts only, each with remote_tower_* / remote_host_* (towervars).

The controller writes the result into the job's private data directory as an executable script
(``inventory/hosts``), which ``write_script`` does the same way.
"""

import json
from pathlib import Path


def awx_slice(hostvars, groups, inventory_vars, number, count):
    """The inventory of slice ``number`` of ``count``. hostvars: {host: vars} of every inventory host;
    groups: {group: {"hosts": [...], "children": [...], "vars": {...}}} (each part optional)."""
    every = sorted(hostvars)                                    # .order_by('name')
    hosts = every[number - 1::count] if count > 1 and number > 0 else every
    data = {"all": {}}
    if inventory_vars:
        data["all"]["vars"] = inventory_vars
    grouped, group_hosts = set(), {}
    for group, spec in groups.items():
        for host in spec.get("hosts", []):
            if host in hosts:                                   # "host might not be in current shard"
                group_hosts.setdefault(group, []).append(host)
                grouped.add(host)
    data["all"]["hosts"] = [h for h in hosts if h not in grouped]
    for group, spec in groups.items():
        info = {}
        if group in group_hosts:
            info["hosts"] = group_hosts[group]
        if spec.get("children"):
            info["children"] = spec["children"]
        if spec.get("vars"):
            info["vars"] = spec["vars"]
        if info:
            data[group] = info
    if groups:
        data["all"]["children"] = list(groups)
    data["_meta"] = {"hostvars": {}}
    for host in hosts:
        host_id = every.index(host) + 1
        data["_meta"]["hostvars"][host] = dict(hostvars[host], remote_tower_enabled="true", remote_tower_id=host_id,
                                               remote_host_enabled="true", remote_host_id=host_id)
    return data


def write_script(pdd, inventory):
    """inventory/hosts of a private data directory, as the controller writes it (mode 0700)."""
    script = Path(pdd) / "inventory" / "hosts"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n" % json.dumps(inventory))
    script.chmod(0o700)
    return script
