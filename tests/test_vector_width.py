"""The level sweep's kernels at the CPU's vector width, per instruction set.

LLVM prefers 256-bit vectors on Intel's server cores even with AVX-512; the kernels switch that off
where the CPU has AVX-512 (roofline.measure.kernels). The flag sets below are the machines this project
has met, trimmed to the flags that decide (the Xeon's whole set: an Emerald Rapids VM, family 6 model 207).
"""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from roofline.measure import kernels

XEON = frozenset("sse2 avx avx2 fma avx512f avx512bw avx512vl avx512_bf16 avx512_fp16 amx_bf16 amx_int8".split())
ZEN4 = frozenset("sse2 avx avx2 fma avx512f avx512bw avx512vl avx512_bf16".split())
ZEN3 = frozenset("sse2 avx avx2 fma".split())
HOST = "+avx,+avx2,+fma,+avx512f,-amx-tile"


@pytest.mark.parametrize(("flags", "bits"), [(XEON, 512), (ZEN4, 512), (ZEN3, 256), (frozenset({"sse2"}), 128)])
def test_the_kernels_run_at_the_widest_vector_of_each_instruction_set(flags, bits):
    assert kernels.vector_bits(flags) == bits
    assert kernels.vector_bits(frozenset()) is None


def test_avx512_switches_llvms_256_bit_preference_off_and_nothing_else():
    for host in (HOST, HOST + ",+prefer-256-bit"):
        got = kernels.llvm_features(host, XEON)
        assert got is not None and got.split(",") == [*HOST.split(","), "-prefer-256-bit"]
    assert kernels.llvm_features(HOST, ZEN3) is None  # numba's own choice: 256 bits is all there is
    assert kernels.llvm_features("", XEON) is None  # LLVM gave no features: numba's own choice


def _compiled_adds(flags: frozenset[str], tmp_path) -> list[str]:
    """The load kernel's vector adds that read memory, compiled for a Sapphire Rapids core as if on a CPU
    with ``flags`` (a fresh numba cache, so numba compiles and keeps the assembly)."""
    script = textwrap.dedent(f"""
        import numpy as np
        from roofline.measure import kernels
        kernels.cpu_flags = lambda: frozenset({sorted(flags)!r})
        load = kernels.kernels()["load"]
        load(np.ones(4096), 1)
        print(next(iter(load.inspect_asm().values())))
    """)
    env = {**os.environ, "NUMBA_CPU_NAME": "sapphirerapids", "NUMBA_CACHE_DIR": str(tmp_path)}
    env.pop("NUMBA_CPU_FEATURES", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [line for line in out.stdout.splitlines() if re.search(r"vaddpd\s+-?\d*\(", line)]


def test_on_an_intel_server_core_the_load_kernel_reads_512_bit_vectors(tmp_path):
    pytest.importorskip("numba", reason="numba is not installed: no compiled kernel")
    wide = _compiled_adds(XEON, tmp_path / "wide")
    assert wide and all("%zmm" in line for line in wide[:16])
    # without the switch LLVM picks 256 bits there: the check above can fail
    narrow = _compiled_adds(ZEN3, tmp_path / "narrow")
    assert narrow and not any("%zmm" in line for line in narrow)
