"""asv end to end on benchmarks/backends.py: absent backends are skipped (null) and asv exits 0."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math

import pytest

from roofline.host import gpu_present

from .asvtools import result_files

HAS_TORCH = importlib.util.find_spec("torch") is not None


def skipped(v: object) -> bool:
    """asv writes NaN for a combination whose setup raised NotImplementedError (null means failed)."""
    return isinstance(v, float) and math.isnan(v)


def measured(v: object) -> bool:
    return isinstance(v, float) and math.isfinite(v) and v > 0


@pytest.mark.e2e
def test_asv_run_skips_absent_backends(made_bench):
    """The session's one `roofline bench` ran the backend classes' chosen combinations (asv exited 0: the
    fixture holds it to that); their results, read here."""
    (path,) = result_files(made_bench["repo"], "box")
    results = json.loads(path.read_text())["results"]

    def values(name: str) -> list:
        return results[f"backends.{name}"][0]

    def chosen(name: str, **where: str) -> list:
        """The values at the chosen combinations (the fixed grid's others were not run: NaN)."""
        row = results[f"backends.{name}"]
        combos = list(itertools.product(*row[1]))
        picked = [v for c, v in zip(combos, row[0], strict=True) if all(x in c for x in where.values())]
        rest = [v for c, v in zip(combos, row[0], strict=True) if not all(x in c for x in where.values())]
        assert all(skipped(v) for v in rest), name
        return picked

    # BackendDecode: (numpy, torch-cpu) × (fp32, bf16) at n 256, batch 1, flattened in that order.
    gflops = chosen("BackendDecode.track_gflops", n="256", batch="1")
    numpy_fp32, numpy_bf16, torch_fp32, torch_bf16 = gflops
    assert measured(numpy_fp32)
    assert skipped(numpy_bf16)  # numpy has no bf16
    for v in (torch_fp32, torch_bf16):
        assert measured(v) if HAS_TORCH else skipped(v)
    if gpu_present():
        cuda = chosen("CudaDecode.track_gflops", n="8192", batch="1")  # 5 dtypes at 8192 × 1
        assert len(cuda) == 5 and all(measured(v) or skipped(v) for v in cuda)
    else:  # no device: asv ran no process for the class (roofline's asv plugin), and one line said why
        assert not any(name.startswith("backends.CudaDecode.") for name in results)
        said = made_bench["proc"].stdout + made_bench["proc"].stderr
        assert "not run: backends.CudaDecode, backends.CallOverhead (torch-cuda): no CUDA device here" in said
    overhead = values("CallOverhead.track_single_call")  # numpy, torch-cpu, torch-cuda
    assert measured(overhead[0]) and measured(overhead[1]) == HAS_TORCH
    assert skipped(overhead[2]) != cuda_here()


def cuda_here() -> bool:
    from roofline.errors import BackendUnavailable
    from roofline.measure.backends import available

    try:
        available("torch-cuda", "bf16")
        return True
    except BackendUnavailable:
        return False
