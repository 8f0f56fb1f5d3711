#!/usr/bin/env bash
# check.sh TREE PYVER: the inner loop for a change (`make check`, about a minute): side by side,
#   units        every unit test (ansible-test units --local)
#   lint         the changed files only: ansible-test sanity on them (pep8, pylint, validate-modules, yamllint,
#                ...; all but `import`, which builds a venv per run: `make sanity` has it), and ansible-lint
#                on the changed playbooks, roles and rulebooks
#   integration  the targets of the changed modules and roles (plugins/modules/X.py, plugins/action/X.py or
#                tests/integration/targets/X/ -> X; roles/R/ -> role_R), against a fresh emulator
# "Changed": differs from the merge base with CHECK_BASE (default main, else origin/main), committed or
# not, and untracked files git does not ignore. Nothing changed: the units only. Each part's output goes
# to .build/check/<part>.log, printed when the part failed; a line per part with its time, then
#   check: N passed, N failed
# `make test` is still what CI runs: check does not run the system, reliability or support suites, the
# sanity import test, the other ansible-core version or the release gates.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
tree=$(cd "$1" && pwd) pyver=$2
logs=$root/.build/check
cd "$root"
rm -rf "$logs"; mkdir -p "$logs"
export PATH="$root/.venv/bin:$PATH"

# ------------------------------------------------------------------ what changed
base_ref=${CHECK_BASE:-}
if [[ -z $base_ref ]]; then
    for ref in main origin/main; do
        git rev-parse -q --verify "$ref^{commit}" >/dev/null && { base_ref=$ref; break; }
    done
fi
base=$( [[ -n $base_ref ]] && git merge-base HEAD "$base_ref" 2>/dev/null || git rev-parse HEAD)
mapfile -t changed < <({ git diff --name-only "$base" -- ; git ls-files --others --exclude-standard; } | sort -u)
existing=()
for f in "${changed[@]}"; do [[ -f $f ]] && existing+=("$f"); done
echo "check: ${#existing[@]} changed file(s) since $(git rev-parse --short "$base")${base_ref:+ ($base_ref)}"

# sanity takes the collection's own files (not docs/, changelogs/ fragments are its changelog test's)
sanity_files=() lint_files=() targets=()
for f in "${existing[@]}"; do
    case $f in
        plugins/*|extensions/*|roles/*|playbooks/*|meta/*|changelogs/*|galaxy.yml|tests/unit/*|tests/integration/*|tests/support/*|tests/system/*|tests/reliability/*|tests/utils/*|tests/benchmarks/*|tests/demo/*)
            sanity_files+=("$f") ;;
    esac
    case $f in
        roles/*.yml|roles/*.yaml|playbooks/*.yml|extensions/eda/rulebooks/*.yml) lint_files+=("$f") ;;
    esac
    name=""
    case $f in
        plugins/modules/*.py|plugins/action/*.py) name=$(basename "$f" .py) ;;
        roles/*/*) name=role_$(echo "$f" | cut -d/ -f2) ;;
        tests/integration/targets/*/*) name=$(echo "$f" | cut -d/ -f4) ;;
    esac
    if [[ -n $name && $name != setup_* && -d tests/integration/targets/$name && " ${targets[*]} " != *" $name "* ]]; then
        targets+=("$name")
    fi
done

# ansible-test keeps its work in the tree's tests/output: each part that runs it side by side gets a copy
# of its own (the units the usual one, .build/collections, as `make units`)
part_tree() { echo "$root/.build/check-trees/$1/ansible_collections/wpcloud/hosting"; }

# ------------------------------------------------------------------ the parts, side by side
units() { cd "$tree" && ansible-test units --local --python "$pyver"; }
lint() {
    local copy; copy=$(part_tree lint)
    "$root/.venv/bin/python" tests/utils/sync_tree.py "$copy" >&2 || return 1
    if [[ ${#sanity_files[@]} -gt 0 ]]; then
        (cd "$copy" && ansible-test sanity --venv --python "$pyver" --skip-test import "${sanity_files[@]}") || return 1
    fi
    if [[ ${#lint_files[@]} -gt 0 ]]; then     # in the copy: ansible-lint installs the collection under .ansible/
        (cd "$copy" && ansible-lint "${lint_files[@]}") || return 1
    fi
}
integration() {
    local copy; copy=$(part_tree integration)
    "$root/.venv/bin/python" tests/utils/sync_tree.py "$copy" >&2 || return 1
    tests/utils/run-integration.sh "$copy" "$pyver" "${targets[@]}"
}

started=$(date +%s)
declare -A pid_of
run_part() {   # run_part NAME: in the background, in a process group of its own; output and end time in logs
    ( "$1"; rc=$?; echo "$rc $(( $(date +%s) - started ))" > "$logs/$1.result"; exit $rc ) \
        > "$logs/$1.log" 2>&1 < /dev/null &
    pid_of[$1]=$!
}
set -m
parts=(units)
[[ ${#sanity_files[@]} -eq 0 && ${#lint_files[@]} -eq 0 ]] || parts+=(lint)
[[ ${#targets[@]} -eq 0 ]] || parts+=(integration)
"$root/.venv/bin/python" tests/utils/sync_tree.py "$tree" >&2 || exit 1
for part in "${parts[@]}"; do run_part "$part"; done
set +m
trap 'for p in "${pid_of[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done; exit 143' INT TERM

passed=0 failed=0
for part in "${parts[@]}"; do
    wait "${pid_of[$part]}"
    read -r rc seconds < "$logs/$part.result" || { rc=1; seconds=?; }
    if [[ $rc -eq 0 ]]; then result=passed; passed=$((passed + 1)); else result=FAILED; failed=$((failed + 1)); fi
    case $part in
        lint) what="lint of ${#sanity_files[@]} file(s) (ansible-test sanity), ${#lint_files[@]} for ansible-lint" ;;
        integration) what="integration ${targets[*]}" ;;
        *) what=$part ;;
    esac
    echo "check: $what $result ($seconds s)"
    if [[ $result == FAILED ]]; then
        echo "----- the end of $logs/$part.log"; tail -n 150 "$logs/$part.log"; echo "-----"
    fi
done
[[ ${#targets[@]} -gt 0 ]] || echo "check: no changed module or role, so no integration target (make integration runs them all)"
echo "check: $passed passed, $failed failed ($(( $(date +%s) - started )) s)"
[[ $failed -eq 0 ]]
