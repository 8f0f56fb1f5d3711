# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sites inventory plugin (plugins/inventory/sites.py), loaded by Ansible's own plugin loader and parsed
from an inventory file on the fake service: its options, host names, host variables and constructed groups,
its cache, get-sites paging as it is in the client, and the API key in no host variable nor error.

The plugin through ansible-inventory against the emulator: tests/system/test_inventory_sites.py."""

from __future__ import annotations

import json

import pytest
import yaml

from ansible.errors import AnsibleError, AnsibleOptionsError, AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader

from ansible_collections.wpcloud.hosting.tests.unit.plugins.fake_service import SITE_DB_PASS

ENV = ("WPCLOUD_CLIENT", "WPCLOUD_API_URL", "WPCLOUD_API_KEY", "WPCLOUD_CA_PATH", "WPCLOUD_VALIDATE_CERTS")


@pytest.fixture()
def parse(fake_api, tmp_path, monkeypatch):
    """parse(name="acme.wpcloud.yml", flush=False, **options) -> InventoryData: the inventory file of these
    options (plugin, client acme and the fake service's URL and key unless given) parsed by a new plugin, as
    Ansible's InventoryManager does it (``flush``: as ansible-inventory --flush-cache)."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)

    def parse(name="acme.wpcloud.yml", flush=False, **options):
        config = dict({"plugin": "wpcloud.hosting.sites", "client": "acme", "api_url": fake_api.url,
                       "api_key": fake_api.api_key}, **options)
        path = tmp_path / name
        path.write_text(yaml.safe_dump(dict((k, v) for k, v in config.items() if v is not None)))
        plugin = inventory_loader.get("wpcloud.hosting.sites")
        assert plugin.verify_file(str(path))
        inventory = InventoryData()
        plugin.parse(inventory, DataLoader(), str(path), cache=not flush)
        try:
            plugin.update_cache_if_changed()  # what Ansible's InventoryManager does after each parse
        except AttributeError:
            pass                              # no cache configured (as the InventoryManager allows)
        return inventory
    return parse


def sites(fake_api, *allows):
    """Sites 1001, 1002, ... with these allow_site_migration values."""
    return [fake_api.add_site(str(1001 + i), allow=allow) for i, allow in enumerate(allows)]


def host_vars(inventory):
    return dict((name, host.get_vars()) for name, host in inventory.hosts.items())


# -- options -----------------------------------------------------------------------------------------------

def test_only_files_named_wpcloud_yml_are_read():
    plugin = inventory_loader.get("wpcloud.hosting.sites")
    assert not plugin.verify_file("/nonexistent/sites.yml")
    assert not plugin.verify_file("/nonexistent/acme.wpcloud.yml")  # a file that is not there


@pytest.mark.parametrize("options, message", [
    ({"clients": "acme"}, "unknown option clients of the wpcloud.hosting.sites inventory"),
    ({"client": " "}, "client is empty: set client (or WPCLOUD_CLIENT)"),
    ({"api_key": None}, "api_key is required: set the WPCLOUD_API_KEY environment variable"),
    ({"page_size": 0}, "page_size must be between 1 and 1000"),
])
def test_bad_options_are_refused_by_name_before_any_call(fake_api, parse, options, message):
    sites(fake_api, None)
    with pytest.raises(AnsibleParserError) as raised:
        parse(**options)
    assert message in str(raised.value) and fake_api.calls == []


def test_a_value_outside_the_choices_is_refused_by_ansible_naming_the_option(fake_api, parse):
    with pytest.raises(AnsibleOptionsError, match="Invalid value 'name' for config 'hostname'"):
        parse(hostname="name")
    assert fake_api.calls == []


def test_the_connection_options_come_from_the_environment(fake_api, parse, monkeypatch):
    # What an AWX inventory source with the WP Cloud API credential gives.
    sites(fake_api, None)
    monkeypatch.setenv("WPCLOUD_CLIENT", "acme")
    monkeypatch.setenv("WPCLOUD_API_URL", fake_api.url)
    monkeypatch.setenv("WPCLOUD_API_KEY", fake_api.api_key)
    monkeypatch.setenv("WPCLOUD_VALIDATE_CERTS", "false")
    inventory = parse(client=None, api_url=None, api_key=None)
    assert sorted(inventory.hosts) == ["1001.example"]
    assert fake_api.calls[0]["headers"]["Auth"] == fake_api.api_key and set(fake_api.verified) == {False}


# -- hosts and their variables ------------------------------------------------------------------------------

def test_each_site_is_a_host_named_by_its_domain_in_the_account_group(fake_api, parse):
    sites(fake_api, "true", None, "5001")
    inventory = parse()
    assert sorted(inventory.hosts) == ["1001.example", "1002.example", "1003.example"]
    assert sorted(h.name for h in inventory.groups["wpcloud_account_sites"].get_hosts()) == sorted(inventory.hosts)
    found = host_vars(inventory)
    fields = ("wpcloud_site_id", "wpcloud_domain", "wpcloud_allow_site_migration", "wpcloud_migration_id")
    assert [tuple(found[name][field] for field in fields) for name in sorted(found)] == [
        (1001, "1001.example", True, None), (1002, "1002.example", False, None), (1003, "1003.example", True, 5001)]
    assert found["1001.example"]["wpcloud_created"] == "2026-01-01"


def test_hostname_site_id_names_each_host_by_its_id(fake_api, parse):
    sites(fake_api, None, None)
    assert sorted(parse(hostname="site_id").hosts) == ["1001", "1002"]


def test_no_host_variable_holds_a_credential_or_the_api_key(fake_api, parse):
    sites(fake_api, "true", None)
    shown = json.dumps(host_vars(parse()))
    assert SITE_DB_PASS not in shown and fake_api.api_key not in shown and "db_pass" not in shown


def test_compose_groups_and_keyed_groups_use_the_host_variables(fake_api, parse):
    # The keyed group of the plugin's EXAMPLES.
    sites(fake_api, "true", None)
    inventory = parse(compose={"site_migration_site": "wpcloud_site_id"},
                      groups={"first": "wpcloud_site_id == 1001"},
                      keyed_groups=[{"key": "wpcloud_allow_site_migration | ternary('migration_destinations', "
                                            "'other_sites')", "prefix": "", "separator": ""}])
    assert inventory.get_host("1002.example").get_vars()["site_migration_site"] == 1002
    assert [h.name for h in inventory.groups["first"].get_hosts()] == ["1001.example"]
    assert [h.name for h in inventory.groups["migration_destinations"].get_hosts()] == ["1001.example"]
    assert [h.name for h in inventory.groups["other_sites"].get_hosts()] == ["1002.example"]


def test_strict_makes_a_bad_compose_expression_an_error(fake_api, parse):
    sites(fake_api, None)
    assert "x" not in parse(compose={"x": "undefined_name + 1"}).get_host("1001.example").get_vars()
    with pytest.raises(AnsibleError, match="Could not set x for host 1001.example"):
        parse(strict=True, compose={"x": "undefined_name + 1"})


# -- paging, as the client pages get-sites ------------------------------------------------------------------

@pytest.mark.parametrize("paging, calls", [("honour", 3), ("ignore", 2), ("refuse", 2)])
def test_each_site_is_one_host_however_the_service_pages(fake_api, parse, paging, calls):
    # honour: pages of 2, 2, then an empty one; ignore: the whole list, then the same list again (no new
    # site: the end); refuse: a 400 to limit/after, then the list without them.
    fake_api.paging = paging
    sites(fake_api, *([None] * 4))
    inventory = parse(page_size=2)
    assert sorted(inventory.hosts) == ["1001.example", "1002.example", "1003.example", "1004.example"]
    assert len(fake_api.calls) == calls


@pytest.mark.parametrize("list_key", ["refused", "dropped"])
def test_a_listing_without_the_flag_column_leaves_the_flag_unknown(fake_api, parse, list_key):
    fake_api.list_key = list_key
    sites(fake_api, "true")
    assert parse().get_host("1001.example").get_vars()["wpcloud_allow_site_migration"] is None


# -- errors --------------------------------------------------------------------------------------------------

def test_a_refused_key_is_an_error_without_the_key(fake_api, parse):
    with pytest.raises(AnsibleParserError) as raised:
        parse(api_key="wrong-key-0123456789")
    assert "wrong-key-0123456789" not in str(raised.value) and "403" in str(raised.value)


def test_a_service_error_that_echoes_the_key_is_masked(fake_api, parse):
    fake_api.fault("site.list", status=404, body='{"message": "no client for key %s", "data": []}' % fake_api.api_key)
    with pytest.raises(AnsibleParserError) as raised:
        parse()
    assert fake_api.api_key not in str(raised.value) and "********" in str(raised.value)


# -- cache ---------------------------------------------------------------------------------------------------

def test_the_cache_serves_the_hosts_until_a_refresh(fake_api, parse, tmp_path):
    cache = {"cache": True, "cache_plugin": "ansible.builtin.jsonfile", "cache_connection": str(tmp_path / "cache"),
             "cache_timeout": 300}
    sites(fake_api, None)
    assert sorted(parse(**cache).hosts) == ["1001.example"]
    calls = len(fake_api.calls)
    sites(fake_api, None, None)
    assert sorted(parse(**cache).hosts) == ["1001.example"] and len(fake_api.calls) == calls
    cached = json.dumps([json.load(open(str(p))) for p in (tmp_path / "cache").iterdir()])
    assert fake_api.api_key not in cached and SITE_DB_PASS not in cached
    # --flush-cache: read again, and the cache updated.
    assert sorted(parse(flush=True, **cache).hosts) == ["1001.example", "1002.example"]
    calls = len(fake_api.calls)
    assert sorted(parse(**cache).hosts) == ["1001.example", "1002.example"] and len(fake_api.calls) == calls


def test_without_cache_every_parse_reads_the_service(fake_api, parse):
    sites(fake_api, None)
    parse()
    calls = len(fake_api.calls)
    parse()
    assert calls > 0 and len(fake_api.calls) == 2 * calls
