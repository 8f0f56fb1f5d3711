#!/usr/bin/env bash
# run-units.sh TREE PYVER: ansible-test units --local in the collection tree, then stop any emulator
# the tests left orphaned. (ansible-test runs each test in a forked child, so a session fixture that
# starts a server inside a test may never see its teardown; the orphans would pile up on CI hosts.)
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
tree=$(cd "$1" && pwd) pyver=$2
server="$tree/tests/support/emulator/server.py"

# orphaned (parent 1) emulators started from this tree's copy of the server, not in the list $1
orphans() {
    ps -eo pid=,ppid=,args= | awk -v s="$server" '$2 == 1 && index($0, s) {print $1}'
}
before=" $(orphans | tr '\n' ' ') "

cd "$tree"
PATH="$root/.venv/bin:$PATH" ansible-test units --local --python "$pyver"
rc=$?

left=()
for pid in $(orphans); do
    [[ "$before" == *" $pid "* ]] || left+=("$pid")
done
if [[ ${#left[@]} -gt 0 ]]; then
    echo "units: WARNING: the unit tests left ${#left[@]} emulator process(es) running; stopping them: ${left[*]}" >&2
    kill "${left[@]}" 2>/dev/null || true
fi
exit $rc
