"""Every integration target has the one layout of tests/integration/README.md, and every module and
role of the collection has its target.

The layout: ``aliases``, ``defaults/main.yml``, ``meta/main.yml`` (``dependencies: [setup_emulator]``)
and ``tasks/{main,prepare,test,cleanup}.yml``, where ``tasks/main.yml`` is the same file in every
target (prepare, test, and cleanup in ``always``). ``setup_*`` targets are helpers, not tests.
"""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
TARGETS = ROOT / "tests" / "integration" / "targets"
LAYOUT = ["aliases", "defaults/main.yml", "meta/main.yml",
          "tasks/cleanup.yml", "tasks/main.yml", "tasks/prepare.yml", "tasks/test.yml"]


def target_names():
    return sorted(p.name for p in TARGETS.iterdir() if p.is_dir() and not p.name.startswith("setup_"))


def helper_targets():
    return sorted(p.name for p in TARGETS.iterdir() if p.is_dir() and p.name.startswith("setup_"))


@pytest.mark.parametrize("target", target_names())
def test_every_target_has_the_layout(target):
    folder = TARGETS / target
    assert [name for name in LAYOUT if not (folder / name).is_file()] == [], target
    assert yaml.safe_load((folder / "meta" / "main.yml").read_text()) == {"dependencies": ["setup_emulator"]}
    aliases = (folder / "aliases").read_text().split()
    assert "context/controller" in aliases
    # no facts: no target reads one, and gathering them cost every target a module run (1-2 s)
    assert "gather_facts/no" in aliases, target
    assert [a for a in aliases if a.startswith("needs/target/")] == []     # meta/main.yml says it once
    for name in ("defaults/main.yml", "tasks/prepare.yml", "tasks/test.yml", "tasks/cleanup.yml"):
        assert yaml.safe_load((folder / name).read_text()) is not None, "%s/%s is empty" % (target, name)


def test_tasks_main_is_the_same_file_in_every_target():
    mains = dict((t, (TARGETS / t / "tasks" / "main.yml").read_text()) for t in target_names())
    first = mains[target_names()[0]]
    assert [t for t, text in mains.items() if text != first] == []
    play = yaml.safe_load(first)
    assert len(play) == 1
    block = play[0]
    assert [t["ansible.builtin.import_tasks"] for t in block["block"]] == ["prepare.yml", "test.yml"]
    assert [t["ansible.builtin.import_tasks"] for t in block["always"]] == ["cleanup.yml"]


def test_every_module_and_role_has_its_target():
    modules = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
    roles = sorted("role_" + p.name for p in (ROOT / "roles").iterdir() if p.is_dir())
    assert modules and roles
    assert sorted(modules + roles) == target_names()


def test_helpers_are_hidden():
    assert helper_targets() == ["setup_emulator"]
    for target in helper_targets():
        assert (TARGETS / target / "aliases").read_text().split() == ["hidden"]
