"""The docs site's link check (tests/utils/check_site_links.py) finds what a reader would click into nothing.

The site itself is built and checked by the release gate `site` (tests/utils/gates.sh, in `make test`);
these tests hold the checker to its contract on a small hand-made site, so that a check that passes
means the links work.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CHECKER = ROOT / "tests" / "utils" / "check_site_links.py"


def run(site):
    return subprocess.run([sys.executable, str(CHECKER), str(site)], capture_output=True, text=True, check=False)


def html(path, css, body):
    path.write_text("<html><head><link rel='stylesheet' href='%s'></head><body>%s</body></html>" % (css, body))


def site_of(tmp_path, guide_body):
    """index.html and docsite/guide.html (anchors intro and old-anchor) with GUIDE_BODY, and a stylesheet."""
    site = tmp_path / "html"
    (site / "_static").mkdir(parents=True)
    (site / "_static" / "site.css").write_text("")
    html(site / "index.html", "_static/site.css",
         '<a href="docsite/guide.html#intro">guide</a> <a href="https://example.com/x">out</a>'
         ' <a href="#top" id="top">top</a> <a href="mailto:a@example.com">mail</a>')
    (site / "docsite").mkdir()
    html(site / "docsite" / "guide.html", "../_static/site.css",
         "<h1 id='intro'>Intro</h1><a name='old-anchor'></a>" + guide_body)
    return site


def test_a_site_whose_links_all_work_passes_and_says_what_it_checked(tmp_path):
    site = site_of(tmp_path, '<a href="../index.html#top">back</a> <a href="#old-anchor">old</a>'
                             ' <img src="../_static/site.css">')
    result = run(site)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "check-site-links: 2 pages, 7 local links checked, 0 broken"


def test_each_kind_of_broken_link_is_named_with_its_page(tmp_path):
    site = site_of(tmp_path, '<a href="webhooks.html#5-key-rotation">no page</a>'
                             ' <a href="../index.html#7-key-rotation">no anchor</a>'
                             ' <a href="/">logo</a> <a href="../../README.md">outside</a>'
                             ' <a href="#examples/">a missing target MyST left as an anchor</a>')
    result = run(site)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[:-1] == [
        "docsite/guide.html: webhooks.html#5-key-rotation: no such file",
        "docsite/guide.html: ../index.html#7-key-rotation: no such anchor",
        "docsite/guide.html: /: absolute path: not on a site opened from files",
        "docsite/guide.html: ../../README.md: outside the site",
        "docsite/guide.html: #examples/: no such anchor",
    ]
    assert lines[-1] == "check-site-links: 2 pages, 9 local links checked, 5 broken"
