#!/usr/bin/env python
"""Check every local link of a built HTML site: the file exists and so does the #anchor in it.

    python tests/utils/check_site_links.py SITE_DIR

Looks at href and src of every *.html under SITE_DIR. A link to another site (http:, https:,
mailto:, ...) is not followed. A link that starts with "/" is broken by definition (the site is
opened from files and may live under any path). Prints each broken link (page, target, why) and a
summary line; exit status 1 when one is broken.
"""
from __future__ import annotations

import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == 'id' or (name == 'name' and tag == 'a'):
                self.ids.add(value)
            elif (name == 'href' and tag in ('a', 'link', 'area')) or (name == 'src' and tag in ('img', 'script')):
                self.links.append(value)


def parse(path: str) -> _Page:
    page = _Page()
    with open(path, encoding='utf-8', errors='replace') as handle:
        page.feed(handle.read())
    return page


def check(site: str) -> tuple[list[tuple[str, str, str]], int, int]:
    """(broken links as (page, link, why), pages, local links checked)."""
    site = os.path.abspath(site)
    pages: dict[str, _Page] = {}
    for root, _dirs, files in os.walk(site):
        for name in files:
            if name.endswith('.html'):
                pages[os.path.join(root, name)] = parse(os.path.join(root, name))
    broken, checked = [], 0
    for path, page in sorted(pages.items()):
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue                                    # another site
            checked += 1
            where = os.path.relpath(path, site)
            if parts.path.startswith('/'):
                broken.append((where, link, 'absolute path: not on a site opened from files'))
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(path), unquote(parts.path))) if parts.path else path
            if os.path.isdir(target):
                target = os.path.join(target, 'index.html')
            if not target.startswith(site + os.sep):
                broken.append((where, link, 'outside the site'))
            elif not os.path.isfile(target):
                broken.append((where, link, 'no such file'))
            elif parts.fragment and target.endswith('.html'):
                if target not in pages:
                    pages[target] = parse(target)
                if unquote(parts.fragment) not in pages[target].ids:
                    broken.append((where, link, 'no such anchor'))
    return broken, len(pages), checked


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    broken, pages, checked = check(argv[1])
    for where, link, why in broken:
        print(f'{where}: {link}: {why}')
    print(f'check-site-links: {pages} pages, {checked} local links checked, {len(broken)} broken')
    return 1 if broken else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
