# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The migration module's entries (module_utils/service/migration_module.py): a module user's options mapped to
the service's fields once, and the module's spec under the field names for a caller that holds the fields."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.masking import no_log_values
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.migration_module import fields_of
from ansible_collections.wpcloud.hosting.plugins.module_utils.service.vocabulary import FIELD_NAMES, ROLE_FIELDS
from ansible_collections.wpcloud.hosting.plugins.modules import migration

PASSWORD = "p@ss-Canary-1"


def test_the_options_go_on_under_their_fields_once():
    fields = fields_of({"site": "1001", "remote_pass": PASSWORD, "update_secret": "always",
                        "migrations": [{"site": "1002", "ssh_id": "KEY", "ssh_id_pass": "pp"}]})
    assert fields == {"site": "1001", "remote-pass": PASSWORD, "update_secret": "always",
                      "migrations": [{"site": "1002", "ssh-id": "KEY", "ssh-id-pass": "pp"}]}


def test_the_field_spec_is_the_module_spec_under_the_field_names():
    options = migration.MODULE_SPEC["argument_spec"]
    by_field = migration.FIELD_SPEC["argument_spec"]
    assert sorted(by_field) == sorted(FIELD_NAMES.get(name, name) for name in options)
    assert by_field["migrations"]["options"]["remote-pass"] == options["migrations"]["options"]["remote_pass"]
    assert not set(FIELD_NAMES) & set(by_field["migrations"]["options"])
    # The role's table and the module's reach the same fields.
    assert set(ROLE_FIELDS.values()) == set(FIELD_NAMES.values())


def test_the_field_spec_keeps_the_checks_and_the_secrets():
    validator = ArgumentSpecValidator(**migration.FIELD_SPEC)
    both = validator.validate({"api_key": "k", "migrations": [{"site": "1001", "remote-pass": PASSWORD, "ssh-id": "KEY"}]})
    assert "mutually exclusive: remote-pass|ssh-id" in " ".join(both.error_messages)
    alone = validator.validate({"api_key": "k", "migrations": [{"site": "1001", "ssh-id-pass": "pp"}]})
    assert alone.error_messages
    fine = validator.validate({"api_key": "k", "migrations": [{"site": "1001", "remote-pass": PASSWORD}]})
    assert not fine.error_messages
    assert PASSWORD in no_log_values(migration.FIELD_SPEC["argument_spec"], fine.validated_parameters)
    # The module's own spec refuses the field names: its public options stay the options.
    assert ArgumentSpecValidator(**migration.MODULE_SPEC).validate(
        {"api_key": "k", "migrations": [{"site": "1001", "remote-pass": PASSWORD}]}).error_messages
