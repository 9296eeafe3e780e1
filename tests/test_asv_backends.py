"""asv end to end on benchmarks/backends.py: absent backends are skipped (null) and asv exits 0."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.host import gpu_present

from .asvtools import selection

ROOT = Path(__file__).resolve().parents[1]
ASV = Path(sys.executable).with_name("asv")
HAS_TORCH = importlib.util.find_spec("torch") is not None


def skipped(v: object) -> bool:
    """asv writes NaN for a combination whose setup raised NotImplementedError (null means failed)."""
    return isinstance(v, float) and math.isnan(v)


def measured(v: object) -> bool:
    return isinstance(v, float) and math.isfinite(v) and v > 0


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 240) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_asv_run_skips_absent_backends(tmp_path):
    if not ASV.exists() or shutil.which("git") is None:
        pytest.skip("asv or git is not installed here")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=60)
    # asv.conf.json names the branch "main"; a clone of a feature branch may not have it.
    subprocess.run(["git", "checkout", "-q", "-B", "main"], cwd=clone, check=True, timeout=60)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "ASV_PYTHONPATH": str(clone),  # asv drops PYTHONPATH; this reaches the benchmark processes
        "ROOFLINE_LLC_BYTES": "1M",
        "ROOFLINE_CACHE_DIR": str(tmp_path / "cache"),
        "ROOFLINE_BACKEND_N": "256",
        "ROOFLINE_BACKEND_BATCH": "1",
        "ROOFLINE_GPU_N": "8192",  # chosen from the fixed grid; nothing of that size runs without a GPU
        "ROOFLINE_GPU_BATCH": "1",
        "ROOFLINE_GPU_DTYPES": "bf16,fp8",
    }
    r = run([str(ASV), "machine", "--yes", "--machine", "t"], clone, env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(
        [str(ASV), "run", "--python=same", "--set-commit-hash", commit, "--machine", "t"]
        + selection(clone, env, "backends"),  # the chosen combinations only, as roofline bench runs them
        clone,
        env,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    files = [p for p in (clone / ".asv" / "results" / "t").glob("*.json") if p.name != "machine.json"]
    assert len(files) == 1
    results = json.loads(files[0].read_text())["results"]

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
        assert "not run: backends.CudaDecode, backends.CallOverhead (torch-cuda): no CUDA device here" in r.stderr
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
