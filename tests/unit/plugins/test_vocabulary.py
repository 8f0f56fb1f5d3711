# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Each rule of the service is defined once (module_utils/service/vocabulary.py) and imported wherever it is used."""

from __future__ import annotations

import ast
import importlib
import os
import re

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.service import vocabulary

PLUGINS = os.path.abspath(os.path.join(os.path.dirname(vocabulary.__file__), "..", ".."))
VOCABULARY = [name for name in dir(vocabulary) if not name.startswith("_") and name not in ("annotations", "re")]
# The module files of the collection that are Python plugins (the event source is a plugin of ansible-rulebook).
SOURCES = sorted(os.path.join(root, name) for root, dirs, names in os.walk(PLUGINS) for name in names
                 if name.endswith(".py") and name != "__init__.py")
DOCS = ("DOCUMENTATION", "EXAMPLES", "RETURN")


def module_name(path):
    relative = os.path.relpath(path, PLUGINS)[:-3].replace(os.sep, ".")
    return "ansible_collections.wpcloud.hosting.plugins." + relative


def uses():
    """(module, name) for every vocabulary name that a plugin file names."""
    found = []
    for path in SOURCES:
        if path == vocabulary.__file__:
            continue
        with open(path) as handle:
            words = set(re.findall(r"\w+", handle.read()))
        found.extend((module_name(path), name) for name in VOCABULARY if name in words)
    return found


USES = uses()


def test_the_vocabulary_is_used_where_it_was_defined_before():
    # Migration states were defined four times (migration.py, poller.py, the old _tickets.py and the role's
    # template), secret field names three times: each is now one object, imported by these files.
    where = {}
    for module, name in USES:
        where.setdefault(name, set()).add(module.rsplit(".", 1)[-1])
    # The role's decisions: plugins/plugin_utils/site_migration/ (outcomes.py, inputs.py, steps.py, stages.py).
    assert {"migration", "migration_runs", "outcomes"} <= where["RUNNING_STATES"]
    assert {"migration_module"} <= where["SECRET_FIELDS"]
    assert {"migration", "migration_module", "outcomes", "steps"} <= where["SECRET_PARAMS"]
    assert {"migration_runs", "outcomes"} <= where["FAILED_STATES"]
    assert {"poller", "migration_runs", "outcomes"} <= where["TICKET_TERMINAL"]
    # The role variable of each module option: one table, for the role's messages. A role variable's field: one
    # table, for the role's arguments of the migration logic (a value goes straight from its variable to its field).
    assert {"stages", "steps"} <= where["ROLE_VARIABLES"]
    assert {"steps"} <= where["ROLE_FIELDS"] and {"migration_module"} <= where["FIELD_NAMES"]
    assert {"migration_runs"} <= where["RUN_TERMINAL_STATES"] and {"migration_runs"} <= where["ACTIVE_STATES"]
    assert {"migration_runs"} <= where["diagnose"]


def test_the_wait_contract_and_the_connection_defaults_are_defined_once_in_their_layer():
    """Not the service's words but ours: the wait contract in runtime/arguments.py (the role's checks read the
    same objects), the connection's defaults in api/defaults.py (the client's and the options')."""
    from ansible_collections.wpcloud.hosting.plugins.module_utils.api import client, defaults
    from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime import arguments
    from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration import inputs, steps

    assert inputs.MIN_POLL_INTERVAL is arguments.MIN_POLL_INTERVAL and steps.MIN_POLL_INTERVAL is arguments.MIN_POLL_INTERVAL
    for name in ("DEFAULT_API_URL", "DEFAULT_TIMEOUT", "DEFAULT_RETRIES", "DEFAULT_RETRY_TIMEOUT"):
        assert getattr(client, name) is getattr(defaults, name) is getattr(arguments, name), name
        assert not hasattr(vocabulary, name), name
    assert arguments.API_ARGUMENT_SPEC["timeout"]["default"] == defaults.DEFAULT_TIMEOUT


@pytest.mark.parametrize("module,name", USES, ids=["%s:%s" % (m.rsplit(".", 1)[-1], n) for m, n in USES])
def test_every_use_is_the_one_definition(module, name):
    """A file that names a vocabulary item holds the vocabulary's own object, not a copy of its own."""
    loaded = importlib.import_module(module)
    if hasattr(loaded, name):
        assert getattr(loaded, name) is getattr(vocabulary, name)
    # Otherwise the file only mentions the name (in a comment or text); it cannot hold a copy.


def service_words():
    """The service's own spellings: migration states, parameter names, credential fields, the ticket parameter."""
    words = set(vocabulary.FIELD_NAMES.values()) | set(vocabulary.RECORD_SECRETS) | {vocabulary.TICKET_ID_PARAM}
    # Going live (issue 37): job types, backup types and fields, restore and certificate fields (not the words that
    # are also the modules' own result keys, such as job_id or suspended).
    words |= {vocabulary.DOMAIN_JOB_TYPE, vocabulary.RESTORE_JOB_TYPE, vocabulary.BACKUP_ID, vocabulary.BACKUP_TIMESTAMP,
              vocabulary.ALLOW_RESTORE, vocabulary.RESTORE_FROM,
              vocabulary.SSL_BROKEN_RECORD, vocabulary.RESTORE_JOB_FIELDS[0], vocabulary.BACKUP_REQUEST_FIELDS[0]}
    words |= set(vocabulary.ONDEMAND_TYPES.values()) | set(vocabulary.SSL_CERTIFICATE_FIELDS)
    for name in VOCABULARY:
        value = getattr(vocabulary, name)
        if name.startswith(("PREFLIGHT_", "MIGRATION_")) and isinstance(value, str):
            words.add(value)
    return words


def code_strings(path):
    """Every string constant of a file's code: not its docstrings, nor DOCUMENTATION, EXAMPLES and RETURN."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in DOCS for t in node.targets):
            skipped.add(id(node.value))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body and \
                isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            skipped.add(id(node.body[0].value))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped]


def test_no_plugin_spells_the_services_words_itself():
    words = service_words()
    assert {"migration-running", "remote-pass", "generated-ssh-id", "response-ticket-id", "ondemand-fs"} <= words
    spelled = dict((os.path.relpath(path, PLUGINS), sorted(words & set(code_strings(path))))
                   for path in SOURCES if path != vocabulary.__file__)
    assert dict((path, found) for path, found in spelled.items() if found) == {}
