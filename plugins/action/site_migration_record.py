# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of wpcloud.hosting.site_migration_record: the going-live steps recorded in the sites' state files,
in the controller process (what is recorded is decided in plugins/plugin_utils/site_migration/state_records.py)."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.state_file import read_state_file, write_state_file
from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import ControllerOnlyAction


def pending(record):
    """Whether the record holds a value its state file does not hold yet."""
    data = read_state_file(record["path"])
    return any(data.get(key) != value for key, value in record["values"].items())


def write(record):
    """The record's values written into its state file (its migration ID and site kept)."""
    data = read_state_file(record["path"])
    migration_id = record.get("migration_id") if record.get("migration_id") is not None else data.get("migration_id")
    write_state_file(record["path"], data.get("site") or record["site"], migration_id, **record["values"])


class ActionModule(ControllerOnlyAction):
    MODULE = "site_migration_record"

    def run_validated(self, result, params, no_log_values, task_vars):
        recorded, failures = [], []
        for record in params["records"]:
            try:
                if not pending(record):
                    continue
                if not self._task.check_mode:
                    write(record)
            except ModuleFailure as failure:
                failures.append(failure.msg)
                continue
            except OSError as exc:
                failures.append("the state file %s could not be written (%s)." % (record["path"], exc.strerror or exc))
                continue
            recorded.append(record["path"])
        result.update(changed=bool(recorded), recorded=recorded)
        if failures:
            result.update(failed=True, msg="site_migration_record: %s Fix the state directory "
                                           "(site_migration_state_dir) and run the role again." % " ".join(failures))
        return result
