"""The event source from the built and installed tarball (what an execution environment installs):
ansible-rulebook gives a source no collection loader, so the source imports
plugins/module_utils/webhook by its path; that path must hold in the installed layout too. The source
receives a signed delivery there, its receiver child starts from the installed file, and the operator
command runs from it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import webhook_harness as wh
from playbooks import ROOT

BIN = Path(sys.executable).parent
KEY = "installed-tarball-key-0123456789abcdef"


def test_the_installed_tarballs_source_receives_and_lists_a_delivery(tmp_path):
    built = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path),
                            str(ROOT)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    tarball = next(tmp_path.glob("wpcloud-hosting-*.tar.gz"))
    installed = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "-p", str(tmp_path / "cols"),
                                str(tarball)], capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    home = tmp_path / "cols" / "ansible_collections" / "wpcloud" / "hosting"
    source_file = home / "extensions" / "eda" / "plugins" / "event_source" / "webhook.py"
    parts = wh.plugin(source_file)
    assert Path(parts["options"].__file__).parent == home / "plugins" / "module_utils" / "webhook"

    tls = wh.tls(tmp_path / "tls")
    port = wh.free_port()
    spool = tmp_path / "spool"
    with wh.Source(wh.source_args(spool, tls, port, [KEY]), source_file=source_file) as source:
        body = wh.signed(KEY, "site-provisioned", 4711)
        assert wh.post("https://127.0.0.1:%d/wpcloud" % port, body, tls["ca"])[0] == 200
        source.wait_events(1)
        event = source.events[0]
    assert event["meta"]["delivery_id"] == wh.delivery_id_of(body)
    assert (event["meta"]["event"], event["payload"]["event"]) == ("site_provisioned", "site-provisioned")
    listed = subprocess.run([sys.executable, str(source_file), "events", "list", "--spool-dir", str(spool), "--json"],
                            capture_output=True, text=True, check=False)
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["delivery_id"] for line in listed.stdout.splitlines()] == [event["meta"]["delivery_id"]]
