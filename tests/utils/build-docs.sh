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

# MyST for the Markdown guides; no intersphinx (no network); guides are pages of their own.
cat >>"$site/conf.py" <<'EOF'

# --- added by tests/utils/build-docs.sh
extensions.append('myst_parser')
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
myst_heading_anchors = 4
intersphinx_mapping = {}
suppress_warnings = ['myst.header', 'myst.xref_missing', 'ref.doc', 'image.not_readable', 'toc.not_included']
EOF

echo "build-docs: antsibull-docs collection (plugin, role and index pages)"
mkdir -p "$site/rst" && chmod og-w "$site/rst"
(cd "$site" && antsibull-docs --config-file antsibull-docs.cfg collection --cleanup everything --use-current \
    --squash-hierarchy --dest-dir rst wpcloud.hosting) >"$work/antsibull-docs.log" 2>&1 \
    || { cat "$work/antsibull-docs.log" >&2; exit 1; }

# The guides: docs/*.md (and the example inventory they link to) and the changelog, under guides/.
tree=$collections/ansible_collections/wpcloud/hosting
mkdir -p "$site/rst/guides"
cp "$tree"/docs/*.md "$site/rst/guides/"
cp "$tree"/docs/*.png "$site/rst/guides/" 2>/dev/null || true
[[ -d $tree/docs/examples ]] && cp -r "$tree/docs/examples" "$site/rst/guides/"
cp "$tree/CHANGELOG.rst" "$site/rst/guides/CHANGELOG.rst"
{
    echo
    echo ".. toctree::"
    echo "   :maxdepth: 1"
    echo "   :caption: Guides"
    echo
    for page in getting-started migration webhooks awx security troubleshooting api-choices; do
        [[ -f $site/rst/guides/$page.md ]] && echo "   guides/$page"
    done
    echo "   guides/CHANGELOG"
    echo
    echo ".. toctree::"
    echo "   :hidden:"
    echo
    for page in "$site"/rst/guides/*.md; do
        name=$(basename "$page" .md)
        case " getting-started migration webhooks awx security troubleshooting api-choices " in
            *" $name "*) ;;
            *) echo "   guides/$name" ;;
        esac
    done
} >>"$site/rst/index.rst"

echo "build-docs: sphinx-build"
sphinx-build -q -b html -c "$site" "$site/rst" "$out/html" 2>"$work/sphinx-warnings.log" \
    || { cat "$work/sphinx-warnings.log" >&2; exit 1; }
warnings=$(grep -c 'WARNING' "$work/sphinx-warnings.log" || true)
pages=$(find "$out/html" -name '*.html' | wc -l)
ds=$(( ($(date +%s%N) - started) / 100000000 ))
printf 'build-docs: %s HTML pages in %s (%s Sphinx warnings, see %s); took %d.%d s\n' \
    "$pages" "${out#"$root"/}/html" "$warnings" "${work#"$root"/}/sphinx-warnings.log" $((ds / 10)) $((ds % 10))
