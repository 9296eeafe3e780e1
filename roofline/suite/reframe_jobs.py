"""What the ReFrame check (``fleet/roofline_check.py``) needs from roofline, testable without ReFrame.

- :func:`machine_name`: the asv machine name of a ReFrame ``system:partition``;
- :func:`bench_regex`: the ``--bench`` regex of a partition (GPU partitions add the CUDA class,
  CPU partitions leave it out);
- :func:`job_asv_config`: asv's configuration for one job, with its own results folder;
- :func:`fleet_figures`: the figures ReFrame's performance gate reads from a job's results;
- :func:`load_references`: the per-system references file (``fleet/references.toml``).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..model.hierarchy import CEILING_KERNEL
from .names import BANDWIDTH_CEILING, CUDA_CLASS, DECODE_CLASSES, DECODE_TRACKS, OBSERVED_CROSSOVER
from .results import Results, Run

#: The backend the CUDA decode class runs.
CUDA_BACKEND = "torch-cuda"
DRAM_CLASS = DECODE_CLASSES["DRAM"]
#: The figures the gate reads, with their units; the gpu_ ones on GPU partitions only.
FIGURES = {
    "batch1_gbps": "GB/s",
    "batch512_gflops": "GFLOP/s",
    "bandwidth_roof_gbps": "GB/s",
    "observed_crossover": "batch",
    "gpu_batch1_gbps": "GB/s",
    "gpu_batch512_gflops": "GFLOP/s",
}
GPU_FIGURES = ("gpu_batch1_gbps", "gpu_batch512_gflops")
#: ReFrame names: system and partition are [A-Za-z_][A-Za-z0-9_-]*, so '.' joins them unambiguously.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def machine_name(system: str, partition: str) -> str:
    """``local``, ``cpu`` → ``local.cpu``: one asv machine per system:partition, never two under one name."""
    for part in (system, partition):
        if not _NAME.fullmatch(part or ""):
            raise BadInput(f"{part!r} is not a ReFrame system or partition name")
    return f"{system}.{partition}"


def bench_regex(user: str | None, gpu: bool) -> str | None:
    """The ``asv run --bench`` regex of a partition: ``user``'s, with the CUDA class added on GPU
    partitions and left out on CPU ones. None runs the whole suite."""
    if user:
        try:
            re.compile(user)
        except re.error as exc:
            raise BadInput(f"bench regex {user!r} is not a regular expression ({exc})") from None
    cuda = re.escape(f"{CUDA_CLASS}.")
    if gpu:
        return f"(?:{user})|^{cuda}" if user else None
    return f"^(?!{cuda}).*(?:{user})" if user else f"^(?!{cuda})"


def job_asv_config(base: dict, root: str | Path) -> dict:
    """The project's asv configuration (``base``, as asv loads it) for one job run in its own folder:
    the repository and benchmarks of ``root``, results, HTML and environments beside the config."""
    root = Path(root)
    conf = dict(base)
    conf.update(
        repo=str(root),
        benchmark_dir=str(root / base.get("benchmark_dir", "benchmarks")),
        results_dir="results",
        html_dir="html",
        env_dir="env",
    )
    return conf


def publish_asv_config(base: dict, root: str | Path, results: str | Path, html: str | Path) -> dict:
    """asv's configuration for publishing a merged results folder of the project at ``root``."""
    conf = job_asv_config(base, root)
    conf.update(results_dir=str(Path(results).resolve()), html_dir=str(Path(html).resolve()))
    return conf


NOT_RUN, NOT_MEASURED = "not run", "recorded n/a (failed or skipped)"


@dataclass(frozen=True)
class Figure:
    """One figure for the gate: its value, or None with why (:data:`NOT_RUN` or :data:`NOT_MEASURED`)."""

    name: str
    unit: str
    value: float | None
    source: str
    note: str = ""

    @property
    def ran(self) -> bool:
        """Whether its benchmark ran (a figure that did not run is left out of the gate)."""
        return self.note != NOT_RUN


def _at_largest_n(run: Run, benchmark: str, batch: int, **fixed: object) -> tuple[float | None, str]:
    points = [
        (p["n"], v)
        for p, v in run.points(benchmark)
        if p.get("batch") == batch and isinstance(p.get("n"), int) and all(p.get(k) == x for k, x in fixed.items())
    ]
    if not points:
        return None, NOT_RUN
    measured = [(n, v) for n, v in points if v is not None and math.isfinite(v)]
    if not measured:
        return None, NOT_MEASURED
    n, value = max(measured)
    return value, f"n={n}"


def fleet_figures(
    results: Results,
    machine: str,
    gpu: bool = False,
    bw_batch: int = 1,
    flops_batch: int = 512,
    gpu_dtype: str = "bf16",
    commit: str | None = None,
) -> list[Figure]:
    """The gate's figures from ``machine``'s run at ``commit`` (default: its latest) in ``results``.

    Decode figures are at the largest n with a value at that batch, weights from DRAM; the
    bandwidth roof is :meth:`~roofline.suite.results.Run.bandwidth_roof`'s; the gpu_ figures (``gpu``)
    come from the CUDA class.
    """
    if machine not in results.machines:
        raise BadInput(f"no machine {machine!r} in {results.path} (machines: {', '.join(results.machines)})")
    m = results.machines[machine]
    run = m.run(commit or m.latest() or "")
    if run is None:
        raise BadInput(f"machine {machine!r} has no results for commit {commit or '(latest)'} in {results.path}")
    figures = []
    decode = [
        ("batch1_gbps", f"{DRAM_CLASS}.track_bandwidth", bw_batch, {}),
        ("batch512_gflops", DECODE_TRACKS["DRAM"], flops_batch, {}),
    ]
    if gpu:
        fixed = {"backend": CUDA_BACKEND, "dtype": gpu_dtype}
        decode += [
            ("gpu_batch1_gbps", f"{CUDA_CLASS}.track_bandwidth", bw_batch, fixed),
            ("gpu_batch512_gflops", f"{CUDA_CLASS}.track_gflops", flops_batch, fixed),
        ]
    for name, track, batch, where in decode:
        value, note = _at_largest_n(run, track, batch, **where)
        label = " ".join([*(str(v) for v in where.values()), f"batch={batch}", note])
        figures.append(Figure(name, FIGURES[name], value, track, label if value is not None else note))
    roof = run.bandwidth_roof()  # read; add in a run from before read was measured
    for name, track, params in (
        ("bandwidth_roof_gbps", BANDWIDTH_CEILING, {"kind": roof[0] if roof else CEILING_KERNEL}),
        ("observed_crossover", OBSERVED_CROSSOVER, {}),
    ):
        points = run.points(track)
        value = run.value(track, **params) if params else (points[0][1] if len(points) == 1 else None)
        label = " ".join(f"{k}={v}" for k, v in params.items())
        note = NOT_RUN if not points else NOT_MEASURED if value is None else label
        figures.append(Figure(name, FIGURES[name], value, track, note))
    return sorted(figures, key=lambda f: list(FIGURES).index(f.name))


Reference = tuple[float, float | None, float | None, str]


def load_references(path: str | Path) -> dict[str, dict[str, Reference]]:
    """``references.toml`` → ReFrame's ``reference`` dict: ``{"system:partition": {figure: (value,
    lower, upper, unit)}}``, bounds as fractions of the value (-0.5: fail below half of it).

    Each TOML table is a ReFrame system selector (``"local:cpu"``, ``"cluster:*"``, ``"*"``) whose
    keys are figures of :data:`FIGURES`, each ``{value = …, lower = …, upper = …}`` (a bound may be
    left out: no limit on that side). BadInput naming the table and figure on anything else.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"references file {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"references file {path}: not valid TOML ({exc})") from None
    out: dict[str, dict[str, Reference]] = {}
    for selector, figures in data.items():
        where = f"{path} [{selector}]"
        if not re.fullmatch(r"\*|[A-Za-z_][\w-]*:(\*|[A-Za-z_][\w-]*)", selector):
            raise BadInput(f"{where}: not a ReFrame 'system:partition', 'system:*' or '*'")
        if not isinstance(figures, dict):
            raise BadInput(f"{where}: expected a table of figures")
        out[selector] = {}
        for name, spec in figures.items():
            if name not in FIGURES:
                raise BadInput(f"{where}: unknown figure {name!r} (known: {', '.join(FIGURES)})")
            if not isinstance(spec, dict) or set(spec) - {"value", "lower", "upper"} or "value" not in spec:
                raise BadInput(f"{where} {name}: expected {{value = …, lower = …, upper = …}}")
            value, lower, upper = spec["value"], spec.get("lower"), spec.get("upper")
            for label, x in (("value", value), ("lower", lower), ("upper", upper)):
                if x is not None and (isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x)):
                    raise BadInput(f"{where} {name}: {label} {x!r} is not a finite number")
            if value <= 0:
                raise BadInput(f"{where} {name}: value {value!r} is not positive")
            if (lower is not None and not -1 <= lower <= 0) or (upper is not None and upper < 0):
                raise BadInput(f"{where} {name}: lower must lie in [-1, 0] and upper be ≥ 0 (fractions of value)")
            out[selector][name] = (float(value), lower, upper, FIGURES[name])
    return out


#: Default bounds of a drafted reference: a throughput below half is a failure; the crossover batch
#: has no better direction, so it may move to half or double.
DRAFT_BOUNDS = {"observed_crossover": (-0.5, 1.0)}
DRAFT_LOWER = -0.5


def draft_references(results: Results, note: str = "") -> str:
    """A references.toml drafted from what each fleet machine (``system.partition``) measured at its
    latest commit: every figure with a value, bounds :data:`DRAFT_LOWER` (and :data:`DRAFT_BOUNDS`).
    Machines whose names are not ``system.partition`` are left out. Review it before gating on it."""
    lines = ["# Drafted from measured figures: review before gating on them. " + note]
    for name, machine in results.machines.items():
        system, _, partition = name.partition(".")
        if not (partition and _NAME.fullmatch(system) and _NAME.fullmatch(partition)):
            continue
        commit = machine.latest() or ""
        gpu = any(b.startswith(CUDA_CLASS) for b in machine.runs[commit].benchmarks()) if commit else False
        figures = [f for f in fleet_figures(results, name, gpu=gpu) if f.value is not None]
        if not figures:
            continue
        lines += ["", f'["{system}:{partition}"]  # {name} at commit {commit[:8]}']
        for f in figures:
            lower, upper = DRAFT_BOUNDS.get(f.name, (DRAFT_LOWER, None))
            bounds = f", lower = {lower}" + (f", upper = {upper}" if upper is not None else "")
            lines.append(f"{f.name} = {{ value = {f.value:.3g}{bounds} }}  # {f.source} {f.note}".rstrip())
    return "\n".join(lines) + "\n"
