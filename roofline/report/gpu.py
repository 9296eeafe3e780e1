"""The GPU roofline as text: what :func:`roofline.suite.gpu.gpu_roofline` measured (schema ``roofline.gpu/1``),
rendered; nothing here measures."""

from __future__ import annotations


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
