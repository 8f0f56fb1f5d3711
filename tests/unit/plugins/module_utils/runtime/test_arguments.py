# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The shared pieces of the modules' argument specs (runtime/arguments.py)."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.arguments import (
    JOB_WAIT_ARGUMENT_SPEC, WAIT_ARGUMENT_SPEC, list_form_options)


def test_a_list_forms_entry_takes_the_single_forms_options_without_their_defaults():
    one = dict(type=dict(type="str", default="both", choices=["files", "database", "both"]),
               keep=dict(type="bool", default=False))
    entry = list_form_options(one)
    # An entry's unset option must stay None, so the task's value (or its default) applies, never the default over it.
    assert entry == dict(type=dict(type="str", default=None, choices=["files", "database", "both"]),
                         keep=dict(type="bool", default=None))
    assert one["type"]["default"] == "both"    # the single form keeps its own


def test_a_job_wait_is_the_ticket_wait_without_its_messages():
    assert "messages" not in JOB_WAIT_ARGUMENT_SPEC
    assert dict(JOB_WAIT_ARGUMENT_SPEC, messages=WAIT_ARGUMENT_SPEC["messages"]) == WAIT_ARGUMENT_SPEC
