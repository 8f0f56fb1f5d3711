#!/usr/bin/env bash
# Start/stop the service emulator for make targets and scripts (needs `make setup` first).
#   tests/utils/emulator.sh start DIR [ARGS]   start it (ARGS go to server.py); DIR/emulator.json gets its
#                                       one JSON line ({"url", "api_key", "ca_path", "client"}), DIR/emulator.pid its PID
#   tests/utils/emulator.sh stop DIR    stop it (safe to call when not running)
#   tests/utils/emulator.sh integration-config DIR OUT   write ansible-test's integration_config.yml
# Exit 3 from start: tests/support/emulator/launcher.py does not exist (yet).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
py="$root/.venv/bin/python"
launcher="$root/tests/support/emulator/launcher.py"
cmd=${1:?start|stop|integration-config}
dir=${2:?state directory}
shift 2

case "$cmd" in
start)
    [[ -f "$launcher" ]] || { echo "emulator: $launcher not found" >&2; exit 3; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    rm -f "$dir/emulator.json" "$dir/emulator.pid" "$dir/launcher.pid"
    # The launcher may daemonise (write the JSON + PID files and exit) or stay in the foreground;
    # both work: we wait for the JSON file, and remember the launcher's own PID as well.
    "$py" "$launcher" --json-out "$dir/emulator.json" --pid-file "$dir/emulator.pid" "$@" \
        >"$dir/launcher.log" 2>&1 </dev/null &
    echo $! >"$dir/launcher.pid"
    for _ in $(seq 1 300); do
        if [[ -s "$dir/emulator.json" ]] && "$py" -c 'import json,sys; json.load(open(sys.argv[1]))' "$dir/emulator.json" 2>/dev/null; then
            exit 0
        fi
        if ! kill -0 "$(cat "$dir/launcher.pid")" 2>/dev/null && [[ ! -s "$dir/emulator.json" ]]; then
            echo "emulator: launcher exited before the emulator was ready; log:" >&2
            cat "$dir/launcher.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "emulator: not ready after 30 s; log:" >&2
    cat "$dir/launcher.log" >&2
    "$0" stop "$dir"
    exit 1
    ;;
stop)
    for f in emulator.pid launcher.pid; do
        [[ -s "$dir/$f" ]] || continue
        pid=$(cat "$dir/$f")
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$dir/$f"
    done
    ;;
integration-config)
    out=${1:?output file}
    "$py" - "$dir/emulator.json" "$out" <<'PY'
import json
import sys

info = json.load(open(sys.argv[1], encoding='utf-8'))
values = {
    'wpcloud_api_url': info['url'],
    'wpcloud_api_key': info['api_key'],
    'wpcloud_ca_path': info['ca_path'],
    'wpcloud_client': info['client'],
    'wpcloud_emulator_url': info['url'],
}
with open(sys.argv[2], 'w', encoding='utf-8') as out:
    out.write('---\n# Written by `make integration` from the running emulator; not committed.\n')
    for key, value in values.items():
        out.write(f'{key}: {json.dumps(value)}\n')
PY
    ;;
*)
    echo "usage: $0 start|stop|integration-config DIR [OUT]" >&2; exit 2 ;;
esac
