#!/usr/bin/env python
"""Check that the built docs site puts the user's path first (issue 38, item 4).

    python tests/utils/check_site_index.py SITE_DIR [TREE]

SITE_DIR is the built HTML site (docs/build/html), TREE the collection (default: this checkout). Checked:

- the index's title is the collection's name as it is spelt, ``wpcloud.hosting`` (antsibull-docs writes
  "Wpcloud.Hosting"), in its heading and its <title>;
- the sidebar starts with the guides of a user's path in order (getting started, a fleet, the migration
  guide, webhooks, AWX), and the internal plugins (a page whose title says "Internal:", from the plugin's
  short_description) come after every public part, all under the caption "Internal plugins"; the index's
  own lists keep the same order;
- no sidebar label or caption is cut off: no word of a label longer than MAX_WORD characters (a longer run
  without a space, such as "wpcloud.hosting.site_migration_report_merge", runs out of the sidebar) and no
  caption longer than MAX_CAPTION (captions do not wrap);
- the getting-started page holds no contributor material (``make test``, ``ansible-test``);
- the role page has an Examples section with code, and names every ``wpcloud_*`` connection variable the
  role reads (CONNECTION_VARIABLES, and any other ``{{ wpcloud_... }}`` of the role's tasks).

Prints each problem and a summary line; exit status 1 when there is one. Standard library only.
"""
from __future__ import annotations

import glob
import os
import re
import sys
from html.parser import HTMLParser

USER_PATH = ('docsite/getting-started.html', 'docsite/fleet.html', 'docsite/migration.html', 'docsite/webhooks.html',
             'docsite/awx.html')
INTERNAL_CAPTION = 'Internal plugins'
INTERNAL_MARK = 'Internal:'
# The sidebar is about 270 px of text: 32 characters of its font fit on one line, 26 of its bold capitals.
MAX_WORD, MAX_CAPTION = 32, 26
CONNECTION_VARIABLES = ('wpcloud_api_url', 'wpcloud_api_key', 'wpcloud_ca_path', 'wpcloud_validate_certs',
                        'wpcloud_timeout', 'wpcloud_rate_limit')
ROLE_PAGE = 'site_migration_role.html'
COLLECTION = 'wpcloud.hosting'


class _Page(HTMLParser):
    """The parts of a page these checks read: title, first h1, the sidebar's captions and links, the body's
    links, headings and text, and whether a heading named Examples is followed by a code block."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ''
        self.h1 = ''
        self.sidebar: list[tuple[str, str, str]] = []       # (caption, href, label)
        self.body_links: list[str] = []
        self.headings: list[str] = []
        self.text: list[str] = []
        self.examples_code = False
        self._stack: list[tuple[str, str]] = []             # (tag, class)
        self._caption = ''
        self._capture: str | None = None
        self._buffer = ''
        self._href = ''
        self._after_examples = False

    def _in(self, cls: str) -> bool:
        return any(cls in classes.split() for _tag, classes in self._stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or '' for k, v in attrs}
        if tag not in ('br', 'img', 'meta', 'link', 'input', 'hr', 'wbr'):
            self._stack.append((tag, attr.get('class', '')))
        if tag == 'title' or (tag == 'h1' and not self.h1) or tag in ('h2', 'h3', 'h4'):
            self._capture, self._buffer = tag, ''
        elif self._in('wy-menu-vertical') and tag == 'p' and 'caption' in attr.get('class', '').split():
            self._capture, self._buffer = 'caption', ''
        elif tag == 'a' and self._in('wy-menu-vertical') and 'reference' in attr.get('class', '').split():
            self._capture, self._buffer, self._href = 'sidebar', '', attr.get('href', '')
        elif tag == 'a' and self._in('document') and 'reference' in attr.get('class', '').split():
            self.body_links.append(attr.get('href', ''))
        if tag == 'pre' and self._after_examples:
            self.examples_code = True

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            open_tag, _classes = self._stack.pop()
            if open_tag == tag:
                break
        text = ' '.join(self._buffer.split())
        if self._capture == tag == 'title':
            self.title = text
        elif self._capture == tag == 'h1':
            self.h1 = text.rstrip('\uf0c1¶ ')
            self.headings.append(self.h1)
        elif self._capture in ('h2', 'h3', 'h4') and tag == self._capture:
            heading = text.rstrip('\uf0c1¶ ')
            self.headings.append(heading)
            self._after_examples = heading == 'Examples'
        elif self._capture == 'caption' and tag == 'p':
            self._caption = text
        elif self._capture == 'sidebar' and tag == 'a':
            self.sidebar.append((self._caption, self._href, text))
        else:
            return
        self._capture = None

    def handle_data(self, data: str) -> None:
        if self._capture:
            self._buffer += data
        if self._in('document'):
            self.text.append(data)


def parse(path: str) -> _Page:
    page = _Page()
    with open(path, encoding='utf-8', errors='replace') as handle:
        page.feed(handle.read())
    return page


def role_variables(tree: str) -> set[str]:
    """The connection variables, and every other wpcloud_* the role's tasks template."""
    found = set(CONNECTION_VARIABLES)
    for path in glob.glob(os.path.join(tree, 'roles', '*', 'tasks', '*.yml')):
        with open(path, encoding='utf-8') as handle:
            found.update(re.findall(r'\{\{\s*(wpcloud_[a-z_]+)\b', handle.read()))
    return found


def check(site: str, tree: str) -> list[str]:
    problems = []
    index = parse(os.path.join(site, 'index.html'))
    if index.h1 != COLLECTION:
        problems.append('index.html: the title is %r, not %r' % (index.h1, COLLECTION))
    if not index.title.startswith(COLLECTION):
        problems.append('index.html: <title> %r does not start with %r' % (index.title, COLLECTION))

    titles: dict[str, str] = {}

    def internal(href: str) -> bool:
        path = os.path.normpath(os.path.join(site, href.split('#')[0]))
        if path not in titles:
            titles[path] = parse(path).h1 if os.path.isfile(path) else ''
        return INTERNAL_MARK in titles[path]

    sidebar = index.sidebar
    if not sidebar:
        problems.append('index.html: no sidebar links found')
    hrefs = [href for _caption, href, _label in sidebar]
    if hrefs[:len(USER_PATH)] != list(USER_PATH):
        problems.append("index.html: the sidebar does not start with the user's path %s: it starts %s"
                        % (', '.join(USER_PATH), ', '.join(hrefs[:len(USER_PATH)])))
    flags = [internal(href) for href in hrefs]
    if True in flags and False in flags[flags.index(True):]:
        late = [label for (_c, _h, label), flag in zip(sidebar[flags.index(True):], flags[flags.index(True):]) if not flag]
        problems.append('index.html: public parts listed after an internal plugin in the sidebar: %s' % ', '.join(late))
    for (caption, _href, label), flag in zip(sidebar, flags):
        if flag != (caption == INTERNAL_CAPTION):
            problems.append('index.html: sidebar entry %r is %s but under the caption %r'
                            % (label, 'internal' if flag else 'public', caption))
    body = [href for href in (link.split('#')[0] for link in index.body_links)
            if href.endswith('.html') and not href.startswith('docsite/')]
    body_flags = [internal(href) for href in body]
    if True in body_flags and False in body_flags[body_flags.index(True):]:
        problems.append('index.html: the index lists a public plugin after an internal one')
    for caption in sorted({caption for caption, _h, _l in sidebar}):
        if len(caption) > MAX_CAPTION:
            problems.append('index.html: sidebar caption %r is longer than %d characters (cut off)' % (caption, MAX_CAPTION))
    for _caption, _href, label in sidebar:
        long_words = [word for word in label.split() if len(word) > MAX_WORD]
        if long_words:
            problems.append('index.html: sidebar label %r has a word longer than %d characters (cut off): %s'
                            % (label, MAX_WORD, long_words[0]))

    started = os.path.join(site, 'docsite', 'getting-started.html')
    if os.path.isfile(started):
        text = ' '.join(parse(started).text)
        for needle in ('make test', 'ansible-test'):
            if needle in text:
                problems.append('docsite/getting-started.html: contributor material (%r) belongs in contributing' % needle)
    else:
        problems.append('docsite/getting-started.html: missing')

    role = os.path.join(site, ROLE_PAGE)
    if os.path.isfile(role):
        page = parse(role)
        if not page.examples_code:
            problems.append('%s: no Examples section with code' % ROLE_PAGE)
        text = ' '.join(page.text)
        missing = sorted(name for name in role_variables(tree) if name not in text)
        if missing:
            problems.append('%s: does not name the connection variables %s' % (ROLE_PAGE, ', '.join(missing)))
    else:
        problems.append('%s: missing' % ROLE_PAGE)
    return problems


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    tree = argv[2] if len(argv) == 3 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    problems = check(argv[1], tree)
    for problem in problems:
        print(problem)
    print('check-site-index: %d problems' % len(problems))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
