#!/usr/bin/env bash
# The one-shot GPU run (written for the device tool's H200; see docs "Backends and GPUs").
#
# Runs in the repository root of the device machine's copy of the working tree, with .whl/
# carried. It installs the carried wheels into /tmp/site (asv and asv-runner are not on that
# machine), checks out the commit to record from .whl/roofline.bundle, then:
#   facts  nvidia-smi, roofline backends -> $OUT/smi.csv, $OUT/backends.json (what runs, why not)
#   1. roofline gpu        -> $OUT/gpu.json          ceilings, overhead, bf16 sweep + knee, other dtypes
#   2. roofline bench --python-same on the GPU subset (asv run --python=same --set-commit-hash,
#      asv publish, the report from those results) -> $OUT/asv-results.tar.gz  (machine "h200")
#   3. roofline report     -> $OUT/report.json       the host's CPU report (trimmed)
#   4. the issue's targets against gpu.json     -> $OUT/summary.txt (also printed last)
# plus $OUT/h200.log (everything printed); smi.csv gets a second row at the end (clocks after).
# Every stage has its own time limit and the run goes on past a failed stage; the exit status
# is the first failure's. The machine's own python3 holds torch; nothing is installed into it.
#
# Environment (all optional): PYTHON (default python3), COMMIT (default: the bundle's HEAD),
# ASV_MACHINE (default h200), GPU_ARGS, ASV_GPU_DTYPES, ASV_GPU_N, ASV_GPU_BATCH, REPORT_ARGS,
# and the stage limits T_GPU, T_ASV, T_REPORT in seconds.
set -uo pipefail

OUT=${OUT:?"OUT must name a folder for the results (the device tool sets it)"}
PY=${PYTHON:-python3}
ROOT=$(pwd)
SITE=/tmp/site
SRC=/tmp/roofline-src
export PYTHONUNBUFFERED=1
status=0
note() { printf '\n== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
fail() { echo "h200_run: $*" >&2; [ "$status" -ne 0 ] || status=${2:-1}; }

mkdir -p "$OUT"
exec > >(tee "$OUT/h200.log") 2>&1  # the whole log comes back; the tool's reply holds its end

note "install the carried wheels into $SITE"
if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
        || { fail "the wheels did not install" 3; exit 3; }
else
    echo "h200_run: no .whl/*.whl: using whatever $PY already has"
fi

note "the source at the commit to record"
rm -rf "$SRC"
if [ -f .whl/roofline.bundle ]; then
    git -c advice.detachedHead=false clone -q .whl/roofline.bundle "$SRC" || { fail "cannot clone .whl/roofline.bundle" 3; exit 3; }
elif git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null; then
    git clone -q "$ROOT" "$SRC" || { fail "cannot clone $ROOT" 3; exit 3; }
else
    fail "no .whl/roofline.bundle and no git repository here: see docs (git bundle create .whl/roofline.bundle HEAD)" 3
    exit 3
fi
COMMIT=${COMMIT:-$(git -C "$SRC" rev-parse HEAD)}
# asv.conf.json follows branch "main"; the bundle's HEAD may sit on another branch name.
git -C "$SRC" checkout -q -B main "$COMMIT" || { fail "commit $COMMIT is not in the bundle" 3; exit 3; }
echo "commit $COMMIT"
export PYTHONPATH="$SRC:$SITE"
R() { "$PY" -m roofline "$@"; }

note "facts"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw,pstate \
    --format=csv >"$OUT/smi.csv" 2>&1 || echo "nvidia-smi did not answer"
cat "$OUT/smi.csv"
R backends --json >"$OUT/backends.json" || fail "roofline backends failed"
R backends

note "1. roofline gpu: ceilings, overhead, sweep, crossover"
# shellcheck disable=SC2086  # GPU_ARGS is a list of flags
timeout "${T_GPU:-300}" "$PY" -m roofline gpu -o "$OUT/gpu.json" ${GPU_ARGS:-} || fail "roofline gpu failed"

note "2. roofline bench --python-same on the GPU subset (asv run --python=same --set-commit-hash)"
(
    cd "$SRC" || exit 3
    export HOME=/tmp/asv-home ASV_PYTHONPATH="$SRC:$SITE"
    export ROOFLINE_GPU_DTYPES=${ASV_GPU_DTYPES:-bf16,fp8}
    export ROOFLINE_GPU_N=${ASV_GPU_N:-8192,16384}
    export ROOFLINE_GPU_BATCH=${ASV_GPU_BATCH:-1,8,64,128,192,256,512,4096}
    mkdir -p "$HOME"
    # The GPU's stable facts join the machine entry first; `roofline bench` then merges roofline's
    # keys (the GPU's name among them) into it. Clocks that change run to run stay out: asv would
    # split every graph by them; they are in gpu.json.
    "$PY" - "${ASV_MACHINE:-h200}" <<'PYEOF' || exit 3
import sys
from roofline.host import gpu_facts
from roofline.suite import machine_file
path, name = machine_file.machine_file_path(), sys.argv[1]
entries = machine_file.read_machine_file(path)
entries[name] = {**entries.get(name, {}), **machine_file.gpu_keys(gpu_facts())}
machine_file.write_machine_file(path, entries)
print(entries[name])
PYEOF
    timeout "${T_ASV:-300}" "$PY" -m roofline bench --python-same --machine "${ASV_MACHINE:-h200}" \
        --bench 'backends\.(CudaDecode|CallOverhead)'
    rc=$?
    tar -czf "$OUT/asv-results.tar.gz" -C .asv/results . && tar -tzf "$OUT/asv-results.tar.gz"
    exit $rc
) || fail "roofline bench (asv) failed"

note "3. roofline report (this host's CPU side, trimmed)"
# shellcheck disable=SC2086
timeout "${T_REPORT:-150}" "$PY" -m roofline report --json --no-progress \
    ${REPORT_ARGS:---n 8192 --batch 1,64 --cache-n 1024 --sweep-n 4096 --sweep-batch 1,8,64,256,1024} \
    >"$OUT/report.json" || fail "roofline report failed"

note "4. the issue's targets"
"$PY" - "$OUT/gpu.json" <<'PYEOF' | tee "$OUT/summary.txt" || fail "no summary"
import json, sys
run = json.load(open(sys.argv[1]))
from roofline.report.gpu import render_gpu_text
print(render_gpu_text(run))
c = run["ceilings"]
pt = {(r["dtype"], r["n"], r["batch"]): r for r in run["decode"]}
def row(what, value, target, unit):
    ok = value is not None and value >= target
    shown = "n/a" if value is None else f"{value:.2f}"
    print(f"  {'PASS' if ok else 'MISS'}  {what}: {shown} {unit} (target ≥ {target})")
print("\ntargets (tools/h200_run.sh; the issue's acceptance figures):")
row("copy bandwidth", c["bandwidth"]["d2d-copy"]["best"] / 1e12, 4.1, "TB/s")
row("bf16 square GEMM", c["peaks"].get("bf16", {}).get("best", 0) / 1e12, 750, "TFLOP/s")
g = lambda k, f, s: pt[k][f] / s if k in pt else None
row("bf16 decode n=16384 batch 1", g(("bf16", 16384, 1), "gbps", 1e3), 3.9, "TB/s")
row("bf16 decode n=16384 batch 4096", g(("bf16", 16384, 4096), "gflops", 1e3), 700, "TFLOP/s")
row("bf16 decode n=8192 batch 1", g(("bf16", 8192, 1), "gbps", 1e3), 3.5, "TB/s")
x = run["crossover"]
for n, r in x["observed_over_predicted"].items():
    ok = 0.7 <= r <= 1.3
    print(f"  {'PASS' if ok else 'MISS'}  crossover at n={n}: observed {x['observed_batch'][n]:.0f}, "
          f"predicted {x['predicted_batch']:.0f} ({r:.2f}×; target within ±30 %)")
PYEOF

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw,pstate \
    --format=csv,noheader >>"$OUT/smi.csv" 2>&1 || true  # the second row: clocks at the end
ls -la "$OUT"
exit "$status"
