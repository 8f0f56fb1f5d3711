# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The variables the play's sites set that the role does not know: a misspelt role variable
(``site_migration_confirm_overwite``) is otherwise ignored without a word, and the role fails on the variable it
meant, or silently uses that variable's default. One warning per variable, however many sites set it, naming the
closest variable the role knows.

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

``site_migration_`` is the role's namespace: every name there that is not the role's is said. ``wpcloud_`` is the
collection's (its playbooks' variables, the sites inventory's host variables, one per field the service lists), so
only a name there that reads like one of the role's connection variables is said (``wpcloud_api_ur``).
"""

from __future__ import annotations

import difflib

from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import (
    CHECK_MODE_CREATED_SITES_FACT,
    CONNECTION_VARIABLES,
)

ROLE = "wpcloud.hosting.site_migration"
ROLE_PREFIX = "site_migration_"
COLLECTION_PREFIX = "wpcloud_"
PREFIXES = (ROLE_PREFIX, COLLECTION_PREFIX)
# Names of the role's namespace that are not its inputs: what it sets (the report and its file), its own facts
# (site_migration__*), and the slices' report artifacts of an AWX workflow (site_migration_slice_report_*).
ROLE_OUTPUTS = frozenset(["site_migration_report", "site_migration_report_file"])
ROLE_OWN_PREFIXES = ("site_migration__", "site_migration_slice_report_")
# The collection's variables of that namespace that read like a connection variable: set by the collection itself.
COLLECTION_OWN = frozenset([CHECK_MODE_CREATED_SITES_FACT, "wpcloud_hosting_execution", "wpcloud_hosting_role_connection"])
# How close the rest of a name (after its prefix) must be to a known one's to be taken for it (difflib's ratio): any
# unknown name of the role's namespace is said, with the closest one at this; of the collection's only a near miss.
ROLE_CUTOFF = 0.6
COLLECTION_CUTOFF = 0.75


def _closest(name, known, prefix, cutoff):
    rests = dict((k[len(prefix):], k) for k in known)
    found = difflib.get_close_matches(name[len(prefix):], sorted(rests), n=1, cutoff=cutoff)
    return rests[found[0]] if found else None


def unknown_variable_warnings(seen, role_variables):
    """One warning per unknown variable, in name order. ``seen``: ``{variable: [host, ...]}`` of the play's sites'
    variables under the role's and the collection's prefixes; ``role_variables``: the role's inputs (its argument
    spec's options, the connection variables among them)."""
    known = set(role_variables) | set(CONNECTION_VARIABLES.values())
    role_known = sorted(v for v in known if v.startswith(ROLE_PREFIX))
    connection = sorted(CONNECTION_VARIABLES.values())
    warnings = []
    for name in sorted(seen):
        if name in known or name in ROLE_OUTPUTS or name in COLLECTION_OWN or name.startswith(ROLE_OWN_PREFIXES):
            continue
        if name.startswith(ROLE_PREFIX):
            meant = _closest(name, role_known, ROLE_PREFIX, ROLE_CUTOFF)
        elif name.startswith(COLLECTION_PREFIX):
            meant = _closest(name, connection, COLLECTION_PREFIX, COLLECTION_CUTOFF)
            if meant is None:
                continue
        else:
            continue
        hosts = list(seen[name])
        where = ", ".join(hosts[:3]) + (" and %d more" % (len(hosts) - 3) if len(hosts) > 3 else "")
        hint = ("did you mean %s?" % meant) if meant else \
            "the role's variables are listed by ansible-doc -t role %s." % ROLE
        warnings.append("%s (set for %s) is not a variable of the role %s and is ignored: %s"
                        % (name, where, ROLE, hint))
    return warnings
