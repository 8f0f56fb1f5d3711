# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real emulator over HTTPS for the module_utils tests (no mocks of the transport)."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest

EMULATOR_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "support", "emulator"))


_EMULATOR = {}


def pytest_sessionstart(session):
    """Start the emulator in the pytest process itself: ansible-test runs each test in a forked child,
    where a session fixture would start (and never stop) one emulator per test."""
    sys.path.insert(0, EMULATOR_DIR)
    try:
        from launcher import start_emulator  # pylint: disable=import-error
    finally:
        sys.path.remove(EMULATOR_DIR)
    workdir = tempfile.mkdtemp(prefix="wpcloud-unit-emulator-")
    _EMULATOR["emu"] = start_emulator(workdir, extra_args=["--accept-delay", "0.3"])
    _EMULATOR["workdir"] = workdir


def pytest_sessionfinish(session, exitstatus):
    emu = _EMULATOR.pop("emu", None)
    if emu is not None:
        emu.stop()
        shutil.rmtree(_EMULATOR.pop("workdir"), ignore_errors=True)


@pytest.fixture()
def emulator():
    # pytest_sessionstart of a conftest below the rootdir is not called when pytest is pointed at a
    # parent folder: start it on first use then (stopped at exit).
    if "emu" not in _EMULATOR:
        pytest_sessionstart(None)
        atexit.register(pytest_sessionfinish, None, 0)
    return _EMULATOR["emu"]


@pytest.fixture()
def emu(emulator):
    emulator.set_faults([])
    yield emulator
    emulator.set_faults([])


@pytest.fixture()
def new_site(emu):
    counter = [0]

    def make(allow=True):
        counter[0] += 1
        site_id = 700000 + (os.getpid() % 1000) * 100 + counter[0] + int.from_bytes(os.urandom(2), "big") * 1000
        emu.add_site(site_id, "unit-%d.example" % site_id, allow_migration=allow)
        return site_id
    return make


# -- a fake service: module logic without a server -------------------------------------------------------

class FakeApi(object):
    """The little of the service that the modules' logic relies on, in memory, behind the client's interface
    (``call``, ``add_secret``, ``close``). Every call is recorded with its parameter names, like the
    emulator's request log; credentials are stored only to be redacted when a migration is read."""

    SECRETS = ("remote-pass", "ssh-id", "ssh-id-pass")

    def __init__(self):
        self.calls = []
        self.sites = {}
        self.migrations = {}
        self.meta = {}
        self.tickets = {}
        self.secrets = set()
        self.next_id = 5001

    # the client's interface
    def add_secret(self, value):
        if value:
            self.secrets.add(str(value))

    def close(self):
        pass

    def call(self, operation, params=None, accept_status=(), **path_args):
        from ansible_collections.wpcloud.hosting.plugins.module_utils._client import (
            OPERATIONS, ApiResponse, WPCloudAPIError)
        params = dict(params or {})
        self.calls.append({"operation": operation, "path": path_args, "params": sorted(params),
                           "write": OPERATIONS[operation][2] == "write", "sent": params})
        status, data = getattr(self, "_" + operation.replace(".", "_"))(params, **path_args)
        if status >= 300 and status not in accept_status:
            raise WPCloudAPIError("HTTP %d from %s" % (status, operation), status=status, operation=operation)
        return ApiResponse(status, "", data)

    # what the tests read
    @property
    def writes(self):
        return [c for c in self.calls if c["write"]]

    def add_migration(self, site="1002", state="new", auth="generated", **args):
        migration_id = self.next_id
        self.next_id += 1
        self.migrations[migration_id] = {"atomic_site_migration_id": str(migration_id), "atomic_site_id": site,
                                         "state": state, "auth": auth, "args": dict(args)}
        self.sites[str(site)] = str(migration_id)
        return migration_id

    # operations
    @staticmethod
    def _auth(args):
        if "remote-pass" in args:
            return "password"
        if "ssh-id" in args:
            return "key-passphrase" if "ssh-id-pass" in args else "key"
        return "generated"

    def _store(self, record, params):
        for name, value in params.items():
            # the service keeps numbers as numbers: the port reads back as 2022
            record["args"][name] = int(value) if name == "remote-port" else value
        if any(name in params for name in self.SECRETS):
            for name in self.SECRETS:
                if name not in params:
                    record["args"].pop(name, None)
            record["auth"] = self._auth(params)

    def _site_meta_get(self, params, site, key):
        if str(site) not in self.sites:
            return 404, None
        return 200, self.sites[str(site)]

    def _migration_create(self, params, site):
        migration_id = self.add_migration(site=str(site))
        self._store(self.migrations[migration_id], params)
        data = {"migration-id": str(migration_id)}
        if self.migrations[migration_id]["auth"] == "generated":
            data["ssh-id-pub"] = "ssh-ed25519 AAAAfake wpcloud-migration-%d" % migration_id
        return 200, data

    def _migration_get(self, params, migration_id):
        record = self.migrations.get(int(migration_id))
        if record is None:
            return 404, None
        shown = dict(record, args=dict((k, "[redacted]" if k in self.SECRETS else v)
                                       for k, v in record["args"].items()))
        return 200, shown

    def _migration_update(self, params, migration_id):
        record = self.migrations.get(int(migration_id))
        if record is None:
            return 404, None
        self._store(record, params)
        record["state"] = "new"
        return 200, {}

    def _client_meta_get(self, params, client, key):
        if key not in self.meta:
            return 404, None
        return 200, None if key == "webhook_hmac_key" else self.meta[key]

    def _client_meta_add(self, params, client, key):
        if key in self.meta:
            return 409, None
        self.meta[key] = params["value"]
        return 200, {}

    def _client_meta_update(self, params, client, key):
        if key not in self.meta:
            return 404, None
        self.meta[key] = params["value"]
        return 200, {}


@pytest.fixture()
def fake_api():
    return FakeApi()


@pytest.fixture()
def run_logic(fake_api):
    """run_logic(module, args, check_mode=False, diff=False) -> (result or ModuleFailure, warnings): the
    module's logic on arguments validated by its own spec (as the action plugin does), on fake_api."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    from ansible_collections.wpcloud.hosting.plugins.module_utils._common import ModuleContext, ModuleFailure

    def run(module, args, check_mode=False, diff=False):
        validation = ArgumentSpecValidator(**module.MODULE_SPEC).validate(dict(args, api_key="unit-key"))
        assert not validation.error_messages, validation.error_messages
        warnings = []
        ctx = ModuleContext(validation.validated_parameters, check_mode=check_mode, diff=diff,
                            warn=warnings.append)
        ctx._client = fake_api
        try:
            return module.run_logic(validation.validated_parameters, ctx), warnings
        except ModuleFailure as failure:
            return failure, warnings
    return run
