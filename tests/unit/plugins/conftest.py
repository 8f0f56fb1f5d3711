# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fake service under every client a test makes, and the modules' logic run on it; a module's documentation
checked against its spec, and its main() run as a module process."""

from __future__ import annotations

import importlib
import json

import pytest
import yaml

from ansible.module_utils import basic
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import ModuleContext
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.tests.unit.plugins.fake_service import FakeService


@pytest.fixture()
def fake_api(monkeypatch):
    """A FakeService that every WPCloudClient of the test sends through (both transports)."""
    service = FakeService()
    monkeypatch.setattr(WPCloudClient, "_transport", lambda client: service.adapter())
    monkeypatch.setattr(WPCloudClient, "_pool", lambda client, **tls: service.pool(**tls))
    return service


@pytest.fixture()
def run_logic(fake_api):
    """run_logic(module, args, check_mode=False, diff=False, progress=None) -> (result or ModuleFailure, warnings):
    the module's logic on arguments validated by its own spec (as the action plugin does), on fake_api, with the
    result masked as the runners mask it."""

    def run(module, args, check_mode=False, diff=False, progress=None):
        spec = module.MODULE_SPEC
        validation = ArgumentSpecValidator(**spec).validate(dict({"api_key": fake_api.api_key, "api_url": fake_api.url},
                                                                 **args))
        assert not validation.error_messages, validation.error_messages
        params = validation.validated_parameters
        ctx = ModuleContext(params, spec["argument_spec"], check_mode=check_mode, diff=diff, progress=progress)
        try:
            outcome = ctx.secrets.mask(module.run_logic(params, ctx))
        except ModuleFailure as failure:
            outcome = ModuleFailure(ctx.secrets.mask(failure.msg), **ctx.secrets.mask(failure.details))
        finally:
            ctx.close()
        return outcome, ctx.warnings
    return run


# -- a module's documentation and its module process -----------------------------------------------------------

COLLECTION = "wpcloud.hosting"
# What an option's spec and its documentation must agree on, and the value of each when left out.
COMPARED = (("type", "str"), ("required", False), ("default", None), ("choices", None), ("elements", None))


def documented_options(doc):
    """The options a module's DOCUMENTATION gives, with those of the collection's doc fragments it extends."""
    options = {}
    for name in doc.get("extends_documentation_fragment") or []:
        parts = name.split(".")
        assert ".".join(parts[:2]) == COLLECTION, "a fragment of another collection: %s" % name
        fragment = importlib.import_module("ansible_collections.wpcloud.hosting.plugins.doc_fragments." + parts[2])
        text = getattr(fragment.ModuleDocFragment, parts[3] if len(parts) > 3 else "DOCUMENTATION")
        options.update((yaml.safe_load(text) or {}).get("options") or {})
    options.update(doc.get("options") or {})
    return options


def spec_differences(spec, documented, where=""):
    """How an argument spec and the documented options differ (empty when they agree), suboptions included."""
    found = []
    for name in sorted(set(spec) | set(documented)):
        if name not in documented or name not in spec:
            found.append("%s%s is %s" % (where, name, "not documented" if name in spec else "documented, not in the spec"))
            continue
        option, doc = spec[name], documented[name]
        for key, unset in COMPARED:
            given, documented_value = option.get(key, unset), doc.get(key, unset)
            if given != documented_value:
                found.append("%s%s: %s %r in the spec, %r documented" % (where, name, key, given, documented_value))
        found += spec_differences(option.get("options") or {}, doc.get("suboptions") or {}, "%s%s." % (where, name))
    return found


def example_tasks(tasks):
    """Every task of an EXAMPLES play list, those inside blocks included."""
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from example_tasks(task.get(key))


@pytest.fixture()
def module_docs():
    """module_docs(module) -> (DOCUMENTATION, EXAMPLES, RETURN) read as YAML, once it is shown that they parse, that
    MODULE_SPEC's options are the documented ones (fragments included; type, required, default, choices, elements,
    suboptions), and that EXAMPLES call the module by its full name with options it has."""

    def read(module):
        name = module.__name__.rsplit(".", 1)[-1]
        doc = yaml.safe_load(module.DOCUMENTATION)
        assert doc["module"] == name and doc["short_description"]
        spec = module.MODULE_SPEC["argument_spec"]
        assert spec_differences(spec, documented_options(doc)) == []
        examples = yaml.safe_load(module.EXAMPLES)
        calls = [task["%s.%s" % (COLLECTION, name)] for task in example_tasks(examples) if "%s.%s" % (COLLECTION, name) in task]
        assert calls, "EXAMPLES never call %s.%s" % (COLLECTION, name)
        assert [sorted(set(args) - set(spec)) for args in calls] == [[]] * len(calls)
        returned = yaml.safe_load(module.RETURN) or {}
        assert all(value.get("description") and value.get("type") for value in returned.values()), returned
        return doc, examples, returned
    return read


@pytest.fixture()
def module_process(capsys, monkeypatch):
    """module_process(module, args, check_mode=False) -> the result its main() prints, as in a module process on a
    managed node (wpcloud_hosting_execution: module): the arguments read from where AnsibleModule reads them."""

    def run(module, args, check_mode=False):
        given = dict(args, _ansible_check_mode=check_mode)
        # ansible-core 2.19 and later read a serialization profile beside the arguments; 2.16 reads the arguments only.
        monkeypatch.setattr(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": given}).encode())
        if hasattr(basic, "_ANSIBLE_PROFILE"):
            monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
        with pytest.raises(SystemExit):
            module.main()
        return json.loads(capsys.readouterr().out)
    return run
