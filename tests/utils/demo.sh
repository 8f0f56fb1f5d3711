#!/usr/bin/env bash
# `make demo`: for now, start the service emulator, show that it answers like the service
# (403 without the Auth key, 200 for get-site/1001 with it), print a short report, stop it.
# To be extended into the full site migration demo.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
state="$root/.build/emulator-demo"

if [[ ! -f tests/emulator/launcher.py ]]; then
    echo "demo: the emulator (tests/emulator/launcher.py) is not in this checkout yet; nothing to demo." >&2
    exit 1
fi

trap 'tests/utils/emulator.sh stop "$state"' EXIT
tests/utils/emulator.sh start "$state"

field() { "$root/.venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$state/emulator.json" "$1"; }
url=$(field url) key=$(field api_key) ca=$(field ca_path) client=$(field client)
api="$url/api/v1.0"

echo "demo: emulator running at $url (client '$client', CA $ca)"

fail=0
check() {  # check DESCRIPTION EXPECTED_STATUS curl-args...
    local what=$1 want=$2; shift 2
    local body status
    body=$(mktemp)
    status=$(curl -sS --cacert "$ca" -o "$body" -w '%{http_code}' "$@") || status="curl-error"
    if [[ "$status" == "$want" ]]; then
        printf '  ok    %-45s %s  %s\n' "$what" "$status" "$(head -c 120 "$body")"
    else
        printf '  FAIL  %-45s got %s, want %s  %s\n' "$what" "$status" "$want" "$(head -c 200 "$body")"
        fail=1
    fi
    rm -f "$body"
}

echo "demo: checks"
check "GET get-site/1001 without Auth key"   403 "$api/get-site/1001"
check "GET get-site/1001 with Auth key"      200 -H "Auth: $key" "$api/get-site/1001"

if [[ $fail -eq 0 ]]; then
    echo "demo: OK: the emulator answers like the service (TLS with its own CA, key required)."
else
    echo "demo: FAILED" >&2
fi
exit $fail
