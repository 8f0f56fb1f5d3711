"""The going-live modules against every reading of the service (issue 37): site_domain_info, site_domain and
site_backup through ansible-playbook, against the emulator switched to what the owner's panel, the PHP SDK or the
Python SDK suggest the service may answer (tests/support/emulator/variants.py; docs/api-choices.md "Going live").

Each profile sets several switches at once, as one source reads the service; every value of every going-live
switch is in a profile (test_every_going_live_switch_value_is_run), and the docs' reading is a profile of its own.
One playbook per profile walks the whole road: the DNS records previewed, the cutover (an alias added, the primary
switched, the old one kept), a re-run that writes nothing, DNS arriving and failed certificates retried, a backup
waited for until listed, a re-run that writes nothing, a restore compared with the pre-refresh content, the backups
deleted.
"""

import json
import secrets

import pytest
import variants

from playbooks import EMULATOR_HOOK_DIR, ansible_env, emulator_vars, run_playbook
from test_module_execution import PLAY

# Which switches are the going-live ones: those after job_words in the emulator's table.
GOING_LIVE = list(variants.SWITCHES)[list(variants.SWITCHES).index("job_words") + 1:]

PROFILES = {
    "docs": {},
    "owners-panel": {"service_form": "client-id", "ssl_info_key": "domain-or-id", "domain_job_answer": "minimal",
                     "alias_repeat": "refused", "alias_event": "none", "backup_listing": "at-once",
                     "backup_id_form": "integer", "restore_answer": "job", "backup_request_answer": "job-id"},
    "php-sdk": {"service_form": "any-service", "domain_job_answer": "string-id", "same_domain_answer": "refused",
                "ssl_pending_answer": "empty", "ssl_cert_field": "ssl", "backup_id_form": "prefixed",
                "backup_type_segments": "one", "backup_timestamp_form": "unix", "restore_order": "files-first",
                "backup_listing": "lagging"},
    "python-sdk": {"service_form": "domain", "same_domain_answer": "job", "alias_list": "with-primary",
                   "ips_shape": "list", "ssl_after_dns": "next-retry", "domain_db_update": "siteurl"},
}

# Short windows: the test is about the answers, not the timings.
WINDOWS = {
    "provisioning": {"default": {"domain": {"queued": 0.1, "duration": 0.4}, "restore": {"queued": 0.1, "duration": 0.4}}},
    "ssl": {"attempt": 0.2, "retry_base": 0.5, "retry_cap": 2.0},
    "backups": {"create": {"acknowledged": 0.05, "duration": 0.3}, "delete": {"acknowledged": 0.05, "duration": 0.3},
                "list_lag": 0.5},
}

MARK = """
    - name: Mark the request log ({name})
      emulator_hook: {{path: requests}}
      register: {name}
"""

PLAYBOOK = PLAY + """
    - name: Preview the production domain's DNS records
      wpcloud.hosting.site_domain_info: {client: "{{ wpcloud_client }}", site: "{{ site }}", domains: ["{{ prod }}"]}
      register: preview

    - name: Cut over
      wpcloud.hosting.site_domain: &cutover
        client: "{{ wpcloud_client }}"
        site: "{{ staging }}"
        domain: "{{ prod }}"
        keep_old_domain: true
        aliases: ["www.{{ prod }}"]
        poll_interval: 1
      register: cutover
""" + MARK.format(name="mark_a") + """
    - name: Cut over again
      wpcloud.hosting.site_domain: *cutover
      register: cutover_again
""" + MARK.format(name="mark_b") + """
    - name: DNS arrives
      emulator_hook: {path: dns, method: POST, body: {domain: "{{ item }}", arrived: true}}
      loop: ["{{ prod }}", "www.{{ prod }}"]

    - name: Wait for the certificates
      wpcloud.hosting.site_domain: {client: "{{ wpcloud_client }}", site: "{{ site }}", aliases: [], ssl_retry: true}
      register: certs
      until: certs.domains | rejectattr('ssl', 'equalto', 'issued') | list == []
      retries: 20
      delay: 1

    - name: Read where the site's files and database are
      emulator_hook: {path: "sites/{{ site }}"}
      register: emulated

    - name: The content before the refresh
      ansible.builtin.copy: {content: "before {{ item }}", dest: "{{ emulated.json.storage }}/{{ item }}", mode: "0644"}
      loop: [db.sql]

    - name: Back up
      wpcloud.hosting.site_backup: &backup {client: "{{ wpcloud_client }}", site: "{{ site }}", poll_interval: 1}
      register: backup
""" + MARK.format(name="mark_c") + """
    - name: Back up again
      wpcloud.hosting.site_backup: *backup
      register: backup_again
""" + MARK.format(name="mark_d") + """
    - name: The refresh overwrites the database
      ansible.builtin.copy: {content: "after", dest: "{{ emulated.json.storage }}/db.sql", mode: "0644"}

    - name: Restore (the database backup named first)
      wpcloud.hosting.site_backup:
        client: "{{ wpcloud_client }}"
        site: "{{ site }}"
        state: restored
        backup_ids: "{{ backup.backup_ids | reverse | list }}"
        confirm_overwrite: true
        poll_interval: 1
      register: restored

    - name: Read the restored database
      ansible.builtin.slurp: {src: "{{ emulated.json.storage }}/db.sql"}
      register: database

    - name: Delete the backups
      wpcloud.hosting.site_backup: {client: "{{ wpcloud_client }}", site: "{{ site }}", state: absent}
      register: deleted

    - name: Write the results
      ansible.builtin.copy:
        dest: "{{ results_file }}"
        mode: "0600"
        content: "{{ {'preview': preview, 'cutover': cutover, 'cutover_again': cutover_again, 'certs': certs,
                      'backup': backup, 'backup_again': backup_again, 'restored': restored, 'deleted': deleted,
                      'database': database.content | b64decode,
                      'marks': [mark_a, mark_b, mark_c, mark_d] | map(attribute='json') | map(attribute='clock')
                               | list} | to_json }}"
"""


def test_every_going_live_switch_value_is_run():
    for switch in GOING_LIVE:
        default, values = variants.SWITCHES[switch][:2]
        run = set(profile.get(switch, default) for profile in PROFILES.values())
        assert run == set(values), (switch, sorted(set(values) - run))


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_the_road_to_live_whatever_the_reading(emu, tmp_path, profile):
    for hook, config in WINDOWS.items():
        getattr(emu, "set_" + hook)(config)
    emu.set_variants(**PROFILES[profile])
    tag = secrets.token_hex(3)
    site, staging, prod = 46001 + sorted(PROFILES).index(profile), "staging-%s.example" % tag, "shop-%s.example" % tag
    emu.add_site(site, staging)
    playbook = tmp_path / "golive.yml"
    playbook.write_text(PLAYBOOK)
    results_file = tmp_path / "results.json"
    given = dict(emulator_vars(emu), wpcloud_emulator_url=emu.url, results_file=str(results_file), site=site,
                 staging=staging, prod=prod)
    # The emulator's hooks in the controller process (a uri task started a module process each).
    env = ansible_env(tmp_path, ANSIBLE_ACTION_PLUGINS=EMULATOR_HOOK_DIR)
    proc, output = run_playbook(tmp_path, playbook, given, env=env, check=False, timeout=600)
    assert proc.returncode == 0, output[-6000:]
    r = json.loads(results_file.read_text())
    log = emu.requests_log()

    def writes(after, until):
        # by the emulator's clock: a request answered before a mark may be logged after it (seq)
        return [e["endpoint"] for e in log if after < e["received"] < until and e["write"]]

    mark_a, mark_b, mark_c, mark_d = r["marks"]
    planned = r["preview"]["domains"][-1]
    assert (planned["domain"], planned["role"], planned["attachable"]) == (prod, "planned", True)
    assert [x["type"] for x in planned["dns_records"]] == ["A", "A"]
    cutover = r["cutover"]
    assert (cutover["domain"], cutover["domain_switch"], cutover["job"]["outcome"]) == (prod, "switched", "success")
    assert cutover["aliases"] == sorted([staging, "www." + prod])
    assert sorted(d["domain"] for d in cutover["domains"] if d["ssl"] != "issued") == sorted([prod, "www." + prod])
    assert writes(0, mark_a) == ["site.alias_add", "site.update_domain"]
    assert writes(mark_a, mark_b) == [] and r["cutover_again"]["changed"] is False
    assert r["certs"]["dns_records"] == [] and [d["ssl"] for d in r["certs"]["domains"]] == ["issued"] * 3
    backup = r["backup"]
    assert len(backup["backup_ids"]) == 2 and all(isinstance(i, str) for i in backup["backup_ids"])
    assert writes(mark_b, mark_c).count("backup.create") == 2
    assert writes(mark_c, mark_d) == [] and r["backup_again"]["backup_ids"] == backup["backup_ids"]
    assert r["restored"]["job"]["outcome"] == "success" and r["restored"]["suspended"] is False
    assert r["database"] == "before db.sql"
    assert r["deleted"]["backups"] == [] and len(r["deleted"]["actions"]) == 2
    print(json.dumps({"profile": profile, "calls": {name: r[name]["api_load"]["calls"] for name in
                                                    ("cutover", "cutover_again", "backup", "restored")}}))
