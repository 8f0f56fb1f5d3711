"""The local webhook quick start of docs/webhooks.md section 0, run from the checkout as a user would:
`make webhook-demo` makes a CA and a certificate, starts the emulator and ansible-rulebook with the
sample rulebook wired together, has one signed event sent, and shows it arriving, processed and
acknowledged; then everything it started is gone."""

import os
import re
import subprocess

import webhook_harness as wh
from playbooks import ROOT


def test_make_webhook_demo_shows_one_event_arrive_processed_and_acknowledged():
    wh.rulebook_bin()
    assert "make webhook-demo" in (ROOT / "docs" / "webhooks.md").read_text(encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    proc = subprocess.run(["make", "--no-print-directory", "webhook-demo"], cwd=str(ROOT), env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "arrived: site_provisioned delivered to the receiver, signed True, answered HTTP 200" in out
    processed = [line for line in out.splitlines() if "processed: wpcloud.hosting.on_site_provisioned recorded {" in line]
    assert len(processed) == 1 and '"atomic_site_id": 1001' in processed[0], out[-4000:]
    assert re.search(r'"delivery_id": "sig-[0-9a-f]{32}"', processed[0])
    listed = [line for line in out.splitlines() if re.search(r"\bsig-[0-9a-f]{32}\s+done\b", line)]
    assert len(listed) == 1 and "site_provisioned" in listed[0], out[-4000:]
    assert "one signed event arrived, was processed and acknowledged" in out
    assert "webhook-demo: stopped everything it started" in out
    # the signing key (64 hex digits) and the emulator's API key never show, nor a warning; the work directory and the processes are gone
    assert not re.search(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])", out)
    assert '"api_key"' not in out and "[WARNING]" not in out
    work = re.search(r"(/tmp/wpcloud-webhook-demo\.\w+)", out).group(1)
    assert not os.path.exists(work)
    ps = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True, check=True).stdout
    assert work not in ps
