"""The GPU roofline in one run: ceilings, overhead, the decode grid, the batch sweep and its knee.

:func:`gpu_roofline` measures a CUDA device through torch and returns one JSON-ready dict
(schema ``roofline.gpu/1``): the device's facts with its clocks at the start and at the end,
the measured ceilings (copy bandwidth, GEMM per dtype), the overhead roof, every decode point
with the roof that binds it, the sweep per n with its knee (:func:`roofline.model.knee.fit_knee`)
and the crossover predicted from the measured ceilings beside the observed one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import BackendUnavailable
from ..host import gpu_clocks, gpu_facts, host_facts
from ..measure.backends import GPU_DTYPES, available, build_step, release_cuda
from ..measure.cuda_ceilings import GEMM_N, measure_gpu_ceilings
from ..measure.overhead import measure_overhead
from ..measure.step import measure_step
from ..model import regimes
from ..model.arithmetic import crossover_batch
from ..model.dtypes import DTYPES, STEPS
from ..model.knee import fit_knee

SCHEMA = "roofline.gpu/1"

#: The sweep: the lab's batches and a fine grid around an H100-class knee (≈ 190 on an H200).
GPU_SWEEP_BATCHES = (1, 8, 32, 64, 96, 128, 160, 192, 224, 256, 384, 512, 1024, 2048, 4096)
GPU_SWEEP_N = (8192, 16384)
#: Every other dtype is measured at these batches: one bandwidth-bound, one compute-bound.
GPU_DECODE_BATCHES = (1, 4096)


def gpu_roofline(
    dtypes: Sequence[str] = GPU_DTYPES,
    sizes: Sequence[int] = GPU_SWEEP_N,
    batches: Sequence[int] = GPU_SWEEP_BATCHES,
    sweep_dtype: str = "bf16",
    decode_batches: Sequence[int] = GPU_DECODE_BATCHES,
    gemm_n: int = GEMM_N,
    repeats: int = 7,
    progress: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Measure this GPU's roofline (BackendUnavailable when torch-cuda is absent here)."""
    available("torch-cuda", sweep_dtype)
    say = progress or (lambda _msg: None)
    facts = gpu_facts() or {}
    clocks_start = facts.get("clocks")
    say("ceilings")
    ceilings = measure_gpu_ceilings(tuple(dict.fromkeys([*dtypes, sweep_dtype])), gemm_n=gemm_n)
    hw = ceilings.hardware
    release_cuda()

    say("overhead")
    overhead = measure_overhead("torch-cuda", sweep_dtype, repeats=repeats)
    release_cuda()

    decode, sweeps, unavailable = [], [], []

    def point(dtype: str, n: int, b: int) -> dict[str, object] | None:
        say(f"{dtype} n={n} batch={b}")
        try:
            m = measure_step(build_step("torch-cuda", dtype, n, b), repeats=repeats)
        except BackendUnavailable as exc:
            unavailable.append({"dtype": dtype, "n": n, "batch": b, "reason": str(exc)})
            return None
        finally:
            release_cuda()
        row = m.as_dict()
        if dtype in hw.peak_flops:
            row["regime"] = regimes.classify(row, overhead.as_dict(), hw.bandwidth, hw.peak(dtype))
        decode.append(row)
        return row

    for n in sizes:
        pts = [p for b in batches if (p := point(sweep_dtype, n, b)) is not None]
        sweep = {"n": n, "dtype": sweep_dtype, "points": pts, "knee": None}
        if len(pts) >= 2:
            sweep["knee"] = fit_knee([p["batch"] for p in pts], [p["seconds"] for p in pts]).as_dict()
        sweeps.append(sweep)
    for dtype in dtypes:
        if dtype == sweep_dtype:
            continue
        for n in sizes:
            for b in decode_batches:
                point(dtype, n, b)

    bpp = DTYPES[sweep_dtype].bytes
    predicted = crossover_batch(hw, bpp, sweep_dtype) if sweep_dtype in hw.peak_flops else None
    observed = {str(s["n"]): s["knee"]["batch"] for s in sweeps if s["knee"]}
    clocks_end = gpu_clocks()
    return {
        "schema": SCHEMA,
        "machine": {**facts, "clocks_start": clocks_start, "clocks_end": clocks_end},
        "host": host_facts(),
        "tolerances": {d: DTYPES[d].tolerance for d in STEPS},
        "ceilings": ceilings.as_dict(),
        "overhead": {
            **overhead.as_dict(),
            "bound_below_n_single": regimes.overhead_bound_n(overhead.single_call_seconds, hw.bandwidth, bpp),
            "bound_below_n_amortized": regimes.overhead_bound_n(overhead.amortized_seconds, hw.bandwidth, bpp),
        },
        "decode": decode,
        "sweeps": sweeps,
        "crossover": {
            "dtype": sweep_dtype,
            "bytes_per_param": bpp,
            "predicted_batch": predicted,
            "observed_batch": observed,
            "observed_over_predicted": {k: v / predicted for k, v in observed.items()} if predicted else {},
        },
        "unavailable": unavailable,
    }


def render_gpu_text(run: dict[str, object]) -> str:
    """The run as a short text table (the JSON holds every figure)."""
    m = run["machine"]
    c = run["ceilings"]
    out = [
        f"{m.get('name', 'GPU')}: {m.get('gpu_sm_count', '?')} SMs, "
        f"{(m.get('gpu_memory_bytes') or 0) / 2**30:.0f} GiB, L2 {(m.get('gpu_l2_bytes') or 0) / 2**20:.0f} MiB, "
        f"torch {m.get('torch')} CUDA {m.get('cuda')}, driver {m.get('driver')}",
    ]
    for when in ("clocks_start", "clocks_end"):
        k = m.get(when) or {}
        if k:
            out.append(
                f"  {when.replace('_', ' ')}: SM {k.get('clocks.sm')} MHz (max {k.get('clocks.max.sm')}), "
                f"memory {k.get('clocks.mem')} MHz, {k.get('temperature.gpu')} °C, {k.get('power.draw')} W, "
                f"{k.get('pstate')}"
            )
    for kind, bw in c["bandwidth"].items():
        out.append(f"  {kind} bandwidth: {bw['best'] / 1e12:.2f} TB/s best, {bw['median'] / 1e12:.2f} median")
    for dtype, p in c["peaks"].items():
        out.append(f"  GEMM {dtype} n={p['n']}: {p['best'] / 1e12:.1f} TFLOP/s best, {p['median'] / 1e12:.1f} median")
    o = run["overhead"]
    out.append(
        f"  overhead ({o['backend']} {o['dtype']} n={o['n']}): single call {o['single_call_seconds'] * 1e6:.1f} µs, "
        f"amortized ({o['timer']}) {o['amortized_seconds'] * 1e6:.2f} µs"
        + (f", eager back to back {o['eager_seconds'] * 1e6:.2f} µs" if o.get("eager_seconds") else "")
        + "; overhead-bound below n ≈ "
        f"{o['bound_below_n_single']:.0f} (single) / {o['bound_below_n_amortized']:.0f} (amortized)"
    )
    head = f"  {'dtype':>5} {'n':>6} {'batch':>5} {'TFLOP/s':>8} {'TB/s':>6} {'µs':>9} {'single µs':>9}  timer, bound"
    out += ["", head]
    for r in run["decode"]:
        bound = (r.get("regime") or {}).get("bound", "")
        out.append(
            f"  {r['dtype']:>5} {r['n']:>6} {r['batch']:>5} {r['gflops'] / 1e3:8.1f} {r['gbps'] / 1e3:6.2f} "
            f"{r['seconds'] * 1e6:9.1f} {r['single_call_seconds'] * 1e6:9.1f}  {r['timer']}, {bound}"
        )
    x = run["crossover"]
    pred = x.get("predicted_batch")
    out.append("")
    out.append(f"  crossover ({x['dtype']}): predicted from measured ceilings {pred:.0f}" if pred else "")
    for n, b in x["observed_batch"].items():
        ratio = x["observed_over_predicted"].get(n)
        out.append(f"    observed knee at n={n}: {b:.0f}" + (f" ({ratio:.2f}× the prediction)" if ratio else ""))
    for u in run["unavailable"]:
        out.append(f"  skipped {u['dtype']} n={u['n']} batch={u['batch']}: {u['reason']}")
    return "\n".join(out)
