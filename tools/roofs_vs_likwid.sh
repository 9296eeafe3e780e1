#!/usr/bin/env bash
# The closing-note figures of issue 14 (and issue 12's ceiling agreement), for a quiet machine.
#
#   tools/roofs_vs_likwid.sh [OUT_DIR] [--small]
#
# 1. tools/roofs_vs_likwid.py: every roof (L1, L2, L3, DRAM from the working-set sweep; a compute
#    roof per dtype, or why skipped) beside likwid-bench's figure measured alternately in the same
#    run; the decode grid under those roofs and how many points sit above 110 % of their own roof;
#    report.txt, report.json, roofline.png and table.md in OUT_DIR.
# 2. The referee tests with ROOFLINE_QUIET=1: level roofs within ±15 % of likwid-bench, the STREAM
#    roof (read) and add within ±10 % of tools/stream_triad.c's read and triad, each measured
#    alternately in one process.
#
# --small runs tiny sizes (about a minute): it shows the script works; its figures are not to keep.
# Full size takes about 5 minutes on a 2-core machine. Exit status: non-zero if a point is above
# 110 % of its roof or a referee disagrees.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/roofline-quiet-14}
small=${2:-}
py=${PYTHON:-.venv/bin/python}
command -v likwid-bench >/dev/null || echo "roofs_vs_likwid: likwid-bench is not installed (apt-get install likwid): no referee column" >&2
status=0
"$py" tools/roofs_vs_likwid.py "$out" $small || status=1
echo
echo "referee tests (ROOFLINE_QUIET=1):"
ROOFLINE_QUIET=1 "$py" -m pytest -q -p no:randomly tests/test_levels.py -k "likwid or native" 2>&1 | tail -5 || status=1
[ "${PIPESTATUS[0]}" = 0 ] || status=1
exit $status
