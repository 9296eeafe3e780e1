"""The suite's classes that cannot run here, and why: asv then starts no process for them.

asv starts a process for every parameter combination it runs, about half a second each here (Python,
numpy and the suite imported), even one that only says it skips: ``backends.CudaDecode``'s 240
combinations cost two minutes of a CPU machine's ``asv run``. asv-runner's ``skip_benchmark_if``
drops a benchmark from discovery, which changes benchmarks.json with the machine (and orphans the
history filed under it), and ``skip_params_if`` still starts the process; asv's ``--bench`` selection
starts none. So a class that needs what this machine or every benchmark environment lacks is left out
of the selection (:func:`exclusions`, applied by ``roofline bench``, ``roofline regress`` and, through
the asv plugin, plain ``asv run``), with one line saying why; it records nothing in that run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import BadInput
from ..host import gpu_present
from .names import CUDA_CLASS, ENGINE_CLASSES
from .params import quick

#: The classes that need modules a benchmark environment may lack (each skips without them).
NEEDS_MODULES: Mapping[str, tuple[str, ...]] = {
    ENGINE_CLASSES["llama.cpp"]: ("llama_cpp",),
    "models.ModelDecode": ("torch", "transformers"),
}
#: ``ROOFLINE_WITHOUT``: the optional parts a run was told to leave out, comma-separated; ``make bench`` sets it
#: from an empty ``MODELS_REQUIREMENTS`` or ``ENGINES_REQUIREMENTS``. Their classes are left out even where an
#: earlier run installed their packages in asv's environment: a llama.cpp left installed there crashed a run
#: of the Xeon that ``ENGINES_REQUIREMENTS=`` was meant to spare.
WITHOUT_VARIABLE = "ROOFLINE_WITHOUT"
#: Each optional part: its class (in :data:`NEEDS_MODULES`) and the make variable whose emptiness leaves it out.
OPTIONAL: Mapping[str, tuple[str, str]] = {
    "models": ("models.ModelDecode", "MODELS_REQUIREMENTS"),
    "engines": (ENGINE_CLASSES["llama.cpp"], "ENGINES_REQUIREMENTS"),
}
#: The combinations of other classes that need a CUDA device: the overhead roof's torch-cuda backend.
CUDA_COMBINATIONS = {"backends.CallOverhead (torch-cuda)": r"backends\.CallOverhead\.[^.(]+\('torch-cuda'\)"}

#: Asked in a benchmark environment: the modules of :data:`NEEDS_MODULES` it cannot find, one a line.
PROBE = (
    "import importlib.util, sys\n"
    "for name in sys.argv[1:]:\n"
    "    if importlib.util.find_spec(name) is None:\n"
    "        print(name)\n"
)


def modules_needed() -> list[str]:
    return sorted({m for mods in NEEDS_MODULES.values() for m in mods})


@dataclass(frozen=True)
class LeftOut:
    """Benchmarks left out of a run: what they are, the regex (anchored at a name's start) that matches
    them, and why."""

    what: str
    regex: str
    why: str


#: What a quick look (``ROOFLINE_QUICK=1``) leaves out: asv's ``time_`` twins, a process and a second each (7 s
#: of its 61 here), asv's own timing of steps the run measured already. Its figures are its own (roofline.bench).
QUICK_LEFT_OUT = LeftOut("the time_ twins", r"[^.(]+\.[^.(]+\.time_", "a quick look (ROOFLINE_QUICK=1) times none")


def _class(name: str, why: str) -> LeftOut:
    return LeftOut(name, re.escape(f"{name}."), why)


def without() -> tuple[str, ...]:
    """The optional parts :data:`WITHOUT_VARIABLE` leaves out (of :data:`OPTIONAL`); BadInput naming it otherwise."""
    parts = tuple(dict.fromkeys(p.strip() for p in os.environ.get(WITHOUT_VARIABLE, "").split(",") if p.strip()))
    for part in parts:
        if part not in OPTIONAL:
            raise BadInput(f"{WITHOUT_VARIABLE}: {part!r} is none of {', '.join(OPTIONAL)}")
    return parts


def left_out_by_choice(missing: Sequence[set[str] | None]) -> list[LeftOut]:
    """The classes of the parts :func:`without` names, each with the make variable that chose it and whether
    its modules are installed where the benchmarks run anyway (``missing``: as :func:`cannot_run`'s)."""
    out = []
    for part in without():
        cls, variable = OPTIONAL[part]
        mods = NEEDS_MODULES[cls]
        why = f"left out: make bench {variable}= ({WITHOUT_VARIABLE}={part})"
        if any(env is not None and not set(mods) & env for env in missing):
            why += f"; {', '.join(mods)} installed where the benchmarks run, but not chosen"
        out.append(_class(cls, why))
    return out


def cannot_run(missing: Iterable[set[str] | None], device: Callable[[], bool] | None = None) -> list[LeftOut]:
    """What cannot run here. ``missing``: per benchmark environment, the modules of :func:`modules_needed` it
    lacks (None: it could not be asked, which leaves every class in); a class is left out only when every
    environment lacks what it needs, or :data:`WITHOUT_VARIABLE` names its part (whatever is installed).
    ``device``: whether a CUDA device is here (:func:`~roofline.host.gpu_present`)."""
    out: list[LeftOut] = []
    if not (device or gpu_present)():
        why = "no CUDA device here (no NVIDIA device node)"
        out.append(_class(CUDA_CLASS, why))
        out += [LeftOut(what, regex, why) for what, regex in CUDA_COMBINATIONS.items()]
    if quick():
        out.append(QUICK_LEFT_OUT)
    envs = list(missing)
    chosen = left_out_by_choice(envs)
    out += chosen
    if envs and all(m is not None for m in envs):
        for cls, mods in NEEDS_MODULES.items():
            lacking = [m for m in mods if all(m in env for env in envs)]
            if lacking and cls not in {c.what for c in chosen}:
                out.append(_class(cls, f"{', '.join(lacking)} not installed where the benchmarks run"))
    return out


def summary(left_out: Sequence[LeftOut]) -> list[str]:
    """One line per reason, naming what it leaves out."""
    by_reason: dict[str, list[str]] = {}
    for item in left_out:
        by_reason.setdefault(item.why, []).append(item.what)
    return [f"not run: {', '.join(names)}: {why}; asv starts no process for it" for why, names in by_reason.items()]
