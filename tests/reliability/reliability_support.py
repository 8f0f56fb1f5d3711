"""Shared helpers of the reliability suite: canaries, the secret scanner, playbook runs, the summary.

Everything here is test code; nothing in the collection imports it.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, quote_plus

ROOT = Path(__file__).resolve().parents[2]
EMULATOR_DIR = ROOT / "tests" / "support" / "emulator"
SUPPORT_DIR = ROOT / "tests" / "support"     # webhook_harness
SOURCE_FILE = ROOT / "extensions" / "eda" / "plugins" / "event_source" / "webhook.py"
for _path in (EMULATOR_DIR, SUPPORT_DIR):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import playbooks  # noqa: E402  (tests/support, on sys.path above)
import webhook_harness  # noqa: E402

BIN = playbooks.BIN
localhost_inventory = playbooks.localhost_inventory   # the one harness's, as rs.localhost_inventory in the tests

wait_for = webhook_harness.wait_for   # the one harness's, as rs.wait_for in the tests

# Figures for the final table, filled in by the tests (None: the test that measures it did not run).
SUMMARY = {
    "secret_occurrences": None,
    "secret_occurrences_in_findings": 0,
    "secret_files_scanned": 0,
    "secret_bytes_scanned": 0,
    "duplicate_migrations": None,
    "repeated_unknown_writes": None,
    "lost_tickets": None,
    "lost_events": None,
    "hostile_cases": 0,
    "fleet_sites": None,
    "fleet_runs": None,
    "fleet_uncertain_writes": None,
    "attack_latency_ms": None,
    "slow_clients_cut_s": None,
}


# --------------------------------------------------------------------------------------- canaries

def _ssh_keys(passphrase):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

    def openssh(key, password=None):
        enc = (serialization.BestAvailableEncryption(password.encode()) if password
               else serialization.NoEncryption())
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, enc).decode()

    plain = openssh(ed25519.Ed25519PrivateKey.generate())
    protected = openssh(ed25519.Ed25519PrivateKey.generate(), passphrase)
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
    # Structural lines (the same in every key of a kind, e.g. "openssh-key-v1 none none") are not secret.
    structural = set(openssh(ed25519.Ed25519PrivateKey.generate()).splitlines())
    structural |= set(openssh(ed25519.Ed25519PrivateKey.generate(), passphrase).splitlines())
    return plain, protected, pem, structural


@dataclass
class Canaries:
    api_key: str
    remote_pass: str
    ssh_id_pass: str
    webhook_hmac_key: str
    ssh_id: str                 # ed25519, OpenSSH format, no passphrase
    ssh_id_protected: str       # ed25519, OpenSSH format, protected by ssh_id_pass
    ssh_id_pem: str             # RSA 2048, PEM (traditional), no passphrase
    structural: set = field(default_factory=set)

    @classmethod
    def make(cls):
        tag = secrets.token_hex(4)
        pass_phrase = "rlkKPASS%s%s" % (tag, secrets.token_hex(10))
        plain, protected, pem, structural = _ssh_keys(pass_phrase)
        return cls(api_key="rlkAPI%s%s" % (tag, secrets.token_hex(12)),
                   remote_pass="rlkPASS%s%s" % (tag, secrets.token_hex(10)),
                   ssh_id_pass=pass_phrase,
                   webhook_hmac_key="rlkHMAC%s%s" % (tag, secrets.token_hex(20)),
                   ssh_id=plain, ssh_id_protected=protected, ssh_id_pem=pem, structural=structural)

    def values(self):
        """{name: value} of the single-line secrets."""
        return {"api_key": self.api_key, "remote_pass": self.remote_pass, "ssh_id_pass": self.ssh_id_pass,
                "webhook_hmac_key": self.webhook_hmac_key}

    def key_lines(self):
        """{name: [secret lines]} of the private keys (armour and structural lines left out)."""
        out = {}
        for name in ("ssh_id", "ssh_id_protected", "ssh_id_pem"):
            lines = [line.strip() for line in getattr(self, name).splitlines()]
            out[name] = [line for line in lines if len(line) >= 16 and not line.startswith("-----")
                         and line not in self.structural]
        return out

    def patterns(self):
        """[(canary, form, needle bytes)]: every form we look for."""
        found = []
        for name, value in self.values().items():
            for form, needle in encoded_forms(value):
                found.append((name, form, needle))
        for name, lines in self.key_lines().items():
            for index, line in enumerate(lines):
                for form, needle in encoded_forms(line):
                    found.append((name, "line%d/%s" % (index + 1, form), needle))
            whole = getattr(self, name)
            found.append((name, "json-escaped-key", json.dumps(whole)[1:-1][40:120].encode()))
        # de-duplicate identical needles (e.g. url-encoded == raw for plain ASCII)
        seen, unique = set(), []
        for item in found:
            if item[2] and item[2] not in seen:
                seen.add(item[2])
                unique.append(item)
        return unique


def encoded_forms(value):
    """The raw value and the encodings under which a leak could hide."""
    raw = value.encode("utf-8")
    forms = [("raw", raw), ("json", json.dumps(value)[1:-1].encode()), ("url", quote(value, safe="").encode()),
             ("url+", quote_plus(value).encode()), ("hex", raw.hex().encode())]
    for k in range(3):
        for label, fn in (("b64", base64.b64encode), ("b64url", base64.urlsafe_b64encode)):
            enc = fn(b"\0" * k + raw)
            # drop the characters that depend on what precedes/follows the value in a larger blob
            start = (k * 4 + 2) // 3 + (1 if k else 0)
            core = enc[start:len(enc) - 4]
            if len(core) >= 12:
                forms.append(("%s@%d" % (label, k), core))
    return forms


# --------------------------------------------------------------------------------------- scanning

# Files that legitimately hold a secret and are not the collection's output:
EXCLUDED_NAMES = {
    "emulator-state.json",   # the emulator's persisted state: the service's own credential store
    "emulator.stdout",       # the launcher handshake line carries the emulator's API key by contract
}


def iter_files(paths):
    for base in paths:
        base = Path(base)
        if base.is_file():
            yield base
            continue
        for root, _dirs, files in os.walk(base):
            for name in files:
                yield Path(root) / name


def scan(paths, canaries, excluded=()):
    """Count every canary form in every file below ``paths``. Returns (hits, files, bytes).

    ``hits`` is a list of (file, canary, form, count)."""
    patterns = canaries.patterns()
    excluded = set(str(Path(p)) for p in excluded)
    hits, files, size = [], 0, 0
    for path in iter_files(paths):
        if path.name in EXCLUDED_NAMES or str(path) in excluded or path.is_symlink():
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        files += 1
        size += len(data)
        for name, form, needle in patterns:
            count = data.count(needle)
            if count:
                hits.append((str(path), name, form, count))
    return hits, files, size


FINDING_DIRS = []   # output of the xfail (known finding) cases: counted apart, left out of the final scan


def record_scan(hits, files, size, finding=False):
    if finding:
        SUMMARY["secret_occurrences_in_findings"] += sum(h[3] for h in hits)
        return
    SUMMARY["secret_occurrences"] = (SUMMARY["secret_occurrences"] or 0) + sum(h[3] for h in hits)
    SUMMARY["secret_files_scanned"] += files
    SUMMARY["secret_bytes_scanned"] += size


def describe_hits(hits, limit=40):
    return "\n".join("%s: %s (%s) x%d" % h for h in hits[:limit])


# --------------------------------------------------------------------------------------- ansible

@dataclass
class PlaybookRun:
    proc: subprocess.CompletedProcess
    out_dir: Path
    name: str
    elapsed: float

    @property
    def output(self):
        return self.proc.stdout + self.proc.stderr

    def records(self):
        path = self.out_dir / ("%s.callback.jsonl" % self.name)
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def results(self, task_name=None):
        return [r for r in self.records() if r["event"] not in ("task_start", "play_start", "stats")
                and (task_name is None or r["task"]["name"] == task_name)]

    def explain(self):
        return "rc=%s\n--- stdout\n%s\n--- stderr\n%s" % (self.proc.returncode, self.proc.stdout[-6000:],
                                                          self.proc.stderr[-3000:])


def ansible_env(base, out_dir, name, extra=None):
    """playbooks.ansible_env, clean (no ansible.cfg, no service settings from the environment), with the
    reliability_json callback and the emulator_hook action (faults set from a play); the log and the callback's records
    of the run ``name`` go to ``out_dir`` (the final scan reads them)."""
    return playbooks.ansible_env(base, home=out_dir, clean=True, **{
        "ANSIBLE_CALLBACK_PLUGINS": str(playbooks.CALLBACK_DIR),
        "ANSIBLE_CALLBACKS_ENABLED": "reliability_json",
        "ANSIBLE_ACTION_PLUGINS": str(playbooks.EMULATOR_HOOK_DIR),
        "ANSIBLE_LOG_PATH": str(Path(out_dir) / ("%s.ansible.log" % name)),
        "RELIABILITY_JSON_OUT": str(Path(out_dir) / ("%s.callback.jsonl" % name)),
        **(extra or {})})


def run_playbook(base, out_dir, name, playbook, inventory, args=(), env=None, verbosity="-vvvv", timeout=600):
    """playbooks.run_playbook with the JSON callback, a log file and captured output, all kept in out_dir."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    proc, _output = playbooks.run_playbook(base, playbook, args=([verbosity] if verbosity else []) + list(args),
                                           env=ansible_env(base, out_dir, name, env), check=False,
                                           timeout=timeout, inventory=inventory)
    (out_dir / ("%s.stdout" % name)).write_text(proc.stdout)
    (out_dir / ("%s.stderr" % name)).write_text(proc.stderr)
    return PlaybookRun(proc, out_dir, name, proc.elapsed)


def write_vault(path, data, vault_password_file, base):
    """A JSON (= YAML) vars file encrypted with ansible-vault."""
    path = Path(path)
    path.write_text(json.dumps(data))
    subprocess.run([str(BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(vault_password_file),
                    str(path)], check=True, capture_output=True,
                   env=ansible_env(base, Path(base) / "vault-out", "vault"))
    assert path.read_text().startswith("$ANSIBLE_VAULT;")
    return path


def dump_request_log(emu, out_dir, name):
    """Keep the emulator's request log as a file (it is part of what the scan covers)."""
    log = emu.requests_log()
    path = Path(out_dir) / ("%s.requests.json" % name)
    path.write_text(json.dumps(log, indent=0))
    return log


def writes(log, endpoint=None):
    return [e for e in log if e.get("write") and (endpoint is None or e["endpoint"] == endpoint)]


# --------------------------------------------------------------------------------------- webhook crashes

def run_crash_experiment(name, experiment, kills):
    """Runs ``kills`` on ``experiment`` and records the figures. A kill: repetition()'s keyword arguments,
    and optionally the burst's ``kinds`` and ``gap`` for that repetition."""
    try:
        for kill in kills:
            kill = dict(kill)
            for setting in ("kinds", "gap"):
                if setting in kill:
                    setattr(experiment, setting, kill.pop(setting))
            # each repetition waits for every delivery accepted so far: after one that did not recover, the
            # rest would each wait out recover_timeout for the same delivery (84 minutes of a CI run)
            if experiment.repetition(**kill)["recover_s"] is None:
                break
    finally:
        experiment.stop()
    summary = experiment.summary()
    out = experiment.workdir
    (out / "results.json").write_text(json.dumps({"repetitions": experiment.results, "summary": summary}, indent=1))
    sys.stderr.write("%s: %s\n" % (name, json.dumps(summary)))
    SUMMARY["webhook_crash"] = summary
    SUMMARY["lost_events"] = (SUMMARY["lost_events"] or 0) + len(summary["lost_any_repetition"])
    return summary


def assert_no_delivery_lost(experiment, summary, repetitions, burst):
    stuck = [r for r in experiment.results if r["recover_s"] is None]
    assert not stuck, "did not recover within %ss (no repetition after it was run): %s" % (
        experiment.recover_timeout, stuck)
    assert summary["repetitions"] == repetitions
    assert summary["lost_any_repetition"] == [] and summary["never_run"] == [], summary
    assert summary["accepted"] == repetitions * burst          # the retries got every delivery in
