#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site_migration_recap
short_description: "Internal: one site's outcome of a fleet run for the play recap, without a template per site"
version_added: 0.1.0
description:
  - Internal to the collection. The C(wpcloud.hosting.site_migration) role's last task. Documented so that the
    role can be read; its options may change in any release.
  - Runs for one site (a host of the play) and reads the fleet's outcome from the variable named by O(var);
    it fails the site with its message when its migration did not succeed, is C(changed) when the run changed
    the site (or would, in check mode), and C(ok) otherwise. So the play recap and AWX's host summary list
    every site of the play, which a fleet of C(run_once) tasks does not.
  - The C(wpcloud.hosting.site_migration) role runs it as its one task per site. The same with
    C(ansible.builtin.assert), C(fail_msg) and C(changed_when) compiles three Jinja templates in each site's
    worker process; this reads the variable in Python (the collection's docs/performance.md has the figures).
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  var:
    description:
      - The name of the variable that holds the fleet's outcome, a dict with C(stopped) (host name to the
        message of a site whose migration did not succeed) and C(changed) (host name to C(true) for the
        sites that the run changed). A host in neither is C(ok).
      - The C(wpcloud.hosting.site_migration) role sets C(site_migration__recap) in its report.
    type: str
    default: site_migration__recap
extends_documentation_fragment:
  - wpcloud.hosting.attributes.CONTROLLER_ONLY
attributes:
  async:
    description: Not supported; it reads one variable.
    support: none
  check_mode:
    description: The same result as without check mode (the outcome says what the run would do).
    support: full
  diff_mode:
    description: Not supported; it changes nothing.
    support: none
  idempotent:
    description: It changes nothing; C(changed) reports what the fleet run did to the site.
    support: full
  platform:
    description: Runs on the controller, once for each site of the play.
    support: full
    platforms: posix
seealso:
  - name: The site_migration role
    description: Its last task, once per site.
    link: https://github.com/wpcloud-hosting/wpcloud.hosting/blob/main/docs/migration.md
'''

EXAMPLES = r'''
- name: Fail the sites whose migration did not succeed, show the others as changed or ok
  wpcloud.hosting.site_migration_recap:
    var: site_migration__recap
'''

RETURN = r'''
msg:
  description: The message of a site whose migration did not succeed (the task fails).
  returned: failure
  type: str
  sample: "site0003: the preflight failed (diagnosis: ssh_auth): check site_migration_remote_user"
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import refuse_module_process

# The task per site has no argument to template: the action reads the variable that ``var`` names.
MODULE_SPEC = dict(argument_spec=dict(var=dict(type="str", default="site_migration__recap")))


def main():
    refuse_module_process(MODULE_SPEC, "site_migration_recap")


if __name__ == "__main__":
    main()
