#!/usr/bin/env bash
# Issue 39's check that the live report and asv agree: ROUNDS alternations of `roofline report --json`
# (measured live) and `make bench` (asv's results, read back with `roofline report --results`), each pair
# compared figure by figure within the spread each measured (tools/live_vs_asv.py), under OUT.
set -u
out=${1:?usage: tools/live_vs_asv_runs.sh OUT [ROUNDS]}
rounds=${2:-3}
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
    .venv/bin/roofline report --json --no-progress > "$out/live-$i.json" 2> "$out/live-$i.err"
    make bench > "$out/bench-$i.log" 2>&1
    .venv/bin/roofline report --results .asv/results --json > "$out/asv-$i.json" 2>/dev/null
    .venv/bin/python tools/live_vs_asv.py "$out/live-$i.json" "$out/asv-$i.json" > "$out/agree-$i.md"
    echo "alternation $i: exit $? ($(grep -c '| NO |' "$out/agree-$i.md") of $(grep -c '^| [a-z0-9]' "$out/agree-$i.md") apart)"
done
