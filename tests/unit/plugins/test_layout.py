# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The unit tests mirror plugins/: the tests of plugins/<type>/X.py are tests/unit/plugins/<type>/test_X.py (and
test_X_<aspect>.py), for the modules, the action plugins, the filters and the inventory plugin, so that a maintainer
finds them by the file's name. A plugin file without its test file fails here, and so does a test file that names
no plugin file (a renamed or removed plugin). An action plugin that only names its module (``MODULE = "X"``, all
else the base class's) is tested through its module (tests/unit/plugins/modules/test_X.py) and the base class
(tests/unit/plugins/plugin_utils/test_controller_action.py)."""

from __future__ import annotations

import ast
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLUGINS = os.path.join(ROOT, "plugins")
TESTS = os.path.join(ROOT, "tests", "unit", "plugins")
TYPES = ("modules", "action", "filter", "inventory")


def plugin_files(kind):
    """The Python files of plugins/<kind>/, by name without .py."""
    folder = os.path.join(PLUGINS, kind)
    return sorted(name[:-3] for name in os.listdir(folder) if name.endswith(".py") and name != "__init__.py")


def unit_test_files(kind):
    folder = os.path.join(TESTS, kind)
    if not os.path.isdir(folder):
        return []
    return sorted(name[:-3] for name in os.listdir(folder) if name.startswith("test_") and name.endswith(".py"))


def serves_its_module_only(name):
    """Whether plugins/action/<name>.py is an ActionModule whose whole body is MODULE = "<name>", for a module of
    that name (its behaviour is then the module's and the base class's)."""
    with open(os.path.join(PLUGINS, "action", name + ".py")) as handle:
        tree = ast.parse(handle.read())
    defined = [node for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    if [node.name for node in defined] != ["ActionModule"]:
        return False
    body = [node for node in defined[0].body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]     # a docstring
    return (len(body) == 1 and isinstance(body[0], ast.Assign)
            and [getattr(target, "id", None) for target in body[0].targets] == ["MODULE"]
            and getattr(body[0].value, "value", None) == name and name in plugin_files("modules"))


def needs_tests(kind, name):
    return not (kind == "action" and serves_its_module_only(name))


PLUGIN_FILES = [(kind, name) for kind in TYPES for name in plugin_files(kind)]
TEST_FILES = [(kind, name) for kind in TYPES for name in unit_test_files(kind)]


def test_the_plugins_are_found():
    found = dict((kind, [name for k, name in PLUGIN_FILES if k == kind]) for kind in TYPES)
    assert len(found["modules"]) >= 14 and {"migration", "site", "webhook_ack"} <= set(found["modules"])
    assert found["action"] and "webhook_verify" in found["filter"] and "sites" in found["inventory"]
    # The action plugins that only name their module are told from the others.
    assert serves_its_module_only("migration") and not serves_its_module_only("site")
    assert not serves_its_module_only("report_file")


def test_every_plugin_file_has_its_test_file():
    missing = []
    for kind, name in PLUGIN_FILES:
        if needs_tests(kind, name):
            expected = "tests/unit/plugins/%s/test_%s.py" % (kind, name)
        else:   # an action plugin that serves its module: the module's tests
            expected = "tests/unit/plugins/modules/test_%s.py" % name
        if not os.path.isfile(os.path.join(ROOT, expected)):
            missing.append("plugins/%s/%s.py has no unit tests: add %s" % (kind, name, expected))
    assert missing == [], "the tests of plugins/<type>/X.py are tests/unit/plugins/<type>/test_X.py " \
        "(docs/design.md, Where tests live):\n" + "\n".join(missing)


def test_every_test_file_names_its_plugin_file():
    """test_X.py or test_X_<aspect>.py, for a plugins/<kind>/X.py."""
    unnamed = []
    for kind, name in TEST_FILES:
        stem = name[len("test_"):]
        if not [plugin for plugin in plugin_files(kind) if stem == plugin or stem.startswith(plugin + "_")]:
            unnamed.append("tests/unit/plugins/%s/%s.py names no file of plugins/%s/" % (kind, name, kind))
    assert unnamed == [], "call a test file test_<file>.py or test_<file>_<aspect>.py after the file it tests " \
        "(a renamed or removed plugin leaves its tests behind):\n" + "\n".join(unnamed)
