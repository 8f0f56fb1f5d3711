# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a very short secret does to masked output, said as a warning that names the option and never the value
(plugins/module_utils/api/masking.py SHORT_SECRET)."""

from __future__ import annotations

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import (
    MASK,
    SHORT_SECRET,
    mask,
    short_no_log_options,
    short_secret_warning,
    short_secret_warnings,
)

SPEC = {"api_key": {"no_log": True}, "site": {},
        "migrations": {"type": "list", "options": {"remote_pass": {"no_log": True}, "remote_user": {}}}}


def test_a_one_character_secret_masks_that_character_everywhere():
    assert mask("old-server.example", ["e"]) == "old-s%srv%sr.%sxampl%s" % ((MASK,) * 4)


def test_the_short_no_log_options_are_named_top_level_and_in_a_list():
    params = {"api_key": "k", "site": "x", "migrations": [{"remote_pass": "long-enough-1"}, {"remote_pass": "pw"}]}
    assert short_no_log_options(SPEC, params) == ["api_key", "migrations[].remote_pass"]
    assert short_no_log_options(SPEC, {"api_key": "a" * SHORT_SECRET, "migrations": []}) == []


def test_the_warning_names_the_option_and_what_it_does_never_the_value():
    text = short_secret_warning("site_migration_remote_pass")
    assert text.startswith("site_migration_remote_pass is shorter than %d characters" % SHORT_SECRET) and MASK in text
    assert short_secret_warnings({"b_pass": {"x"}, "a_pass": {"long-enough-1", "y"}, "c_pass": {"long-enough-2"}}) \
        == [short_secret_warning("a_pass"), short_secret_warning("b_pass")]
