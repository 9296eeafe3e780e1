"""The GPU roofline in one run: ceilings, overhead, the decode grid, the batch sweep and its knee.

:func:`gpu_roofline` measures a CUDA device through torch and returns one JSON-ready dict
(schema ``roofline.gpu/1``; :func:`roofline.report.gpu.render_gpu_text` renders it): the device's facts
with its clocks at the start and at the end, the ceilings (copy bandwidth, GEMM per dtype) measured the
one way this machine's roofs are (:func:`~roofline.suite.run.measure_roofs` with the ``torch-cuda``
backend: the run's passes, each roof its fastest round's median), the overhead roof, every decode point
with the roof that binds it, the sweep per n with its knee (:func:`roofline.model.knee.fit_knee`) and the
crossover predicted from the measured ceilings beside the observed one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import BackendUnavailable
from ..host import gpu_clocks, gpu_facts, host_facts
from ..measure.backends import GPU_DTYPES, available, build_step, release_cuda
from ..measure.ceilings import Ceilings
from ..measure.cuda_ceilings import GEMM_N
from ..measure.overhead import Overhead, measure_overhead
from ..measure.step import measure_step
from ..model import regimes
from ..model.arithmetic import crossover_batch
from ..model.dtypes import DTYPES, STEPS
from ..model.knee import fit_knee
from .run import RoofAsk, measure_roofs

SCHEMA = "roofline.gpu/1"

#: The sweep: the lab's batches and a fine grid around an H100-class knee (≈ 190 on an H200).
GPU_SWEEP_BATCHES = (1, 8, 32, 64, 96, 128, 160, 192, 224, 256, 384, 512, 1024, 2048, 4096)
GPU_SWEEP_N = (8192, 16384)
#: Every other dtype is measured at these batches: one bandwidth-bound, one compute-bound.
GPU_DECODE_BATCHES = (1, 4096)


def gpu_ceilings(dtypes: Sequence[str], gemm_n: int = GEMM_N) -> Ceilings:
    """This GPU's ceilings through the one entry point (:func:`~roofline.suite.run.measure_roofs`, ``torch-cuda``):
    the device copy and a square GEMM in each of ``dtypes`` it runs. KernelMismatch where one computed wrong values."""
    return measure_roofs(RoofAsk(backend="torch-cuda", gpu_dtypes=tuple(dtypes), gemm_n=gemm_n)).ceilings.get()


class _Grid:
    """The decode points of one GPU run, each row with the roof that binds it, and those that could not run."""

    def __init__(self, ceilings: Ceilings, overhead: Overhead, repeats: int, say: Callable[[str], None]):
        self.hw, self.overhead, self.repeats, self.say = ceilings.hardware, overhead.as_dict(), repeats, say
        self.decode: list[dict[str, object]] = []
        self.unavailable: list[dict[str, object]] = []

    def point(self, dtype: str, n: int, b: int) -> dict[str, object] | None:
        self.say(f"{dtype} n={n} batch={b}")
        try:
            m = measure_step(build_step("torch-cuda", dtype, n, b), repeats=self.repeats)
        except BackendUnavailable as exc:
            self.unavailable.append({"dtype": dtype, "n": n, "batch": b, "reason": str(exc)})
            return None
        finally:
            release_cuda()
        row = m.as_dict()
        if dtype in self.hw.peak_flops:
            row["regime"] = regimes.classify(row, self.overhead, self.hw.bandwidth, self.hw.peak(dtype))
        self.decode.append(row)
        return row

    def sweep(self, dtype: str, n: int, batches: Sequence[int]) -> dict[str, object]:
        pts = [p for b in batches if (p := self.point(dtype, n, b)) is not None]
        sweep = {"n": n, "dtype": dtype, "points": pts, "knee": None}
        if len(pts) >= 2:
            sweep["knee"] = fit_knee([p["batch"] for p in pts], [p["seconds"] for p in pts]).as_dict()
        return sweep


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
    say("ceilings")
    ceilings = gpu_ceilings(tuple(dict.fromkeys([*dtypes, sweep_dtype])), gemm_n)
    say("overhead")
    overhead = measure_overhead("torch-cuda", sweep_dtype, repeats=repeats)
    release_cuda()
    grid = _Grid(ceilings, overhead, repeats, say)
    sweeps = [grid.sweep(sweep_dtype, n, batches) for n in sizes]
    for dtype in dtypes:
        if dtype != sweep_dtype:
            for n in sizes:
                for b in decode_batches:
                    grid.point(dtype, n, b)
    machine = {**facts, "clocks_start": facts.get("clocks"), "clocks_end": gpu_clocks()}
    return _result(machine, ceilings, overhead, grid, sweeps, sweep_dtype)


def _result(machine: dict, ceilings: Ceilings, overhead: Overhead, grid: _Grid, sweeps: list, sweep_dtype: str) -> dict:
    """The run as one JSON-ready dict (schema :data:`SCHEMA`)."""
    hw, bpp = ceilings.hardware, DTYPES[sweep_dtype].bytes
    predicted = crossover_batch(hw, bpp, sweep_dtype) if sweep_dtype in hw.peak_flops else None
    observed = {str(s["n"]): s["knee"]["batch"] for s in sweeps if s["knee"]}
    return {
        "schema": SCHEMA,
        "machine": machine,
        "host": host_facts(),
        "tolerances": {d: DTYPES[d].tolerance for d in STEPS},
        "ceilings": ceilings.as_dict(),
        "overhead": {
            **overhead.as_dict(),
            "bound_below_n_single": regimes.overhead_bound_n(overhead.single_call_seconds, hw.bandwidth, bpp),
            "bound_below_n_amortized": regimes.overhead_bound_n(overhead.amortized_seconds, hw.bandwidth, bpp),
        },
        "decode": grid.decode,
        "sweeps": sweeps,
        "crossover": {
            "dtype": sweep_dtype,
            "bytes_per_param": bpp,
            "predicted_batch": predicted,
            "observed_batch": observed,
            "observed_over_predicted": {k: v / predicted for k, v in observed.items()} if predicted else {},
        },
        "unavailable": grid.unavailable,
    }
