"""Every module gives the same result served by its action plugin (controller) and as a classic module.

Runs one playbook that exercises all seven modules, success and failure paths, once with
wpcloud_hosting_execution=controller and once with =module, each against an emulator reset to the
same state, and compares the registered results after removing values that differ by nature
(ticket IDs, timings, timestamps).
"""

import json
import re

from playbooks import emulator_vars, run_playbook

PLAYBOOK = r"""
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: "{{ wpcloud_api_url }}"
      api_key: "{{ wpcloud_api_key }}"
      ca_path: "{{ wpcloud_ca_path }}"
  vars:
    hmac: "{{ 'Zq9' ~ ('0123456789abcdef' * 3) }}"
  tasks:
    - name: meta url
      wpcloud.hosting.client_meta: {client: demo, key: webhook_url, value: "https://hooks.example.com/a"}
      register: r01
      diff: true
    - {name: meta url again, wpcloud.hosting.client_meta: {client: demo, key: webhook_url, value: "https://hooks.example.com/a"}, register: r02}
    - {name: meta bad, wpcloud.hosting.client_meta: {client: demo, key: webhook_url, value: "http://x"}, register: r03, ignore_errors: true}
    - name: meta secret
      wpcloud.hosting.client_meta: {client: demo, key: webhook_hmac_key, secret_value: "{{ hmac }}"}
      register: r04
      diff: true
    - {name: meta secret in value, wpcloud.hosting.client_meta: {client: demo, key: webhook_hmac_key, value: "{{ hmac }}"}, register: r05, ignore_errors: true}
    - {name: meta unsupported, wpcloud.hosting.client_meta: {client: demo, key: k, value: v, bogus: 1}, register: r06, ignore_errors: true}
    - {name: allow unconfirmed, wpcloud.hosting.site_allow_migration: {site: "61001"}, register: r07, ignore_errors: true}
    - {name: allow check, wpcloud.hosting.site_allow_migration: {site: "61001", confirm_overwrite: true}, register: r08, check_mode: true}
    - {name: allow, wpcloud.hosting.site_allow_migration: {site: "61001", confirm_overwrite: true}, register: r09}
    - name: create
      wpcloud.hosting.migration: {site: "61001", remote_host: src.example, remote_user: www, remote_pass: "p@ss-Canary-1", remote_domain: ""}
      register: r10
      diff: true
    - {name: create again, wpcloud.hosting.migration: {site: "61001", remote_host: src.example, remote_user: www}, register: r11}
    - {name: bad port, wpcloud.hosting.migration: {site: "61001", remote_port: 65536}, register: r12, ignore_errors: true}
    - {name: info, wpcloud.hosting.migration_info: {site: "61001"}, register: r13}
    - {name: ready refused, wpcloud.hosting.migration_ready: {migration_id: "{{ r10.migration_id }}"}, register: r14, ignore_errors: true}
    - {name: preflight, wpcloud.hosting.migration_preflight: {migration_id: "{{ r10.migration_id }}", messages: always}, register: r15}
    - {name: ready, wpcloud.hosting.migration_ready: {migration_id: "{{ r10.migration_id }}", wait: false}, register: r16}
    - {name: wait, wpcloud.hosting.response_ticket_wait: {ticket_ids: ["{{ r16.ticket_id }}"], messages: always}, register: r17}
    - {name: wait unknown, wpcloud.hosting.response_ticket_wait: {ticket_id: "nope.1"}, register: r18, ignore_errors: true}
    - {name: fail preflight, wpcloud.hosting.migration: {site: "61002", remote_host: authfail.example, remote_user: www}, register: r19}
    - {name: preflight fails, wpcloud.hosting.migration_preflight: {migration_id: "{{ r19.migration_id }}"}, register: r20, ignore_errors: true}
    - name: keep results
      ansible.builtin.copy:
        dest: "{{ results_file }}"
        content: "{{ [r01, r02, r03, r04, r05, r06, r07, r08, r09, r10, r11, r12, r13, r14, r15, r16, r17, r18, r19, r20] | to_json }}"
        mode: "0600"
"""

VOLATILE = {"ticket_id", "elapsed", "polls", "created", "updated", "exception", "response_count", "ssh_id_pub",
            "ssh-id-pub"}  # generated keys differ per run


def normalise(value):
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in VOLATILE else normalise(v)) for k, v in value.items()
                if k not in ("warnings", "deprecations", "_ansible_no_log")}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"[0-9a-f]{20,}\.[0-9a-f]{10,}\.\d+", "<ticket>", value)
    return value


def run_once(emu, tmp_path, execution):
    emu.reset()
    emu.add_site(61001, "both-ways-1.example", allow_migration=False)
    emu.add_site(61002, "both-ways-2.example", allow_migration=True)
    playbook = tmp_path / "both.yml"
    playbook.write_text(PLAYBOOK)
    results = tmp_path / ("results-%s.json" % execution)
    extra = dict(emulator_vars(emu), results_file=str(results), wpcloud_hosting_execution=execution)
    dummy, output = run_playbook(tmp_path, playbook, extra, env=None)
    writes = [r["endpoint"] for r in emu.requests_log() if r["write"]]
    text = results.read_text()
    # Migration IDs come from a counter that a reset does not rewind: name them by role.
    parsed = json.loads(text)
    for name, index in (("900000001", 9), ("900000002", 18)):
        text = re.sub(r"\b%s\b" % parsed[index]["migration_id"], name, text)
    return json.loads(text), output, writes


def test_controller_and_classic_module_results_are_identical(emulator, tmp_path):
    controller, out_c, writes_c = run_once(emulator, tmp_path, "controller")
    module, out_m, writes_m = run_once(emulator, tmp_path, "module")
    assert len(controller) == len(module) == 20
    for index, (left, right) in enumerate(zip(controller, module), start=1):
        assert normalise(left) == normalise(right), "result r%02d differs" % index
    # Same calls that write, in the same order; the same failures.
    assert writes_c == writes_m
    assert [r.get("failed", False) for r in controller] == [False, False, True, False, True, True, True, False,
                                                            False, False, False, True, False, True, False, False,
                                                            False, True, False, True]
    assert controller[19]["diagnosis"]["code"] == "auth_failed"
    # Secrets are masked the same way on both paths.
    for output in (out_c, out_m):
        assert "p@ss-Canary-1" not in output
        assert ("0123456789abcdef" * 3) not in output
