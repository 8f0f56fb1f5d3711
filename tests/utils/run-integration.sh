#!/usr/bin/env bash
# run-integration.sh TREE PYVER [TARGET...]: ansible-test integration --local against a fresh emulator,
# every target or the ones named (tests/integration/README.md).
# Exit 3 (with the reason in .build/integration-skip-reason) when there is nothing to run yet.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
tree=$1 pyver=$2
shift 2
state="$root/.build/emulator-integration"
reason_file="$root/.build/integration-skip-reason"
cd "$root"

skip() { echo "$1" > "$reason_file"; exit 3; }

if [[ -z "$(find "$tree/tests/integration/targets" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -n1)" ]]; then
    skip "no targets under tests/integration/targets yet"
fi
if [[ ! -f tests/support/emulator/launcher.py ]]; then
    skip "tests/support/emulator/launcher.py does not exist yet"
fi

trap 'tests/utils/emulator.sh stop "$state"' EXIT
# A ticket answers 202 for 0.3 s, as in the pytest suites (WPCLOUD_EMULATOR_ACCEPT_DELAY), not the seed's 1 s:
# no target is about that window (migration_preflight makes its own 202s with a fault rule), and every wait
# of every target sat out the longer one.
tests/utils/emulator.sh start "$state" --accept-delay "${WPCLOUD_EMULATOR_ACCEPT_DELAY:-0.3}"
tests/utils/emulator.sh integration-config "$state" "$tree/tests/integration/integration_config.yml"
echo "integration: emulator at $("$root/.venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$state/emulator.json")"

cd "$tree"
export PATH="$root/.venv/bin:$PATH"
echo "ansible-test integration --local --python $pyver -v $*"
ansible-test integration --local --python "$pyver" -v "$@"
