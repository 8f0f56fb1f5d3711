#!/usr/bin/env bash
# Install the Debian/Ubuntu packages the tests and the demo need, only when missing.
# Fast (a dpkg query) when everything is there. Uses sudo only when not root.
#   openssh-server, rsync      the SSH migration source in system tests / demo
#   mariadb-server, php-cli    a WordPress-like source site (database + PHP)
#   curl, ca-certificates      the demo's HTTP checks
#   a Java >= 17 runtime       ansible-rulebook (only when `java -version` is missing or older)
set -euo pipefail

log() { echo "install-system-packages: $*" >&2; }

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else log "need root or sudo to run: $*"; return 1
    fi
}

packages=(openssh-server rsync mariadb-server php-cli curl ca-certificates)

missing=()
for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "installed" ]] || missing+=("$pkg")
done

java_major() {
    command -v java >/dev/null 2>&1 || { echo 0; return; }
    # 'openjdk version "17.0.15" 2025-04-15' / 'openjdk version "1.8.0_392"'
    local v
    v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9][0-9.]*\).*/\1/p' | head -n1)
    v=${v#1.}
    echo "${v%%.*}"
}
need_java=false
if [[ $(java_major) -lt 17 ]]; then need_java=true; fi

if [[ ${#missing[@]} -eq 0 && $need_java == false ]]; then
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    log "not a Debian/Ubuntu system; please install: ${missing[*]} ${need_java:+(and a Java >= 17 runtime)}"
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get update"
as_root apt-get update -qq >&2

if [[ $need_java == true ]]; then
    # the distro's JRE >= 17: 17 on Debian 12 / Ubuntu 24.04, 21 on Debian 13
    jre=""
    for cand in openjdk-17-jre-headless openjdk-21-jre-headless openjdk-25-jre-headless default-jre-headless; do
        if [[ -n "$(apt-cache policy "$cand" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ]]; then
            jre=$cand; break
        fi
    done
    if [[ -z "$jre" ]]; then log "no Java >= 17 runtime package found in apt"; exit 1; fi
    missing+=("$jre")
fi

log "apt-get install ${missing[*]}"
# (sudo drops DEBIAN_FRONTEND from the environment: pass it through env)
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
log "done"
