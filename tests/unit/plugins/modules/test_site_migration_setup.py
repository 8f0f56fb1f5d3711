# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""site_migration_setup, the module file: its spec and documentation (the EXAMPLES' argument_spec is the role's
own), and what a module process does with it (say that the task is its action plugin's, without a call). The
phase itself on the fake service: tests/unit/plugins/action/test_site_migration_setup.py, its steps in
tests/unit/plugins/plugin_utils/site_migration/test_setup_phase.py, the integration target site_migration_setup."""

from __future__ import annotations

import os

import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.modules import site_migration_setup

ROLE_SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "site_migration", "meta",
                         "argument_specs.yml")


def role_options():
    with open(ROLE_SPEC) as handle:
        return yaml.safe_load(handle)["argument_specs"]["main"]["options"]


def test_the_documentation_parses_and_matches_the_spec(module_docs):
    doc, examples, returned = module_docs(site_migration_setup)
    assert set(returned) == {"fleet", "going_live", "steps"}


def test_the_examples_argument_spec_is_the_roles():
    """The example gives the role's options as the role declares them, so that it reads as the role runs it."""
    examples = yaml.safe_load(site_migration_setup.EXAMPLES)
    (task,) = [t for t in examples[0]["block"] if "wpcloud.hosting.site_migration_setup" in t]
    given = task["wpcloud.hosting.site_migration_setup"]["argument_spec"]["options"]
    role = role_options()
    assert given and set(given) <= set(role)
    assert dict((name, role[name].get("type")) for name in given) == dict((name, o["type"]) for name, o in given.items())
    assert all(given[name].get("choices", role[name].get("choices")) == role[name].get("choices") for name in given)
    assert set(task["vars"]) <= set(given)


def test_the_spec_needs_the_roles_argument_spec_and_hides_the_api_key():
    validator = ArgumentSpecValidator(**site_migration_setup.MODULE_SPEC)
    given = validator.validate({"argument_spec": {"options": {}}, "api_key": "unit-secret-key"})
    assert not given.error_messages and given.validated_parameters["hosts"] is None
    assert site_migration_setup.MODULE_SPEC["argument_spec"]["api_key"]["no_log"] is True
    assert "missing required arguments: argument_spec" in " ".join(validator.validate({"api_key": "k"}).error_messages)
    assert validator.validate({"argument_spec": "options", "api_key": "k"}).error_messages


def test_a_module_process_says_the_task_runs_on_the_controller_and_calls_nothing(module_process, fake_api):
    result = module_process(site_migration_setup, {"argument_spec": {"options": {}}, "api_url": fake_api.url,
                                                   "api_key": fake_api.api_key})
    assert result["failed"] is True
    assert result["msg"].startswith("wpcloud.hosting.site_migration_setup runs as an action plugin on the controller")
    assert fake_api.calls == [] and fake_api.api_key not in str(result)
