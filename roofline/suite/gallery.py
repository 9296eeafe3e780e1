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
from ..model.microarch import amd_core, core_of, intel_core  # noqa: F401  (the cores by family and model: one table)
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

_NOISE = re.compile(r"\(r\)|\(tm\)|\bcpu\b|\bprocessor\b|@.*$|\b\d+-core\b|\bwith .*$|\bamd\b|\bintel\b|\bcore\b")


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
    core = core_of(signature or {}, flags)
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
