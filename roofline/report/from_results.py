"""The roofline report built from recorded asv results instead of a live measurement.

It reads with :mod:`roofline.suite.results` (never writing to the folder) and hands the figures the
suite recorded to :func:`roofline.report.cpu.build_report` (those of another suite version than the
folder's benchmarks.json too: one run's figures are its own): a report from results is the same
:class:`~roofline.report.cpu.Report` as a live one. Missing or failed benchmarks are n/a, not errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..errors import BadInput
from ..model.catalogue import match_host
from ..model.conditions import Conditions, flat_timing
from ..model.dtypes import COMPUTE_DTYPES
from ..model.hierarchy import DRAM, ComputeRoof, Hierarchy, LevelRoof
from ..suite.names import (
    BANDWIDTH_REFEREE,
    BLAS_THREADS_USED,
    COMPUTE_PEAK,
    DECODE_CLASSES,
    ENGINE_CLASSES,
    ENGINE_TRACKS,
    LEVEL_BANDWIDTH,
    LEVEL_BYTES,
    MODEL_BOUND_TOKENS,
    MODEL_CLASS,
    MODEL_LEAN_TOKENS,
    MODEL_TOKENS,
    OBSERVED_CROSSOVER,
    OVERHEAD,
    PEAK_CEILING,
    PEAK_REFEREE,
    QUIETNESS,
    REFERENCE_DRIFT,
)
from ..suite.notes import Note, reason_for
from ..suite.results import Results, Run
from .cpu import EnginePoint, ModelPoint, Point, Report, Roofs, build_report


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


def _decode_points(run: Run, cls: str, regime: str) -> tuple[Point, ...]:
    points = []
    for params, gflops in run.points(f"{cls}.track_gflops"):
        n, batch = params.get("n"), params.get("batch")
        if not isinstance(n, int) or not isinstance(batch, int):
            continue
        gbps = run.value(f"{cls}.track_bandwidth", n=n, batch=batch)
        twin = run.value(f"{cls}.time_decode_step", n=n, batch=batch)
        if gflops is None and gbps is None and twin is None:
            continue  # no figure at all: a combination of the fixed grid this run did not choose
        seconds = 2.0 * n * n * batch / (gflops * 1e9) if gflops else None
        spread = _twin_spread(run, f"{cls}.time_decode_step", {"n": n, "batch": batch}, twin)
        points.append(Point(n, batch, regime, seconds, gflops, gbps, twin_seconds=twin, twin_spread=spread))
    return tuple(points)


def _twin_spread(run: Run, twin: str, params: dict[str, object], median: object) -> float | None:
    """The interquartile range of asv's samples of ``twin`` ÷ their median (asv's q_25, q_75); None unrecorded."""
    key = tuple(params.get(k) for k in run.param_names.get(twin, ()))
    stats = run.stats.get(twin, {}).get(key, {})
    q25, q75 = stats.get("q_25"), stats.get("q_75")
    if not isinstance(median, float) or median <= 0 or q25 is None or q75 is None:
        return None
    return (q75 - q25) / median


def _model_points(run: Run) -> tuple[ModelPoint, ...]:
    """models.ModelDecode's batches as recorded (none where the run has no such benchmark)."""
    return tuple(
        ModelPoint(
            p["batch"],
            tokens,
            run.value(MODEL_LEAN_TOKENS, batch=p["batch"]),
            run.value(MODEL_BOUND_TOKENS, batch=p["batch"]),
        )
        for p, tokens in run.points(MODEL_TOKENS)
        if isinstance(p.get("batch"), int)
    )


def _engine_points(run: Run) -> tuple[EnginePoint, ...]:
    """The engine classes' (format, batch) combinations as recorded (none where the run has no such benchmark)."""
    points = []
    for engine, cls in ENGINE_CLASSES.items():
        for p, _ in run.points(f"{cls}.{ENGINE_TRACKS['tokens_per_s']}"):
            fmt, batch = p.get("format"), p.get("batch")
            if not isinstance(fmt, str) or not isinstance(batch, int):
                continue
            figures = {k: run.value(f"{cls}.{t}", format=fmt, batch=batch) for k, t in ENGINE_TRACKS.items()}
            points.append(EnginePoint(engine, fmt, batch, **figures))
    return tuple(points)


def with_reasons(report: Report, notes: tuple[Note, ...]) -> Report:
    """``report`` with each model and engine row that has no figure given the reason its run noted, if any."""
    if not notes:
        return report
    models = tuple(
        replace(m, reason=reason_for(notes, MODEL_CLASS, (m.batch,))) if m.tokens_per_s is None else m
        for m in report.model_decode
    )
    engines = tuple(
        replace(e, reason=reason_for(notes, ENGINE_CLASSES.get(e.engine, e.engine), (e.format, e.batch)))
        if e.tokens_per_s is None
        else e
        for e in report.engine_decode
    )
    return replace(report, model_decode=models, engine_decode=engines)


def _rank(level: str) -> tuple[int, str]:
    return (1, "") if level == DRAM else (0, level)


def hierarchy_from_run(run: Run) -> Hierarchy | None:
    """The level and compute roofs a run recorded (``ceilings.CacheBandwidth``, ``ceilings.ComputePeak``);
    None where it recorded neither (results older than them)."""
    gbps = {p["level"]: float(v) for p, v in run.points(LEVEL_BANDWIDTH) if v and "level" in p}
    size = {p["level"]: int(v) for p, v in run.points(LEVEL_BYTES) if v and "level" in p}
    peaks = {p["dtype"]: float(v) for p, v in run.points(COMPUTE_PEAK) if v and "dtype" in p}
    if not gbps and not peaks:
        return None
    ordered = sorted(gbps, key=_rank)
    levels = tuple(LevelRoof(lv, size.get(lv), gbps[lv], "load (asv ceilings.CacheBandwidth)") for lv in ordered)
    caches = tuple((lv, size[lv]) for lv in ordered if lv != DRAM and lv in size)
    compute = tuple(
        ComputeRoof(d, peaks[d], "asv ceilings.ComputePeak")
        for d in sorted(peaks, key=lambda d: COMPUTE_DTYPES.index(d) if d in COMPUTE_DTYPES else 99)
    )
    return Hierarchy(levels, compute, caches)


def facts_from_machine(info: dict[str, object], name: str) -> dict[str, object]:
    """The report's machine section from asv's machine.json (asv's keys and roofline's)."""
    facts: dict[str, object] = {"host": name}
    for key in ("cpu", "arch", "os", "blas", "gpu", "llc_source", "cpu_core", "cpu_clock"):
        if info.get(key) not in (None, ""):
            facts[key] = info[key]
    if info.get("device") not in (None, "", "none"):  # `roofline machine` records the catalogue match as "device"
        facts["catalogue_device"] = info["device"]
    for key in ("num_cpu", "blas_threads", "llc_bytes", "ram"):
        try:
            facts[key] = int(str(info[key]).split()[0])
        except (KeyError, ValueError, IndexError):
            pass
    if "llc_bytes" in facts:  # the machine key is the OS's figure (older files also said where it came from)
        facts.setdefault("llc_source", "the OS, per the machine file")
    return facts


def conditions_from(run: Run, points: tuple[Point, ...], cores: object = None, lost_during_run: float | None = None):
    """The run's recorded conditions (None when it recorded none), judged as the run judged them.

    ``lost_during_run``: the share of CPU time others took over the whole asv run, where the caller
    watched it (``roofline bench``); the larger of it and the recorded share counts.
    """
    quiet, drift = run.value(QUIETNESS), run.value(REFERENCE_DRIFT)
    threads = run.value(BLAS_THREADS_USED)
    flops = {p: 2.0 * p.n * p.n * p.batch for p in points if p.seconds}
    flat = flat_timing([(p.seconds, f, f / p.intensity) for p, f in flops.items()])
    lost = [v for v in (None if quiet is None else 1.0 - quiet, lost_during_run) if v is not None]
    if not lost and drift is None and flat is None:
        return None
    return Conditions(
        lost_share=max(lost) if lost else None,
        reference_drift=drift,
        flat_timing=flat,
        blas_threads=int(threads) if threads else None,
        cores=cores if isinstance(cores, int) else None,
    )


def report_from_results(
    res: Results,
    machine: str | None = None,
    commit: str | None = None,
    lost_during_run: float | None = None,
) -> Report:
    """Build the report for one machine at one commit (default: its latest) from an asv results folder as read
    (:func:`~roofline.suite.results.read_results`).

    ``lost_during_run``: see :func:`conditions_from`.
    """
    name = pick_machine(res, machine)
    m = res.machines[name]
    full = res.resolve_commit(commit, name) if commit else m.latest()
    run = m.run(full) if full else None
    if run is None:
        raise BadInput(f"machine {name!r} in {res.path} has no readable results")
    run = run.recorded_run()  # one run's own figures, whichever version of the suite recorded them
    source = f"asv results {res.path}, machine {name}, commit {full[:8]}"
    return report_of_run(run, m.info, name, source, tuple(res.warnings), lost_during_run)


def report_of_run(
    run: Run,
    info: Mapping[str, object],
    name: str,
    source: str = "",
    warnings: tuple[str, ...] = (),
    lost_during_run: float | None = None,
) -> Report:
    """The report of one recorded run of machine ``name`` (``info``: its machine.json): every figure the run
    holds, as the suite recorded it. :func:`report_from_results` and ``roofline compare``'s summary
    (:func:`roofline.report.summary.summarize_run`) read a run through this one reader."""
    bandwidth = {k: v * 1e9 for k, v in run.stream_gbps().items()}
    peaks = {p["dtype"]: v * 1e9 for p, v in run.points(PEAK_CEILING) if v and "dtype" in p}
    referee = run.value(BANDWIDTH_REFEREE, level=DRAM)
    peak_referees = {p["dtype"]: v * 1e9 for p, v in run.points(PEAK_REFEREE) if v and "dtype" in p}
    level_referees = {p["level"]: v * 1e9 for p, v in run.points(BANDWIDTH_REFEREE) if v and "level" in p}
    single, amortized = (run.value(OVERHEAD.format(k), backend="numpy") for k in ("single", "amortized"))
    facts = facts_from_machine(dict(info), name)
    decode = _decode_points(run, DECODE_CLASSES["DRAM"], "dram")
    cache = _decode_points(run, DECODE_CLASSES["cache-resident"], "cache")
    return build_report(
        facts,
        Roofs(bandwidth, peaks, {}, referee * 1e9 if referee else None, peak_referees, level_referees)
        if bandwidth or peaks
        else None,
        decode=decode,
        cache_resident=cache,
        recorded_crossover=run.value(OBSERVED_CROSSOVER),
        overhead_seconds=amortized * 1e-6 if amortized else None,
        overhead_single_seconds=single * 1e-6 if single is not None else None,
        source=source,
        datasheet=match_host(info),
        warnings=warnings,
        hierarchy=hierarchy_from_run(run),
        conditions=conditions_from(run, decode + cache, facts.get("num_cpu"), lost_during_run),
        model_decode=_model_points(run),
        engine_decode=_engine_points(run),
    )
