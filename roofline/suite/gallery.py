"""The gallery (``examples/results``): real machines, each from a full default run, named by what it is.

``make gallery`` (``roofline bench --gallery DIR``) runs the whole suite at its default sizes on the
machine it is on, files the results under :func:`gallery_name` (the CPU, its microarchitecture where
the model name hides it, the cores and the last-level cache; never the host name) and merges that
one run into the gallery with :func:`add_run` (``roofline merge``'s rules: nothing already there is
lost, a conflict is refused). docs/machines.md says when a session adds its machine.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import BadInput
from .merge import BENCHMARKS_FILE, MACHINE_FILE, MergePlan, merge
from .results import read_results

#: The variables that shrink a run below the full default one (roofline.suite.params, ROOFLINE_REFEREE,
#: ROOFLINE_WITHOUT).
SIZING = (
    "ROOFLINE_N",
    "ROOFLINE_BATCH",
    "ROOFLINE_CACHE_N",
    "ROOFLINE_SWEEP_N",
    "ROOFLINE_GEMM_N",
    "ROOFLINE_LLC_BYTES",
    "ROOFLINE_BACKEND_N",
    "ROOFLINE_BACKEND_BATCH",
    "ROOFLINE_MODEL",
    "ROOFLINE_MODEL_BATCH",
    "ROOFLINE_ENGINE_BATCH",
    "ROOFLINE_QUICK",
    "ROOFLINE_REFEREE",
    "ROOFLINE_GPU_N",
    "ROOFLINE_GPU_BATCH",
    "ROOFLINE_GPU_DTYPES",
    "ROOFLINE_WITHOUT",
)

#: AMD families 0x17-0x1A: (family, first model, last model) → the core the model name of a VM omits
#: (AMD's revision guides; 23/1 is Naples, 25/1 Milan, 25/17 Genoa).
AMD_CORES = (
    (23, 0x08, 0x08, "zen+"),
    (23, 0x18, 0x18, "zen+"),
    (23, 0x00, 0x2F, "zen1"),
    (23, 0x30, 0xFF, "zen2"),
    (25, 0x10, 0x1F, "zen4"),
    (25, 0x60, 0x7F, "zen4"),
    (25, 0xA0, 0xAF, "zen4c"),
    (25, 0x00, 0xFF, "zen3"),
    (26, 0x00, 0xFF, "zen5"),
)
#: Intel family 6 server cores: model → the core a VM's model name ('Intel(R) Xeon(R) Processor') omits (Intel's
#: DisplayFamily_DisplayModel table, SDM vol. 4 table 2-1, and Linux's arch/x86/include/asm/intel-family.h:
#: 0x55 SKYLAKE_X, 0x6A ICELAKE_X, 0x8F SAPPHIRERAPIDS_X, 0xCF EMERALDRAPIDS_X, 0xAD GRANITERAPIDS_X).
INTEL_SERVER_CORES = {85: "skylake-sp", 106: "ice-lake-sp", 143: "sapphire-rapids", 207: "emerald-rapids",
                      173: "granite-rapids"}  # fmt: skip
#: Model 85 is three cores; the flag each added tells them apart, as GCC's and LLVM's ``-march=native`` do
#: (libgcc's cpuinfo.h, LLVM's Host.cpp): avx512_bf16 Cooper Lake, else avx512_vnni Cascade Lake, else Skylake-SP.
#: (Steppings alone do not: Cascade Lake is 5-7, Cooper Lake 10-11.)
MODEL_85_BY_FLAG = (("avx512_bf16", "cooper-lake"), ("avx512_vnni", "cascade-lake"))
_NOISE = re.compile(r"\(r\)|\(tm\)|\bcpu\b|\bprocessor\b|@.*$|\b\d+-core\b|\bwith .*$|\bamd\b|\bintel\b|\bcore\b")


def amd_core(signature: Mapping[str, object]) -> str | None:
    """The Zen generation of an AMD CPU from its family and model numbers; None for others."""
    if signature.get("vendor") != "AuthenticAMD":
        return None
    family, model = signature.get("cpu family"), signature.get("model")
    for fam, first, last, core in AMD_CORES:
        if family == fam and isinstance(model, int) and first <= model <= last:
            return core
    return None


def intel_core(signature: Mapping[str, object], flags: frozenset[str] = frozenset()) -> str | None:
    """The Xeon server core of an Intel CPU from its family and model numbers (and, for model 85, its
    flags); None for others."""
    if signature.get("vendor") != "GenuineIntel" or signature.get("cpu family") != 6:
        return None
    core = INTEL_SERVER_CORES.get(signature.get("model"))  # type: ignore[arg-type]
    if core == "skylake-sp":
        core = next((name for flag, name in MODEL_85_BY_FLAG if flag in flags), core)
    return core


def gallery_name(
    cpu: str,
    cores: int | None,
    llc_bytes: int | None,
    llc_level: int | None = 3,
    signature: Mapping[str, object] | None = None,
    flags: frozenset[str] = frozenset(),
) -> str:
    """A results folder name that says what the machine is: 'epyc-zen1-2core-8mib-l3' for an AMD EPYC
    (family 23, model 1) VM with 2 cores and an 8 MiB L3; 'xeon-emerald-rapids-2core-300mib-l3' for an
    'Intel(R) Xeon(R) Processor' of family 6, model 207."""
    words = re.sub(r"[^a-z0-9+]+", "-", _NOISE.sub(" ", cpu.lower())).strip("-") or "cpu"
    core = amd_core(signature or {}) or intel_core(signature or {}, flags)
    parts = [words] + ([core] if core and f"-{core}-" not in f"-{words}-" else [])
    if cores:
        parts.append(f"{cores}core")
    if llc_bytes:
        size = f"{llc_bytes / 2**20:.0f}mib" if llc_bytes >= 2**20 else f"{llc_bytes // 2**10}kib"
        parts.append(f"{size}-l{llc_level}" if llc_level else f"{size}-llc")
    return "-".join(parts)


def this_machine() -> str:
    """:func:`gallery_name` of the machine this runs on."""
    from .. import host

    levels = host.cache_topology()
    level = max((c.level for c in levels), default=None)
    llc = host.llc_bytes(use_override=False)[0] if levels else None
    return gallery_name(host.cpu_model(), host.cpu_count(), llc, level, host.cpu_signature(), host.cpu_flags())


def check_default_run(environ: Mapping[str, str] = os.environ) -> None:
    """BadInput naming the first variable that makes a run smaller than the full default one."""
    for name in SIZING:
        if name in environ:
            raise BadInput(
                f"the gallery holds full default runs: {name}={environ[name]!r} is set (unset it, or pass --trial "
                "to try make gallery itself on a scratch gallery)"
            )


def add_run(results: Path, machine: str, commit: str, gallery: Path) -> MergePlan:
    """Merge ``machine``'s results at ``commit`` (and nothing else of ``results``) into ``gallery``."""
    res = read_results(results)
    if machine not in res.machines or commit not in res.machines[machine].runs:
        raise BadInput(f"no results of machine {machine!r} at commit {commit[:8]} in {results}")
    run = res.machines[machine].runs[commit]
    with tempfile.TemporaryDirectory(prefix="roofline-gallery-") as tmp:
        stage = Path(tmp) / "results"
        (stage / machine).mkdir(parents=True)
        shutil.copy2(results / BENCHMARKS_FILE, stage / BENCHMARKS_FILE)
        shutil.copy2(results / machine / MACHINE_FILE, stage / machine / MACHINE_FILE)
        for name in run.files:
            shutil.copy2(results / machine / name, stage / machine / name)
        return merge([stage], gallery)
