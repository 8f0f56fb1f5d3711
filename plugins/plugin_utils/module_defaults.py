# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The play's module_defaults as Ansible applies them to a module, for an action that calls modules itself
(site_migration_setup calls several in the controller process, where Ansible applies none).

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

Ansible (2.16 to 2.21) merges a task's module_defaults, a list from the play down to the innermost block, entry by
entry (an inner block's entry for a group or an action replaces the outer one's), then gives a module the entries
of the groups it belongs to and over them its own (``get_action_args_with_defaults`` in 2.16,
``_get_action_arg_defaults`` in 2.21, both in ansible.executor.module_common; private, so done here the same way).
"""

from __future__ import annotations

from collections.abc import Mapping

GROUP_PREFIX = "group/"


def play_module_defaults(task, templar, omit=None):
    """``{entry: options}`` of the task's module_defaults, each entry (``group/<fqcn>`` or an action's FQCN) from the
    innermost block that sets it, templated in the running host's context; values templated to ``omit`` (2.16's
    placeholder: 2.21 drops them itself) left out."""
    merged = {}
    for entry in getattr(task, "module_defaults", None) or []:
        if isinstance(entry, Mapping):
            merged.update(entry)
    found = {}
    for key, value in merged.items():
        value = templar.template(value)
        if isinstance(value, Mapping):
            found[str(key)] = dict((str(k), v) for k, v in value.items() if omit is None or v != omit)
    return found


def action_groups(task):
    """``{action FQCN: [group FQCN, ...]}``: the groups the play resolved when it loaded its module_defaults."""
    play = task.get_play() if hasattr(task, "get_play") else None
    groups = getattr(play, "_action_groups", None)
    return dict(groups) if isinstance(groups, Mapping) else {}


def defaults_for(action, defaults, groups):
    """``(options, entries)``: the module_defaults that apply to ``action`` (its groups' entries, then its own over
    them, as Ansible applies them) and, for each option, the entry that gave it."""
    options, entries = {}, {}
    for key, value in defaults.items():
        if key.startswith(GROUP_PREFIX) and key[len(GROUP_PREFIX):] in (groups.get(action) or ()):
            options.update(value)
            entries.update((name, key) for name in value)
    options.update(defaults.get(action) or {})
    entries.update((name, action) for name in defaults.get(action) or {})
    return options, entries
