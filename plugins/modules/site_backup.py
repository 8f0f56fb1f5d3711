#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
module: site_backup
short_description: Back up a WP Cloud site on demand, list, delete its backups, or restore it from two of them
version_added: 0.1.0
description:
  - With O(state=present), makes sure the site has an on-demand backup of its files, its database or both
    (O(type)), and waits until each exists. A backup exists once the service lists it; the service has nothing
    else to poll (the request answers only a request ID).
  - A re-run does not pile up backups. An on-demand backup of the type that the site already has counts as present;
    with O(max_age), only one younger than that. The service allows one on-demand backup per type by default; when
    the quota leaves no room, O(replace_older=true) deletes the older backup (waits until it is gone) and creates the
    new one, else the task fails naming the old backup.
  - With O(state=absent), deletes the on-demand backups O(backup_ids) (else every on-demand backup of O(type)) and
    waits until the list no longer shows them. A backup already gone is not an error.
  - With O(state=restored), replaces the site's files and database with those of the two backups O(backup_ids) (one
    files backup, one database backup; on-demand or automatic), only with O(confirm_overwrite=true). The service
    needs the site meta C(allow_restore) (set to the current time) and the site suspended with status 503; the module
    sets both, follows the restore's job to its end, then lifts the suspension (O(keep_suspended)).
  - With O(state=listed), only lists the site's backups.
  - Every state returns the site's backups of O(type) (RV(backups)). Backup IDs are opaque strings.
  - With O(sites), serves many sites in one task, 16 at a time on one connection, and waits for all of them at once.
author:
  - wpcloud.hosting developers (@wpcloud-hosting)
options:
  client:
    description:
      - The client identifier of the partner account (lowercase) that owns the site; the service's backup list
        names it (with the site ID).
    type: str
    required: true
  site:
    description:
      - The site, by numeric site ID or primary domain. Required unless O(sites) is given.
    type: str
  state:
    description:
      - V(present) - an on-demand backup of each type exists (created and waited for when none counts);
        V(absent) - the backups are deleted; V(restored) - the site is restored from O(backup_ids);
        V(listed) - the backups are only listed.
    type: str
    choices: [present, absent, restored, listed]
    default: present
  type:
    description:
      - What the backups hold - V(files) (the file system), V(database), or V(both).
    type: str
    choices: [files, database, both]
    default: both
  max_age:
    description:
      - With O(state=present), the age below which an existing on-demand backup counts as present, as seconds or
        with a unit - V(30m), V(2h), V(1d), V(1w). Left out, any on-demand backup of the type counts.
      - A backup taken before each refresh of a migration - V(10m), say - is then new for every run, and a re-run
        right after it creates nothing.
    type: str
  replace_older:
    description:
      - With O(state=present), when the service's quota of on-demand backups of a type is reached by a backup older
        than O(max_age), delete that backup (and wait until it is gone) before creating the new one.
      - Without it the task fails and names the old backup; the site keeps it.
    type: bool
    default: false
  backup_ids:
    description:
      - With O(state=absent), the backups to delete (automatic backups cannot be deleted); left out, every on-demand
        backup of O(type).
      - With O(state=restored), exactly two - a files backup and a database backup of the site, as RV(backups) or
        RV(backup_ids) of an earlier task show them.
    type: list
    elements: str
  confirm_overwrite:
    description:
      - Must be V(true) with O(state=restored). A restore replaces the site's files and database; what the site holds
        now is lost unless it was backed up first.
    type: bool
    default: false
  keep_suspended:
    description:
      - With O(state=restored), leave the site suspended (503) after a successful restore, for example to check the
        restored copy first; lift it later by removing the site meta C(suspended).
      - With the default the suspension is lifted once the restore has succeeded, also when the site was suspended
        before the task (RV(suspended_before)). After a failed restore the suspension this task set is lifted either
        way, as the service leaves the site as it was.
    type: bool
    default: false
  sites:
    description:
      - Many sites, each a dict with O(sites[].site) and any of the other suboptions; the task's options are the
        defaults of each. Mutually exclusive with O(site). A site listed twice is refused before any call.
    type: list
    elements: dict
    suboptions:
      site:
        description: As O(site).
        type: str
      type:
        description: As O(type).
        type: str
        choices: [files, database, both]
      max_age:
        description: As O(max_age).
        type: str
      backup_ids:
        description: As O(backup_ids).
        type: list
        elements: str
      keep_suspended:
        description: As O(keep_suspended).
        type: bool
  wait:
    description:
      - Wait until the new backups are listed (O(state=present)), the deleted ones no longer are (O(state=absent)), or
        the restore's job has ended (O(state=restored)).
      - With V(false), the task returns once the service took the requests (RV(requests)); users of the
        C(wpcloud.hosting.webhook) event source can wait for the C(on-demand-backup) event whose C(state) is
        C(created) and whose C(atomic_backup_request_id) is the request's. A restore not waited for leaves the site
        suspended.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait in all. Past the deadline the task fails and reports what it was waiting for. The service
        reports no failure of a backup (the backup never appears), so a failed backup ends here.
    type: int
    default: 1800
  poll_interval:
    description:
      - Seconds between two reads of the backup list (or polls of the restore's job) while the wait is young. Never
        below V(1). After the first 12 seconds the gap grows up to O(poll_max_interval).
    type: float
    default: 1.0
  poll_max_interval:
    description:
      - The longest gap, in seconds, between two reads of a long wait.
      - If not set, the value of the E(WPCLOUD_POLL_MAX_INTERVAL) environment variable is used; else V(12), or
        O(poll_interval) when that is longer.
    type: float
  progress_interval:
    description:
      - While it waits, the task prints a progress line at least every this many seconds; V(0) turns them off. Only
        when the module runs in the controller (the default).
    type: float
    default: 15.0
extends_documentation_fragment:
  - wpcloud.hosting.api
  - wpcloud.hosting.attributes
attributes:
  check_mode:
    description: Reads the site and its backups and reports the writes it would make (RV(actions)), without one.
    support: full
  diff_mode:
    description: Shows the backups before and after (a restore - the site's content before and after).
    support: full
  idempotent:
    description:
      - V(present), V(absent) and V(listed) write nothing when the site already looks as asked. V(restored) restores
        each time it runs.
    support: partial
notes:
  - The service refuses to delete a site while it holds on-demand backups (HTTP 412); delete them first with
    O(state=absent).
  - A backup request the service fails is never listed, and the service sends no event for the failure; the wait
    ends at O(wait_timeout).
seealso:
  - module: wpcloud.hosting.site_domain
  - module: wpcloud.hosting.site
'''

EXAMPLES = r'''
- name: Back up, refresh, and roll back if needed (connection options once for the block)
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: https://atomic-api.wordpress.com
      api_key: "{{ vault_wpcloud_api_key }}"
  block:
    - name: Back up the destination's files and database before the refresh overwrites them
      wpcloud.hosting.site_backup:
        client: "{{ wpcloud_client }}"
        site: dest1.example
        max_age: 10m
        replace_older: true
      register: before_refresh

    - name: Keep the backup IDs for a rollback
      ansible.builtin.debug:
        msg: "files and database backups of dest1.example: {{ before_refresh.backup_ids }}"

    - name: Roll back - restore the site from those backups, then put it online again
      wpcloud.hosting.site_backup:
        client: "{{ wpcloud_client }}"
        site: dest1.example
        state: restored
        backup_ids: "{{ before_refresh.backup_ids }}"
        confirm_overwrite: true

    - name: Back up the databases of a fleet in one task
      wpcloud.hosting.site_backup:
        client: "{{ wpcloud_client }}"
        type: database
        sites:
          - site: dest2.example
          - site: dest3.example
      register: fleet

    - name: Delete a site's on-demand backups once it is live
      wpcloud.hosting.site_backup:
        client: "{{ wpcloud_client }}"
        site: dest1.example
        state: absent
'''

RETURN = r'''
site:
  description: The site as given.
  returned: always
  type: str
  sample: dest1.example
site_id:
  description: The numeric site ID.
  returned: when the site was found
  type: int
  sample: 1001
backups:
  description: The site's backups of O(type) at the end of the task (on-demand and automatic), newest first.
  returned: when the site was found
  type: list
  elements: dict
  contains:
    backup_id:
      description: The backup's ID, a string as the service lists it.
      type: str
    type:
      description: The service's type - C(ondemand-fs), C(ondemand-db), C(fs), C(db).
      type: str
    content:
      description: V(files) or V(database).
      type: str
    on_demand:
      description: Whether it was made on demand (else it is one of the service's automatic backups).
      type: bool
    taken:
      description: When it was taken, C(YYYY-MM-DD HH:MM:SS) in UTC (null when the service's time is not readable).
      type: str
    age:
      description: Its age in seconds when the task listed it.
      type: int
  sample: [{"backup_id": "3002", "type": "ondemand-db", "content": "database", "on_demand": true,
            "taken": "2026-11-28 10:00:01", "age": 12}]
backup_ids:
  description:
    - With O(state=present), the on-demand backup of each type that counts as present (found or created), the files
      backup first - ready for O(backup_ids) of a restore.
  returned: with state=present
  type: list
  elements: str
  sample: ["3001", "3002"]
created:
  description: With O(state=present), the IDs of the backups this task created.
  returned: with state=present
  type: list
  elements: str
  sample: ["3001", "3002"]
requests:
  description:
    - The backup requests the task sent, C(content) and C(request_id) (the C(atomic_backup_request_id) that the
      C(on-demand-backup) event carries; null when the service's answer was lost or its quota named a backup being
      made).
  returned: with state=present, when a backup was requested
  type: list
  elements: dict
  sample: [{"content": "files", "request_id": 9001}]
absent:
  description: With O(state=absent), the IDs of O(backup_ids) that the site did not list (already gone).
  returned: with state=absent
  type: list
  elements: str
  sample: []
restored_from:
  description: With O(state=restored), the files backup and the database backup restored.
  returned: with state=restored
  type: list
  elements: str
  sample: ["3001", "3002"]
suspended_before:
  description: With O(state=restored), whether the site was suspended before the task.
  returned: with state=restored
  type: bool
  sample: false
suspended:
  description: With O(state=restored), whether the site is suspended at the end of the task.
  returned: with state=restored, when a restore was started
  type: bool
  sample: false
job_id:
  description: The restore's job.
  returned: when a restore was started
  type: int
  sample: 7012
ticket_id:
  description: The restore's response ticket, when the service gave one.
  returned: when a restore was started
  type: str
  sample: "00001b5d.3"
job:
  description: The restore's job as waited for - C(status), C(outcome), C(elapsed), C(polls).
  returned: when the module waited for a restore
  type: dict
  sample: {"job_id": 7012, "status": "success", "outcome": "success", "elapsed": 1.3, "polls": 3}
messages:
  description: The restore's response ticket's messages, when the restore failed.
  returned: when a restore failed
  type: list
  elements: str
  sample: ["Restore failed: the backups could not be applied; the site is unchanged."]
actions:
  description: The writes made (in check mode, those it would make), in order. Empty when nothing changed.
  returned: when the site was found
  type: list
  elements: str
  sample: ["create a files backup", "create a database backup"]
uncertain:
  description: Writes whose answer was lost, and how a read resolved them.
  returned: when a write's effect was unknown
  type: list
  elements: dict
  sample: [{"write": "backup.create", "outcome": "happened", "resolved_by": "read", "sends": 1}]
results:
  description: With O(sites), one result per element, in order, each as a single site returns, plus C(failed) and C(msg).
  returned: when sites is given
  type: list
  elements: dict
  sample: [{"site": "dest2.example", "site_id": 1002, "backup_ids": ["3003"], "failed": false}]
failed_count:
  description: With O(sites), how many sites failed. The task fails when it is not 0.
  returned: when sites is given
  type: int
  sample: 0
api_load:
  description: The load of the task on the service - C(calls) and C(peak_per_second).
  returned: when the task called the API
  type: dict
  sample: {"calls": 9, "peak_per_second": 4}
'''

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import JOB_WAIT_ARGUMENT_SPEC, api_spec_with, list_form_options
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.runner import run_module
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.backup import run_backup as run_logic

_ONE_SITE = dict(
    site=dict(type="str"),
    type=dict(type="str", default="both", choices=["files", "database", "both"]),
    max_age=dict(type="str"),
    backup_ids=dict(type="list", elements="str"),
    keep_suspended=dict(type="bool", default=False),
)

MODULE_SPEC = dict(
    argument_spec=api_spec_with(dict(
        _ONE_SITE,
        client=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "absent", "restored", "listed"]),
        replace_older=dict(type="bool", default=False),
        confirm_overwrite=dict(type="bool", default=False),
        sites=dict(type="list", elements="dict", options=list_form_options(_ONE_SITE)),
        **JOB_WAIT_ARGUMENT_SPEC)),
    mutually_exclusive=[("site", "sites")],
    required_one_of=[("site", "sites")],
)


def main():
    run_module(MODULE_SPEC, run_logic)


if __name__ == "__main__":
    main()
