#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site_migration_record
short_description: "Internal: record the going-live steps of the site_migration role in its sites' state files"
version_added: 0.1.0
description:
  - Internal to the collection. A task of the C(wpcloud.hosting.site_migration) role, documented so that the role can
    be read; its options may change in any release.
  - Adds values to each site's state file on the controller (the file that keeps the site's migration ID), written
    atomically, the other values of the file kept - the backup taken before a refresh and how that refresh ended, the
    cutover, a rollback (docs/go-live.md).
  - Writes nothing in check mode.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  records:
    description:
      - The values to record, one item per site. An empty list records nothing.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: The site's state file.
        type: path
        required: true
      site:
        description: The site, as the state file names it.
        type: str
        required: true
      migration_id:
        description: The site's migration (the state file's, when null).
        type: int
      values:
        description: The keys to set (a null value records null).
        type: dict
        required: true
extends_documentation_fragment:
  - wpcloud.hosting.attributes.CONTROLLER_ONLY
attributes:
  async:
    description: Not supported; it writes small local files.
    support: none
  check_mode:
    description: Writes nothing; says which files it would change.
    support: full
  diff_mode:
    description: Not supported; the role's report shows what is recorded.
    support: none
  idempotent:
    description: A value recorded already is not written again.
    support: full
  platform:
    description: Runs on the controller, once for the fleet.
    support: full
    platforms: posix
seealso:
  - name: Going live
    description: What the state file records of the going-live steps.
    link: https://github.com/wpcloud-hosting/wpcloud.hosting/blob/main/docs/go-live.md
'''

EXAMPLES = r'''
- name: Record the backups taken before the run in the sites' state files
  wpcloud.hosting.site_migration_record:
    records:
      - path: /srv/ansible/wpcloud-state/dest1.example.json
        site: dest1.example
        migration_id: 5001
        values:
          pre_refresh_backup:
            backup_ids: ["3001", "3002"]
            taken: "2026-11-28 10:00:01"
            recorded_at: "2026-11-28T10:00:03Z"
            refresh: pending
'''

RETURN = r'''
recorded:
  description: The state files written (in check mode, those that would be).
  returned: always
  type: list
  elements: str
  sample: ["/srv/ansible/wpcloud-state/dest1.example.json"]
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import refuse_module_process

MODULE_SPEC = dict(argument_spec=dict(records=dict(type="list", elements="dict", required=True, options=dict(
    path=dict(type="path", required=True),
    site=dict(type="str", required=True),
    migration_id=dict(type="int"),
    values=dict(type="dict", required=True),
))))


def main():
    refuse_module_process(MODULE_SPEC, "site_migration_record")


if __name__ == "__main__":
    main()
