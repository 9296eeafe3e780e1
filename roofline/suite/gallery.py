"""The gallery (``examples/results``): real machines, each from a full default run, named by what it is.

``make gallery`` (``roofline bench --gallery DIR``) runs the whole suite at its default sizes on the
machine it is on, files the results under :func:`~roofline.suite.machine_file.gallery_name` (the CPU, its
microarchitecture where the model name hides it, the cores and the last-level cache; never the host name) and
merges that one run into the gallery with :func:`add_run` (``roofline merge``'s rules: nothing already there is
lost, a conflict is refused). docs/machines.md says when a session adds its machine.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import BadInput
from .asv_files import BENCHMARKS_FILE, MACHINE_FILE
from .merge import MergePlan, merge
from .results import Results

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


def check_default_run(environ: Mapping[str, str] = os.environ) -> None:
    """BadInput naming the first variable that makes a run smaller than the full default one."""
    for name in SIZING:
        if name in environ:
            raise BadInput(
                f"the gallery holds full default runs: {name}={environ[name]!r} is set (unset it, or pass --trial "
                "to try make gallery itself on a scratch gallery)"
            )


def add_run(res: Results, machine: str, commit: str, gallery: Path) -> MergePlan:
    """Merge ``machine``'s results at ``commit`` (and nothing else of the folder ``res`` was read from) into
    ``gallery``: its files are copied as they are into a folder of their own, which is merged."""
    results = res.path
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
