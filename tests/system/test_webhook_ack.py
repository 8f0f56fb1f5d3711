"""Acknowledgements end to end: the webhook_ack module in real ansible-playbook runs against a live
event source (into its spool, and over HTTPS to its receiver), the source handing over again what was
not acknowledged in time, the operator playbook (wpcloud.hosting.webhook_events), and the signing key
and ack token never reaching the actions ansible-rulebook runs."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest
import yaml

import webhook_harness as wh
from playbooks import ROOT, ansible_env, run_playbook

pytest.importorskip("aiohttp")

KEY = "ack-test-key-0123456789abcdef0123"
ACK_TOKEN = "ack-test-token-7e1f0c9b2d4a6f8e0a1c3b5d"


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return wh.tls(tmp_path_factory.mktemp("tls"))


READ_MARGIN = 5.0      # seconds: far above the source's 0.1 s journal reads, however loaded the machine


def journal_entries(spool):
    path = spool / "processing.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def ack_playbook(path, tasks):
    path.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}], sort_keys=False))
    return path


def test_playbooks_acknowledge_into_the_spool_and_over_https(tls, tmp_path):
    port = wh.free_port()
    spool = tmp_path / "spool"
    url = "https://127.0.0.1:%d" % port
    # ack_timeout above the time the -vvv playbook below needs on a loaded machine (3 s was not: at a
    # load average of 9 on 2 cores every event came again before its acknowledgement arrived)
    args = wh.source_args(spool, tls, port, KEY, ack_timeout=15, ack_token=ACK_TOKEN, ack_url=url + "/_wpcloud/ack")
    source = wh.Source(args, queue_size=8).start()
    try:
        bodies = [wh.signed(KEY, "site_provisioned", 5100 + n) for n in range(4)]
        for body in bodies:
            assert wh.post(url + "/wpcloud", body, tls["ca"])[0] == 200
        source.wait_events(4)
        events = source.events[:4]
        ids = [e["meta"]["delivery_id"] for e in events]
        assert ids == [wh.delivery_id_of(b) for b in bodies]
        assert events[0]["meta"]["ack"] == {"spool_dir": str(spool), "url": url + "/_wpcloud/ack"}
        assert [e["meta"]["attempt"] for e in events] == [1, 1, 1, 1]

        env = ansible_env(tmp_path, WPCLOUD_WEBHOOK_ACK_TOKEN=ACK_TOKEN, WPCLOUD_WEBHOOK_ACK_CA_PATH=tls["ca"])
        playbook = ack_playbook(tmp_path / "ack.yml", [
            {"name": "check mode first", "wpcloud.hosting.webhook_ack": {"event": "{{ events[0] }}"},
             "check_mode": True, "register": "checked"},
            {"name": "into the spool (the source's directory is on this machine)",
             "wpcloud.hosting.webhook_ack": {"event": "{{ events[0] }}"}, "register": "by_file"},
            {"name": "again: already acknowledged", "wpcloud.hosting.webhook_ack": {"event": "{{ events[0] }}"},
             "register": "again"},
            {"name": "over HTTPS (as a job template on another node)",
             "wpcloud.hosting.webhook_ack": {"event": "{{ events[1] }}", "via": "http"}, "register": "by_http"},
            {"name": "by delivery id and URL",
             "wpcloud.hosting.webhook_ack": {"delivery_id": "{{ events[2].meta.delivery_id }}",
                                             "url": url + "/_wpcloud/ack"}, "register": "by_id"},
            {"name": "the results", "ansible.builtin.assert": {"that": [
                "checked is changed and checked.via == 'file'",
                "by_file is changed and by_file.recorded and by_file.via == 'file' and by_file.attempt == 1",
                "again is not changed and not again.recorded",
                "by_http is changed and by_http.via == 'http' and by_http.url is search('/_wpcloud/ack$')",
                "by_id is changed and by_id.via == 'http'"]}},
        ])
        proc, output = run_playbook(tmp_path, playbook, {"events": events}, args=["-vvv"], env=env)
        assert "failed=0" in output
        assert ACK_TOKEN not in output and KEY not in output

        # the fourth is not acknowledged: handed over again after ack_timeout, with its attempt (looked up by
        # its id: on a machine loaded enough that the playbook above outlasts ack_timeout, the first three
        # come again too, before their acknowledgements arrive)
        def fourth_again():
            return [e for e in source.events[4:] if e["meta"]["delivery_id"] == ids[3]]
        again = wh.wait_for(fourth_again, 45, 0.1, "the fourth event handed over again")[0]
        assert (again["meta"]["delivery_id"], again["meta"]["attempt"]) == (ids[3], 2)
        proc, output = run_playbook(tmp_path, ack_playbook(tmp_path / "ack4.yml", [
            {"name": "the second attempt acknowledges", "wpcloud.hosting.webhook_ack": {"event": "{{ event }}"}}]),
            {"event": again}, env=env)
        wh.wait_for(lambda: wh.healthz(url, tls["ca"])["backlog"] == 0, 10, 0.1, "everything done")

        failures = ack_playbook(tmp_path / "fail.yml", [
            {"name": "wrong token",
             "wpcloud.hosting.webhook_ack": {"event": "{{ events[0] }}", "via": "http",
                                             "token": "wrong-token-0123456789abcdef0123456789"},
             "ignore_errors": True, "register": "wrong"},
            {"name": "unknown delivery", "wpcloud.hosting.webhook_ack": {
                "delivery_id": "sig-" + "e" * 32, "url": url + "/_wpcloud/ack"}, "ignore_errors": True,
             "register": "unknown"},
            {"name": "both event and delivery_id", "wpcloud.hosting.webhook_ack": {
                "event": "{{ events[0] }}", "delivery_id": "sig-" + "e" * 32}, "ignore_errors": True,
             "register": "both"},
            {"name": "the messages", "ansible.builtin.assert": {"that": [
                "wrong is failed and wrong.msg is search('refused the token \\\\(HTTP 401\\\\)')",
                "unknown is failed and unknown.msg is search('answered 404 \\\\(unknown delivery id')",
                "both is failed and both.msg is search('mutually exclusive')"]}},
        ])
        proc, output = run_playbook(tmp_path, failures, {"events": events}, args=["-vvv"], env=env)
        assert ACK_TOKEN not in output and "wrong-token-0123456789abcdef0123456789" not in output
    finally:
        source.stop()
    acks = [e for e in journal_entries(spool) if e[0] == "ack"]
    assert [(e[1], e[5]) for e in acks] == [(ids[0], "file"), (ids[1], "http"), (ids[2], "http"), (ids[3], "file")]
    # Nothing acknowledged was handed over again once the source could know it: by the journal's times, no
    # emit of a delivery comes more than READ_MARGIN after its ack. (Not "five events in all": where the -vvv
    # playbook outlasts ack_timeout on a loaded machine, the first three come again before their
    # acknowledgements arrive, as at-least-once allows; the source reads the journal every 0.1 s.)
    acked_at, late = {}, []
    for entry in journal_entries(spool):
        if entry[0] == "ack":
            acked_at.setdefault(entry[1], float(entry[4]))
        elif entry[0] == "emit" and entry[1] in acked_at and float(entry[4]) > acked_at[entry[1]] + READ_MARGIN:
            late.append(entry)
    assert late == []
    assert {e["meta"]["delivery_id"] for e in source.events} == set(ids)


def examples_text():
    tree = ast.parse((ROOT / "plugins" / "modules" / "webhook_ack.py").read_text())
    return next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and node.targets[0].id == "EXAMPLES")


def test_module_examples_run(tls, tmp_path):
    """The module's EXAMPLES, as a playbook a rulebook runs: ansible_eda.event from a live source."""
    port = wh.free_port()
    url = "https://127.0.0.1:%d" % port
    args = wh.source_args(tmp_path / "spool", tls, port, KEY, ack_timeout=60, ack_token=ACK_TOKEN,
                          ack_url=url + "/_wpcloud/ack")
    with wh.Source(args, queue_size=4) as source:
        assert wh.post(url + "/wpcloud", wh.signed(KEY, "site_provisioned", 5300), tls["ca"])[0] == 200
        source.wait_events(1)
        text = examples_text().replace("/var/lib/wpcloud/provisioned", str(tmp_path / "provisioned"))
        (tmp_path / "provisioned").mkdir()
        playbook = ack_playbook(tmp_path / "examples.yml", yaml.safe_load(text))
        env = ansible_env(tmp_path, WPCLOUD_WEBHOOK_ACK_TOKEN=ACK_TOKEN, WPCLOUD_WEBHOOK_ACK_CA_PATH=tls["ca"])
        proc, output = run_playbook(tmp_path, playbook, {"ansible_eda": {"event": source.events[0]}}, env=env)
        assert re.search(r"ok=3 +changed=2 ", output), output[-3000:]
        wh.wait_for(lambda: wh.healthz(url, tls["ca"])["backlog"] == 0, 10, 0.1, "the event done")
    assert list((tmp_path / "provisioned").glob("sig-*.json"))


def test_operator_playbook_lists_replays_and_dismisses(tls, tmp_path):
    port = wh.free_port()
    url = "https://127.0.0.1:%d" % port
    spool = tmp_path / "spool"
    args = wh.source_args(spool, tls, port, KEY, ack_timeout=0.5, max_attempts=1)
    with wh.Source(args, queue_size=8) as source:
        bodies = [wh.signed(KEY, name, 5200 + n) for n, name in enumerate(
            ["site_provisioned", "over_quota", "site_provisioned"])]
        for body in bodies:
            assert wh.post(url + "/wpcloud", body, tls["ca"])[0] == 200
        source.wait_events(3)
        ids = [wh.delivery_id_of(b) for b in bodies]
        wh.wait_for(lambda: len([e for e in journal_entries(spool) if e[0] == "dead"]) == 3, 15, 0.1,
                    "three dead letters (one attempt each, nobody acknowledges)")
        env = ansible_env(tmp_path)

        def events_playbook(check=False, **extra):
            variables = {"wpcloud_webhook_spool_dir": str(spool)}
            variables.update(extra)
            return run_playbook(tmp_path, "wpcloud.hosting.webhook_events", variables, env=env,
                                args=["--check"] if check else [])[1]
        listed = events_playbook(check=True, wpcloud_webhook_events_state=["dead"])
        assert "3 deliveries listed (3 dead)" in listed and all(i in listed for i in ids)
        assert "over_quota" in listed and "5201" in listed
        replayed = events_playbook(wpcloud_webhook_events_action="replay", wpcloud_webhook_events_ids=[ids[1]])
        assert "1 delivery asked to be handed over again" in replayed and "changed=1" in replayed
        source.wait_events(4, timeout=10)
        assert source.events[3]["meta"]["delivery_id"] == ids[1] and source.events[3]["meta"]["attempt"] == 1
        dismissed = events_playbook(wpcloud_webhook_events_action="ack", wpcloud_webhook_events_event=["site_provisioned"])
        assert "2 deliveries marked done" in dismissed
        refused = run_playbook(tmp_path, "wpcloud.hosting.webhook_events", {"wpcloud_webhook_spool_dir": str(spool),
                               "wpcloud_webhook_events_action": "replay"}, env=env, check=False)[1]
        assert "replay needs a selector" in refused and "failed=1" in refused
        since = events_playbook(wpcloud_webhook_events_since="1h", wpcloud_webhook_events_until="2099-01-01")
        assert "3 deliveries listed" in since
    # the CLI without Ansible, as the playbook's header says
    out = subprocess.run([sys.executable, str(wh.SOURCE_FILE), "events", "list", "--spool-dir", str(spool), "--json"],
                         capture_output=True, text=True, check=True).stdout
    states = {json.loads(line)["delivery_id"]: json.loads(line)["state"] for line in out.splitlines()}
    assert states[ids[0]] == "done" and states[ids[2]] == "done" and states[ids[1]] in ("emitted", "dead")


SECRET_PROBE = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: What an action can see
      ansible.builtin.copy:
        dest: "{{ probe_file }}"
        mode: "0600"
        content: "{{ {'env': [lookup('ansible.builtin.env', 'WPCLOUD_WEBHOOK_HMAC_KEYS'),
                              lookup('ansible.builtin.env', 'WPCLOUD_WEBHOOK_HMAC_KEY'),
                              lookup('ansible.builtin.env', 'WPCLOUD_WEBHOOK_ACK_TOKEN')],
                      'vars': vars | to_json} | to_json }}"
    - name: Done
      wpcloud.hosting.webhook_ack:
        event: "{{ ansible_eda.event }}"
"""

SECRET_RULEBOOK = """
- name: secrets stay with the source
  hosts: all
  sources:
    - wpcloud.hosting.webhook:
        host: 127.0.0.1
        port: %(port)d
        certfile: %(cert)s
        keyfile: %(key)s
        spool_dir: %(spool)s
        hmac_secret: "{{ wpcloud_webhook_hmac_keys | default('') }}"
  rules:
    - name: every event
      condition: event.meta.delivery_id is defined
      action:
        run_playbook:
          name: %(playbook)s
          extra_vars:
            probe_file: %(probe)s
"""


def test_the_key_and_the_ack_token_never_reach_the_actions(tls, tmp_path):
    """ansible-rulebook gives its environment to every playbook it runs; the source takes the keys and the
    ack token out of it once read. The key given as a rulebook variable (the EDA credential type's
    extra_vars injection) is not passed to playbooks either. The receiver child has neither."""
    wh.rulebook_bin()
    port = wh.free_port()
    env_key = "env-key-" + "9f8e7d6c5b4a3210" * 2               # the CLI's way: the environment
    vars_key = "vars-key-" + "0a1b2c3d4e5f6a7b" * 2              # the credential type's way: a rulebook variable
    # ansible-rulebook copies the directory of a playbook named by its path: the probe's holds nothing
    # else (tmp_path holds the collection tree, a link to this checkout and its venvs)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "probe.yml").write_text(SECRET_PROBE)
    (tmp_path / "rb.yml").write_text(SECRET_RULEBOOK % {
        "port": port, "cert": tls["cert"], "key": tls["key"], "spool": tmp_path / "spool",
        "playbook": tmp_path / "project" / "probe.yml", "probe": tmp_path / "probe.json"})
    (tmp_path / "inventory.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                                            "      ansible_python_interpreter: %s\n" % sys.executable)
    (tmp_path / "vars.yml").write_text(json.dumps({"wpcloud_webhook_hmac_keys": vars_key}))
    rb = wh.Rulebook(tmp_path, ["-r", "rb.yml", "-i", "inventory.yml", "--vars", "vars.yml"], {
        "ANSIBLE_COLLECTIONS_PATH": str(wh.collection_tree(tmp_path)), "ANSIBLE_NOCOLOR": "1",
        "WPCLOUD_WEBHOOK_HMAC_KEYS": env_key, "WPCLOUD_WEBHOOK_HMAC_KEY": env_key,
        "WPCLOUD_WEBHOOK_ACK_TOKEN": ACK_TOKEN})
    url = "https://127.0.0.1:%d" % port
    try:
        rb.start()
        rb.wait_ready(url, tls["ca"])
        receivers = [pid for pid in wh.process_tree(rb.proc.pid)
                     if b"--receiver" in open("/proc/%d/cmdline" % pid, "rb").read()]
        assert len(receivers) == 1
        with open("/proc/%d/environ" % receivers[0], "rb") as handle:
            receiver_env = handle.read()
        assert wh.post(url + "/wpcloud", wh.signed(vars_key, "site_provisioned", 5400), tls["ca"])[0] == 200
        wh.wait_for(lambda: (tmp_path / "probe.json").exists() and wh.acknowledged_ids(tmp_path / "spool"),
                    120, 0.3, "the probe playbook")
    finally:
        rb.stop()
    probe = json.loads((tmp_path / "probe.json").read_text())
    assert probe["env"] == ["", "", ""], probe["env"]
    for secret in (env_key, vars_key, ACK_TOKEN):
        assert secret not in probe["vars"]
        assert secret.encode() not in receiver_env
        assert secret not in rb.output()
    assert b"WPCLOUD_WEBHOOK_HMAC_KEYS" not in receiver_env
    assert "ansible_eda" in probe["vars"]                     # the probe saw the event, so it looked


def test_credential_type_injects_the_key_as_a_rulebook_variable_only():
    """EDA custom credential types can inject env, extra_vars or files; ours injects a rulebook variable
    (passed to the source's hmac_secret), which ansible-rulebook does not hand to playbooks (the test
    above), and no environment variable."""
    base = ROOT / "extensions" / "eda" / "plugins" / "event_source" / "credential_types" / "wpcloud_webhook_hmac"
    injectors = yaml.safe_load((base / "injectors.yml").read_text())
    assert set(injectors) == {"extra_vars"}
    assert injectors["extra_vars"] == {"wpcloud_webhook_hmac_keys": "{{ hmac_keys }}",
                                       "wpcloud_webhook_ack_token": "{{ ack_token | default('') }}"}
    fields = {f["id"]: f for f in yaml.safe_load((base / "input.yml").read_text())["fields"]}
    assert fields["hmac_keys"]["secret"] is True and fields["ack_token"]["secret"] is True
    rulebook = yaml.safe_load((ROOT / "extensions" / "eda" / "rulebooks" / "webhooks.yml").read_text())
    source = rulebook[0]["sources"][0]["wpcloud.hosting.webhook"]
    assert source["hmac_secret"] == "{{ wpcloud_webhook_hmac_keys | default('') }}"
    assert source["ack_token"] == "{{ wpcloud_webhook_ack_token | default('') }}"
    for rule in rulebook[0]["rules"]:
        assert "hmac" not in json.dumps(rule["action"]) and "token" not in json.dumps(rule["action"])


def test_the_sample_playbooks_end_with_the_acknowledgement():
    for name in ("on_site_provisioned.yml", "record_webhook_event.yml"):
        play = yaml.safe_load((ROOT / "playbooks" / name).read_text())[-1]      # the last play's last task
        assert play["tasks"][-1].get("wpcloud.hosting.webhook_ack") == {"event": "{{ wpcloud_event }}"}, name
