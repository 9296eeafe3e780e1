"""Every decision that reads the machine, on every machine the suite has run on (tests/machine_profiles.py):
the weight pools and STREAM arrays sized from the LLC, what fits a 23 GiB machine, the cache-resident points,
and what is skipped for want of a CUDA device or of the instructions a compute roof's dtype needs.
(The name results are filed under: tests/test_gallery.py.)"""

from __future__ import annotations

import itertools

import pytest

from roofline.errors import BackendUnavailable
from roofline.measure import compute, numpy_step, pools
from roofline.model.hierarchy import POOL_LLC_MULTIPLE
from roofline.suite import params, preflight, runnable

from .machine_profiles import PROFILES

#: The smallest memory of the machines the suite runs on (the 2-core guests: 23.5 GiB).
MEMORY = 23 * 2**30

#: profile → the DRAM decode pool preflight plans (MiB) at the default sizes: ≥ 4× the LLC, whole n×n matrices.
POOL_MIB = {"xeon-amx": 1280, "epyc-zen4": 256, "epyc-zen3": 256}  # one 8192² fp32 matrix: 256 MiB

#: profile → ComputePeak's torch dtypes skipped for want of native instructions (compute.NATIVE).
NO_NATIVE = {"xeon-amx": set(), "epyc-zen4": {"fp16"}, "epyc-zen3": {"bf16", "fp16", "int8"}}


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_every_pool_escapes_four_times_the_llc_and_fits_a_23_gib_machine(profile, monkeypatch, tmp_path):
    llc = profile.llc_bytes
    assert pools.escape_bytes(llc) == POOL_LLC_MULTIPLE * llc == 4 * llc
    sizes = (*params.DEFAULT_N, params.DEFAULT_SWEEP_N, *params.DEFAULT_BACKEND_N)
    for n in sizes:
        pool = pools.pool_count(n, 4, llc) * n * n * 4
        assert 4 * llc <= pool < 4 * llc + n * n * 4  # at least 4× the LLC, at most one matrix more
    monkeypatch.setattr(preflight, "llc_bytes", lambda: (llc, "the profile"))
    monkeypatch.setattr(pools, "available_memory_bytes", lambda: MEMORY)
    for name in ("ROOFLINE_N", "ROOFLINE_QUICK", "ROOFLINE_LLC_BYTES"):
        monkeypatch.delenv(name, raising=False)
    lines = preflight.preflight(tmp_path / "results")  # its memory check passes
    assert f"DRAM pool up to {POOL_MIB[profile.name]} MiB" in lines[1]
    largest = max(pools.pool_count(n, 4, llc) * n * n * 4 for n in sizes)
    stream = 3 * pools.escape_bytes(llc)  # STREAM's three arrays, each ≥ 4× the LLC
    assert largest + stream < 0.9 * MEMORY  # both at once, with pools.check_fits's margin
    if profile.memory_bytes is not None:
        assert profile.memory_bytes >= MEMORY


def test_the_xeons_300_mib_llc_gives_a_pool_over_a_gigabyte():
    xeon = next(p for p in PROFILES if p.name == "xeon-amx")
    assert pools.escape_bytes(xeon.llc_bytes) >= 1.2e9


class _Fits(Exception):
    """Raised where decode_step would allocate: the point passed the cache-residency check."""


def _cache_resident(llc: int, monkeypatch) -> dict[tuple[int, int], str]:
    def fits(*_):
        raise _Fits

    monkeypatch.setattr(numpy_step.pools, "weight_pool", fits)
    out = {}
    for n, batch in itertools.product(params.DEFAULT_CACHE_N, params.DEFAULT_BATCH):
        try:
            numpy_step.decode_step(n, batch, regime="cache", llc=llc)
        except _Fits:
            out[(n, batch)] = "runs"
        except BackendUnavailable as exc:
            out[(n, batch)] = str(exc)
    return out


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_every_default_cache_resident_point_fits_each_machines_llc(profile, monkeypatch):
    assert set(_cache_resident(profile.llc_bytes, monkeypatch).values()) == {"runs"}
    smaller = _cache_resident(16 * 2**20, monkeypatch)  # the check bites below them: 2048² fp32 alone is 16 MiB
    assert smaller[(2048, 1)].startswith("n=2048 batch=1 needs 16 MiB: not cache-resident in a 16 MiB LLC")


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_compute_roofs_skip_the_dtypes_a_machine_has_no_instructions_for(profile):
    skipped = {d for d in compute.TORCH_DTYPES if compute.native_reason(d, profile.flags)}
    assert skipped == NO_NATIVE[profile.name]
    for dtype in skipped:
        assert compute.native_reason(dtype, profile.flags).startswith(
            f"this CPU has none of {', '.join(compute.NATIVE[dtype])}: torch would run {dtype} without hardware"
        )
    assert compute.native_reason("fp32", profile.flags) is None and compute.native_reason("fp64", frozenset()) is None


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_no_machine_of_the_profiles_has_a_cuda_device_so_the_cuda_class_is_left_out(profile, monkeypatch):
    monkeypatch.delenv(runnable.WITHOUT_VARIABLE, raising=False)
    monkeypatch.delenv(params.QUICK_VARIABLE, raising=False)
    assert "nvidia" not in profile.cpuinfo.lower()  # CPU guests: gpu_present() finds no device node on them
    left = runnable.cannot_run([set()], device=lambda: False)
    assert {x.what: x.why for x in left} == {
        "backends.CudaDecode": "no CUDA device here (no NVIDIA device node)",
        "backends.CallOverhead (torch-cuda)": "no CUDA device here (no NVIDIA device node)",
    }
