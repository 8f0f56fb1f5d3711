#!/usr/bin/env bash
# make-venv.sh VENV_DIR REQUIREMENTS_FILE [--exact 3.12]
# (Re)creates VENV_DIR with a Python found by find-python.sh and installs REQUIREMENTS_FILE.
# Writes VENV_DIR/.installed on success (the Makefile's stamp).
set -euo pipefail
venv=$1 req=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
py=$("$here/find-python.sh" "$@")
if [[ -x "$venv/bin/python" ]] && [[ "$("$venv/bin/python" -c 'import sys; print(sys._base_executable)' 2>/dev/null)" != "" ]]; then
    echo "make-venv: updating $venv" >&2
else
    echo "make-venv: creating $venv with $py" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
fi
rm -f "$venv/.installed"
# (the filter drops pip's noise about unreachable extra index locations some machines configure)
pip_install() {
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -U "$@" 2>&1 \
        | { grep -v "^WARNING: Location 'file://.*is ignored" || true; }
}
pip_install pip
pip_install -r "$req"
"$venv/bin/python" -m pip check >&2 || echo "make-venv: WARNING: pip check reported conflicts" >&2
"$venv/bin/python" -m pip freeze > "$venv/.installed"
echo "make-venv: $venv ready ($("$venv/bin/python" --version), $("$venv/bin/python" -m pip show ansible-core 2>/dev/null | sed -n 's/^Version: /ansible-core /p'))" >&2
