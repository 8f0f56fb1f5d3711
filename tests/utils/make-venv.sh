#!/usr/bin/env bash
# make-venv.sh VENV_DIR REQUIREMENTS_FILE [--exact 3.12] [--per-package]
# (Re)creates VENV_DIR with a Python found by find-python.sh and installs REQUIREMENTS_FILE.
# Writes VENV_DIR/.installed on success (the Makefile's stamp).
#
# --per-package  when the file does not install as a whole, install each requirement alone; one that
#                cannot be installed on this Python (pip: no release for this Python version, or it
#                fails to build) is written to VENV_DIR/.unavailable as "name: reason" and the rest
#                installs. Any other failure (network, a conflict) still fails. For tool venvs whose
#                users can skip what one tool does (tests/utils/gates.sh), never for the project venv.
set -euo pipefail
venv=$1 req=$2; shift 2
find_args=() per_package=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --exact) find_args+=(--exact "${2:?--exact needs a version like 3.12}"); shift 2 ;;
        --per-package) per_package=1; shift ;;
        *) echo "make-venv: unknown argument $1" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
py=$("$here/find-python.sh" "${find_args[@]}")
if [[ -x "$venv/bin/python" ]] && [[ "$("$venv/bin/python" -c 'import sys; print(sys._base_executable)' 2>/dev/null)" != "" ]]; then
    echo "make-venv: updating $venv" >&2
else
    echo "make-venv: creating $venv with $py" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
fi
rm -f "$venv/.installed" "$venv/.unavailable"
# pip's output goes to stderr: stdout stays for what the caller prints (e.g. `make emulator`'s JSON line).
# (the filter drops pip's noise about unreachable extra index locations some machines configure)
pip_install() {
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -U "$@" 2>&1 \
        | { grep -v "^WARNING: Location 'file://.*is ignored" || true; } >&2
    return "${PIPESTATUS[0]}"
}
pip_install pip
if ! pip_install -r "$req"; then
    [[ $per_package -eq 1 ]] || exit 1
    pyver=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    echo "make-venv: $req does not install as a whole on Python $pyver; installing each requirement alone" >&2
    reqdir=$(dirname "$req")
    options=()     # option lines of the file (--find-links DIR, ...) apply to every requirement
    while read -r line; do
        line=${line%%#*}; line=$(sed -E "s/^[[:space:]]+|[[:space:]]+$//g" <<<"$line")
        [[ $line == -* && $line != -r\ * ]] && read -ra words <<<"$line" && options+=("${words[@]}")
    done <"$req"
    while read -r line; do
        line=${line%%#*}; line=$(sed -E "s/^[[:space:]]+|[[:space:]]+$//g" <<<"$line")
        [[ -z $line || ($line == -* && $line != -r\ *) ]] && continue
        if [[ $line == -r\ * ]]; then
            pip_install "${options[@]}" -r "$reqdir/${line#-r }" || exit 1
            continue
        fi
        log=$("$venv/bin/python" -m pip install -q --disable-pip-version-check -U "${options[@]}" "$line" 2>&1) && continue
        name=$(echo "$line" | sed -E 's/^([A-Za-z0-9._-]+).*/\1/' | tr '[:upper:]_' '[:lower:]-')
        if grep -qiE 'requires? a different python|Requires-Python|Failed to build|failed-wheel-build' <<<"$log"; then
            why=$(grep -iE 'requires? a different python|Requires-Python|Failed to build' <<<"$log" | head -n1 | cut -c1-200)
            echo "$name: does not install on Python $pyver ($why)" >>"$venv/.unavailable"
            echo "make-venv: $name cannot be installed on Python $pyver: $why" >&2
        else
            echo "$log" | tail -n 5 >&2
            echo "make-venv: could not install $line" >&2
            exit 1
        fi
    done <"$req"
fi
"$venv/bin/python" -m pip check >&2 || echo "make-venv: WARNING: pip check reported conflicts" >&2
"$venv/bin/python" -m pip freeze > "$venv/.installed"
echo "make-venv: $venv ready ($("$venv/bin/python" --version), $("$venv/bin/python" -m pip show ansible-core 2>/dev/null | sed -n 's/^Version: /ansible-core /p'))" >&2
