# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""service/domain.py without a server: domain names as users write them, the certificate states of ssl-info's
answers, site-alias answers, and the {service}/{identifier} form a service takes."""

from __future__ import annotations

import pytest

from ansible_collections.wpcloud.hosting.plugins.module_utils.api.client import WPCloudClient
from ansible_collections.wpcloud.hosting.plugins.module_utils.runtime.failure import ModuleFailure
from ansible_collections.wpcloud.hosting.plugins.module_utils.service import domain


@pytest.mark.parametrize("given,expected", [
    ("shop.example", "shop.example"),
    ("  Shop.EXAMPLE  ", "shop.example"),
    ("shop.example.", "shop.example"),                          # the root's dot: the same name
    ("bücher.example", "xn--bcher-kva.example"),                # Unicode: its ASCII form
    ("BÜCHER.Example.", "xn--bcher-kva.example"),
    ("xn--bcher-kva.example", "xn--bcher-kva.example"),         # punycode: kept, once checked
    ("a-b.c-d.example", "a-b.c-d.example"),
    ("1001.example", "1001.example"),
])
def test_domain_names_are_normalised(given, expected):
    assert domain.domain_name(given, "domain") == expected


@pytest.mark.parametrize("given,expected", [
    ("http://shop.example", "not a URL (http://shop.example): give shop.example, without"),
    ("//shop.example/x", "not a URL"),
    ("shop.example/x", "without a path (shop.example/x): give shop.example."),
    ("shop.example:443", "without a port"),
    ("user@shop.example", "without user information"),
    ("*.example", "not a wildcard"),
    ("shop", "like shop.example.com"),
    ("-shop.example", "like shop.example.com"),
    ("shop_1.example", "like shop.example.com"),
    ("shop..example", "like shop.example.com"),
    (".shop.example", "like shop.example.com"),
    ("shop.example..", "like shop.example.com"),
    ("10.0.0.1", "not an IP address"),
    ("xn--a.example", "not valid punycode"),
    ("a" * 64 + ".example", "like shop.example.com"),
    ("", "domain is empty"),
    (None, "domain is empty"),
])
def test_what_is_not_a_host_name_is_refused_by_the_option(given, expected):
    with pytest.raises(ModuleFailure) as failure:
        domain.domain_name(given, "domain")
    assert failure.value.msg.startswith("domain ") and expected in failure.value.msg


def test_a_list_refuses_a_name_twice_and_the_primary():
    assert domain.domain_list(["A.example", "b.example."], "aliases") == ["a.example", "b.example"]
    with pytest.raises(ModuleFailure, match="aliases lists a.example twice"):
        domain.domain_list(["a.example", "A.EXAMPLE"], "aliases")
    with pytest.raises(ModuleFailure, match="primary p.example"):
        domain.domain_list(["p.example"], "aliases", ("p.example", "primary %s"))


@pytest.mark.parametrize("data,expected", [
    ({"acme_certificate_id": 7, "ca_provider": "letsencrypt", "broken_record": None}, "issued"),
    ({"ssl_certificate_id": "c-1", "broken_record": None}, "issued"),          # "the field used can vary"
    ({"custom_certificate_id": 3}, "issued"),
    ({"acme_certificate_id": None, "broken_record": {"reason": "not hosted here", "failcount": 2}}, "failed"),
    ({"acme_certificate_id": None, "broken_record": None}, "pending"),
    ([], "pending"),                                                          # PHP's empty array
    (None, "pending"),
])
def test_the_certificate_state_of_every_answer(data, expected):
    assert domain.ssl_of(data)[0] == expected


def test_ssl_detail_keeps_what_says_when_and_why():
    state, detail = domain.ssl_of({"acme_certificate_id": "9", "certificate_expiration_date": "2027-01-01 00:00:00"})
    assert detail == {"certificate_id": 9, "certificate_expiration_date": "2027-01-01 00:00:00"}
    state, detail = domain.ssl_of({"broken_record": {"reason": "r", "retry_date": "d", "failcount": 1, "x": 2}})
    assert detail == {"reason": "r", "retry_date": "d", "failcount": 1}


@pytest.mark.parametrize("data,expected", [
    ({"domains": ["www.a.example", "b.example"]}, ["www.a.example", "b.example"]),
    ({"domains": ["a.example", "www.a.example"]}, ["www.a.example"]),         # a service that lists the primary
    ({"domains": ["WWW.A.example.", "www.a.example"]}, ["www.a.example"]),
    ({"domains": []}, []),
    ([], []),
    (["www.a.example"], ["www.a.example"]),
])
def test_alias_answers(data, expected):
    assert domain.aliases_of(data, "a.example") == expected


def test_the_domain_form_after_a_400_to_the_first_call(fake_api):
    fake_api.add_live_site(1001, "a.example")
    fake_api.service_form = "domain"
    client = WPCloudClient(api_url=fake_api.url, api_key=fake_api.api_key)
    path = domain.ServicePath("acme", 1001, "a.example")
    assert domain.read_aliases(client, path) == [] and path.by_domain
    fake_api.service_form = "both"
    fake_api.fault("site.alias_list", status=400)
    path = domain.ServicePath("acme", 1001, "a.example")
    domain.read_aliases(client, path)
    with pytest.raises(ModuleFailure, match="HTTP 400"):       # only the first call may change the form
        fake_api.fault("site.alias_list", status=400)
        domain.read_aliases(client, path)
