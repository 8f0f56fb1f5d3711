#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: report_file
short_description: 'Internal: write a JSON report to a file on the controller, in one task without a module process'
version_added: 0.1.0
description:
  - Internal to the collection. The C(wpcloud.hosting.site_migration) role writes its report with it. Documented
    so that the role can be read; its options may change in any release.
  - Writes O(content) as indented JSON (sorted keys, as the C(to_nice_json) filter with C(indent=2) writes
    it) to O(path) on the controller, creating its directory if needed, atomically (a temporary file in the
    same directory, then renamed over O(path)).
  - Runs in the controller process. The same with C(ansible.builtin.file) and C(ansible.builtin.copy)
    delegated to C(localhost) starts three module processes (C(file), C(stat), C(copy)), which cost the
    C(wpcloud.hosting.site_migration) role about two seconds of every run (the collection's
    docs/performance.md has the figures). The role writes its report with it.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  path:
    description:
      - The file to write, on the controller. Its directory is created when it is missing.
    type: path
    required: true
  content:
    description:
      - The data to write, as JSON.
    type: raw
    required: true
  mode:
    description:
      - The permissions of the file, an octal string such as C("0640"). A number (YAML reads an unquoted
        C(0640) as one) is taken as the permissions themselves, as C(ansible.builtin.copy) takes it.
    type: raw
    default: "0640"
  directory_mode:
    description:
      - The permissions of the file's directory, as O(mode), set whether or not it existed (as
        C(ansible.builtin.file) with C(state=directory) and C(mode) does).
    type: raw
    default: "0750"
extends_documentation_fragment:
  - wpcloud.hosting.attributes.CONTROLLER_ONLY
attributes:
  async:
    description: Not supported; it takes milliseconds.
    support: none
  check_mode:
    description: Says whether it would write the file, and writes nothing.
    support: full
  diff_mode:
    description: Not supported; a report is shown by the task that builds it.
    support: none
  idempotent:
    description: A file that already holds the same JSON with the same mode is left alone (unchanged).
    support: full
  platform:
    description: Runs on the controller, whatever host the task is for.
    support: full
    platforms: posix
seealso:
  - name: The site_migration role
    description: Writes its JSON report with this module.
    link: https://github.com/wpcloud-hosting/wpcloud.hosting/blob/main/docs/migration.md
'''

EXAMPLES = r'''
- name: Write the inventory's sites as JSON on the controller
  wpcloud.hosting.report_file:
    path: "{{ playbook_dir }}/reports/sites.json"
    content:
      sites: "{{ groups['wpcloud_sites'] }}"
  run_once: true
'''

RETURN = r'''
path:
  description: The file written (or that would be, in check mode).
  returned: always
  type: str
  sample: /srv/wpcloud-reports/site-migration-20261126T173100-site0001-site0100.json
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import refuse_module_process

ARGUMENT_SPEC = dict(
    path=dict(type="path", required=True),
    content=dict(type="raw", required=True),
    mode=dict(type="raw", default="0640"),
    directory_mode=dict(type="raw", default="0750"),
)
MODULE_SPEC = dict(argument_spec=ARGUMENT_SPEC)


def main():
    refuse_module_process(MODULE_SPEC, "report_file")


if __name__ == "__main__":
    main()
