#!/usr/bin/env bash
# The site migration demo, end to end, on this machine only:
#
#   1. start the service emulator (SSH executor when available, else scripted) and a real SSH source
#      host (private sshd + MariaDB on 127.0.0.1, a WordPress-shaped docroot);
#   2. write a demo inventory and vaulted variables (vault password file in the temp directory);
#   3. run `ansible-playbook wpcloud.hosting.migrate_site` for three sites: password, key with
#      passphrase, and an identity the service generates (the role installs its public key);
#   4. show the report, check that each destination holds the source's files byte for byte and the
#      database dump holds the source's rows;
#   5. run it again and show from the request log that no migration was created and a refresh ran;
#   6. stop everything it started.
#
# Needs root for the source host (it creates a unix user). Usage: tests/demo/run_demo.sh
# Without a source host (not root, or DEMO_NO_SOURCE=1) it runs against the scripted executor: the same
# playbook and re-run, with nothing to compare on a destination.
set -euo pipefail

started=$(date +%s.%N)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

if [[ -x .venv/bin/ansible-playbook ]]; then bin=$root/.venv/bin; else bin=$root/.venv-core/bin; fi
py=$bin/python
[[ -x $bin/ansible-playbook ]] || { echo "demo: no ansible-playbook in .venv or .venv-core (run make setup)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/wpcloud-demo.XXXXXX)
chmod 755 "$tmp"                     # the source host's user and MariaDB live below it
emulator_pid=$tmp/emulator.pid
source_started=0

cleanup() {
    local rc=$?
    set +e
    [[ -f $emulator_pid ]] && "$py" tests/support/emulator/launcher.py --stop "$emulator_pid" >/dev/null 2>&1
    [[ $source_started -eq 1 ]] && "$py" tests/support/source_host/source_host.py stop --workdir "$tmp/source" --purge >/dev/null 2>&1
    rm -rf "$tmp"
    echo "demo: stopped everything it started; took $(since "$started") s"
    exit $rc
}
trap cleanup EXIT INT TERM

source "$root/tests/demo/demo_helpers.sh"    # since, say, json

# ------------------------------------------------------------------ 1. emulator and source host
executor=scripted
if [[ -f tests/support/emulator/executors/ssh.py ]] && "$py" -c 'import paramiko' 2>/dev/null; then executor=ssh; fi

say "starting the SSH source host"
if [[ ${DEMO_NO_SOURCE:-0} == 1 ]]; then
    echo "demo: DEMO_NO_SOURCE=1: no source host; using the scripted executor" >&2
    executor=scripted
elif "$py" tests/support/source_host/source_host.py start --workdir "$tmp/source" --json-out "$tmp/source.json"; then
    source_started=1
else
    echo "demo: the source host did not start (needs root and sshd, mariadb, php, rsync); using the scripted executor" >&2
    executor=scripted
fi

say "starting the service emulator (executor: $executor)"
"$py" tests/support/emulator/launcher.py --json-out "$tmp/emulator.json" --pid-file "$emulator_pid" \
    --workdir "$tmp/emulator" --executor "$executor" --accept-delay 0.5 >/dev/null
url=$(json "$tmp/emulator.json" url)
echo "emulator at $url"

# ------------------------------------------------------------------ 2. inventory and vaulted variables
say "writing the demo inventory and vaulted variables in $tmp/inventory"
inv=$tmp/inventory
mkdir -p "$inv/host_vars" "$inv/group_vars/all" "$tmp/collections/ansible_collections/wpcloud"
ln -s "$root" "$tmp/collections/ansible_collections/wpcloud/hosting"
vault_pw=$tmp/vault-password            # demo only: a real vault password never sits next to the inventory
"$py" -c 'import secrets; print(secrets.token_urlsafe(24))' > "$vault_pw"
chmod 600 "$vault_pw"
export ANSIBLE_COLLECTIONS_PATH=$tmp/collections ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0
export ANSIBLE_CONFIG=$tmp/no-ansible.cfg ANSIBLE_LOCAL_TEMP=$tmp/ansible-tmp

"$py" - "$tmp" "$source_started" <<'EOF'
import json, os, sys
tmp, have_source = sys.argv[1], sys.argv[2] == "1"
emu = json.load(open(os.path.join(tmp, "emulator.json")))
if have_source:
    src = json.load(open(os.path.join(tmp, "source.json")))
    source = dict(src["ansible"])
else:   # scripted executor only: a source the service "reaches" by name, never contacted by Ansible
    src = {"password": "unused-demo-password"}
    source = {"ansible_host": "src1.example", "ansible_user": "www"}
inventory = {"all": {"children": {
    "wpcloud_sources": {"hosts": {"demo-source": source}},
    "wpcloud_sites": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "site_migration_source_host": "demo-source", "site_migration_confirm_overwrite": True,
                 "site_migration_state_dir": os.path.join(tmp, "state"),
                 "site_migration_report_dir": os.path.join(tmp, "reports")},
        "hosts": {
            "dest1.example": {"site_migration_auth": "password"},
            # without a source host there is nowhere to install the generated identity's key
            "dest2.example": {"site_migration_auth": "generated", "site_migration_install_key": have_source},
            "dest3.example": {"site_migration_auth": "key" if have_source else "password"}}}}}}
with open(os.path.join(tmp, "inventory", "inventory.yml"), "w") as handle:
    json.dump(inventory, handle, indent=2)          # JSON is YAML
api = {"wpcloud_api_url": emu["url"], "wpcloud_api_key": emu["api_key"], "wpcloud_ca_path": emu["ca_path"]}
with open(os.path.join(tmp, "inventory", "group_vars", "all", "vault.yml"), "w") as handle:
    json.dump(api, handle, indent=2)
with open(os.path.join(tmp, "inventory", "host_vars", "dest1.example.yml"), "w") as handle:
    json.dump({"site_migration_remote_pass": src["password"]}, handle)
if have_source:
    with open(os.path.join(tmp, "inventory", "host_vars", "dest3.example.yml"), "w") as handle:
        json.dump({"site_migration_ssh_id": open(src["passphrase_key"]).read(),
                   "site_migration_ssh_id_pass": src["key_passphrase"]}, handle)
else:
    with open(os.path.join(tmp, "inventory", "host_vars", "dest3.example.yml"), "w") as handle:
        json.dump({"site_migration_remote_pass": src["password"]}, handle)
EOF
for f in "$inv/group_vars/all/vault.yml" "$inv"/host_vars/*.yml; do
    "$bin/ansible-vault" encrypt --vault-password-file "$vault_pw" "$f" >/dev/null
done
echo "inventory: dest1 password, dest2 generated identity, dest3 $([[ $source_started -eq 1 ]] && echo 'key + passphrase' || echo password) (credentials and API key vaulted)"
head -c 120 "$inv/host_vars/dest1.example.yml"; echo " ..."

playbook() { "$bin/ansible-playbook" -i "$inv/inventory.yml" --vault-password-file "$vault_pw" wpcloud.hosting.migrate_site "$@"; }
log_since() { "$py" - "$tmp" "$1" <<'EOF'
import json, ssl, sys, urllib.request
tmp, since = sys.argv[1], int(sys.argv[2])
emu = json.load(open(tmp + "/emulator.json"))
ctx = ssl.create_default_context(cafile=emu["ca_path"])
log = json.load(urllib.request.urlopen(emu["url"] + "/_emulator/requests?since=%d" % since, context=ctx))["requests"]
print(json.dumps(log))
EOF
}
last_seq() { log_since 0 | "$py" -c 'import json,sys; l=json.load(sys.stdin); print(l[-1]["seq"] if l else 0)'; }
writes() { "$py" -c '
import collections, json, sys
log = json.load(sys.stdin)
count = collections.Counter(e["endpoint"] for e in log if e["write"])
for name in ("site.allow_migration", "migration.create", "migration.update", "migration.preflight", "migration.ready"):
    print("  %-22s %d" % (name, count.get(name, 0)))
'; }

# ------------------------------------------------------------------ 3. first run
say "run 1: ansible-playbook wpcloud.hosting.migrate_site"
t1=$(date +%s.%N)
playbook
echo "run 1 took $(since "$t1") s"
seq1=$(last_seq)

say "the JSON report of run 1"
report=$(ls -t "$tmp"/reports/*.json | head -n1)
"$py" -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("counts:", r["counts"])
for s in r["sites"]:
    print("  %-15s migration %-5s %-10s auth %-15s preflight %ss  run %ss  key installed: %s" % (
        s["site"], s["migration_id"], s["result"], s["auth"], s["preflight"]["elapsed"], s["run"]["elapsed"],
        s["key_installed"]))
' "$report"
echo "request log, run 1 (writes):"; log_since 0 | writes

# ------------------------------------------------------------------ 4. verify the copies
if [[ $executor == ssh ]]; then
    say "checking each destination against the source (files byte for byte, database rows)"
    "$py" - "$tmp" <<'EOF'
import hashlib, json, os, ssl, subprocess, sys, urllib.request
tmp = sys.argv[1]
emu = json.load(open(tmp + "/emulator.json")); src = json.load(open(tmp + "/source.json"))
ctx = ssl.create_default_context(cafile=emu["ca_path"])

def tree(path):
    out = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(root, name); rel = os.path.relpath(full, path); st = os.lstat(full)
            if os.path.islink(full):
                out[rel] = ("link", os.readlink(full))
            elif os.path.isdir(full):
                out[rel] = ("dir", oct(st.st_mode & 0o777))
            else:
                out[rel] = ("file", oct(st.st_mode & 0o777), hashlib.sha256(open(full, "rb").read()).hexdigest())
    return out

source_tree = tree(src["docroot"])
titles = subprocess.run(["mariadb", "--no-defaults", "--socket=" + src["db"]["socket"], "-u", "root", "-N", "-B",
                         "-e", "SELECT post_title FROM `%s`.wp_posts ORDER BY ID" % src["db"]["name"]],
                        capture_output=True, text=True, check=True).stdout.split("\n")
titles = [t for t in titles if t]
ok = True
for site in ("dest1.example", "dest2.example", "dest3.example"):
    info = json.load(urllib.request.urlopen(emu["url"] + "/_emulator/sites/" + site, context=ctx))
    dest = tree(os.path.join(info["storage"], "files"))
    same = dest == source_tree
    dump = open(os.path.join(info["storage"], "db.sql"), encoding="utf-8").read()
    rows = all(t in dump for t in titles)
    print("  %-15s files: %d entries, %s   db.sql: %d bytes, source rows %s (%s)" % (
        site, len(dest), "identical to the source" if same else "DIFFERENT", len(dump),
        "present" if rows else "MISSING", ", ".join(titles)))
    ok = ok and same and rows
sys.exit(0 if ok else 1)
EOF
else
    say "scripted executor: no real copy to compare (the SSH executor was not available)"
fi

# ------------------------------------------------------------------ 5. run again: a refresh
say "run 2: the same command again (refresh: no new migration, preflight and run again)"
t2=$(date +%s.%N)
playbook | sed -n '/Show the migration report/,/JSON report/p'
echo "run 2 took $(since "$t2") s"
echo "request log, run 2 only (writes):"; log_since "$seq1" | writes
log_since "$seq1" | "$py" -c '
import json, sys
log = json.load(sys.stdin)
w = [e["endpoint"] for e in log if e["write"]]
assert "migration.create" not in w, "run 2 created a migration"
assert w.count("migration.preflight") == 3 and w.count("migration.ready") == 3, w
print("demo: OK: run 2 created no migration and refreshed all 3 sites (preflight + ready each)")
'
