"""Every module gives the same result served by its action plugin (controller) and as a classic module.

Runs one playbook that exercises all seven modules, success and failure paths, once with
wpcloud_hosting_execution=controller and once with =module, each against an emulator reset to the
same state, and compares the registered results after removing values that differ by nature
(ticket IDs, timings, timestamps).
"""

import json
import re
import subprocess
import time

import pytest

from launcher import start_emulator
from playbooks import BIN, ansible_env, emulator_vars, localhost_inventory, run_playbook

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
            "ssh-id-pub",   # generated keys differ per run
            "api_load"}     # how many polls a wait took depends on when each poll fell


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


# -- check mode across a module-level workflow (issue 13) ----------------------------------------------------

# One play on localhost with the connection options once; the tasks follow.
PLAY = r"""
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: "{{ wpcloud_api_url }}"
      api_key: "{{ wpcloud_api_key }}"
      ca_path: "{{ wpcloud_ca_path }}"
  tasks:
"""

CHECK_PLAYBOOK = PLAY + r"""
    - name: Allow a migration into the site
      wpcloud.hosting.site_allow_migration: {site: "{{ site }}", confirm_overwrite: true}
      register: allowed
    - name: Create the migration (or update it)
      wpcloud.hosting.migration: {site: "{{ site }}", remote_host: src.example, remote_user: www, remote_port: 2022}
      register: created
    - name: Read it
      wpcloud.hosting.migration_info: {migration_id: "{{ created.migration_id }}"}
      register: info
    - name: Preflight
      wpcloud.hosting.migration_preflight: {migration_id: "{{ created.migration_id }}"}
      register: preflight
    - name: Run
      wpcloud.hosting.migration_ready: {migration_id: "{{ created.migration_id }}"}
      register: ready
    - name: Preflight again without waiting
      wpcloud.hosting.migration_preflight: {migration_id: "{{ created.migration_id }}", wait: false}
      register: started
    - name: Wait for its ticket
      wpcloud.hosting.response_ticket_wait: {ticket_id: "{{ started.ticket_id }}"}
      register: waited
    - name: The same as a fleet
      wpcloud.hosting.migration:
        remote_host: src.example
        remote_user: www
        migrations: [{site: "{{ site }}"}, {site: "{{ other_site }}"}]
      register: fleet
    - name: Preflight the fleet
      wpcloud.hosting.migration_preflight: {migration_ids: "{{ fleet.results | map(attribute='migration_id') | list }}"}
      register: fleet_preflight
    - name: Run the fleet
      wpcloud.hosting.migration_ready: {migration_ids: "{{ fleet.results | map(attribute='migration_id') | list }}"}
      register: fleet_ready
    - name: Follow the fleet's runs
      wpcloud.hosting.response_ticket_wait: {migration_ids: "{{ fleet.results | map(attribute='migration_id') | list }}"}
      register: fleet_wait
    - name: Keep the results
      ansible.builtin.copy:
        dest: "{{ results_file }}"
        content: "{{ dict(allowed=allowed, created=created, info=info, preflight=preflight, ready=ready,
                          started=started, waited=waited, fleet=fleet, fleet_preflight=fleet_preflight,
                          fleet_ready=fleet_ready, fleet_wait=fleet_wait) | to_json }}"
        mode: "0600"
      check_mode: false
"""


def check_run(emu, tmp_path, name, args, execution="controller", existing=False):
    emu.reset()
    emu.add_site(62001, "check-new.example", allow_migration=existing)
    emu.add_site(62002, "check-other.example", allow_migration=True)
    if existing:
        # a migration in state new: its preflight will only run in check mode
        status, body = emu.api("migration/create/62001", "POST", {"remote-host": "src.example", "remote-user": "www"})
        assert status == 200, body
    playbook = tmp_path / "check.yml"
    playbook.write_text(CHECK_PLAYBOOK)
    results = tmp_path / ("check-%s.json" % name)
    since = (emu.requests_log() or [{"seq": 0}])[-1]["seq"]
    extra = dict(emulator_vars(emu), results_file=str(results), wpcloud_hosting_execution=execution,
                 site="62001", other_site="62002")
    dummy, output = run_playbook(tmp_path, playbook, extra, args=args)
    return json.loads(results.read_text()), output, emu.requests_log(since)


def test_a_workflow_in_check_mode_says_what_it_would_do_and_writes_nothing(emulator, tmp_path):
    runs = [("new-check", ["--check"], "controller", False),
            ("new-check-diff", ["--check", "--diff"], "controller", False),
            ("existing-check-diff", ["--check", "--diff"], "controller", True),
            ("new-check-diff-module", ["--check", "--diff"], "module", False)]
    for name, args, execution, existing in runs:
        r, output, log = check_run(emulator, tmp_path, name, args, execution, existing)
        assert [(e["method"], e["endpoint"]) for e in log if e["write"]] == [], name
        assert "failed=0" in output, (name, output[-3000:])
        steps = ("created", "preflight", "ready", "started", "fleet", "fleet_preflight", "fleet_ready")
        assert [s for s in steps if not r[s]["changed"]] == [], name
        assert r["allowed"]["changed"] is not existing
        assert not any(r[s].get("failed") for s in r), name
        if existing:
            # a migration that exists, whose preflight only ran in check mode: ready says what it would do
            assert isinstance(r["created"]["migration_id"], int)
            assert "once a preflight succeeds" in r["ready"]["msg"]
        else:
            assert r["created"]["migration_id"] is None and r["info"]["exists"] is False
            for step in ("preflight", "ready", "started"):
                assert r[step]["msg"].startswith("check mode: migration_id is null"), (name, step, r[step])
            assert "nothing to wait for" in r["waited"]["msg"] and r["waited"]["changed"] is False
            assert "2 null IDs in migration_ids" in r["fleet_preflight"]["msg"], r["fleet_preflight"]
            assert "2 null IDs" in r["fleet_wait"]["msg"] and r["fleet_wait"]["changed"] is False
        if "--diff" in args:
            assert "remote-port" in output, name   # the create's diff is shown


# -- progress while waiting (issue 13) -------------------------------------------------------------------------

PROGRESS_PLAYBOOK = PLAY + r"""
    - name: Two migrations
      wpcloud.hosting.migration:
        remote_host: slow.example
        remote_user: www
        migrations: [{site: "63001"}, {site: "63002"}]
      register: fleet
    - name: Preflight both
      wpcloud.hosting.migration_preflight:
        migration_ids: "{{ fleet.results | map(attribute='migration_id') | list }}"
        progress_interval: 1
    - name: Run one
      wpcloud.hosting.migration_ready:
        migration_id: "{{ fleet.results[0].migration_id }}"
        progress_interval: 1
"""


@pytest.fixture
def slow_emulator(tmp_path):
    emu = start_emulator(tmp_path / "emulator", extra_args=["--accept-delay", "0.3"])
    emu.set_executor({"default": {"preflight": {"outcome": "success", "duration": 4},
                                  "run": {"outcome": "success", "duration": 4}}})
    emu.add_site(63001, "progress-1.example", allow_migration=True)
    emu.add_site(63002, "progress-2.example", allow_migration=True)
    yield emu
    emu.stop()


def run_piped(emu, tmp_path, execution):
    """ansible-playbook with its output piped to a file, as in CI or `| tee`; returns the file's text and, per
    progress line, how many seconds before the end of the run it was already in the file."""
    playbook = tmp_path / "progress.yml"
    playbook.write_text(PROGRESS_PLAYBOOK)
    out = tmp_path / ("progress-%s.txt" % execution)
    extra = dict(emulator_vars(emu), wpcloud_hosting_execution=execution)
    cmd = [str(BIN / "ansible-playbook"), "-i", str(localhost_inventory(tmp_path)), str(playbook),
           "-e", json.dumps(extra)]
    first_seen = {}
    with open(out, "w") as handle:
        proc = subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT, env=ansible_env(tmp_path),
                                cwd=str(tmp_path))
        while proc.poll() is None:
            for line in out.read_text().splitlines():
                first_seen.setdefault(line, time.monotonic())
            time.sleep(0.1)
    end = time.monotonic()
    text = out.read_text()
    assert proc.returncode == 0, text[-3000:]
    lead = {line: end - seen for line, seen in first_seen.items() if PROGRESS_LINE.search(line)}
    return text, lead


PROGRESS_LINE = re.compile(r"^\[localhost\] (migration_preflight|migration_ready)(: migration \d+)?: ")


def test_progress_lines_reach_a_pipe_while_the_wait_runs(slow_emulator, tmp_path):
    text, lead = run_piped(slow_emulator, tmp_path, "controller")
    lines = [line for line in text.splitlines() if PROGRESS_LINE.search(line)]
    fleet = [line for line in lines if line.startswith("[localhost] migration_preflight: ")]
    single = [line for line in lines if line.startswith("[localhost] migration_ready: migration ")]
    assert len(fleet) >= 3 and len(single) >= 3, text
    assert re.match(r"^\[localhost\] migration_preflight: [0-2]/2 done \(0 failed\), [0-2] running, \d+ s elapsed$",
                    fleet[0]), fleet
    assert re.match(r"^\[localhost\] migration_ready: migration \d+: ticket \S+ (pending|running) \(\d+ responses?\), "
                    r"\d+ s elapsed$", single[-1]), single
    # streamed: the first preflight line was in the file while the run had seconds to go
    assert max(lead[line] for line in fleet) > 4, lead
    assert slow_emulator.api_key not in text


def test_the_classic_module_path_cannot_stream_progress(slow_emulator, tmp_path):
    """Documented in the WAIT fragment: a module process's output is read when it ends."""
    text, lead = run_piped(slow_emulator, tmp_path, "module")
    assert lead == {} and "failed=0" in text
