"""Writing small asv 0.6 results directories by hand, in asv's own layout, for the readers' tests.

The real thing (asv run, asv publish) is exercised in test_multimachine.py; these are for the
cases asv would not produce on demand: corrupt, truncated, failed, stale and old-format files.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

COLUMNS = ["result", "params", "version", "started_at", "duration"]
#: asv's further columns, in its order: statistics of time benchmarks, then raw samples (--record-samples).
STATS_COLUMNS = ["stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat"]

#: benchmark name → (type, unit, param_names, params as asv reprs, version)
SUITE = {
    "decode.DecodeDRAM.track_gflops": ("track", "GFLOP/s", ["n", "batch"], [["256"], ["1", "8"]], "v-gflops"),
    "decode.DecodeDRAM.track_bandwidth": ("track", "GB/s", ["n", "batch"], [["256"], ["1", "8"]], "v-bw"),
    "decode.DecodeDRAM.time_decode_step": ("time", "seconds", ["n", "batch"], [["256"], ["1", "8"]], "v-time"),
    "ceilings.MemoryBandwidth.track_bandwidth_ceiling": (
        "track",
        "GB/s",
        ["kind"],
        [["'copy'", "'add'", "'triad'"]],
        "v-ceil-bw",
    ),
    "ceilings.GemmPeak.track_gemm_ceiling": ("track", "GFLOP/s", ["dtype"], [["'float32'", "'float64'"]], "v-peak"),
    "crossover.Crossover.track_observed_crossover_batch": ("track", "unit", [], [], "v-cross"),
}


def write_benchmarks(root: Path, suite: dict = SUITE) -> None:
    data = {
        name: {"name": name, "type": t, "unit": u, "param_names": pn, "params": p, "version": v, "code": ""}
        for name, (t, u, pn, p, v) in suite.items()
    }
    data["version"] = 2
    root.mkdir(parents=True, exist_ok=True)
    (root / "benchmarks.json").write_text(json.dumps(data))


def machine_info(name: str, **extra: str) -> dict[str, str]:
    return {"machine": name, "os": "Linux", "arch": "x86_64", "cpu": "Test CPU", "num_cpu": "2", "ram": "1", **extra}


def write_machine(root: Path, name: str, **extra: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "machine.json").write_text(json.dumps({**machine_info(name, **extra), "version": 1}, indent=4))
    return folder


def write_run(
    root: Path,
    machine: str,
    commit: str,
    values: dict[str, list[float | None] | None],
    date: int = 1_700_000_000_000,
    versions: dict[str, str] | None = None,
    suite: dict = SUITE,
    env: str = "existing-py",
    samples: dict[str, list[list[float]]] | None = None,
    **extra: str,
) -> Path:
    """One result file: ``values[benchmark]`` lists results in asv's parameter-product order.

    ``samples[benchmark]``: raw samples per combination, as ``asv run --record-samples`` keeps them,
    with asv's statistics columns computed from them (a 99 % interval from the sample quartiles).
    """
    results = {}
    columns = COLUMNS + STATS_COLUMNS + ["samples"] if samples else COLUMNS
    for name, result in values.items():
        params = suite[name][3]
        if result is not None:
            assert len(result) == len(list(itertools.product(*params))) or not params
        version = (versions or {}).get(name, suite[name][4])
        row = [result, params, version, date, 1.0]
        if samples and name in samples:
            row += [list(col) for col in zip(*map(_stats, samples[name]), strict=True)] + [samples[name]]
        results[name] = row
    data = {
        "commit_hash": commit,
        "env_name": env,
        "date": date,
        "params": {**machine_info(machine, **extra), "python": "3.11"},
        "python": "3.11",
        "requirements": {},
        "env_vars": {},
        "result_columns": columns,
        "results": results,
        "durations": {},
        "version": 2,
    }
    path = root / machine / f"{commit[:8]}-{env}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _stats(samples: list[float]) -> list[float]:
    """asv's statistics columns for one combination, roughly as asv computes them (min/max as the interval)."""
    xs = sorted(samples)
    return [xs[0], xs[-1], xs[len(xs) // 4], xs[(3 * len(xs)) // 4], 1, len(xs)]


def full_values(
    gflops=(10.0, 50.0), bandwidth=(20.0, 12.0), seconds=(1e-5, 2e-5), bw_ceiling=30.0, peak=300.0, crossover=24.0
):
    """A complete, plausible set of values for SUITE."""
    return {
        "decode.DecodeDRAM.track_gflops": list(gflops),
        "decode.DecodeDRAM.track_bandwidth": list(bandwidth),
        "decode.DecodeDRAM.time_decode_step": list(seconds),
        "ceilings.MemoryBandwidth.track_bandwidth_ceiling": [bw_ceiling * 0.9, bw_ceiling, bw_ceiling * 0.95],
        "ceilings.GemmPeak.track_gemm_ceiling": [peak, peak / 2],
        "crossover.Crossover.track_observed_crossover_batch": [crossover],
    }


def two_machines(root: Path) -> Path:
    """alpha and beta, each at commits aaaa… (older) and bbbb… (newer)."""
    write_benchmarks(root)
    for name, scale in (("alpha", 1.0), ("beta", 2.0)):
        write_machine(root, name)
        write_run(root, name, "a" * 40, full_values(gflops=(10 * scale, 50 * scale), bw_ceiling=30 * scale), date=1)
        write_run(root, name, "b" * 40, full_values(gflops=(11 * scale, 52 * scale), bw_ceiling=30 * scale), date=2)
    return root


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under ``root`` with its size, mtime and bytes: to prove nothing was written."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
