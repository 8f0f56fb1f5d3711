#!/usr/bin/env bash
# Release gates: what Galaxy / Automation Hub and the Ansible docs and changelog tooling would say
# about this collection. Every gate fails on any finding.
#
#   tests/utils/gates.sh [--venv DIR] [--keep] [GATE ...]
#
#   --venv DIR  virtualenv with the release tools (default .venv-release; created with
#               tests/requirements-release.txt when missing or older than that file, from the machine's
#               Python: 3.12 preferred, any 3.12+; a tool that does not install on it skips its gates)
#   --keep      keep the work directory (.build/release/work) for inspection
#   --work DIR  the directory of the tree's copy, the work and the logs (default .build/release; the tests of
#               this script give their own, so that they can run beside `make gates`)
#   --skipped-file FILE
#               write the skipped gates and why to FILE (removed when none was skipped)
#   --changelog-release DATE
#               no gates: run `antsibull-changelog release --date DATE` (YYYY-MM-DD) on the copy of the
#               tree (it has to see the plugins) and copy CHANGELOG.rst and changelogs/changelog.yaml back
#   GATE        run only these gates (default: all, in this order):
#     lint       ansible-lint --profile production, zero violations
#     importer   ansible-galaxy collection build + python -m galaxy_importer.main <tarball>;
#                fails on any line starting with WARNING or ERROR (galaxy-importer itself exits 0 on them).
#                Its own ansible-lint call is off (GALAXY_IMPORTER_RUN_ANSIBLE_LINT=false): the lint gate runs
#                the same linter with the same profile and no skipped rules over a superset of the tarball's
#                files, and galaxy-importer gives that call a fixed 180 s timeout that a loaded machine
#                exceeds (two runs at load 20-28: "ERROR: Timeout on call to ansible-lint" after 425 s)
#     docs       antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs self
#                --check-extra-docs-refs .
#     site       the HTML docs site (tests/utils/build-docs.sh, about 20 s): 0 Sphinx warnings (nothing
#                suppressed), 0 broken local links, anchors included (tests/utils/check_site_links.py), and the
#                index in the order of a user's path (tests/utils/check_site_index.py)
#     changelog  antsibull-changelog lint, and CHANGELOG.rst equals what `antsibull-changelog generate`
#                makes from changelogs/changelog.yaml
#     ee         ansible-builder create with the sample EE definition (extensions/awx/ee) and the built
#                tarball: Containerfile, _build/requirements.txt with requests + cryptography, galaxy
#                requirements that install the tarball; then ansible-builder introspect --sanitize on the
#                installed collection must report requests, cryptography and bcrypt
#
# Everything runs on a fresh copy of the tree (tests/utils/sync_tree.py, tracked + untracked files that
# git does not ignore) under .build/release/, so .ansible/ and other tool output never land in the
# repository. Logs: .build/release/logs/<gate>.log. Output: one line per gate with PASS/FAIL/SKIP and
# the time, then "N passed, N failed, N skipped"; exit status 1 when a gate failed.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

venv=$root/.venv-release
base=$root/.build/release
keep=0
skipped_file=""
release_date=""
gates=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --venv) venv=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
        --venv=*) v=${1#--venv=}; venv=$(cd "$(dirname "$v")" && pwd)/$(basename "$v"); shift ;;
        --keep) keep=1; shift ;;
        --work) base=${2:?--work needs a directory}; shift 2 ;;
        --skipped-file) skipped_file=${2:?--skipped-file needs a path}; shift 2 ;;
        --changelog-release) release_date=${2:?--changelog-release needs a date YYYY-MM-DD}; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        lint|importer|docs|site|changelog|ee) gates+=("$1"); shift ;;
        *) echo "gates: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ ${#gates[@]} -gt 0 ]] || gates=(lint importer docs site changelog ee)

now() { date +%s%N; }
elapsed() { local ds=$(( ($(now) - $1) / 100000000 )); printf '%d.%d' $((ds / 10)) $((ds % 10)); }   # seconds, 0.1 s
started=$(now)

# ------------------------------------------------------------------ tools
# The release tools run on the machine's Python (3.12 preferred, any 3.12+: find-python.sh). A tool
# that cannot be installed on that Python (make-venv.sh --per-package records it in $venv/.unavailable)
# skips the gates that need it, with the reason; every other install problem fails.
req=tests/requirements-release.txt
if [[ ! -f $venv/.installed || $req -nt $venv/.installed || requirements.txt -nt $venv/.installed ]]; then
    echo "gates: installing the release tools into $venv"
    tests/utils/make-venv.sh "$venv" "$req" --per-package >&2 || { echo "gates: FAIL: could not install $req into $venv" >&2; exit 1; }
fi
declare -A needs=([lint]="ansible-lint" [importer]="galaxy-importer ansible-core" [docs]="antsibull-docs" [site]="antsibull-docs sphinx"
                  [changelog]="antsibull-changelog" [ee]="ansible-builder ansible-core")
declare -A tool_of=([ansible-lint]=ansible-lint [galaxy-importer]=galaxy-importer [ansible-core]=ansible-galaxy
                    [antsibull-docs]=antsibull-docs [sphinx]=sphinx-build [antsibull-changelog]=antsibull-changelog [ansible-builder]=ansible-builder)
# why a gate cannot run here (nothing when it can); a tool missing for no recorded reason is an error
unavailable() {
    local pkg line
    for pkg in ${needs[$1]}; do
        line=$(grep -i "^$pkg: " "$venv/.unavailable" 2>/dev/null | head -n1)
        if [[ -n $line ]]; then echo "$line"; return; fi
        if [[ $pkg == galaxy-importer ]]; then
            "$venv/bin/python" -c 'import galaxy_importer' 2>/dev/null && continue
        elif [[ -x $venv/bin/${tool_of[$pkg]} ]]; then
            continue
        fi
        echo "gates: $venv has no $pkg (pip install -r $req)" >&2
        exit 1
    done
}
for gate in "${gates[@]}"; do unavailable "$gate" >/dev/null; done   # fail early on a broken venv
export PATH=$venv/bin:$PATH ANSIBLE_NOCOLOR=1 NO_COLOR=1 PY_COLORS=0 ANSIBLE_FORCE_COLOR=0

# ------------------------------------------------------------------ a fresh copy of the tree
collections=$base/collections
tree=$collections/ansible_collections/wpcloud/hosting
work=$base/work
logs=$base/logs
rm -rf "$work" "$logs"
mkdir -p "$work" "$logs"
"$root/.venv/bin/python" tests/utils/sync_tree.py "$tree" >/dev/null 2>"$logs/sync.log" \
    || python3 tests/utils/sync_tree.py "$tree" >/dev/null 2>>"$logs/sync.log" \
    || { cat "$logs/sync.log"; echo "gates: could not copy the tree" >&2; exit 1; }
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_HOME=$work/ansible-home ANSIBLE_LOCAL_TEMP=$work/ansible-tmp
version=$("$root/.venv/bin/python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["version"])' "$tree/galaxy.yml")
tarball=$work/dist/wpcloud-hosting-$version.tar.gz

if [[ -n $release_date ]]; then
    (cd "$tree" && antsibull-changelog release --date "$release_date") || exit 1
    cp "$tree/CHANGELOG.rst" "$root/CHANGELOG.rst"
    cp "$tree/changelogs/changelog.yaml" "$root/changelogs/changelog.yaml"
    echo "gates: released $version ($release_date): CHANGELOG.rst and changelogs/changelog.yaml updated"
    exit 0
fi

# the tarball, built before anything writes into the tree (importer and ee use it)
build_tarball() {
    [[ -f $tarball ]] && return 0
    (cd "$tree" && ansible-galaxy collection build --force --output-path "$work/dist") >"$logs/build.log" 2>&1
}

# ------------------------------------------------------------------ gates
# Each gate function writes its tool output to $logs/<gate>.log and prints only the findings
# (to $work/<gate>.findings) when it fails.

gate_lint() {
    (cd "$tree" && ansible-lint --profile production --nocolor -f pep8) >"$logs/lint.log" 2>&1
    local rc=$?
    # pep8 format: one "path:line[:col]: rule: message" line per violation. A path never starts with
    # '<': "<unknown>:1: SyntaxWarning" is ansible-compat running ast.literal_eval over `ansible-config
    # dump`, whose temporary directory name is random (digits then a keyword, e.g. ansible-local-31676in...).
    # Nor is "path.py:18: CryptographyDeprecationWarning: ..." one: Python's warning about a library the linter
    # imports (cryptography 51 deprecates DSA, which ansible-core's ssh agent code imports), not a finding.
    local violation='^[^ <][^ ]*:[0-9]+(:[0-9]+)?: ' python_warning='^[^ ]+\.py:[0-9]+: [A-Za-z]*Warning: '
    grep -E "$violation" "$logs/lint.log" | grep -vE "$python_warning" >"$work/lint.findings"
    grep -E '^(Failed|Passed)' "$logs/lint.log" >>"$work/lint.findings"
    [[ $rc -eq 0 ]] && ! grep -qE "$violation" "$work/lint.findings"
}

gate_importer() {
    build_tarball || { cat "$logs/build.log" >"$work/importer.findings"; return 1; }
    mkdir -p "$work/importer"
    (cd "$work/importer" && GALAXY_IMPORTER_RUN_ANSIBLE_LINT=false python -m galaxy_importer.main "$tarball") \
        >"$logs/importer.log" 2>&1
    local rc=$?
    grep -E '^(WARNING|ERROR)' "$logs/importer.log" >"$work/importer.findings"
    [[ $rc -ne 0 ]] && echo "galaxy_importer exited with $rc" >>"$work/importer.findings"
    [[ $rc -eq 0 && ! -s $work/importer.findings ]] && grep -q 'Importer processing completed successfully' "$logs/importer.log"
}

gate_docs() {
    (cd "$tree" && antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs self \
        --check-extra-docs-refs .) >"$logs/docs.log" 2>&1
    local rc=$?
    grep -vE '^\s*$' "$logs/docs.log" >"$work/docs.findings"
    [[ $rc -eq 0 && ! -s $work/docs.findings ]]
}

# the site builder copies the tree itself (into .build/release/docs) and writes docs/build/html
gate_site() {
    tests/utils/build-docs.sh --venv "$venv" >"$logs/site.log" 2>&1
    local rc=$?
    grep -E 'WARNING|ERROR|: (no such|absolute path|outside)|FAIL' "$logs/site.log" >"$work/site.findings"
    [[ $rc -ne 0 ]] && echo "build-docs.sh exited with $rc" >>"$work/site.findings"
    grep -E '^build-docs: [0-9]+ pages' "$logs/site.log" >"$work/site.summary"
    [[ $rc -eq 0 && ! -s $work/site.findings && -s $work/site.summary ]]
}

gate_changelog() {
    local ok=0
    (cd "$tree" && antsibull-changelog lint) >"$logs/changelog.log" 2>&1 || ok=1
    # antsibull-changelog lint prints nothing when all is well
    grep -vE '^\s*$' "$logs/changelog.log" >"$work/changelog.findings" && ok=1
    # CHANGELOG.rst must be exactly what changelog.yaml generates (nobody edits it by hand)
    if [[ ! -f $tree/CHANGELOG.rst ]]; then
        echo "CHANGELOG.rst is missing" >>"$work/changelog.findings"; ok=1
    else
        local copy=$work/changelog-copy/ansible_collections/wpcloud/hosting
        mkdir -p "$copy" && cp -a "$tree/galaxy.yml" "$tree/changelogs" "$copy/" \
            && (cd "$copy" && antsibull-changelog generate) >>"$logs/changelog.log" 2>&1 || ok=1
        if ! diff -u "$tree/CHANGELOG.rst" "$copy/CHANGELOG.rst" >"$work/changelog.diff" 2>&1; then
            { echo "CHANGELOG.rst differs from what 'antsibull-changelog generate' makes:"; cat "$work/changelog.diff"; } \
                >>"$work/changelog.findings"
            ok=1
        fi
    fi
    return $ok
}

gate_ee() {
    build_tarball || { cat "$logs/build.log" >"$work/ee.findings"; return 1; }
    local ee=$work/ee ctx=$work/ee/context fail=0
    : >"$work/ee.findings"
    rm -rf "$ee" && mkdir -p "$ee"
    cp "$tree"/extensions/awx/ee/* "$tree/requirements.txt" "$tree/bindep.txt" "$tarball" "$ee/"
    {
        echo "+ ansible-builder create"
        (cd "$ee" && ansible-builder create -f execution-environment.yml -c "$ctx" --output-filename Containerfile -v 2)
    } >"$logs/ee.log" 2>&1 || { echo "ansible-builder create failed (see $logs/ee.log)" >>"$work/ee.findings"; fail=1; }
    [[ -f $ctx/Containerfile ]] || { echo "no Containerfile in the build context" >>"$work/ee.findings"; fail=1; }
    for pkg in requests cryptography; do
        grep -qiE "^$pkg([<>=!~ ;]|$)" "$ctx/_build/requirements.txt" 2>/dev/null \
            || { echo "$pkg missing from the context's _build/requirements.txt" >>"$work/ee.findings"; fail=1; }
    done
    # what the Containerfile's galaxy stage runs (in /build = _build): install the collection offline
    local installed=$ee/installed
    {
        echo "+ ansible-galaxy collection install -r requirements.yml (in _build)"
        (cd "$ctx/_build" && ansible-galaxy collection install -r requirements.yml -p "$installed" --force)
        echo "+ ansible-builder introspect --sanitize $installed"
        ansible-builder introspect --sanitize "$installed" | tee "$ee/introspect.yml"
    } >>"$logs/ee.log" 2>&1 || { echo "installing from the context or introspecting failed (see $logs/ee.log)" >>"$work/ee.findings"; fail=1; }
    python - "$ee/introspect.yml" >>"$work/ee.findings" <<'EOF' || fail=1
import sys, yaml
text = open(sys.argv[1]).read()
data = yaml.safe_load(text[text.index("python:"):]) if "python:" in text else {}
python = " ".join(data.get("python") or [])
system = " ".join(data.get("system") or [])
missing = [p for p in ("requests", "cryptography", "bcrypt") if p not in python]
missing += [p for p in ("openssh-client",) if p not in system]
if missing:
    print("introspection of the installed collection misses: %s" % ", ".join(missing))
    sys.exit(1)
EOF
    return $fail
}

# ------------------------------------------------------------------ run
passed=0 failed=0 skipped=0 skip_notes=()
for gate in "${gates[@]}"; do
    t=$(now)
    why=$(unavailable "$gate")
    if [[ -n $why ]]; then
        skipped=$((skipped + 1)); skip_notes+=("$gate ($why)")
        printf 'gate %-10s SKIP  %s\n' "$gate" "$why"
        continue
    fi
    if "gate_$gate"; then
        result=PASS; passed=$((passed + 1))
    else
        result=FAIL; failed=$((failed + 1))
    fi
    printf 'gate %-10s %s  %6ss\n' "$gate" "$result" "$(elapsed "$t")"
    if [[ $result == FAIL ]]; then
        sed 's/^/    | /' "$work/$gate.findings" | head -n 60
        echo "    | (full log: ${logs#"$root"/}/$gate.log)"
    fi
done
[[ $keep -eq 1 ]] || rm -rf "$work/ee" "$work/importer" "$work/changelog-copy" "$work/ansible-tmp"
if [[ -n $skipped_file ]]; then
    rm -f "$skipped_file"
    if [[ $skipped -gt 0 ]]; then
        mkdir -p "$(dirname "$skipped_file")"
        (IFS=';'; echo "${skip_notes[*]}" | sed 's/;/; /g') >"$skipped_file"
    fi
fi
echo "$passed passed, $failed failed, $skipped skipped ($(elapsed "$started") s in all)"
[[ $failed -eq 0 ]]
