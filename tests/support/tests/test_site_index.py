"""The docs site puts the user's path first (issue 38 item 4), checked by tests/utils/check_site_index.py.

The real site is built and checked by `make docs` (tests/utils/build-docs.sh, and the release gate `site`).
These tests hold the checker to its contract on a small hand-made site: a site as the build writes it passes,
and each way item 4 was broken (the title "Wpcloud.Hosting", internal plugins among the public ones, a sidebar
label cut off, contributor material in getting-started, a role page without examples or connection variables)
is named. And the collection's own sources mark as internal exactly the plugins that only its role and
playbooks use.
"""

import ast
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
CHECKER = ROOT / "tests" / "utils" / "check_site_index.py"
CONNECTION = ("wpcloud_api_url", "wpcloud_api_key", "wpcloud_ca_path", "wpcloud_validate_certs", "wpcloud_timeout",
              "wpcloud_rate_limit")
INTERNAL = {"fleet_vars", "report_file", "site_migration_setup", "site_migration_recap", "site_migration_lineup",
            "site_migration_step", "site_migration_report", "site_migration_report_name", "site_migration_report_merge",
            "site_migration_waiting"}
GUIDES = ["getting-started", "fleet", "migration", "webhooks", "awx"]


def page(path, h1, body="", sidebar=()):
    """An HTML page shaped like the site's: <title>, the sidebar (captions and links), the document."""
    menu = ""
    for caption, links in sidebar:
        menu += '<p class="caption" role="heading"><span class="caption-text">%s</span></p><ul>' % caption
        menu += "".join('<li class="toctree-l1"><a class="reference internal" href="%s">%s</a></li>' % link
                        for link in links) + "</ul>"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('<html><head><title>%s — wpcloud.hosting documentation</title></head><body>'
                    '<nav><div class="wy-menu wy-menu-vertical" role="navigation">%s</div></nav>'
                    '<div role="main" class="document"><h1>%s<a class="headerlink" href="#x">¶</a></h1>%s</div>'
                    "</body></html>" % (h1, menu, h1, body))


def site(tmp_path, title="wpcloud.hosting", internal_first=False, label="site_migration_report_merge filter",
         started="Install the collection.", examples=True, variables=CONNECTION, caption="Internal plugins"):
    html = tmp_path / "html"
    guides = [("docsite/%s.html" % name, name.title()) for name in GUIDES]
    public = [("client_meta_module.html", "client_meta"), ("site_migration_role.html", "site_migration role")]
    internal = [("fleet_vars_module.html", "fleet_vars module"),
                ("site_migration_report_merge_filter.html", label)]
    sections = [("Guides", guides), ("Modules", public[:1]), ("Roles", public[1:]), (caption, internal)]
    if internal_first:
        sections = [("Guides", guides), (caption, internal), ("Modules", public[:1]), ("Roles", public[1:])]
    body = "".join('<a class="reference internal" href="%s#anchor">x</a>' % href
                   for _caption, links in sections[1:] for href, _label in links)
    page(html / "index.html", title, body, sections)
    for name in GUIDES:
        page(html / "docsite" / ("%s.html" % name), name.title(), started if name == "getting-started" else "")
    page(html / "client_meta_module.html", "wpcloud.hosting.client_meta module – Manage one metadata key")
    page(html / "fleet_vars_module.html", "wpcloud.hosting.fleet_vars module – Internal: read variables")
    page(html / "site_migration_report_merge_filter.html",
         "wpcloud.hosting.site_migration_report_merge filter – Internal: one fleet report")
    role = "<h2>Synopsis</h2><p>%s</p>" % " ".join("<code>%s</code>" % name for name in variables)
    if examples:
        role += '<h2>Examples<a class="headerlink" href="#examples">¶</a></h2><div class="highlight"><pre>- hosts: x</pre></div>'
    page(html / "site_migration_role.html", "wpcloud.hosting.site_migration role – Migrate a site", role)
    return html


def run(html):
    return subprocess.run([sys.executable, str(CHECKER), str(html), str(ROOT)], capture_output=True, text=True,
                          check=False)


def test_a_site_in_the_users_order_passes(tmp_path):
    result = run(site(tmp_path))
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "check-site-index: 0 problems"


def test_the_title_as_antsibull_docs_writes_it_is_named(tmp_path):
    result = run(site(tmp_path, title="Wpcloud.Hosting"))
    assert result.returncode == 1
    assert "index.html: the title is 'Wpcloud.Hosting', not 'wpcloud.hosting'" in result.stdout


def test_internal_plugins_before_public_ones_are_named(tmp_path):
    result = run(site(tmp_path, internal_first=True))
    assert result.returncode == 1
    assert "public parts listed after an internal plugin in the sidebar: client_meta, site_migration role" in result.stdout
    assert "the index lists a public plugin after an internal one" in result.stdout


def test_an_internal_plugin_under_another_caption_is_named(tmp_path):
    result = run(site(tmp_path, caption="Modules and more"))
    assert "sidebar entry 'fleet_vars module' is internal but under the caption 'Modules and more'" in result.stdout


def test_a_label_or_caption_too_long_for_the_sidebar_is_named(tmp_path):
    result = run(site(tmp_path, label="wpcloud.hosting.site_migration_report_merge filter – Internal: one fleet report",
                      caption="Internal plugins of the collection"))
    assert result.returncode == 1
    assert ("sidebar label 'wpcloud.hosting.site_migration_report_merge filter – Internal: one fleet report' has a word "
            "longer than 32 characters (cut off): wpcloud.hosting.site_migration_report_merge") in result.stdout
    assert "sidebar caption 'Internal plugins of the collection' is longer than 26 characters (cut off)" in result.stdout


def test_contributor_material_in_getting_started_is_named(tmp_path):
    result = run(site(tmp_path, started="Run make test, then ansible-test sanity."))
    assert result.returncode == 1
    assert "docsite/getting-started.html: contributor material ('make test') belongs in contributing" in result.stdout


def test_a_role_page_without_examples_or_connection_variables_is_named(tmp_path):
    result = run(site(tmp_path, examples=False, variables=CONNECTION[:4]))
    assert result.returncode == 1
    assert "site_migration_role.html: no Examples section with code" in result.stdout
    assert ("site_migration_role.html: does not name the connection variables wpcloud_rate_limit, wpcloud_timeout"
            in result.stdout)


def short_descriptions():
    """{plugin name: short_description} of every module and filter of the collection."""
    found = {}
    for path in (ROOT / "plugins" / "modules").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
                found[path.stem] = yaml.safe_load(node.value.value)["short_description"]
    for path in (ROOT / "plugins" / "filter").glob("*.yml"):
        found[path.stem] = yaml.safe_load(path.read_text())["DOCUMENTATION"]["short_description"]
    for path in (ROOT / "plugins" / "filter").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
                found[path.stem] = yaml.safe_load(node.value.value)["short_description"]
    return found


def test_the_collection_marks_as_internal_exactly_its_plumbing():
    marked = {name for name, short in short_descriptions().items() if short.startswith("Internal:")}
    assert marked == INTERNAL
