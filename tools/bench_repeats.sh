#!/usr/bin/env bash
# Issue 39's closing check: RUNS default `make bench` runs back to back (MAKE ARGS: e.g. QUICK=1, a quick look
# read from its own results), each one's wall time, "above its roof" and "ABOVE ITS BOUND" lines and warnings,
# its report as JSON and asv's results file (its durations), under OUT. Run on a quiet machine after a first
# make bench has built asv's environment (a second run: the commit already installed there).
set -u
out=${1:?usage: tools/bench_repeats.sh OUT [RUNS [MAKE ARGS...]]}
runs=${2:-5}
shift $(( $# < 2 ? $# : 2 ))
results=.asv/results
case " $* " in *" QUICK=1 "*) results=.asv/quick/results ;; esac
mkdir -p "$out"
printf '| run | wall (s) | exit | above its roof | above its bound | warnings |\n|---|---|---|---|---|---|\n' > "$out/table.md"
for i in $(seq 1 "$runs"); do
    start=$(date +%s.%N)
    make bench "$@" > "$out/bench-$i.log" 2>&1
    status=$?
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    .venv/bin/roofline report --results "$results" --json > "$out/report-$i.json" 2>/dev/null
    cp "$results"/*/"$(git rev-parse --short=8 HEAD)"-*.json "$out/asv-$i.json"
    roof=$(grep -c "above 110% of its roof\|its own roof" "$out/bench-$i.log")
    bound=$(grep -c "ABOVE ITS BOUND" "$out/bench-$i.log")
    warns=$(sed -n '/^warnings:/,/^roofline plot/p' "$out/bench-$i.log" | grep -c '^  - ')
    printf '| %s | %.1f | %s | %s | %s | %s |\n' "$i" "$wall" "$status" "$roof" "$bound" "$warns" >> "$out/table.md"
done
cat "$out/table.md"
