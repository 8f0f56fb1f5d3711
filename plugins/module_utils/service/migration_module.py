# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The migration module's logic as its callers reach it: ``run`` for the module's task (its options mapped to
the service's fields once, by FIELD_NAMES), ``run_fields`` for a caller that holds the fields by those names
(the site_migration role's setup phase, which maps its variables by ROLE_FIELDS), and the list form
``migrations`` run element by element. One migration is migration.py's ``run_one``.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.context import list_result, run_for_each
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration import run_one
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_credentials import unsent_warning
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    FIELD_NAMES,
    SECRET_FIELDS,
    SECRET_PARAMS,
)

# The options of an element of ``migrations`` that are its own; the others default to the task's value.
ELEMENT_ONLY = ("site", "migration_id", "state_file")
# The keys of an argument spec that list option names.
_NAME_GROUPS = ("mutually_exclusive", "required_one_of", "required_together")


def _field(name):
    return FIELD_NAMES.get(name, name)


def field_spec(spec):
    """A module spec (or an option's) with each migration option under its field's name: the same checks
    for a caller that holds the fields."""
    renamed = {}
    for key, value in spec.items():
        if key in ("argument_spec", "options"):
            value = dict((_field(name), field_spec(option)) for name, option in value.items())
        elif key in _NAME_GROUPS:
            value = [[_field(name) for name in group] for group in value]
        elif key == "required_by":
            value = dict((_field(name), [_field(need) for need in ((needs,) if isinstance(needs, str) else needs)])
                         for name, needs in value.items())
        renamed[key] = value
    return renamed


def _by_field(options):
    return dict((_field(name), value) for name, value in options.items())


def fields_of(params):
    """The module's options with each migration option under its field's name, in each element of
    ``migrations`` too: the one mapping of a module user's names (FIELD_NAMES)."""
    fields = _by_field(params)
    if fields.get("migrations") is not None:
        fields["migrations"] = [_by_field(element) for element in fields["migrations"]]
    return fields


def run(params, ctx):
    """The migration module's logic on its options."""
    return run_fields(fields_of(params), ctx)


def run_fields(params, ctx):
    """The migration module's logic on ``params`` whose migration fields (in each element of ``migrations``
    too) are under the service's names."""
    if params.get("migrations") is not None:
        return _run_migrations(params, ctx)
    result = run_one(params, ctx)
    if result.get("credentials_not_sent"):
        ctx.warn(unsent_warning(result["credentials_not_sent"], [result["migration_id"]]))
    return result


# -- the list form: many migrations in one task ----------------------------------------------------------

def _element_params(params, element):
    """One element of ``migrations`` as the options of a single migration.

    Unset element options take the task's value. Credentials are taken as a set: an element that
    gives any of remote-pass, ssh-id or ssh-id-pass takes none of the task's.
    """
    single = dict(params, migrations=None)
    if any(element.get(field) is not None for field in SECRET_PARAMS):
        for field in SECRET_PARAMS:
            single[field] = None
    for name, value in element.items():
        if value is not None or name in ELEMENT_ONLY:
            single[name] = value
    return single


def _migration_label(params):
    if params.get("site") is not None:
        return "site %s" % params["site"]
    return "migration %s" % params.get("migration_id")


def _run_migrations(params, ctx):
    elements = [_element_params(params, element) for element in params["migrations"]]
    # Two elements for one site or one state file would race each other into two migrations.
    for key in ("site", "migration_id", "state_file"):
        seen = set()
        for single in elements:
            value = single.get(key)
            if value is None:
                continue
            value = str(value).strip().lower() if key == "site" else value
            if value in seen:
                raise ModuleFailure("migrations lists %s %s twice: give each site, migration and state_file "
                                    "once." % (key, single[key]))
            seen.add(value)
    ctx.client()  # a connection problem fails the task once, not each element

    notes = []

    def one(single):
        try:
            result = run_one(single, ctx)
        except ModuleFailure as failure:
            for name in ("site", "migration_id"):
                if single.get(name) is not None:
                    failure.details.setdefault(name, single[name])
            raise
        if single.get("site") is not None:
            result.setdefault("site", single["site"])
        if result.get("credentials_not_sent"):
            notes.append((result["migration_id"], result["credentials_not_sent"]))
        return result

    results = run_for_each(elements, one)
    # One warning for the fleet rather than one per migration.
    if notes:
        notes.sort()
        fields = sorted(set(f for item in notes for f in item[1]), key=SECRET_FIELDS.index)
        ctx.warn(unsent_warning(fields, [item[0] for item in notes]))
    return list_result(results, "migrations", _migration_label)
