# Helpers shared by the demos (sourced, not run): need $py, the venv's Python.
# shellcheck shell=bash

# Seconds since a `date +%s.%N` stamp, one decimal.
since() { "$py" -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$1"; }
# A step's heading.
say() { printf '\n==== %s\n' "$*"; }
# json FILE KEY [KEY...]: the value at that path of a JSON file.
json() { "$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); [d := d[k] for k in sys.argv[2:]]; print(d)' "$@"; }
