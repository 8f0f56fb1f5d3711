"""The tracked files as text: no merge-conflict marker, and docs/ names code where it is.

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


def tracked_names():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    return [name for name in names.decode().split("\0") if name and (ROOT / name).is_file()]


def tracked_text_files():
    for name in tracked_names():
        data = (ROOT / name).read_bytes()
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


# "`name()` in `file.py`" and "`NAME`, `OTHER` in `file.py`": how docs/ points at code. A row that moved with
# its code but kept the old file name misleads the reader it was written for (three such rows in
# docs/api-choices.md were found by hand). docs/reliability.md is left out: its findings give the places as
# they were when found. Files that are not the collection's (an SDK's, AWX's) are not checked.
DOC_POINTER = re.compile(r"((?:`[A-Za-z_][A-Za-z0-9_]*(?:\(\))?`(?:, | and | or |/)?)+)\s+in\s+`([A-Za-z0-9_./-]+\.py)`")
HISTORICAL_DOCS = {"docs/reliability.md"}


def test_docs_name_code_where_it_is():
    tracked = tracked_names()
    stale = []
    for doc in sorted(p for p in tracked if p.startswith("docs/") and p.endswith(".md") and p not in HISTORICAL_DOCS):
        for number, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
            for found in DOC_POINTER.finditer(line):
                homes = [p for p in tracked if p == found.group(2) or p.endswith("/" + found.group(2))]
                if not homes:
                    continue
                code = "".join((ROOT / p).read_text() for p in homes)
                stale += ["%s:%d: %s not in %s" % (doc, number, name, found.group(2))
                          for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`", found.group(1))
                          if not re.search(r"\b%s\b" % re.escape(name), code)]
    assert stale == []


# Every `site_migration_*` name the docs and examples give a user is one the role knows: a misspelt variable in
# an example is copied into inventories and silently ignored there (issue 38). Besides the role's options
# (meta/argument_specs.yml) the name may be one of the collection's plugins, the role's own facts and groups,
# its internal variables (two underscores) or a prefix the text completes (`site_migration_remote_*`).
ROLE_NAMES_OTHER_THAN_OPTIONS = {"site_migration_report", "site_migration_stopped", "site_migration_slice_report_"}
ROLE_NAME = re.compile(r"\bsite_migration_[a-z_]*[a-z]_?(?![a-z_])")


def role_names_known():
    import yaml  # pylint: disable=import-outside-toplevel
    spec = yaml.safe_load((ROOT / "roles" / "site_migration" / "meta" / "argument_specs.yml").read_text())
    known = set(spec["argument_specs"]["main"]["options"]) | ROLE_NAMES_OTHER_THAN_OPTIONS
    return known | {p.stem for folder in ("modules", "filter") for p in (ROOT / "plugins" / folder).iterdir()}


def unknown_role_names(text, known):
    """(line, name) of each site_migration_* name of ``text`` the role does not know."""
    return [(text.count("\n", 0, found.start()) + 1, found.group(0)) for found in ROLE_NAME.finditer(text)
            if found.group(0) not in known and not found.group(0).startswith("site_migration__")
            and not (found.group(0).endswith("_") and any(k.startswith(found.group(0)) for k in known))]


def test_docs_name_only_role_variables_the_role_knows():
    known = role_names_known()
    texts = [p for p in tracked_names()
             if (p.startswith("docs/") and p.endswith((".md", ".yml")) and p not in HISTORICAL_DOCS and "performance" not in p)
             or p in ("README.md", "roles/site_migration/README.md", "roles/site_migration/meta/argument_specs.yml",
                      "roles/site_migration/defaults/main.yml")
             or (p.startswith("playbooks/") and p.endswith(".yml"))]
    assert "docs/examples/inventory.yml" in texts and "docs/getting-started.md" in texts
    unknown = ["%s:%d: %s" % (name, line, word) for name in texts
               for line, word in unknown_role_names((ROOT / name).read_text(errors="replace"), known)]
    assert unknown == []


def test_the_role_variable_check_finds_a_misspelt_one():
    text = "vars:\n  site_migration_confirm_overwite: true\n  site_migration_remote_user: www\n  site_migration__todo: {}\n"
    assert unknown_role_names(text, role_names_known()) == [(2, "site_migration_confirm_overwite")]
