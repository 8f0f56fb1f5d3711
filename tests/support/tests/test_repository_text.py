"""No tracked file holds a merge-conflict marker.

A merge resolved in a hurry once left ``<<<<<<<``/``=======``/``>>>>>>>`` blocks in docs/api-choices.md for
several commits: the docs site renders them as text, so no other gate noticed.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# The opening and closing lines: a line of seven "=" alone is also a reStructuredText underline.
MARKER = re.compile(r"^(<{7}|>{7})( .*)?$", re.MULTILINE)


def tracked_text_files():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in names.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file():
            data = path.read_bytes()
            if b"\0" not in data:
                yield name, data.decode("utf-8", errors="replace")


def test_no_tracked_file_holds_a_merge_conflict_marker():
    found = ["%s:%d" % (name, text.count("\n", 0, m.start()) + 1)
             for name, text in tracked_text_files() for m in MARKER.finditer(text)]
    assert found == []


def test_the_marker_pattern_finds_a_conflict():
    text = "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> main\n"
    assert len(MARKER.findall(text)) == 2
    assert MARKER.findall("Heading\n=======\n| --- |\n> a quote\n") == []
