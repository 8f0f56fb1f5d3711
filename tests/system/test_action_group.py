"""The `all` action group of meta/runtime.yml lists exactly the modules (but those documented as outside it),
and every module has its action plugin.

Adding a module without adding it to the group (or keeping a removed one there) fails here, before a user
finds that `module_defaults: {group/wpcloud.hosting.all: ...}` silently does not apply to it.
"""

import ast
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "plugins" / "modules"
ACTIONS = ROOT / "plugins" / "action"
FRAGMENTS = ROOT / "plugins" / "doc_fragments"


def module_names():
    return sorted(p.stem for p in MODULES.glob("*.py") if p.stem != "__init__")


def group_members():
    """The modules that belong in the group: all but those whose documentation says they do not
    (attributes.action_group.support: none, with the reason), such as webhook_ack, which has no API
    connection options for module_defaults to set."""
    return [name for name in module_names() if not outside_the_group(name)]


def outside_the_group(name):
    attribute = (documentation(MODULES / ("%s.py" % name)).get("attributes") or {}).get("action_group") or {}
    return attribute.get("support") == "none"


def all_group():
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    return runtime["action_groups"]["all"]


def _assigned(nodes, name):
    for node in nodes:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return yaml.safe_load(node.value.value)
    return None


def fragment_attributes(name):
    """The attributes of one of this collection's doc fragments (wpcloud.hosting.<file>[.<VARIABLE>]),
    read without importing it; {} for another collection's."""
    if not name.startswith("wpcloud.hosting."):
        return {}
    file, variable = (name[len("wpcloud.hosting."):].split(".", 1) + [""])[:2]
    classes = [n for n in ast.parse((FRAGMENTS / ("%s.py" % file)).read_text()).body if isinstance(n, ast.ClassDef)]
    doc = _assigned(classes[0].body, variable or "DOCUMENTATION")
    assert doc is not None, name
    return doc.get("attributes") or {}


def documentation(path):
    """The module's DOCUMENTATION, read without importing the module, with the attributes of the
    collection's fragments it extends merged under its own (as ansible-doc merges them)."""
    doc = _assigned(ast.parse(path.read_text()).body, "DOCUMENTATION")
    assert doc is not None, "%s has no DOCUMENTATION" % path
    merged = {}
    for name in doc.get("extends_documentation_fragment") or []:
        merged.update(fragment_attributes(name))
    merged.update(doc.get("attributes") or {})
    doc["attributes"] = merged
    return doc


def test_there_are_modules():
    assert len(module_names()) >= 7, module_names()


def test_all_group_lists_exactly_the_modules():
    group = all_group()
    assert len(group) == len(set(group)), "duplicates in action_groups.all: %s" % group
    modules = set(group_members())
    missing = sorted(modules - set(group))
    extra = sorted(set(group) - modules)
    assert not missing, "modules missing from meta/runtime.yml action_groups.all: %s" % missing
    assert not extra, "action_groups.all names that are not modules in plugins/modules/: %s" % extra


def test_all_group_is_sorted():
    group = all_group()
    assert group == sorted(group), "keep action_groups.all in alphabetical order: %s" % sorted(group)


def test_every_module_has_an_action_plugin_of_the_same_name():
    missing = [name for name in module_names() if not (ACTIONS / ("%s.py" % name)).is_file()]
    assert not missing, "modules without plugins/action/<name>.py: %s" % missing
    orphans = sorted(p.stem for p in ACTIONS.glob("*.py") if p.stem != "__init__" and p.stem not in module_names())
    assert not orphans, "action plugins without a module: %s" % orphans


def test_every_module_documents_its_group_membership():
    """The docs say `group/wpcloud.hosting.all` (the attributes fragment) for every module."""
    for name in module_names():
        doc = documentation(MODULES / ("%s.py" % name))
        fragments = doc.get("extends_documentation_fragment") or []
        own = ((doc.get("attributes") or {}).get("action_group") or {}).get("membership") or []
        if outside_the_group(name):       # a documented exception says why, and claims no membership
            assert doc["attributes"]["action_group"].get("description") and not own, name
            assert "wpcloud.hosting.attributes" not in fragments, name
            continue
        assert "wpcloud.hosting.attributes" in fragments or "wpcloud.hosting.all" in own, name


def test_ansible_resolves_the_group_to_every_module(tmp_path):
    """What ansible-core itself reads from the collection: group/wpcloud.hosting.all -> every module."""
    link = tmp_path / "ansible_collections" / "wpcloud" / "hosting"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT)
    code = (
        "import json, sys\n"
        "from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder, _get_collection_metadata\n"
        "_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()\n"
        "print(json.dumps(_get_collection_metadata('wpcloud.hosting')['action_groups']['all']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, capture_output=True, text=True)
    assert sorted(yaml.safe_load(out.stdout)) == group_members()
