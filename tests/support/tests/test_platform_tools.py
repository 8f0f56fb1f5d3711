"""The build tooling keeps the README's promise on the machines it names (tests/utils).

A release tool that cannot be installed on the machine's Python skips the gates that need it, with the
reason, instead of failing the whole `make test` (issue 13, item 7: plain Debian 13 has only 3.13).
"""

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
UTILS = ROOT / "tests" / "utils"


def fake_wheel(directory, name, requires_python):
    """A minimal pure-Python wheel, so pip runs offline."""
    dist = "%s-1.0.dist-info" % name.replace("-", "_")
    files = {
        "%s/__init__.py" % name.replace("-", "_"): "",
        "%s/METADATA" % dist: "Metadata-Version: 2.1\nName: %s\nVersion: 1.0\nRequires-Python: %s\n"
                              % (name, requires_python),
        "%s/WHEEL" % dist: "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(text.encode())))
    files["%s/RECORD" % dist] = "\n".join(record + ["%s/RECORD,," % dist]) + "\n"
    with zipfile.ZipFile(directory / ("%s-1.0-py3-none-any.whl" % name.replace("-", "_")), "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def test_make_venv_per_package_records_what_this_python_cannot_install(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    fake_wheel(wheels, "wpc-fake-ok", ">=3")
    fake_wheel(wheels, "wpc-fake-newpy", ">=3.99")
    req = tmp_path / "requirements.txt"
    req.write_text("--find-links %s\nwpc-fake-ok\nwpc-fake-newpy  # a tool that needs a newer Python\n" % wheels)
    venv = tmp_path / "venv"
    env = dict(os.environ, PYTHON=sys._base_executable, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))

    whole = subprocess.run([str(UTILS / "make-venv.sh"), str(venv), str(req)], capture_output=True, text=True,
                           env=env, timeout=300, check=False)
    assert whole.returncode != 0 and not (venv / ".installed").exists()  # the project venv: all or nothing

    each = subprocess.run([str(UTILS / "make-venv.sh"), str(venv), str(req), "--per-package"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert each.returncode == 0, each.stderr
    assert each.stdout == ""  # its messages go to stderr
    unavailable = (venv / ".unavailable").read_text().splitlines()
    version = "%d.%d" % sys.version_info[:2]
    assert len(unavailable) == 1 and unavailable[0].startswith(
        "wpc-fake-newpy: does not install on Python %s (" % version), unavailable
    assert "wpc-fake-newpy cannot be installed on Python %s" % version in each.stderr
    assert "wpc-fake-ok==1.0" in (venv / ".installed").read_text()


def gates(*args):
    """tests/utils/gates.sh; each test gives it a --work directory of its own, so that it can run beside
    `make gates` (make test runs the suites side by side), whose copy and logs are .build/release."""
    return subprocess.run([str(UTILS / "gates.sh")] + list(args), capture_output=True, text=True, timeout=300,
                          check=False, cwd=str(ROOT))


def release_venv(tmp_path, unavailable):
    venv = tmp_path / "release-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / ".unavailable").write_text(unavailable)
    (venv / ".installed").write_text("")  # newer than the requirements: nothing to install
    return venv


def test_gates_skip_a_gate_whose_tool_cannot_run_here_and_say_why(tmp_path):
    venv = release_venv(tmp_path, "ansible-lint: does not install on Python 3.99 (needs < 3.99)\n"
                                  "antsibull-docs: does not install on Python 3.99 (Failed to build)\n")
    skipped = tmp_path / "skipped"
    result = gates("--venv", str(venv), "--work", str(tmp_path / "release"), "--skipped-file", str(skipped), "lint", "docs")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gate lint       SKIP  ansible-lint: does not install on Python 3.99 (needs < 3.99)" in result.stdout
    assert "0 passed, 0 failed, 2 skipped" in result.stdout
    assert skipped.read_text() == ("lint (ansible-lint: does not install on Python 3.99 (needs < 3.99)); "
                                   "docs (antsibull-docs: does not install on Python 3.99 (Failed to build))\n")


def test_gates_fail_when_a_tool_is_missing_for_no_recorded_reason(tmp_path):
    venv = release_venv(tmp_path, "")
    result = gates("--venv", str(venv), "--work", str(tmp_path / "release"), "changelog")
    assert result.returncode == 1
    assert "has no antsibull-changelog" in result.stderr


def test_the_lint_gate_fails_on_a_finding_not_on_a_python_warning(tmp_path):
    """A newer cryptography (51) prints a DeprecationWarning from ansible-core's import of DSA on every ansible-lint
    run: "path.py:18: CryptographyDeprecationWarning: ..." is shaped like a pep8 finding, and failed the gate."""
    venv = release_venv(tmp_path, "")
    lint = venv / "bin" / "ansible-lint"
    warning = "/v/site-packages/ansible/_internal/_ssh/_ssh_agent.py:18: CryptographyDeprecationWarning: DSA is deprecated"
    for finding, expected in (("", "PASS"), ("roles/site_migration/tasks/main.yml:3: name[casing]: All names should "
                                             "start with an uppercase letter.", "FAIL")):
        lint.write_text("#!/bin/sh\necho '%s'\necho '%s'\necho 'Passed: 0 failure(s), 0 warning(s)'\n" % (warning, finding))
        lint.chmod(0o755)
        result = gates("--venv", str(venv), "--work", str(tmp_path / "release"), "lint")
        assert re.search(r"gate lint +%s" % expected, result.stdout), result.stdout + result.stderr


def test_make_test_counts_a_skipped_suite_as_skipped_not_passed(tmp_path):
    """The closing line of `make test` (issue 39, item 5): a suite that recorded a skip is counted apart."""
    fakes = tmp_path / "fakes.mk"
    fakes.write_text("fake-pass:\n"
                     "\t@python3 -c 'import time; exec(\"while time.process_time() < 1.5: pass\")'\n"
                     "fake-skip:\n"
                     "\t@mkdir -p $(BUILD)/skipped && echo 'no Python 3.12 here' > $(BUILD)/skipped/$@\n"
                     "fake-fail:\n"
                     "\t@false\n")

    def make_test(suites):
        # MAKEFILES: read by the suites' own make processes too (make test runs each suite as $(MAKE) SUITE)
        return subprocess.run(["make", "-o", "setup", "test",
                               "BUILD=%s" % (tmp_path / "build"), "SUITES=%s" % suites,
                               "TEST_LANES=%s" % suites.replace(" ", ",")],
                              cwd=str(ROOT), capture_output=True, text=True, timeout=120, check=False,
                              env=dict(os.environ, MAKEFILES=str(fakes)))

    result = make_test("fake-pass fake-skip")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fake-skip: skipped: no Python 3.12 here" in result.stdout
    assert result.stdout.rstrip().endswith("1 passed, 0 failed, 1 skipped")
    # each suite's CPU (its whole process tree's user+sys): fake-pass burns 1.5 CPU-s
    assert re.search(r"^  fake-pass: passed \(\d+ s, [12] CPU-s\)$", result.stdout, re.M), result.stdout
    result = make_test("fake-pass fake-fail")
    assert result.returncode != 0
    assert result.stdout.rstrip().splitlines()[-1] == "1 passed, 1 failed"


def test_cpu_per_test_counts_the_processes_a_test_ran(tmp_path):
    """tests/support/cpu_per_test.py: a test that runs a child burning CPU is charged that CPU, and the session's
    end names it first (make system and make support print this report)."""
    (tmp_path / "conftest.py").write_text(
        "import sys\nsys.path.insert(0, %r)\n"
        "from cpu_per_test import pytest_runtest_protocol, pytest_terminal_summary  # noqa\n" % str(ROOT / "tests" / "support"))
    (tmp_path / "test_burn.py").write_text(
        "import subprocess, sys\n"
        "def test_idle():\n    pass\n"
        "def test_burns_in_a_child():\n"
        "    subprocess.run([sys.executable, '-c', 'import time\\nt = time.process_time()\\n"
        "while time.process_time() - t < 0.6: pass'], check=True)\n")
    log = tmp_path / "cpu.tsv"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, cwd=str(tmp_path), env=dict(os.environ, TEST_CPU_LOG=str(log)),
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split("\t")[0].split("::")[-1]: float(line.split("\t")[1]) for line in log.read_text().splitlines()}
    assert rows["test_burns_in_a_child"] >= 0.55 and rows["test_idle"] < 0.3, rows
    report = proc.stdout[proc.stdout.index("CPU per test"):]
    assert "in 2 tests" in report and report.index("test_burns_in_a_child") < report.index("test_idle"), report
