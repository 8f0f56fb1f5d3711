#!/usr/bin/env python
"""The docs site's pages that antsibull-docs cannot make, written from their sources at build time.

    python tests/utils/docsite_pages.py TREE SITE_RST INVENTORY
    python tests/utils/docsite_pages.py --check TREE HTML_DIR

TREE is the collection (a copy of the repository), SITE_RST the Sphinx source directory that
`antsibull-docs collection` filled. antsibull-docs turns each guide named in
docs/docsite/extra-docs.yml into SITE_RST/docsite/<name>.rst from the short page of that name in
docs/docsite/rst/; this script replaces those short pages with what they stand for, so a guide or a
reference page has one source and cannot drift from it:

- docsite/<name>.md: the guide docs/<name>.md (MyST), with the images, example files and repository
  files it links to copied next to it so that its links work on the site as they do in the
  repository; docsite/changelog.rst: CHANGELOG.rst;
- docsite/event-source.rst: the event source's reference, from the DOCUMENTATION and EXAMPLES strings
  of extensions/eda/plugins/event_source/webhook.py (read, not imported);
- docsite/playbooks.rst and docsite/playbooks/<name>.rst: every playbooks/*.yml, its header comment,
  plays and source;
- docsite/rulebook.rst: extensions/eda/rulebooks/webhooks.yml, its sources, rules and source;
- index.rst, the collection's index, in the order of a user's path: antsibull-docs' heading (the
  collection's description and links) under the title "wpcloud.hosting", then the first section of
  extra-docs.yml (the guides), the public modules, roles and other plugins, the other sections, and last
  the internal plugins (whose short_description starts with "Internal:", those that only the collection's
  own role and playbooks use). Each section has a captioned toctree, so the sidebar follows the same order
  under the same headings, with short labels (a plugin's name, not its page's whole title).

INVENTORY is written as a Sphinx (intersphinx) inventory of the labels of Ansible's own
documentation that the generated plugin pages refer to, from docs/docsite/ansible_devel_labels.txt
(Ansible's docs cannot be fetched at build time). Any guide of docs/ that extra-docs.yml does not name
is an error, as is a short page that no source replaces.

--check lists what has no page in the built site (HTML_DIR): every module, plugin (by its own
documentation: plugins/<type>/<name>.py with DOCUMENTATION, or plugins/filter/<name>.yml), role,
playbook, the event source and the rulebook; exit status 1 when one is missing.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import sys
import zlib

import yaml
from antsibull_docs_parser import rst as markup_rst
from antsibull_docs_parser.parser import Context, parse

COLLECTION = 'wpcloud.hosting'
# A plugin whose short_description starts with this is the collection's own plumbing (docs/contributing.md).
INTERNAL = 'Internal:'
EVENT_SOURCE = 'extensions/eda/plugins/event_source/webhook'
RULEBOOK = 'extensions/eda/rulebooks/webhooks.yml'
# Markdown links to a local file: [text](path) and ![alt](path), not URLs nor in-page anchors
LOCAL_LINK = re.compile(r'\]\((?!https?:|mailto:|#)([^)\s#]+)(#[^)\s]*)?\)')


def heading(text: str, char: str, over: bool = False) -> str:
    line = char * len(text)
    return f'{line}\n{text}\n{line}\n' if over else f'{text}\n{line}\n'


def escape(text: str) -> str:
    """Plain text as reST: markup characters escaped, and dashes and quotes kept as typed (an escaped
    character is left alone by the site's smart quotes, which would make "--vars" an en dash)."""
    return re.sub(r'([\\*`_|\-"\'])', r'\\\1', text)


def markup(text: str) -> str:
    """Ansible documentation markup (C(), O(), M() ...) as reStructuredText."""
    return markup_rst.to_rst_plain(parse(text, Context()), current_plugin=None)


def literal(text: str, language: str = 'text') -> str:
    body = '\n'.join(('   ' + line) if line.strip() else '' for line in text.rstrip('\n').split('\n'))
    return f'.. code-block:: {language}\n\n' + body + '\n'


def label(name: str) -> str:
    return f'.. _ansible_collections.wpcloud.hosting.docsite.{name}:\n\n'


def comment_block(lines: list[str]) -> str:
    """A YAML file's leading comment as reST: flush lines are prose, indented lines literal blocks."""
    out, prose, code = [], [], []

    def flush() -> None:
        if prose:
            out.append(escape(' '.join(prose)) + '\n')
            prose.clear()
        if code:
            while code and not code[-1].strip():
                code.pop()
            out.append(literal('\n'.join(code)))
            code.clear()

    for line in lines:
        text = line[1:]
        text = text[1:] if text.startswith(' ') else text
        if text.startswith('  ') or (code and not text.strip()):
            if prose:
                flush()
            code.append(text)
        elif not text.strip():
            flush()
        else:
            if code:
                flush()
            prose.append(text.strip())
    flush()
    return '\n'.join(out)


def first_sentence(lines: list[str]) -> str:
    """The first sentence of a comment's first paragraph, as reST."""
    words = []
    for line in lines:
        text = line[1:].strip()
        if not text or line[1:].startswith('   '):
            break
        words.append(text)
    return escape(re.split(r'(?<=[.!?])\s+(?=[A-Z])', ' '.join(words), maxsplit=1)[0].rstrip(':'))


def header_comment(source: str) -> list[str]:
    lines = []
    for line in source.split('\n'):
        if line.strip() == '---' and not lines:
            continue
        if not line.startswith('#'):
            break
        lines.append(line)
    return lines


# ------------------------------------------------------------------ guides

def place_guides(tree: str, docsite: str, names: set[str]) -> list[str]:
    """docs/<name>.md over docsite/<name>.rst; the files they link to, where the links expect them."""
    placed = []
    for entry in sorted(os.listdir(os.path.join(tree, 'docs'))):
        if not entry.endswith('.md'):
            continue
        name = entry[:-3]
        if name not in names:
            raise SystemExit(f'docsite_pages: docs/{entry} is not in docs/docsite/extra-docs.yml: '
                             f'add {name} to a section there and docs/docsite/rst/{name}.rst (a short page)')
        source = os.path.join(tree, 'docs', entry)
        os.remove(os.path.join(docsite, name + '.rst'))
        shutil.copyfile(source, os.path.join(docsite, entry))
        placed.append(name)
        with open(source, encoding='utf-8') as handle:
            text = handle.read()
        for target, _anchor in LOCAL_LINK.findall(text):
            if target.endswith('.md') and '/' not in target:
                continue                                   # another guide: a page of the site
            in_tree = os.path.normpath(os.path.join(tree, 'docs', target))
            if not in_tree.startswith(tree + os.sep) or not os.path.isfile(in_tree):
                continue                                   # Sphinx reports it (a warning fails the build)
            # the same place relative to the page as relative to docs/ (docsite/ stands for docs/)
            on_site = os.path.normpath(os.path.join(docsite, target))
            os.makedirs(os.path.dirname(on_site), exist_ok=True)
            shutil.copyfile(in_tree, on_site)
    return placed


def changelog_page(tree: str, docsite: str) -> None:
    with open(os.path.join(tree, 'CHANGELOG.rst'), encoding='utf-8') as handle:
        text = handle.read()
    with open(os.path.join(docsite, 'changelog.rst'), 'w', encoding='utf-8') as handle:
        handle.write(label('changelog') + text)


# ------------------------------------------------------------------ the event source

def python_strings(path: str, names: tuple[str, ...]) -> dict[str, str]:
    with open(path, encoding='utf-8') as handle:
        module = ast.parse(handle.read(), path)
    found = {}
    for node in module.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in names:
                    found[target.id] = ast.literal_eval(node.value)
    return found


def event_source_file(tree: str) -> str:
    """webhook.py, or webhook/__init__.py once the source is a package."""
    for candidate in (EVENT_SOURCE + '.py', EVENT_SOURCE + '/__init__.py'):
        path = os.path.join(tree, candidate)
        if os.path.isfile(path) and 'DOCUMENTATION' in python_strings(path, ('DOCUMENTATION',)):
            return candidate
    raise SystemExit(f'docsite_pages: no DOCUMENTATION in {EVENT_SOURCE}.py (nor {EVENT_SOURCE}/__init__.py)')


def option_rows(options: dict, prefix: str = '') -> list[tuple[str, str]]:
    rows = []
    for name, spec in options.items():
        spec = spec or {}
        kind = spec.get('type', 'str')
        if spec.get('elements'):
            kind += f" / elements={spec['elements']}"
        facts = [f':strong:`{escape(prefix + name)}`', f'*{escape(kind)}*']
        if spec.get('required'):
            facts.append('**required**')
        left = ' |br| '.join(facts)
        description = spec.get('description', [])
        if isinstance(description, str):
            description = [description]
        parts = [markup(par) for par in description]
        if spec.get('choices'):
            parts.append('Choices: ' + ', '.join(f'``{choice}``' for choice in spec['choices']))
        if 'default' in spec:
            default = spec['default']
            shown = str(default).lower() if isinstance(default, bool) else str(default)
            parts.append(f'Default: ``{shown}``' if shown != '' else 'Default: ``""``')
        if spec.get('aliases'):
            parts.append('Aliases: ' + ', '.join(f'``{alias}``' for alias in spec['aliases']))
        rows.append((left, '\n\n'.join(parts) or ' '))
        if spec.get('suboptions'):
            rows.extend(option_rows(spec['suboptions'], prefix + name + '.'))
    return rows


def list_table(header: tuple[str, str], rows: list[tuple[str, str]], widths: str = '25 75') -> str:
    out = ['.. list-table::', '   :header-rows: 1', f'   :widths: {widths}', '']
    for left, right in [header] + rows:
        for index, cell in enumerate((left, right)):
            lines = cell.split('\n')
            out.append(('   * - ' if index == 0 else '     - ') + lines[0])
            out.extend(('       ' + line) if line.strip() else '' for line in lines[1:])
    return '\n'.join(out) + '\n'


def event_source_page(tree: str, docsite: str) -> None:
    path = event_source_file(tree)
    strings = python_strings(os.path.join(tree, path), ('DOCUMENTATION', 'EXAMPLES'))
    doc = yaml.safe_load(strings['DOCUMENTATION'])
    name = f'{COLLECTION}.webhook'
    description = doc.get('description', [])
    if isinstance(description, str):
        description = [description]
    parts = [
        label('event-source'),
        '.. |br| raw:: html\n\n   <br>\n\n',
        heading(f'{name} event source -- {escape(doc["short_description"].rstrip("."))}', '='),
        f'This page is made from the ``DOCUMENTATION`` and ``EXAMPLES`` of ``{path}`` when the site '
        f'is built. Use the source in a rulebook as ``{name}`` (ansible-rulebook finds it in the '
        f'installed collection); the sample rulebook is :ref:`{COLLECTION}.webhooks '
        f'<ansible_collections.wpcloud.hosting.docsite.rulebook>`, its set-up is in the guide '
        ':doc:`webhooks`.\n',
        '.. contents::\n   :local:\n   :depth: 1\n',
        heading('Synopsis', '-'),
        '\n'.join(f'- {markup(par)}'.replace('\n', '\n  ') for par in description) + '\n',
    ]
    if doc.get('requirements'):
        parts += [heading('Requirements', '-'),
                  '\n'.join(f'- {markup(req)}' for req in doc['requirements']) + '\n']
    parts += [heading('Parameters', '-'),
              list_table(('Parameter', 'Comments'), option_rows(doc.get('options') or {}))]
    if doc.get('notes'):
        parts += [heading('Notes', '-'), '\n'.join(f'- {markup(note)}' for note in doc['notes']) + '\n']
    if strings.get('EXAMPLES'):
        parts += [heading('Examples', '-'), literal(strings['EXAMPLES'].strip('\n'), 'yaml+jinja')]
    with open(os.path.join(docsite, 'event-source.rst'), 'w', encoding='utf-8') as handle:
        handle.write('\n'.join(parts))


# ------------------------------------------------------------------ playbooks and the rulebook

def play_summary(plays: list) -> str:
    out = []
    for index, play in enumerate(plays or [], 1):
        if not isinstance(play, dict):
            continue
        if 'import_playbook' in play:
            out.append(f'{index}. imports ``{play["import_playbook"]}``')
            continue
        hosts = play.get('hosts', '')
        line = f'{index}. **{escape(str(play.get("name", "(unnamed play)")))}** -- hosts ``{hosts}``'
        tasks = [task.get('name') for section in ('pre_tasks', 'roles', 'tasks', 'post_tasks')
                 for task in (play.get(section) or []) if isinstance(task, dict) and task.get('name')]
        if tasks:
            line += '\n\n' + '\n'.join(f'   - {escape(task)}' for task in tasks) + '\n'
        out.append(line)
    return '\n'.join(out) + '\n'


def playbook_pages(tree: str, docsite: str) -> None:
    names = sorted(entry[:-4] for entry in os.listdir(os.path.join(tree, 'playbooks')) if entry.endswith('.yml'))
    os.makedirs(os.path.join(docsite, 'playbooks'), exist_ok=True)
    rows = []
    for name in names:
        with open(os.path.join(tree, 'playbooks', name + '.yml'), encoding='utf-8') as handle:
            source = handle.read()
        comment = header_comment(source)
        rows.append((f':doc:`{name} <playbooks/{name}>`', first_sentence(comment) or ' '))
        page = [
            heading(f'{COLLECTION}.{name} playbook', '='),
            f'Run it as ``ansible-playbook {COLLECTION}.{name}`` once the collection is installed. This page '
            f'is made from ``playbooks/{name}.yml`` when the site is built.\n',
            comment_block(comment),
            heading('Plays', '-'),
            play_summary(yaml.safe_load(source)),
            heading('Source', '-'),
            literal(source.rstrip('\n'), 'yaml+jinja'),
        ]
        with open(os.path.join(docsite, 'playbooks', name + '.rst'), 'w', encoding='utf-8') as handle:
            handle.write('\n'.join(page))
    index = [
        label('playbooks'),
        heading('Playbooks', '='),
        'The playbooks of the collection, run as ``ansible-playbook wpcloud.hosting.<name>``. Each page is '
        'made from the playbook under ``playbooks/`` when the site is built.\n',
        list_table(('Playbook', 'What it does'), rows, widths='30 70'),
        '.. toctree::\n   :hidden:\n\n' + '\n'.join(f'   playbooks/{name}' for name in names) + '\n',
    ]
    with open(os.path.join(docsite, 'playbooks.rst'), 'w', encoding='utf-8') as handle:
        handle.write('\n'.join(index))


def rulebook_page(tree: str, docsite: str) -> None:
    with open(os.path.join(tree, RULEBOOK), encoding='utf-8') as handle:
        source = handle.read()
    rulesets = yaml.safe_load(source) or []
    playbooks = {entry[:-4] for entry in os.listdir(os.path.join(tree, 'playbooks')) if entry.endswith('.yml')}
    parts = [
        label('rulebook'),
        heading(f'{COLLECTION}.webhooks rulebook', '='),
        f'Run it as ``ansible-rulebook -r {COLLECTION}.webhooks``. This page is made from ``{RULEBOOK}`` '
        'when the site is built.\n',
        comment_block(header_comment(source)),
    ]
    for ruleset in rulesets:
        parts.append(heading(f'Rule set: {escape(str(ruleset.get("name", "")))}', '-'))
        parts.append(f'Hosts: ``{ruleset.get("hosts", "")}``. Sources: ' + ', '.join(
            (':ref:`wpcloud.hosting.webhook <ansible_collections.wpcloud.hosting.docsite.event-source>`'
             if f'{COLLECTION}.webhook' in source_entry else f'``{next(iter(source_entry))}``')
            for source_entry in ruleset.get('sources', [])) + '.\n')
        rows = []
        for rule in ruleset.get('rules', []):
            actions = rule.get('actions') or [rule.get('action', {})]
            described = []
            for action in actions:
                for kind, args in action.items():
                    target = (args or {}).get('name', '') if isinstance(args, dict) else ''
                    short = target.rsplit('.', 1)[-1]
                    if kind == 'run_playbook' and target.startswith(COLLECTION + '.') and short in playbooks:
                        described.append(f'``{kind}`` :doc:`{target} <playbooks/{short}>`')
                    else:
                        described.append(f'``{kind}`` ``{target}``' if target else f'``{kind}``')
            condition = rule.get('condition', '')
            condition = condition if isinstance(condition, str) else yaml.safe_dump(condition).strip()
            rows.append((escape(rule.get('name', '')), f'When ``{condition}``: ' + ', '.join(described)))
        parts.append(list_table(('Rule', 'Condition and action'), rows))
    parts += [heading('Source', '-'), literal(source.rstrip('\n'), 'yaml+jinja')]
    with open(os.path.join(docsite, 'rulebook.rst'), 'w', encoding='utf-8') as handle:
        handle.write('\n'.join(parts))


# ------------------------------------------------------------------ the collection's index

PLUGIN_SECTIONS = (('module', 'Modules'), ('inventory', 'Inventory plugins'), ('filter', 'Filter plugins'),
                   ('lookup', 'Lookup plugins'), ('callback', 'Callback plugins'), ('test', 'Test plugins'),
                   ('connection', 'Connection plugins'))


def short_description(tree: str, source: str) -> str:
    """The short_description of a plugin (plugins/<type>/<name>.py or .yml) or role (roles/<name>)."""
    path = os.path.join(tree, source)
    if os.path.isdir(path):
        with open(os.path.join(path, 'meta', 'argument_specs.yml'), encoding='utf-8') as handle:
            return yaml.safe_load(handle)['argument_specs']['main']['short_description']
    if path.endswith('.yml'):
        with open(path, encoding='utf-8') as handle:
            return yaml.safe_load(handle)['DOCUMENTATION']['short_description']
    return yaml.safe_load(python_strings(path, ('DOCUMENTATION',))['DOCUMENTATION'])['short_description']


def collection_parts(tree: str) -> list[dict]:
    """Every module, plugin and role with a page: kind, name, page (without .html), short description, internal."""
    parts = []
    for page, source in expected_pages(tree).items():
        if page.startswith('docsite/'):
            continue                                       # playbooks, the event source, the rulebook: their own pages
        name, kind = page[:-len('.html')].rsplit('_', 1)
        short = short_description(tree, source)
        parts.append(dict(kind=kind, name=name, page=page[:-len('.html')], short=short,
                          internal=short.startswith(INTERNAL)))
    return parts


def bullets_and_toctree(parts: list[dict], caption: str, bare: bool = False) -> str:
    """The section's list (as antsibull-docs writes it) and its hidden toctree, captioned for the sidebar, where
    each entry is the plugin's name (``bare``: under a caption that says the kind) or name and kind: a page's
    whole title ("wpcloud.hosting.site_migration_report_merge filter -- ...") is cut off there."""
    lines = ['* :ansplugin:`%s %s <%s.%s#%s>` -- %s'
             % (part['name'], part['kind'], COLLECTION, part['name'], part['kind'], markup(part['short'])) for part in parts]
    entries = ['   %s <%s>' % (part['name'] if bare else '%s %s' % (part['name'], part['kind']), part['page'])
               for part in parts]
    return '\n'.join(lines) + '\n\n.. toctree::\n   :maxdepth: 1\n   :hidden:\n   :caption: %s\n\n%s\n' % (caption, '\n'.join(entries))


def guides_section(section: dict) -> str:
    names = [entry if isinstance(entry, str) else entry['ref'] for entry in section['toctree']]
    return (heading(section['title'], '-') + '\n'
            + '\n'.join('* :doc:`docsite/%s`' % name for name in names)
            + '\n\n.. toctree::\n   :maxdepth: 1\n   :hidden:\n   :caption: %s\n\n%s\n' % (
                section['title'], '\n'.join('   docsite/%s' % name for name in names)))


def index_page(tree: str, site_rst: str) -> int:
    """Rewrite antsibull-docs' index.rst in the order of a user's path; returns how many parts are internal."""
    path = os.path.join(site_rst, 'index.rst')
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    title = re.search(r'^\.\. _plugins_in_wpcloud\.hosting:\n\n[^\n]+\n=+\n', text, re.M)
    end = text.find('\n.. toctree::', title.end()) if title else -1
    if not title or end < 0:
        raise SystemExit('docsite_pages: antsibull-docs wrote an index.rst without its label, title and heading '
                         'before the first toctree; tests/utils/docsite_pages.py (index_page) needs to learn its new shape')
    # the title as the collection spells its name (antsibull-docs title-cases it: "Wpcloud.Hosting")
    head = (text[:title.start()] + '.. _plugins_in_wpcloud.hosting:\n\n' + heading(COLLECTION, '=')
            + text[title.end():end].rstrip('\n') + '\n')
    with open(os.path.join(tree, 'docs', 'docsite', 'extra-docs.yml'), encoding='utf-8') as handle:
        sections = yaml.safe_load(handle)['sections']
    parts = collection_parts(tree)
    public = [part for part in parts if not part['internal']]
    internal = [part for part in parts if part['internal']]
    out = [head, guides_section(sections[0])]
    out.append('.. _plugin_index_for_wpcloud.hosting:\n')
    roles = [part for part in public if part['kind'] == 'role']
    for kind, title_text in PLUGIN_SECTIONS:
        mine = [part for part in public if part['kind'] == kind]
        if mine:
            out.append('.. _%s_plugins_in_wpcloud.hosting:\n\n%s\n%s' % (kind, heading(title_text, '-'),
                                                                         bullets_and_toctree(mine, title_text, bare=True)))
        if kind == 'module' and roles:         # the role next to the modules: the other thing users call
            out.append('.. _role_plugins_in_wpcloud.hosting:\n\n%s\n%s' % (heading('Roles', '-'),
                                                                           bullets_and_toctree(roles, 'Roles')))
    out += [guides_section(section) for section in sections[1:]]
    if internal:
        out.append(heading('Internal plugins', '-') + '\n'
                   'The collection\'s own plumbing: the ``site_migration`` role and the collection\'s playbooks call '
                   'these. They are documented so that the role, the playbooks and their output can be read, not for '
                   'playbooks of your own: their options may change in any release.\n\n'
                   + bullets_and_toctree(internal, 'Internal plugins'))
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write('\n'.join(out))
    return len(internal)


# ------------------------------------------------------------------ Ansible's labels (intersphinx)

def write_inventory(tree: str, path: str) -> int:
    """A Sphinx inventory (version 2) of the labels listed in docs/docsite/ansible_devel_labels.txt."""
    entries = []
    with open(os.path.join(tree, 'docs/docsite/ansible_devel_labels.txt'), encoding='utf-8') as handle:
        for line in handle:
            if line.strip() and not line.startswith('#'):
                name, uri, title = line.split(None, 2)
                entries.append(f'{name} std:label -1 {uri} {title.strip()}\n')
    header = ('# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n'
              '# The remainder of this file is compressed using zlib.\n')
    with open(path, 'wb') as handle:
        handle.write(header.encode('utf-8') + zlib.compress(''.join(entries).encode('utf-8')))
    return len(entries)


# ------------------------------------------------------------------ every part has a page

PLUGIN_PAGES = {'modules': 'module', 'filter': 'filter', 'inventory': 'inventory', 'lookup': 'lookup',
                'callback': 'callback', 'test': 'test', 'connection': 'connection'}


def expected_pages(tree: str) -> dict[str, str]:
    """{page of the site: what it documents}."""
    pages = {}
    for folder, kind in PLUGIN_PAGES.items():
        directory = os.path.join(tree, 'plugins', folder)
        for entry in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
            name, ext = os.path.splitext(entry)
            path = os.path.join(directory, entry)
            documented = ext == '.yml' or (ext == '.py' and 'DOCUMENTATION' in python_strings(path, ('DOCUMENTATION',)))
            if documented and not name.startswith('_'):
                pages[f'{name}_{kind}.html'] = f'plugins/{folder}/{entry}'
    for role in sorted(os.listdir(os.path.join(tree, 'roles'))):
        pages[f'{role}_role.html'] = f'roles/{role}'
    for entry in sorted(os.listdir(os.path.join(tree, 'playbooks'))):
        if entry.endswith('.yml'):
            pages[f'docsite/playbooks/{entry[:-4]}.html'] = f'playbooks/{entry}'
    pages['docsite/event-source.html'] = event_source_file(tree)
    for entry in sorted(os.listdir(os.path.join(tree, os.path.dirname(RULEBOOK)))):
        if entry.endswith(('.yml', '.yaml')):
            # the sample rulebook has its page; another one would need its own (none is written yet)
            source = os.path.join(os.path.dirname(RULEBOOK), entry)
            pages['docsite/rulebook.html' if source == RULEBOOK else f'docsite/rulebook-{os.path.splitext(entry)[0]}.html'] = source
    return pages


def check_pages(tree: str, html: str) -> int:
    pages = expected_pages(tree)
    missing = [f'{source}: no page {page}' for page, source in pages.items()
               if not os.path.isfile(os.path.join(html, page))]
    print('\n'.join(missing + [f'docsite_pages: {len(pages)} parts of the collection, {len(missing)} without a page']))
    return 1 if missing else 0


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[1] == '--check':
        return check_pages(os.path.abspath(argv[2]), os.path.abspath(argv[3]))
    if len(argv) != 4:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    tree, site_rst, inventory = (os.path.abspath(arg) for arg in argv[1:])
    docsite = os.path.join(site_rst, 'docsite')
    short = {entry[:-4] for entry in os.listdir(docsite) if entry.endswith('.rst')}
    placed = set(place_guides(tree, docsite, short))
    changelog_page(tree, docsite)
    event_source_page(tree, docsite)
    playbook_pages(tree, docsite)
    rulebook_page(tree, docsite)
    left = short - placed - {'changelog', 'event-source', 'playbooks', 'rulebook'}
    if left:
        raise SystemExit('docsite_pages: no source for docs/docsite/rst/%s.rst (a guide docs/<name>.md, '
                         'or a page this script writes)' % '.rst, '.join(sorted(left)))
    labels = write_inventory(tree, inventory)
    internal = index_page(tree, site_rst)
    print(f'docsite_pages: {len(placed)} guides, the changelog, the event source, '
          f'{len(os.listdir(os.path.join(docsite, "playbooks")))} playbooks, the rulebook; the index, '
          f'{internal} internal plugins last; {labels} labels of Ansible\'s docs')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
