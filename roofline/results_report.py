"""The roofline report built from recorded asv results instead of a live measurement.

It reads with :mod:`roofline.results` (never writing to the folder) and hands the figures the
suite recorded to :func:`roofline.report.build_report`, so a report from results and a live
one have the same keys. Missing or failed benchmarks are n/a, not errors.
"""

from __future__ import annotations

from pathlib import Path

from .compare import BANDWIDTH_CEILING, DECODE_TRACKS, OBSERVED_CROSSOVER, PEAK_CEILING
from .errors import BadInput
from .report import build_report
from .results import Results, Run, read_results

# The suite's benchmark names, as compare reads them too.
BANDWIDTH, GEMM, OBSERVED = BANDWIDTH_CEILING, PEAK_CEILING, OBSERVED_CROSSOVER
DRAM, CACHE = (DECODE_TRACKS[k].removesuffix(".track_gflops") for k in ("DRAM", "cache-resident"))
OVERHEAD = "backends.CallOverhead.track_{}_call"  # µs, param backend


def pick_machine(res: Results, machine: str | None) -> str:
    """The machine asked for, or the only one; BadInput naming the choices otherwise."""
    names = sorted(res.machines)
    if machine is not None:
        if machine not in res.machines:
            raise BadInput(f"no machine {machine!r} in {res.path} (machines: {', '.join(names)})")
        return machine
    if len(names) == 1:
        return names[0]
    raise BadInput(f"{res.path} holds several machines ({', '.join(names)}): pick one with --machine")


def _decode_points(run: Run, cls: str, regime: str) -> list[dict[str, object]]:
    points = []
    for params, gflops in run.points(f"{cls}.track_gflops"):
        n, batch = params.get("n"), params.get("batch")
        if not isinstance(n, int) or not isinstance(batch, int):
            continue
        gbps = run.value(f"{cls}.track_bandwidth", n=n, batch=batch)
        seconds = 2.0 * n * n * batch / (gflops * 1e9) if gflops else None
        points.append(
            {
                "n": n,
                "batch": batch,
                "dtype": "float32",
                "regime": regime,
                "seconds": seconds,
                "gflops": gflops,
                "gbps": gbps,
                "spread": None,
            }
        )
    return points


def facts_from_machine(info: dict[str, object], name: str) -> dict[str, object]:
    """The report's machine section from asv's machine.json (asv's keys and roofline's)."""
    facts: dict[str, object] = {"host": name}
    for key in ("cpu", "arch", "os", "blas", "gpu", "llc_source"):
        if info.get(key) not in (None, ""):
            facts[key] = info[key]
    if info.get("device") not in (None, "", "none"):  # `roofline machine` records the catalogue match as "device"
        facts["catalogue_device"] = info["device"]
    for key in ("num_cpu", "blas_threads", "llc_bytes", "ram"):
        try:
            facts[key] = int(str(info[key]).split()[0])
        except (KeyError, ValueError, IndexError):
            pass
    return facts


def report_from_results(results: str | Path, machine: str | None = None, commit: str | None = None) -> dict:
    """Build the report for one machine at one commit (default: its latest) from an asv results folder."""
    res = read_results(results)
    name = pick_machine(res, machine)
    m = res.machines[name]
    full = res.resolve_commit(commit, name) if commit else m.latest()
    run = m.run(full) if full else None
    if run is None:
        raise BadInput(f"machine {name!r} in {res.path} has no readable results")
    bandwidth = {p["kind"]: {"best": v * 1e9} for p, v in run.points(BANDWIDTH) if v and "kind" in p}
    peaks = {p["dtype"]: {"best": v * 1e9} for p, v in run.points(GEMM) if v and "dtype" in p}
    observed = run.value(OBSERVED)
    single, amortized = (run.value(OVERHEAD.format(k), backend="numpy") for k in ("single", "amortized"))
    overhead = (
        {"single_call_seconds": single and single * 1e-6, "amortized_seconds": amortized * 1e-6} if amortized else None
    )
    datasheet = None
    try:
        from .catalogue import match_host

        datasheet = match_host(m.info)
    except (ImportError, BadInput):
        pass
    report = build_report(
        facts=facts_from_machine(m.info, name),
        ceilings={"bandwidth": bandwidth, "peaks": peaks} if bandwidth or peaks else None,
        decode=_decode_points(run, DRAM, "dram"),
        cache_resident=_decode_points(run, CACHE, "cache"),
        sweep={"observed_batch": observed} if observed else None,
        source=f"asv results {res.path}, machine {name}, commit {full[:8]}",
        datasheet=datasheet,
        overhead=overhead,
    )
    report["warnings"] = list(res.warnings) + report["warnings"]
    return report
