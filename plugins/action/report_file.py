# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of wpcloud.hosting.report_file: a JSON file written in the controller process.

``ansible.builtin.file`` and ``ansible.builtin.copy`` delegated to localhost start three module processes
(file, stat, copy) and their temporary directories: about 2 s of every run of the site_migration role,
as much as all its other fleet tasks together at one site (docs/performance.md, "Fleet cost").
"""

from __future__ import annotations

import os
import stat
import tempfile

from ansible.plugins.filter.core import to_nice_json

from ansible_collections.wpcloud.hosting.plugins.plugin_utils._controller_action import ControllerOnlyAction


def _octal(params, name):
    value = params[name]
    if isinstance(value, int) and not isinstance(value, bool):
        return value              # YAML's 0640: already the permissions (as ansible.builtin.copy takes it)
    try:
        return int(str(value), 8)
    except ValueError:
        raise ValueError("report_file: %s must be octal permissions such as 0640, got %r" % (name, params[name]))


def _same_file(path, text, mode):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read() == text and stat.S_IMODE(os.stat(path).st_mode) == mode
    except (OSError, ValueError):
        return False


def write_json(path, content, mode, directory_mode):
    """Write ``content`` as JSON to ``path`` atomically; False when the file already held it."""
    text = to_nice_json(content, indent=2) + "\n"
    if _same_file(path, text, mode):
        return False
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=directory_mode, exist_ok=True)
    if stat.S_IMODE(os.stat(directory).st_mode) != directory_mode:
        os.chmod(directory, directory_mode)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


class ActionModule(ControllerOnlyAction):
    MODULE = "report_file"

    def run_validated(self, result, params, no_log_values, task_vars):
        path = params["path"]
        if not path:
            result.update(failed=True, msg="report_file: path is empty; give the file to write, for example "
                                           "\"{{ playbook_dir }}/reports/run.json\".")
            return result
        try:
            mode, directory_mode = _octal(params, "mode"), _octal(params, "directory_mode")
            if self._task.check_mode:
                changed = not _same_file(path, to_nice_json(params["content"], indent=2) + "\n", mode)
            else:
                changed = write_json(path, params["content"], mode, directory_mode)
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        except OSError as exc:
            result.update(failed=True, msg="report_file: %s could not be written (%s: %s); check the directory's "
                                           "permissions and free space." % (path, type(exc).__name__, exc.strerror))
            return result
        result.update(changed=changed, path=path)
        return result
