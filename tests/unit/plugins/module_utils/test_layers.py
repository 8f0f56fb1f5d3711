# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The layers of plugins/module_utils import one way: service -> runtime -> api; webhook apart.

Read from the source (every import statement, at the top of a file or inside a function), so that a reader can
learn the transport (api) without the runtime or the service's vocabulary, and a change high up cannot break
the bottom. The one crossing allowed out of the webhook side: the service's client_meta checks a new
webhook_hmac_key by the key rules the receiver applies (webhook/signature.py), defined once there.
"""

from __future__ import annotations

import ast
import os

import pytest

MODULE_UTILS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "module_utils"))
PREFIX = "ansible_collections.wpcloud.hosting.plugins."
LAYERS = ("api", "runtime", "service", "webhook")
# What each layer may import of the collection: itself and the layers below it.
ALLOWED = {
    "api": {"module_utils.api"},
    "runtime": {"module_utils.runtime", "module_utils.api"},
    "service": {"module_utils.service", "module_utils.runtime", "module_utils.api", "module_utils.webhook.signature"},
    "webhook": {"module_utils.webhook"},
}


def sources():
    for layer in LAYERS:
        folder = os.path.join(MODULE_UTILS, layer)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                yield layer, os.path.join(folder, name)


def collection_imports(path, layer):
    """(line, imported module relative to plugins/) of every import of the collection in a file."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # from . import x / from .x import y: within the file's own package
                base = "module_utils.%s" % layer
                names = ["%s.%s" % (base, node.module) if node.module else
                         "%s.%s" % (base, alias.name) for alias in node.names]
                found += [(node.lineno, name) for name in names]
                continue
            module = node.module or ""
            names = [module] if not module.endswith(tuple("." + l for l in LAYERS)) else \
                ["%s.%s" % (module, alias.name) for alias in node.names]
        else:
            continue
        found += [(node.lineno, name[len(PREFIX):]) for name in names if name.startswith(PREFIX)]
    return found


def allowed(layer, imported):
    return any(imported == ok or imported.startswith(ok + ".") for ok in ALLOWED[layer])


SOURCES = list(sources())


def test_every_layer_has_files():
    assert set(layer for layer, _path in SOURCES) == set(LAYERS)
    assert len(SOURCES) > 20


@pytest.mark.parametrize("layer,path", SOURCES, ids=["%s/%s" % (l, os.path.basename(p)) for l, p in SOURCES])
def test_imports_go_one_way(layer, path):
    against = ["%s:%d imports %s" % (os.path.relpath(path, MODULE_UTILS), line, imported)
               for line, imported in collection_imports(path, layer) if not allowed(layer, imported)]
    assert against == [], "against the layers (service -> runtime -> api; webhook apart): %s" % against


def test_the_reader_sees_an_import_against_the_direction(tmp_path):
    """The check itself: an import of the runtime from the api layer, at the top or inside a function, and a
    relative import, are found."""
    bad = tmp_path / "bad.py"
    bad.write_text("from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import api_failure\n"
                   "def f():\n"
                   "    from ansible_collections.wpcloud.hosting.plugins.module_utils.service import vocabulary\n"
                   "    import ansible_collections.wpcloud.hosting.plugins.module_utils.webhook.spool\n")
    found = collection_imports(str(bad), "api")
    assert [imported for _line, imported in found] == [
        "module_utils.runtime.failure", "module_utils.service.vocabulary", "module_utils.webhook.spool"]
    assert not any(allowed("api", imported) for _line, imported in found)
    assert collection_imports(str(tmp_path / "bad.py"), "webhook") and allowed("webhook", "module_utils.webhook.spool")
    relative = tmp_path / "relative.py"
    relative.write_text("from . import spool\nfrom .emitter import Emitter\n")
    assert [imported for _line, imported in collection_imports(str(relative), "webhook")] == [
        "module_utils.webhook.spool", "module_utils.webhook.emitter"]
    assert not allowed("runtime", "module_utils.service.vocabulary")
    assert allowed("service", "module_utils.webhook.signature") and not allowed("service", "module_utils.webhook.spool")
