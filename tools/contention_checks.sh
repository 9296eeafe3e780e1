#!/usr/bin/env bash
# The figures issue 12's "Done when" asks for, measured on a machine nobody else is using.
#
#   tools/contention_checks.sh [OUT]      (default OUT: artifacts/quiet-12)
#
# 0. The mitigation: beside one busy process, a cache-resident n=1024 GEMV with the BLAS on every
#    core, alternately with the BLAS on the cores the neighbour leaves (what a run found busy does).
# 1. Under load: `roofline bench` with 0, 1 and 2 busy processes beside it. Each case runs once
#    without --allow-busy (its exit status: 3 when the machine is found busy) and, when that stopped
#    before measuring, again with --allow-busy; the table gives cache n=1024 b=1, DRAM n=2048 b=1 and
#    b=64 (GFLOP/s), the exit status and the report's first line.
# 2. When quiet: RUNS (5) back-to-back `roofline bench` runs, the native triad (tools/stream_triad.c)
#    and likwid-bench (when installed: its triad, and its load kernel inside each memory level, the
#    level roofs' referee) measured alternately between them; max/min of every decode figure and
#    every ceiling, and of the referees.
#
# Sizes: ROOFLINE_N=2048 ROOFLINE_CACHE_N=1024 ROOFLINE_BATCH=1,64 unless set. Runs from the
# repository root with the project's venv (.venv, `make bench` makes it). At these sizes on a 2-core
# VM one bench run takes about 4 to 6 minutes: the whole script about 45 to 60 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-artifacts/quiet-12}
RUNS=${RUNS:-5}
BIN=.venv/bin
export ROOFLINE_N=${ROOFLINE_N:-2048} ROOFLINE_CACHE_N=${ROOFLINE_CACHE_N:-1024} ROOFLINE_BATCH=${ROOFLINE_BATCH:-1,64}
export ROOFLINE_BACKEND_N=${ROOFLINE_BACKEND_N:-256} ROOFLINE_BACKEND_BATCH=${ROOFLINE_BACKEND_BATCH:-1}
MACHINE=${MACHINE:-quiet12}
BENCH_FLAGS=${BENCH_FLAGS:-}  # e.g. --python-same: this venv instead of asv's own virtualenv
mkdir -p "$OUT"
[ -x "$BIN/roofline" ] || make .venv/.bench-installed >/dev/null

bench() {  # bench NAME [flags]: one roofline bench; its output, exit status and result file kept under OUT/NAME
    local name=$1; shift
    local rc=0
    # shellcheck disable=SC2086
    "$BIN/roofline" bench --machine "$MACHINE" $BENCH_FLAGS "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" || rc=$?
    echo "$rc" >"$OUT/$name.rc"
    mkdir -p "$OUT/$name.results"
    cp .asv/results/"$MACHINE"/*.json "$OUT/$name.results/" 2>/dev/null || true
    rm -f .asv/results/"$MACHINE"/[0-9a-f]*-*.json  # the next run must not find this one's results
    return 0
}

busy_loops() {  # busy_loops K: start K busy processes; their pids in BUSY
    BUSY=()
    for _ in $(seq 1 "$1"); do
        "$BIN/python" -c "while True: pass" &
        BUSY+=($!)
    done
}

stop_busy() {
    for pid in "${BUSY[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    BUSY=()
}
trap stop_busy EXIT

# SKIP_LOAD=1: sections 0 and 1 are left out (the quiet runs only)
if [ -z "${SKIP_LOAD:-}" ]; then
# ---- 0. the mitigation: a GEMV on every core vs on the cores a busy neighbour leaves ------------
busy_loops 1
sleep 1
"$BIN/python" - >"$OUT/mitigation.txt" <<'PY'
from roofline.host import blas_threads, cpu_count
from roofline.measure.contention import blas_limit, reference_kernel, reference_seconds

cores = blas_threads() or cpu_count()
kernel = reference_kernel(1024)  # cache-resident n=1024 b=1, validated
times = {cores: [], max(1, cores - 1): []}
for _ in range(5):  # alternately, so the neighbour's load lands on both alike
    for threads in times:
        with blas_limit(threads):
            times[threads].append(reference_seconds(kernel, seconds=0.5))
for threads, ts in times.items():
    ts.sort()
    print(f"beside 1 busy process, BLAS on {threads} of {cores} threads: median {ts[2] * 1e6:.1f} us per call "
          f"(min {ts[0] * 1e6:.1f}, max {ts[-1] * 1e6:.1f})")
PY
stop_busy

# ---- 1. under load ------------------------------------------------------------------------------
for k in 0 1 2; do
    busy_loops "$k"
    sleep 1
    bench "load$k"
    if [ "$(cat "$OUT/load$k.rc")" = 3 ] && [ -z "$(ls "$OUT/load$k.results" | grep -v machine.json)" ]; then
        bench "load$k-allowed" --allow-busy
    fi
    stop_busy
done
fi

# ---- 2. quiet, back to back, referees alternately ---------------------------------------------
# One sample of every referee before the first run, between each two runs and after the last: run i
# lies between samples i-1 and i, and the referee's figure for run i is the geometric mean of the two
# (as many figures as runs, from the same minutes as the run's own).
if command -v cc >/dev/null; then
    cc -O3 -march=native -fopenmp tools/stream_triad.c -o "$OUT/stream_triad"
fi
LLC=$("$BIN/python" -c "from roofline.host import llc_bytes; print(llc_bytes()[0])")
: >"$OUT/referees.txt"

referees() {  # referees K: sample K of every referee, appended to OUT/referees.txt after "at K"
    echo "at $1" >>"$OUT/referees.txt"
    [ -x "$OUT/stream_triad" ] && echo "native $("$OUT/stream_triad" $((12 * LLC)) 5)" >>"$OUT/referees.txt"
    command -v likwid-bench >/dev/null || return 0
    local mb=$((12 * LLC / 1048576))
    likwid-bench -t triad_avx -W "N:${mb}MB:$(nproc)" 2>/dev/null | awk '/MByte\/s/ {print "likwid triad " $2 / 1000}' \
        >>"$OUT/referees.txt" || true
    # likwid-bench's load kernel at one working set inside each level (the level roofs' referee): a
    # first pass sizes the iterations, the second (about 0.25 s a level) is recorded; then its FMA
    # peak on registers (the referee of the compute-bound figures: GEMM, batch 64), about 1 s each
    "$BIN/python" - >>"$OUT/referees.txt" <<'PY' || true
from roofline.host import cache_topology, cpu_count
from roofline.measure import levels, likwid

where = likwid.referee_sizes(levels.capacities(cache_topology()))
first = likwid.referee_levels(where, cpu_count(), {})
again = likwid.referee_levels(where, cpu_count(), {level: r.rate for level, r in first.items()})
for level, r in again.items():
    print(f"likwid-load {level} {r.rate}")
for dtype in ("fp32", "fp64"):
    r = likwid.likwid_bench(likwid.kernel_for(dtype), 32 * 1024 * cpu_count(), cpu_count())
    print(f"likwid-peak {dtype} {r.rate}")
PY
}

for i in $(seq 1 "$RUNS"); do
    referees $((i - 1))
    bench "quiet$i" --allow-busy  # a run found busy is still recorded, and its summary line says so
done
referees "$RUNS"

"$BIN/python" - "$OUT" "$RUNS" <<'EOF'
import itertools, json, math, sys
from pathlib import Path

from roofline.host import cache_topology
from roofline.measure.levels import capacities
from roofline.model.plateaus import level_of

out, runs = Path(sys.argv[1]), int(sys.argv[2])


def results(folder):
    files = [f for f in folder.glob("*.json") if f.name != "machine.json"]
    if not files:
        return {}
    doc = json.loads(files[0].read_text())
    cols, got = doc["result_columns"], {}
    for name, row in doc["results"].items():
        rec = dict(zip(cols, row))
        params = rec.get("params") or []
        values = rec["result"] if isinstance(rec["result"], list) else [rec["result"]]
        for combo, v in zip(itertools.product(*params) if params else [()], values):
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                got[(name, ", ".join(combo))] = v
    return got


def first_line(name):
    """The report's first line: the contention headline, or the lab's ridge line of a quiet run."""
    text = (out / f"{name}.out").read_text().splitlines() if (out / f"{name}.out").exists() else []
    text = [t for t in text if t.startswith("MEASURED UNDER CONTENTION") or "FLOPs per byte at the ridge" in t]
    return text[0] if text else "(no report)"


rows = [("busy", "exit", "cache 1024 b1", "DRAM 2048 b1", "DRAM 2048 b64", "report's first line")]
for k in [k for k in (0, 1, 2) if (out / f"load{k}.rc").exists()]:
    name = f"load{k}-allowed" if (out / f"load{k}-allowed.rc").exists() else f"load{k}"
    r = results(out / f"{name}.results")
    get = lambda cls, n, b: r.get((f"decode.{cls}.track_gflops", f"{n}, {b}"))
    figs = [get("DecodeCacheResident", 1024, 1), get("DecodeDRAM", 2048, 1), get("DecodeDRAM", 2048, 64)]
    rc = (out / f"load{k}.rc").read_text().strip()
    rows.append((str(k), rc, *(f"{v:.2f}" if v else "n/a" for v in figs), first_line(name)))
mitigation = out / "mitigation.txt"
lines = ["## The mitigation", ""] + (mitigation.read_text().splitlines() if mitigation.exists() else ["(not run)"])
lines += ["", "## Under load (GFLOP/s)", ""] + [" | ".join(r) for r in rows]

quiet = [results(out / f"quiet{i}.results") for i in range(1, runs + 1)]
keys = sorted(set().union(*quiet)) if quiet else []
# the referees: sample k was taken before run k+1 (k = 0 .. runs); run i's figure is the geometric
# mean of samples i-1 and i, the minutes around it
samples, k = {}, None
for line in (out / "referees.txt").read_text().splitlines():
    parts = line.split()
    if not parts:
        continue
    if parts[0] == "at":
        k = int(parts[1])
    elif parts[0] == "native":
        samples.setdefault("native copy", {})[k] = float(parts[2])
        samples.setdefault("native triad", {})[k] = float(parts[4])
        if parts[5] == "read":  # stream_triad.c's read kernel (s = b·c): the referee of the suite's roof
            samples.setdefault("native read", {})[k] = float(parts[6])
    elif parts[0] == "likwid":
        samples.setdefault("likwid triad", {})[k] = float(parts[2])
    elif parts[0] in ("likwid-load", "likwid-peak"):
        samples.setdefault(f"{parts[0].replace('-', ' ')} {parts[1]}", {})[k] = float(parts[2])
ROOF = "native read" if "native read" in samples else "native triad"  # the referee of the suite's roof
for name in [n for n in samples if n.startswith("likwid peak")]:  # the referees' own ridge: FLOP/s ÷ roof
    roof = samples.get(ROOF, {})
    samples[f"{name} ÷ {ROOF}"] = {i: v / roof[i] for i, v in samples[name].items() if i in roof}
bracket = {
    name: [math.sqrt(by[i - 1] * by[i]) for i in range(1, runs + 1) if i - 1 in by and i in by]
    for name, by in samples.items()
}
spread = {name: max(v) / min(v) for name, v in bracket.items() if len(v) > 1}
# the referee's own max/min over its samples, each taken at one moment as the runs' figures are
own = {name: max(by.values()) / min(by.values()) for name, by in samples.items() if len(by) > 1}

# the referees inside each run (ceilings.BandwidthReferee, ceilings.PeakReferee: likwid-bench after each
# round of the run's ceilings, the same minutes): one figure a run each, their max/min over the runs
INSIDE = {"ceilings.BandwidthReferee.track_referee_bandwidth": "load", "ceilings.PeakReferee.track_referee_peak": "peak"}
inside = {}  # "in-run load DRAM" → one figure per run (None where that run has none)
for i, q in enumerate(quiet):
    for (name, combo), v in q.items():
        if name in INSIDE:
            arg = combo.strip("'").replace("float32", "fp32").replace("float64", "fp64")
            inside.setdefault(f"in-run {INSIDE[name]} {arg}", [None] * len(quiet))[i] = v
if "in-run peak fp32" in inside and "in-run load DRAM" in inside:  # the referees' own ridge
    pairs = zip(inside["in-run peak fp32"], inside["in-run load DRAM"], strict=True)
    inside["in-run peak fp32 ÷ load DRAM"] = [f / b if f and b else None for f, b in pairs]
for name, vs in inside.items():
    vs = [v for v in vs if v]
    if len(vs) > 1:
        spread[name] = own[name] = max(vs) / min(vs)
caps = capacities(cache_topology())  # (level, aggregate bytes), innermost first
DRAM = ("in-run load DRAM", "native copy", "native triad", "native read", "likwid triad", "likwid load DRAM")


def referees_of(name, combo):
    """The referees of a figure: what bounds it (a memory level, DRAM, or the FMA peak)."""
    args = [a.strip().strip("'") for a in combo.split(",")] if combo else []
    if ".CacheBandwidth." in name:
        return [f"in-run load {args[0]}", f"likwid load {args[0]}"]
    if ".ComputePeak." in name:  # bf16/int8 GEMMs run on the vector units likwid-bench's fp32 FMA peak loads
        return ["in-run peak fp32", "likwid peak fp32"]
    if ".GemmPeak." in name:
        dtype = "fp64" if args[0] == "float64" else "fp32"
        return [f"in-run peak {dtype}", f"likwid peak {dtype}"]
    if name.startswith("crossover."):
        return ["in-run peak fp32 ÷ load DRAM", f"likwid peak fp32 ÷ {ROOF}"]
    if ".MemoryBandwidth." in name:
        return list(DRAM)
    n, batch = int(args[-2]), int(args[-1])
    if batch > 1:
        return ["in-run peak fp32", "likwid peak fp32"]
    if ".DecodeCacheResident." in name:
        level = level_of(4 * n * n, caps)
        return [f"in-run load {level}", f"likwid load {level}"]
    return list(DRAM)


def verdict(mm, key, table):
    """(the widest referee of the figure in ``table`` and its max/min, whether the figure passes)."""
    refs = [(r, table[r]) for r in referees_of(*key) if r in table]
    widest = max(refs, key=lambda r: r[1]) if refs else None
    ok = mm <= 1.10 or (widest is not None and mm <= widest[1])
    return (f"{widest[0]} ({widest[1]:.3f})" if widest else "none measured"), ok


lines += ["", f"## Quiet: max/min over {runs} back-to-back runs, beside its referees'", ""]
lines += [f"run {i}: {first_line(f'quiet{i}')}" for i in range(1, runs + 1)] + [""]
lines += [
    "A figure passes when its max/min is ≤ 1.10 or no worse than the widest of its referees' (each referee's",
    "figure for a run: the geometric mean of its samples just before and just after that run). The next two",
    "columns hold it to the referee's own max/min over its samples instead, each taken at one moment.",
    "The last: the figure ÷ its referee inside the same run, max/min over the runs (≤ 1.10: the figure",
    "moved with the machine).",
    "",
    "figure | max/min | referee, runs (max/min) | verdict | referee, samples (max/min) | verdict | ÷ in-run referee",
]
failed = failed_own = tracked_ = refereed = 0
for key in keys:
    if not key[0].startswith(("decode.", "ceilings.", "crossover.", "backends.BackendDecode")):
        continue
    if key[0].endswith("track_capacity") or key[0] in INSIDE:
        continue
    vals = [q[key] for q in quiet if key in q]
    if len(vals) < 2 or min(vals) <= 0:
        continue
    mm = max(vals) / min(vals)
    (ref_text, ok), (own_text, ok_own) = (verdict(mm, key, table) for table in (spread, own))
    failed += not ok
    failed_own += not ok_own
    ratio_text = "none"
    # a fraction is a ratio already; the backends' n=256 steps are bound by their call overhead, not DRAM
    ratio_of = not key[0].startswith(("decode.DecodeRooflineFraction", "backends."))
    mine = [r for r in referees_of(*key) if r.startswith("in-run") and r in inside and ratio_of]
    if mine:
        inverse = ".time_" in key[0]  # seconds: time × the referee's rate holds still
        pairs = [(q[key], ref) for q, ref in zip(quiet, inside[mine[0]], strict=True) if key in q and ref]
        ratios = [v * ref if inverse else v / ref for v, ref in pairs]
        if len(ratios) > 1:
            rmm = max(ratios) / min(ratios)
            tracked_ += rmm <= 1.10
            refereed += 1
            ratio_text = f"{rmm:.3f} {'ok' if rmm <= 1.10 else 'WORSE'}"
    lines.append(
        f"{key[0]}({key[1]}) | {mm:.3f} | {ref_text} | {'ok' if ok else 'WORSE'} | {own_text} | {'ok' if ok_own else 'WORSE'}"
        f" | {ratio_text}"
    )
lines += ["", f"{failed} figure(s) worse than both 1.10 and their referees' runs ({failed_own} beside their samples)."]
lines += [f"{tracked_} of {refereed} figure(s) with a referee inside the run moved with it within 1.10."]
lines += ["", "## time_ twin ÷ the track's own time per call (issue 13: within 10 %), first quiet run", ""]
for (name, combo), t in sorted(quiet[0].items() if quiet else []):
    if name.startswith("decode.") and name.endswith(".time_decode_step"):
        gflops = quiet[0].get((name.replace("time_decode_step", "track_gflops"), combo))
        n, b = (int(x) for x in combo.split(", "))
        if gflops:
            ratio = t / (2.0 * n * n * b / (gflops * 1e9))
            lines.append(f"{name}({combo}): {ratio:.3f}{'' if abs(ratio - 1) <= 0.10 else '  beyond 10 %'}")
lines += ["", "## asv's samples of each time_ twin (its rounds pooled), first quiet run", ""]
files = [f for f in (out / "quiet1.results").glob("*.json") if f.name != "machine.json"]
if files:
    doc = json.loads(files[0].read_text())
    for name, row in sorted(doc["results"].items()):
        rec = dict(zip(doc["result_columns"], row))
        if name.endswith("time_decode_step") and rec.get("samples"):
            params = rec.get("params") or []
            for combo, got in zip(itertools.product(*params), rec["samples"]):
                if got:
                    lines.append(f"{name}({', '.join(combo)}): {len(got)} samples")
lines += ["", "## The referees inside each run (likwid-bench after each round of the roofs it referees)", ""]
lines += [f"{name}: {', '.join(f'{v:.1f}' if v else 'n/a' for v in vs)}" for name, vs in inside.items()]
lines += ["", "## Referees (GB/s; GFLOP/s for the peaks): samples, max/min of the samples and of the runs' figures", ""]
for name, by in samples.items():
    vs = [by[i] for i in sorted(by)]
    lines.append(
        f"{name}: {', '.join(f'{v:.1f}' for v in vs)}  samples {max(vs) / min(vs):.3f}"
        + (f", runs {spread[name]:.3f}" if name in spread else "")
    )
(out / "summary.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
