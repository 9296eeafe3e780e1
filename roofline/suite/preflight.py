"""Checks run before asv starts, so bad input fails in one line instead of deep inside asv."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import BadInput
from ..files import probe_writable
from ..host import gpu_present, llc_bytes
from ..measure.pools import cache_dir, check_fits, pool_count
from ..model.dtypes import SUITE
from . import params
from .runnable import without


def check_folder(folder: Path, what: str) -> None:
    """``folder`` must exist or be creatable, and take a new file; nothing in it is touched."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe_writable(folder)
    except OSError as exc:
        raise BadInput(f"{what} {folder} is not writable: {exc.strerror or exc}") from None


def check_results_dir(results: Path) -> None:
    """The results folder must exist or be creatable, and be writable."""
    check_folder(results, "results folder")


def preflight(results: Path = Path(".asv/results"), benchmark_dir: Path = Path("benchmarks")) -> list[str]:
    """Validate the suite's parameters (each among the fixed grid's), the LLC figure, memory and the results folder.

    Returns lines describing the plan; raises BadInput (exit 2) on the first problem.
    """
    grid = params.read_grid(benchmark_dir)
    if grid is not None:
        params.chosen(grid)
    sizes, batches, cache_sizes = params.sizes(), params.batches(), params.cache_sizes()
    params.sweep_n()
    params.gemm_n()
    params.referee()
    params.levels()
    without()
    llc, source = llc_bytes()
    itemsize = SUITE.bytes
    largest = max(pool_count(n, itemsize, llc) * n * n * itemsize for n in sizes)
    check_fits(largest, f"the DRAM weight pool ({max(sizes)}×{max(sizes)} float32)")
    check_results_dir(results)
    check_folder(cache_dir(), "data cache folder (ROOFLINE_CACHE_DIR)")
    backend_plan = backends_plan()
    return [
        f"n: {', '.join(map(str, sizes))}; batch: {', '.join(map(str, batches))}; "
        f"cache-resident n: {', '.join(map(str, cache_sizes))}",
        f"LLC {llc / 2**20:.0f} MiB (from {source}); DRAM pool up to {largest / 2**20:.0f} MiB",
        f"results: {results}",
    ] + backend_plan


def backends_plan(device: Callable[[], bool] = gpu_present) -> list[str]:
    """Validate the backend and GPU classes' variables; one line on what they will run (the CUDA class only
    where ``device()`` finds a CUDA device: elsewhere it runs nothing, runnable.cannot_run)."""
    b_n, b_b = params.backend_sizes(), params.backend_batches()
    g_d, g_n, g_b = params.gpu_dtypes(), params.gpu_sizes(), params.gpu_batches()
    cuda = (
        f"CUDA: {', '.join(g_d)} × n {', '.join(map(str, g_n))} × batch {', '.join(map(str, g_b))}"
        if device()
        else "CUDA: none (no CUDA device here)"
    )
    return [f"backends (numpy, torch-cpu): n {', '.join(map(str, b_n))}; batch {', '.join(map(str, b_b))}; {cuda}"]
