#!/usr/bin/env bash
# The local webhook quick start (make webhook-demo): the receiver and the service emulator wired
# together, one signed event delivered, processed and acknowledged, on this machine only.
#
#   1. make a CA and a certificate for 127.0.0.1 (the receiver's HTTPS; the emulator trusts the CA);
#   2. start the emulator (--webhook-ca: its webhook sender trusts that CA);
#   3. point the client account at the receiver: playbook wpcloud.hosting.configure_webhooks sets
#      webhook_url and webhook_hmac_key (a random key, from a 0600 variables file);
#   4. start ansible-rulebook with the sample rulebook wpcloud.hosting.webhooks (the key in
#      WPCLOUD_WEBHOOK_HMAC_KEYS, which the source reads and removes from the actions' environment);
#   5. have the emulator send one signed site_provisioned (POST /_emulator/events);
#   6. show it arriving (the emulator's delivery: 200), processed (the playbook's record) and
#      acknowledged (the spool's state: done), then stop everything it started.
#
# Usage: tests/demo/webhook_demo.sh (after make setup). KEEP=1 keeps the work directory.
set -euo pipefail

started=$(date +%s.%N)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=$root/.venv/bin
py=$bin/python
[[ -x $bin/ansible-rulebook ]] || { echo "webhook-demo: no ansible-rulebook in .venv (run make setup)" >&2; exit 1; }
command -v java >/dev/null || { echo "webhook-demo: ansible-rulebook needs a JDK 17 (java) on PATH" >&2; exit 1; }
export PATH=$bin:$PATH ANSIBLE_NOCOLOR=1 ANSIBLE_COLLECTIONS_PATH=$root/.build/collections

tmp=$(mktemp -d /tmp/wpcloud-webhook-demo.XXXXXX)
rulebook_pid=

cleanup() {
    local rc=$?
    set +e
    if [[ -n $rulebook_pid ]]; then
        kill -TERM -- "-$rulebook_pid" 2>/dev/null        # its own process group (setsid): the receiver too
        for _ in $(seq 50); do kill -0 "$rulebook_pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL -- "-$rulebook_pid" 2>/dev/null
    fi
    [[ -f $tmp/emulator.pid ]] && "$py" tests/support/emulator/launcher.py --stop "$tmp/emulator.pid" >/dev/null 2>&1
    if [[ ${KEEP:-0} == 1 ]]; then echo "webhook-demo: kept $tmp"; else rm -rf "$tmp"; fi
    echo "webhook-demo: stopped everything it started; took $(since "$started") s"
    exit $rc
}
trap cleanup EXIT INT TERM

source "$root/tests/demo/demo_helpers.sh"    # since, say, json
wait_for() {   # wait_for SECONDS WHAT COMMAND...: run COMMAND every half second until it succeeds
    local limit=$1 what=$2 waited=0; shift 2
    until "$@" >/dev/null 2>&1; do
        sleep 0.5; waited=$((waited + 1))
        if (( waited % 10 == 0 )); then echo "  ... still waiting for $what ($((waited / 2)) s)"; fi
        if (( waited > limit * 2 )); then echo "webhook-demo: $what did not happen within $limit s" >&2; return 1; fi
    done
}

# ------------------------------------------------------------------ 1. TLS for the receiver
say "1. a CA and a certificate for 127.0.0.1 (in $tmp/tls)"
mkdir -p "$tmp/tls"
"$py" - "$tmp/tls" <<'PY'
import sys
sys.path.insert(0, "tests/support/emulator")
from certs import make_tls_files            # the same as: openssl req -x509 ... (docs/webhooks.md)
for path in make_tls_files(sys.argv[1]):
    print("  " + path)
PY

# ------------------------------------------------------------------ 2. the emulator
say "2. the service emulator, trusting that CA for its webhook deliveries"
"$py" tests/support/emulator/launcher.py --json-out "$tmp/emulator.json" --pid-file "$tmp/emulator.pid" \
    --workdir "$tmp/emulator" --webhook-ca "$tmp/tls/ca.pem" --log-file "$tmp/emulator.log" >/dev/null   # its API key: not shown
api_url=$(json "$tmp/emulator.json" url)
client=$(json "$tmp/emulator.json" client)
export WPCLOUD_API_URL=$api_url WPCLOUD_API_KEY=$(json "$tmp/emulator.json" api_key) \
       WPCLOUD_CA_PATH=$(json "$tmp/emulator.json" ca_path)
echo "  $api_url (client $client)"

# ------------------------------------------------------------------ 3. the client's webhook_url and key
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
receiver=https://127.0.0.1:$port
say "3. the client's webhook_url ($receiver/wpcloud) and webhook_hmac_key (configure_webhooks)"
umask 077
cat > "$tmp/inventory.yml" <<YML
all:
  hosts:
    localhost:
      ansible_connection: local
YML
key=$("$py" -c 'import secrets; print(secrets.token_hex(32))')
printf 'wpcloud_webhook_hmac_key: "%s"\n' "$key" > "$tmp/webhook-key.yml"
ansible-playbook -i "$tmp/inventory.yml" wpcloud.hosting.configure_webhooks -e "wpcloud_client=$client" \
    -e "wpcloud_webhook_url=$receiver/wpcloud" -e "@$tmp/webhook-key.yml" -e "wpcloud_ca_path=$WPCLOUD_CA_PATH" \
    | sed -n '/PLAY RECAP/,$p'

# ------------------------------------------------------------------ 4. the receiver
say "4. the receiver: ansible-rulebook with the sample rulebook wpcloud.hosting.webhooks"
cat > "$tmp/vars.yml" <<YML
wpcloud_webhook_host: 127.0.0.1
wpcloud_webhook_port: $port
wpcloud_webhook_certfile: $tmp/tls/server.pem
wpcloud_webhook_keyfile: $tmp/tls/server.key
wpcloud_webhook_spool_dir: $tmp/spool
wpcloud_webhook_record_dir: $tmp/records
YML
(cd "$tmp" && WPCLOUD_WEBHOOK_HMAC_KEYS=$key exec setsid ansible-rulebook -r wpcloud.hosting.webhooks \
    -i inventory.yml --vars vars.yml > rulebook.log 2>&1) &
rulebook_pid=$!
unset key
healthz() { "$py" -c 'import ssl, sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/healthz", context=ssl.create_default_context(cafile=sys.argv[2]), timeout=2)' \
    "$receiver" "$tmp/tls/ca.pem"; }
wait_for 90 "the receiver to listen on $receiver" healthz
echo "  listening on $receiver (spool $tmp/spool)"

# ------------------------------------------------------------------ 5. one signed event
say "5. the emulator sends one signed site_provisioned (POST /_emulator/events)"
"$py" - "$api_url" "$WPCLOUD_CA_PATH" <<'PY'
import json, ssl, sys, urllib.request
request = urllib.request.Request(sys.argv[1] + "/_emulator/events", method="POST",
                                 data=json.dumps({"event": "site_provisioned", "atomic_site_id": 1001}).encode(),
                                 headers={"Content-Type": "application/json"})
print("  " + urllib.request.urlopen(request, context=ssl.create_default_context(cafile=sys.argv[2])).read().decode())
PY

# ------------------------------------------------------------------ 6. arrived, processed, acknowledged
say "6. arrived, processed, acknowledged"
delivered() { "$py" - "$api_url" "$WPCLOUD_CA_PATH" <<'PY'
import json, ssl, sys, urllib.request
body = json.load(urllib.request.urlopen(sys.argv[1] + "/_emulator/deliveries",
                                        context=ssl.create_default_context(cafile=sys.argv[2])))
done = [d for d in body["deliveries"] if d["status"] == 200]
if not done:
    sys.exit(1)
print("  arrived: %s delivered to the receiver, signed %s, answered HTTP %s" % (
    done[0]["event"], done[0]["signed"], done[0]["status"]))
PY
}
wait_for 60 "the delivery" delivered
delivered
acknowledged() { grep -q '^ack ' "$tmp/spool/processing.log"; }
wait_for 120 "the rulebook's playbook to process and acknowledge the event" acknowledged
for record in "$tmp"/records/site_provisioned/*.json; do
    echo "  processed: wpcloud.hosting.on_site_provisioned recorded $(cat "$record")"
done
echo "  acknowledged: the spool's deliveries (webhook.py events list; playbook wpcloud.hosting.webhook_events runs it):"
"$py" extensions/eda/plugins/event_source/webhook.py events list --spool-dir "$tmp/spool" 2>&1 | sed 's/^/    /'
grep -q ' done ' <("$py" extensions/eda/plugins/event_source/webhook.py events list --spool-dir "$tmp/spool" 2>/dev/null)
echo "  the rulebook's output: $tmp/rulebook.log (KEEP=1 keeps it)"
say "webhook-demo: one signed event arrived, was processed and acknowledged"
