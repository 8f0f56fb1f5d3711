"""Last: every file the suite's runs left behind (all tests, not only test_rel_secrets.py) is scanned
for the canaries once more: the fleet and client_meta runs under faults, the hostile-input runs, the
webhook attack, the emulators' logs and request logs. Output of the known-finding cases (xfail) is
counted apart in the summary, not here."""

from __future__ import annotations

import reliability_support as rs
from conftest import ARTIFACT_ROOTS


def test_no_canary_anywhere_in_the_suite_output(canaries):
    roots = [r for r in ARTIFACT_ROOTS if r.exists()]
    findings = set(rs.FINDING_DIRS)
    hits, files, size = rs.scan(roots, canaries)
    hits = [h for h in hits if not any(h[0].startswith(d + "/") or h[0] == d for d in findings)]
    rs.SUMMARY["secret_files_scanned"] = files
    rs.SUMMARY["secret_bytes_scanned"] = size
    rs.SUMMARY["secret_occurrences"] = sum(h[3] for h in hits)
    assert files > 0
    assert hits == [], rs.describe_hits(hits)
