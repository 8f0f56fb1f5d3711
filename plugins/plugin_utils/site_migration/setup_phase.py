# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The role's phase before the key install, as one call (the action wpcloud.hosting.site_migration_setup):
every site's inputs lined up, then the steps find, new, info, check, allow and create, each one module
call for the sites at its stage, each result taken in once (``step_arguments`` pairs it with its sites).

Note that this plugin util is PRIVATE to the collection. It can have breaking changes at any time.

The module calls are made by ``call(module, args, check_mode, by_field)`` (the action runs the module's own logic in
the controller process), so this file holds the order and the arguments only; what a result does to a site
is outcomes.py's, and the arguments of a step are steps.py's (the migration steps' by the service's field names:
the credentials among them taken from the sites' role variables straight to their fields by the vocabulary's
ROLE_FIELDS, in memory, never in a result or a fact).
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.inputs import lineup, secret_texts
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.outcomes import advance
from ansible_collections.wpcloud.hosting.plugins.plugin_utils.site_migration.steps import step_arguments

# The steps of the phase in order: the module each calls, and what the progress line says of it (the names
# its tasks had in the role's output before it was one task).
PHASE = (
    ("find", "site_info", "Look for the destination sites in the client's account"),
    ("new", "site", "Create the missing destination sites, ready for a migration"),
    ("info", "migration_info", "Read the migrations of the sites that are not refreshed"),
    ("check", "migration", "Check the migrations' inputs before anything is written"),
    ("allow", "site_allow_migration", "Allow a migration into every destination site"),
    ("create", "migration", "Create the migrations, or update what changed"),
)
# The step that only checks: it runs in check mode and changes nothing.
CHECK_STEP = "check"
# The steps whose arguments hold a migration's fields under the service's names (steps.py migration_arguments).
BY_FIELD = frozenset([CHECK_STEP, "create"])
# The first step after the phase (it runs on the source hosts).
NEXT_STEP = "key"


def module_arguments(step, todo):
    """The module arguments of a step, from what ``step_arguments`` lined up for it."""
    if step == "find":
        return {"client": todo["client"]}
    if step == "new":
        args = dict((k, todo[k]) for k in ("client", "sites", "wait", "wait_timeout", "poll_interval"))
        args["allow_site_migration"] = True
        if todo.get("poll_max_interval"):
            args["poll_max_interval"] = todo["poll_max_interval"]
        return args
    if step == "info":
        return {"sites": todo["sites"]}
    if step == "allow":
        # each site's site_migration_confirm_overwrite was checked in the line-up
        return {"sites": todo["sites"], "confirm_overwrite": True}
    return {"migrations": todo["migrations"]}


def role_secrets_by_variable(inputs, spec):
    """``{variable: texts}``: every text of the sites' values of each of the role's no_log variables that one gives."""
    options = spec.get("options", spec) if isinstance(spec, Mapping) else {}
    found = {}
    for given in inputs:
        for name, option in options.items():
            if isinstance(option, Mapping) and option.get("no_log"):
                texts = secret_texts((given or {}).get(name))
                if texts:
                    found.setdefault(name, set()).update(texts)
    return found


def role_secrets(inputs, spec):
    """Every text of the sites' values of the role's no_log variables (what the phase's result must never show)."""
    return set(text for texts in role_secrets_by_variable(inputs, spec).values() for text in texts)


def set_up(inputs, hosts, spec, call, hostvars=None, check_mode=False, progress=None, fleet_problems=()):
    """The fleet after the phase, lined up for the key install, and what each step did.

    ``inputs``: each host's role variables (read through Ansible's variable manager), in the order of ``hosts``;
    ``spec``: the role's argument spec; ``call(module, args, check_mode, by_field)``: a module's result (``by_field``:
    the arguments hold the fields by the service's names, run_in_controller's).
    ``fleet_problems``: what stops every site before any call (the play's connection).
    Returns ``(fleet, steps)``: the fleet (no credential; its sites at stage key or later), and per step that
    ran, its ``result`` (the module's, for the caller's diff, warnings and facts) and ``sites`` (how many)."""
    fleet = lineup(inputs, hosts, spec, hostvars, check_mode, fleet_problems)
    steps, taken = {}, {}
    for step, module, about in PHASE:
        todo = step_arguments(fleet, step, taken, inputs)
        fleet, taken = todo["fleet"], {}
        if not todo["count"]:
            continue
        if progress is not None:
            progress("%s (%d site%s)" % (about, todo["count"], "" if todo["count"] == 1 else "s"))
        result = call(module, module_arguments(step, todo), True if step == CHECK_STEP else check_mode, step in BY_FIELD)
        steps[step] = {"sites": todo["count"], "result": result}
        taken = {step: result}
    return advance(fleet, taken, upto=NEXT_STEP), steps


# Where each step's diff goes in a site's one diff: the site created (under "site"), its allow flag (the module's
# own key), the migration's fields (under "migration"), in this order.
DIFF_PLACES = (("new", "site"), ("allow", None), ("create", "migration"))


def _label(value):
    return str(value).strip().lower()


def site_diffs(steps, fleet):
    """One diff per site that the phase changed (or would, in check mode): the before and after of its site, allow
    flag and migration, from the steps' diffs (a module gives one per site, headed ``site <site>``; redacted by the
    module: no credential), in the order of the fleet. ``steps`` as ``set_up`` returns them."""
    merged = {}
    for step, place in DIFF_PLACES:
        result = (steps.get(step) or {}).get("result")
        if not isinstance(result, Mapping) or not result.get("changed") or not result.get("diff"):
            continue
        found = result["diff"] if isinstance(result["diff"], list) else [result["diff"]]
        for diff in found:
            if not isinstance(diff, Mapping):
                continue
            if diff.get("before") == diff.get("after"):
                continue          # a list form gives every item's diff, the unchanged ones too
            header = str(diff.get("before_header") or diff.get("after_header") or "")
            before, after = merged.setdefault(_label(header), (header, {}, {}))[1:]
            if place is None:
                before.update(diff.get("before") or {})
                after.update(diff.get("after") or {})
            else:
                before[place], after[place] = diff.get("before"), diff.get("after")
    diffs = []
    for entry in fleet:
        header, before, after = merged.pop(_label("site %s" % entry["site"]), (None, None, None))
        if header is not None:
            if _label(entry["site"]) != _label(entry["host"]):
                header = "%s (host %s)" % (header, entry["host"])
            diffs.append({"before_header": header, "after_header": header, "before": before, "after": after})
    # A diff the fleet does not name (none, unless a module names a site otherwise): shown as it came.
    diffs += [{"before_header": header, "after_header": header, "before": before, "after": after}
              for header, before, after in merged.values()]
    return diffs
