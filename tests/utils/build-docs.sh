#!/usr/bin/env bash
# Build the HTML documentation site of wpcloud.hosting into docs/build/html (gitignored).
#
#   tests/utils/build-docs.sh [--venv DIR]      then open docs/build/html/index.html
#
# The site is made with antsibull-docs (as the Ansible docsite does for collections): every module,
# the filter and the role from their own documentation, the collection index with the links of
# docs/docsite/links.yml and the guide pages of docs/docsite/extra-docs.yml. The guides themselves are
# the Markdown files under docs/ (one source), rendered with MyST under guides/, plus CHANGELOG.rst.
#
# Tools: .venv-release (tests/requirements-release.txt: antsibull-docs, sphinx, sphinx-ansible-theme,
# myst-parser), created from the machine's Python (3.12 preferred, any 3.12+) when missing or out of
# date. Offline: no intersphinx.
# Work directory: .build/release/docs (a fresh copy of the tree and the generated Sphinx project).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
venv=$root/.venv-release
while [[ $# -gt 0 ]]; do
    case $1 in
        --venv) venv=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-docs: unknown argument $1" >&2; exit 2 ;;
    esac
done
started=$(date +%s%N)

req=tests/requirements-release.txt
if [[ ! -f $venv/.installed || $req -nt $venv/.installed || requirements.txt -nt $venv/.installed ]]; then
    tests/utils/make-venv.sh "$venv" "$req"
fi
export PATH=$venv/bin:$PATH ANSIBLE_NOCOLOR=1

work=$root/.build/release/docs
collections=$work/collections
site=$work/site
out=$root/docs/build
rm -rf "$work" "$out"
mkdir -p "$work" "$site"
chmod 755 "$site"          # antsibull-docs wants a directory only its owner can write
"$root/.venv/bin/python" tests/utils/sync_tree.py "$collections/ansible_collections/wpcloud/hosting" >/dev/null 2>&1 \
    || python3 tests/utils/sync_tree.py "$collections/ansible_collections/wpcloud/hosting" >/dev/null
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_HOME=$work/ansible-home

echo "build-docs: antsibull-docs sphinx-init"
antsibull-docs sphinx-init --use-current --squash-hierarchy --lenient \
    --project "wpcloud.hosting" --copyright "wpcloud.hosting contributors" \
    --title "wpcloud.hosting" --html-short-title "wpcloud.hosting" \
    --dest-dir "$site" wpcloud.hosting >/dev/null

# MyST for the Markdown guides; Ansible's labels from a local inventory (no network); the logo goes
# to this site's index (the theme's documentation_home_url is "/", a path no file-opened site has).
inventory=$work/ansible_devel.inv
cat >>"$site/conf.py" <<EOF

# --- added by tests/utils/build-docs.sh
extensions.append('myst_parser')
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
myst_heading_anchors = 4
intersphinx_mapping = {'ansible_devel': ('https://docs.ansible.com/projects/ansible/devel/', '$inventory')}


def _home_link(app, pagename, templatename, context, doctree):
    context['theme_documentation_home_url'] = context['pathto'](app.config.root_doc)


def setup(app):
    app.connect('html-page-context', _home_link)
EOF

echo "build-docs: antsibull-docs collection (plugin, role and index pages)"
mkdir -p "$site/rst" && chmod og-w "$site/rst"
tree=$collections/ansible_collections/wpcloud/hosting
(cd "$site" && antsibull-docs --config-file "$tree/docs/docsite/antsibull-docs.cfg" collection \
    --cleanup everything --use-current --squash-hierarchy --dest-dir rst wpcloud.hosting) >"$work/antsibull-docs.log" 2>&1 \
    || { cat "$work/antsibull-docs.log" >&2; exit 1; }

# The index's other pages (docs/docsite/extra-docs.yml): the guides of docs/ and the changelog in place
# of their short pages, and the pages of the event source, the playbooks and the rulebook, written
# from their sources.
python tests/utils/docsite_pages.py "$tree" "$site/rst" "$inventory"

echo "build-docs: sphinx-build"
# every warning fails the build (nothing suppressed); --keep-going lists them all
sphinx_rc=0
sphinx-build -q -W --keep-going -b html -c "$site" "$site/rst" "$out/html" 2>"$work/sphinx-warnings.log" || sphinx_rc=$?
warnings=$(grep -c 'WARNING' "$work/sphinx-warnings.log" || true)
if [[ $sphinx_rc -ne 0 ]]; then
    cat "$work/sphinx-warnings.log" >&2
    echo "build-docs: FAIL: sphinx-build: $warnings warnings (each fails the build)" >&2
    exit 1
fi

# every local link of the site, anchors included; a page for every part of the collection
links_rc=0
python tests/utils/check_site_links.py "$out/html" >"$work/links.log" || links_rc=$?
python tests/utils/docsite_pages.py --check "$tree" "$out/html" >"$work/pages.log" || links_rc=$?
# the user's path first: the title, guides then public parts then internal ones, whole sidebar labels,
# the role page's examples and connection variables
python tests/utils/check_site_index.py "$out/html" "$tree" >"$work/index.log" || links_rc=$?
if [[ $links_rc -ne 0 ]]; then
    cat "$work/links.log" "$work/pages.log" "$work/index.log" >&2
    echo "build-docs: FAIL: broken links, missing pages or an index out of order on the site" >&2
    exit 1
fi
ds=$(( ($(date +%s%N) - started) / 100000000 ))
printf 'build-docs: %s in %s, %s Sphinx warnings, every one of %s has a page, the index in order; took %d.%d s\n' \
    "$(tail -n1 "$work/links.log" | sed 's/^check-site-links: //')" "${out#"$root"/}/html" "$warnings" \
    "$(tail -n1 "$work/pages.log" | sed -E 's/^docsite_pages: ([0-9]+ parts of the collection).*/\1/')" $((ds / 10)) $((ds % 10))
