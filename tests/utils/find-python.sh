#!/usr/bin/env bash
# Print the path of a Python >= 3.12 interpreter that can create venvs.
#
#   tests/utils/find-python.sh            any 3.12+ (3.12 preferred: it is the one Python that both
#                                         ansible-core 2.16 and 2.21 support as a controller)
#   tests/utils/find-python.sh --exact 3.12   only that minor version (used for the 2.16 venv)
#
# Override with PYTHON=/path/to/python3.X. Order tried: $PYTHON, pyenv versions (real binaries,
# never the pyenv shims, which fail unless the version is active), python3.12, python3.13,
# python3.14, python3. On Debian/Ubuntu a Python without ensurepip gets python3.X-venv via apt.
# Diagnostics go to stderr; stdout is only the path. Exit 1 if nothing fits.
set -uo pipefail

exact=""
if [[ "${1:-}" == "--exact" ]]; then exact="${2:?--exact needs a version like 3.12}"; fi

log() { echo "find-python: $*" >&2; }

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else log "need root or sudo to run: $*"; return 1
    fi
}

# version X.Y of an interpreter, or nothing when it does not run
py_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

version_ok() {
    local v=$1
    if [[ -n "$exact" ]]; then [[ "$v" == "$exact" ]]; return; fi
    local major=${v%%.*} minor=${v#*.}
    [[ "$major" -eq 3 && "$minor" -ge 12 ]]
}

venv_ok() {
    local py=$1 tmp
    tmp=$(mktemp -d) || return 1
    # --without-pip keeps this fast; ensurepip is what Debian leaves out, so check it separately
    "$py" -m venv --without-pip "$tmp/v" >/dev/null 2>&1 && "$py" -c 'import ensurepip' >/dev/null 2>&1
    local rc=$?
    rm -rf "$tmp"
    return $rc
}

# Debian/Ubuntu split venv/ensurepip out of the interpreter package.
install_venv_support() {
    local py=$1 v=$2
    [[ "$py" == /usr/bin/* ]] || return 1
    command -v apt-get >/dev/null 2>&1 || return 1
    log "$py cannot create venvs; installing python$v-venv with apt"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq >&2 || return 1
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python$v-venv" >/dev/null \
        || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
}

candidates=()
[[ -n "${PYTHON:-}" ]] && candidates+=("$PYTHON")
if command -v pyenv >/dev/null 2>&1; then
    # 3.12.x first (see header), then newer ones, newest first
    while read -r ver; do
        [[ -z "$ver" ]] && continue
        prefix=$(pyenv prefix "$ver" 2>/dev/null) || continue
        minor=$(echo "$ver" | cut -d. -f1,2)
        [[ -x "$prefix/bin/python$minor" ]] && candidates+=("$prefix/bin/python$minor")
    done < <(pyenv versions --bare 2>/dev/null | grep -E '^3\.[0-9]+\.[0-9]+$' \
             | awk -F. '$2 >= 12' | sort -t. -k2,2n -k3,3nr \
             | awk -F. '$2 == 12 {print; next} {rest = rest $0 "\n"} END {printf "%s", rest}')
fi
for name in python3.12 python3.13 python3.14 python3; do
    p=$(command -v "$name" 2>/dev/null) || continue
    candidates+=("$p")
done

tried=()
for py in "${candidates[@]}"; do
    v=$(py_version "$py")
    if [[ -z "$v" ]]; then tried+=("$py (does not run)"); continue; fi
    if ! version_ok "$v"; then tried+=("$py ($v)"); continue; fi
    if venv_ok "$py" || { install_venv_support "$py" "$v" && venv_ok "$py"; }; then
        echo "$py"
        exit 0
    fi
    tried+=("$py ($v, cannot create a venv)")
done

want=${exact:-">= 3.12"}
log "no usable Python $want found."
for t in "${tried[@]}"; do log "  tried: $t"; done
log "Install Python 3.12 or newer (e.g. 'apt-get install python3.12 python3.12-venv' on Ubuntu 24.04,"
log "'apt-get install python3 python3-venv' on Debian 13, or 'pyenv install 3.12'), or set PYTHON=/path/to/python3.X."
exit 1
