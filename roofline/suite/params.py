"""Which of the suite's parameters run, chosen by environment variables so a quick run can shrink them.

The grid itself is fixed in code (``GRID`` in benchmarks/common.py): benchmarks.json, which asv files
history under, never changes with the environment. The variables choose which of its combinations
run; asv records the others as skipped (NaN), so a run at other sizes never empties a graph.

``ROOFLINE_N`` (default ``2048,8192``), ``ROOFLINE_BATCH`` (default ``1,8,64,512``) and
``ROOFLINE_CACHE_N`` (default ``1024,2048``, the cache-resident class), the backend and GPU classes'
variables below, ``ROOFLINE_SWEEP_N`` (default ``4096``, the crossover sweep) and ``ROOFLINE_GEMM_N``
(default 2048 for float32 and 1536 for float64, the GEMM ceilings; neither is an asv parameter):
comma-separated positive integers, each among the grid's values. Anything else is a BadInput naming
the variable.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..errors import BadInput
from ..host import gpu_present
from ..measure.backends import GPU_DTYPES
from ..model.dtypes import STEPS

DEFAULT_N = (2048, 8192)
DEFAULT_BATCH = (1, 8, 64, 512)
DEFAULT_CACHE_N = (1024, 2048)
DEFAULT_SWEEP_N = 4096

#: Larger than any decode matrix this suite is meant for; a typo guard, not a limit of the method.
MAX_N = 65536
MAX_BATCH = 65536


def positive_ints(text: str, name: str, maximum: int) -> tuple[int, ...]:
    """'1, 8,64' → (1, 8, 64); BadInput naming ``name`` on anything else."""
    items = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in items):
        raise BadInput(f"{name} must be a comma-separated list of positive integers, got {text!r}")
    values = []
    for p in items:
        try:
            v = int(p)
        except ValueError:
            raise BadInput(f"{name}: {p!r} is not an integer") from None
        if v <= 0:
            raise BadInput(f"{name}: {v} is not positive")
        if v > maximum:
            raise BadInput(f"{name}: {v} is larger than {maximum}")
        values.append(v)
    return tuple(dict.fromkeys(values))


#: ``ROOFLINE_QUICK=1`` (``make bench QUICK=1``): every size variable a quick look leaves unset takes this value
#: instead of its default, so that every class shrinks (the backends, ModelDecode and llama.cpp too). A
#: variable that is set wins.
QUICK_VARIABLE = "ROOFLINE_QUICK"
QUICK: dict[str, str] = {
    "ROOFLINE_N": "1024",
    "ROOFLINE_BATCH": "1,64",
    "ROOFLINE_CACHE_N": "1024",
    "ROOFLINE_SWEEP_N": "1024",
    "ROOFLINE_BACKEND_N": "256",
    "ROOFLINE_BACKEND_BATCH": "1",
    "ROOFLINE_MODEL_BATCH": "1",
    "ROOFLINE_ENGINE_BATCH": "1",
    # llama.cpp's model: 0.31 B weights read a token, not 0.50 (0.17 GB in Q4_0, ≥ 4× an LLC of up to 43 MB);
    # 1.5 s of its 6.5 here. Its figures go to a quick look's own results (roofline.bench), never a default
    # run's history. ModelDecode keeps its model (a smaller one, vocab 32 k, would save 5 s of its 12 here).
    "ROOFLINE_ENGINE_MODEL": "llama-3.2-1b:layers=4,vocab=32768",
    # likwid-bench sleeps 1 s per run to calibrate its clock: the referees were 38 s of a quick look's 73 s
    "ROOFLINE_REFEREE": "off",
    "ROOFLINE_LEVELS": "off",
}


def quick() -> bool:
    """Whether this is a quick look (``ROOFLINE_QUICK``: 0, the default, or 1); BadInput on anything else."""
    text = os.environ.get(QUICK_VARIABLE, "0").strip()
    if text not in ("0", "1"):
        raise BadInput(f"{QUICK_VARIABLE} must be 0 or 1, got {text!r}")
    return text == "1"


def _text(name: str) -> str | None:
    """The variable's text: as set, else a quick look's value (:data:`QUICK`), else None."""
    text = os.environ.get(name)
    return QUICK.get(name) if text is None and quick() else text


def _from_env(name: str, default: tuple[int, ...], maximum: int) -> tuple[int, ...]:
    text = _text(name)
    return default if text is None else positive_ints(text, name, maximum)


def sizes() -> tuple[int, ...]:
    """Matrix sizes n of the DRAM decode class."""
    return _from_env("ROOFLINE_N", DEFAULT_N, MAX_N)


def batches() -> tuple[int, ...]:
    """Batch sizes of the decode classes."""
    return _from_env("ROOFLINE_BATCH", DEFAULT_BATCH, MAX_BATCH)


def cache_sizes() -> tuple[int, ...]:
    """Matrix sizes n of the cache-resident class."""
    return _from_env("ROOFLINE_CACHE_N", DEFAULT_CACHE_N, MAX_N)


def _one_size(name: str) -> int | None:
    """The one size variable ``name`` gives, None when unset; BadInput naming it on anything else."""
    text = _text(name)
    if text is None:
        return None
    values = positive_ints(text, name, MAX_N)
    if len(values) != 1:
        raise BadInput(f"{name} takes one size, got {len(values)}")
    return values[0]


def sweep_n() -> int:
    """Matrix size of the crossover sweep."""
    return _one_size("ROOFLINE_SWEEP_N") or DEFAULT_SWEEP_N


def gemm_n() -> int | None:
    """Matrix size of the square-GEMM ceilings (``ROOFLINE_GEMM_N``); None: each dtype's default size."""
    return _one_size("ROOFLINE_GEMM_N")


def _switch(name: str) -> bool:
    """An on/off variable (on when unset); BadInput naming it on anything else."""
    text = _text(name)
    text = "on" if text is None else text.strip().lower()
    if text not in ("on", "off"):
        raise BadInput(f"{name} must be on or off, got {text!r}")
    return text == "on"


def referee() -> bool:
    """Whether the run times likwid-bench beside its roofs (``ROOFLINE_REFEREE``: on, the default, or off)."""
    return _switch("ROOFLINE_REFEREE")


def levels() -> bool:
    """Whether the run sweeps the working set for each memory level's roof (``ROOFLINE_LEVELS``: on, the
    default, or off: the tests' asv runs that read no level roof, where it was ~40 % of a run's measurement)."""
    return _switch("ROOFLINE_LEVELS")


# ---- backends and GPUs (see docs: "Backends and GPUs") -------------------------------------

#: Sizes and batches of the backend class (numpy beside torch on CPU): small, since every
#: combination is a process of its own and bf16 GEMV on a CPU can be slow.
DEFAULT_BACKEND_N = (2048,)
DEFAULT_BACKEND_BATCH = (1, 64)

#: The CUDA class on a machine with an NVIDIA GPU: the lab's batches plus the crossover
#: sweep's points around an H100-class knee (≈ 190 on an H200, ≈ 300 on an H100).
GPU_N = (8192, 16384)
GPU_BATCH = (1, 8, 64, 128, 192, 256, 512, 4096)
#: Without a GPU every CUDA combination is skipped; one point per dtype records why.
NO_GPU_N = (8192,)
NO_GPU_BATCH = (1,)


def dtypes_from(text: str, name: str) -> tuple[str, ...]:
    """'bf16, fp8' → ('bf16', 'fp8'); BadInput naming ``name`` on an unknown dtype."""
    items = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in items):
        raise BadInput(f"{name} must be a comma-separated list of dtypes, got {text!r}")
    for p in items:
        if p not in STEPS:
            raise BadInput(f"{name}: unknown dtype {p!r} (use: {', '.join(STEPS)})")
    return tuple(dict.fromkeys(items))


def backend_sizes() -> tuple[int, ...]:
    """Matrix sizes of the backend class (``ROOFLINE_BACKEND_N``)."""
    return _from_env("ROOFLINE_BACKEND_N", DEFAULT_BACKEND_N, MAX_N)


def backend_batches() -> tuple[int, ...]:
    """Batches of the backend class (``ROOFLINE_BACKEND_BATCH``)."""
    return _from_env("ROOFLINE_BACKEND_BATCH", DEFAULT_BACKEND_BATCH, MAX_BATCH)


#: models.ModelDecode's and engines.LlamaCppDecode's batches (their classes' params; the variables choose).
DEFAULT_MODEL_BATCH = (1, 8, 64)
DEFAULT_ENGINE_BATCH = (1, 2, 4, 8, 16, 32, 64)


def model_batches() -> tuple[int, ...]:
    """Batches of models.ModelDecode (``ROOFLINE_MODEL_BATCH``)."""
    return _from_env("ROOFLINE_MODEL_BATCH", DEFAULT_MODEL_BATCH, MAX_BATCH)


def engine_batches() -> tuple[int, ...]:
    """Batches of the engine classes (``ROOFLINE_ENGINE_BATCH``)."""
    return _from_env("ROOFLINE_ENGINE_BATCH", DEFAULT_ENGINE_BATCH, MAX_BATCH)


def gpu_sizes() -> tuple[int, ...]:
    """Matrix sizes of the CUDA class (``ROOFLINE_GPU_N``)."""
    return _from_env("ROOFLINE_GPU_N", GPU_N if gpu_present() else NO_GPU_N, MAX_N)


def gpu_batches() -> tuple[int, ...]:
    """Batches of the CUDA class (``ROOFLINE_GPU_BATCH``)."""
    return _from_env("ROOFLINE_GPU_BATCH", GPU_BATCH if gpu_present() else NO_GPU_BATCH, MAX_BATCH)


def gpu_dtypes() -> tuple[str, ...]:
    """dtypes of the CUDA class (``ROOFLINE_GPU_DTYPES``)."""
    text = os.environ.get("ROOFLINE_GPU_DTYPES")
    return GPU_DTYPES if text is None else dtypes_from(text, "ROOFLINE_GPU_DTYPES")


# ---- the fixed grid and what the variables choose of it ----------------------------------------

#: What each variable chooses: the values to run (their defaults above).
CHOOSERS: dict[str, Callable[[], tuple]] = {
    "ROOFLINE_N": sizes,
    "ROOFLINE_BATCH": batches,
    "ROOFLINE_CACHE_N": cache_sizes,
    "ROOFLINE_BACKEND_N": backend_sizes,
    "ROOFLINE_BACKEND_BATCH": backend_batches,
    "ROOFLINE_GPU_N": gpu_sizes,
    "ROOFLINE_GPU_BATCH": gpu_batches,
    "ROOFLINE_GPU_DTYPES": gpu_dtypes,
    "ROOFLINE_MODEL_BATCH": model_batches,
    "ROOFLINE_ENGINE_BATCH": engine_batches,
}

#: Each parameterized class and the variable that chooses each of its parameters (None: all run).
CHOSEN_BY: dict[str, tuple[str | None, ...]] = {
    "decode.DecodeDRAM": ("ROOFLINE_N", "ROOFLINE_BATCH"),
    "decode.DecodeRooflineFraction": ("ROOFLINE_N", "ROOFLINE_BATCH"),
    "decode.DecodeCacheResident": ("ROOFLINE_CACHE_N", "ROOFLINE_BATCH"),
    "backends.BackendDecode": (None, None, "ROOFLINE_BACKEND_N", "ROOFLINE_BACKEND_BATCH"),
    "backends.CudaDecode": (None, "ROOFLINE_GPU_DTYPES", "ROOFLINE_GPU_N", "ROOFLINE_GPU_BATCH"),
    "models.ModelDecode": ("ROOFLINE_MODEL_BATCH",),
    "engines.LlamaCppDecode": (None, "ROOFLINE_ENGINE_BATCH"),
}

#: The file that holds the grid, in asv's benchmark_dir.
GRID_FILE = "common.py"


def chosen(grid: Mapping[str, Sequence[object]]) -> dict[str, tuple]:
    """Every variable's choice, checked against ``grid``; BadInput naming the variable and the grid's values."""
    out = {}
    for name, values in grid.items():
        if name not in CHOOSERS:
            continue
        choice = CHOOSERS[name]()
        off = [v for v in choice if v not in values]
        if off:
            raise BadInput(
                f"{name}: {', '.join(map(str, off))} not in the suite's fixed grid "
                f"({', '.join(map(str, values))}; GRID in benchmarks/{GRID_FILE})"
            )
        out[name] = choice
    return out


def read_grid(benchmark_dir: str | os.PathLike) -> dict[str, tuple] | None:
    """The ``GRID = {...}`` literal of benchmark_dir/common.py, read without importing it; None if absent."""
    path = Path(benchmark_dir) / GRID_FILE
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if target is None and isinstance(node, ast.AnnAssign):
            target = node.target
        if isinstance(target, ast.Name) and target.id == "GRID" and node.value is not None:
            try:
                grid = ast.literal_eval(node.value)
            except ValueError:
                return None
            return {str(k): tuple(v) for k, v in grid.items()} if isinstance(grid, dict) else None
    return None


#: A regex narrowing what every asv command of the suite runs (``asv run``, ``continuous``, ``find``, ``roofline
#: bench``, ``roofline regress``), as their ``--bench`` does; matched like asv's against ``name(params)``.
BENCH_VARIABLE = "ROOFLINE_BENCH"


def _regex(text: str, what: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise BadInput(f"{what} {text!r} is not a regular expression ({exc})") from None
    return text


def narrowing(only: str | Sequence[str] | None = None) -> list[str]:
    """The regexes a name must each match: ``only`` (any of several, as asv's repeated ``--bench``) and
    :data:`BENCH_VARIABLE`; BadInput naming one that is not a regular expression."""
    out = []
    if only:
        items = [only] if isinstance(only, str) else list(only)
        out.append("|".join(f"(?:{_regex(r, '--bench')})" for r in items))
    variable = os.environ.get(BENCH_VARIABLE, "").strip()
    if variable:
        out.append(_regex(variable, BENCH_VARIABLE))
    return out


def selection(
    grid: Mapping[str, Sequence[object]], only: str | Sequence[str] | None = None, exclude: Sequence[str] = ()
) -> list[str]:
    """asv ``--bench`` regexes that run exactly the chosen combinations (and every other benchmark).

    asv would start a process for each combination of the grid only to skip it; these spare it.
    ``only``: a user's regex (or several, any of them); the selection is narrowed to the names it matches,
    and to :data:`BENCH_VARIABLE`'s. ``exclude``: regexes, anchored at a name's start, that leave benchmarks
    out (the classes that cannot run here, :mod:`roofline.suite.runnable`).
    """
    picked = chosen(grid)
    narrow = "".join(f"(?=.*(?:{r}))" for r in narrowing(only))
    narrow += f"(?!{'|'.join(exclude)})" if exclude else ""
    out = []
    for cls, variables in CHOSEN_BY.items():
        parts = []
        for var in variables:
            if var is None or var not in picked:  # every value (a grid from before the variable chose)
                parts.append(r"[^,()]+")
            else:
                parts.append("(?:" + "|".join(re.escape(_asv_repr(v)) for v in picked.get(var, ())) + ")")
        out.append(f"^{narrow}{re.escape(cls)}\\.[^.(]+\\(" + ", ".join(parts) + r"\)$")
    others = "|".join(re.escape(cls) + r"\." for cls in CHOSEN_BY)
    out.append(f"^{narrow}(?!{others})")
    return out


def _asv_repr(value: object) -> str:
    """A parameter value as asv names it in a benchmark's parameterized name (its repr)."""
    return repr(value)


#: The dtype models.ModelDecode decodes in; the run measures its compute roof at the model's shapes.
MODEL_DTYPE = "bf16"

#: models.ModelDecode's model: a preset, then shape fields to change (``ROOFLINE_MODEL``).
DEFAULT_MODEL = "llama-3-8b:layers=1"


def model_decode():
    """The ModelShape models.ModelDecode decodes: ``ROOFLINE_MODEL`` = ``preset[:field=N,...]``.

    Default :data:`DEFAULT_MODEL` (Llama-3-8B cut to one layer); a quick run names a tiny shape, e.g.
    ``llama-3-8b:layers=1,hidden=64,heads=4,kv_heads=2,intermediate=128,vocab=256``.
    """
    return _model_from(_text("ROOFLINE_MODEL") or DEFAULT_MODEL, "ROOFLINE_MODEL")


def _model_from(text: str, variable: str):
    """``preset[:field=N,...]`` as a ModelShape; BadInput naming ``variable``."""
    from ..model.llm import SETTABLE_FIELDS, custom_model, lookup_model

    name, _, rest = text.partition(":")
    fields = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in SETTABLE_FIELDS:
            raise BadInput(f"{variable}: {item!r} is not field=N (fields: {', '.join(SETTABLE_FIELDS)})")
        fields[key.strip()] = positive_ints(value, f"{variable} {key.strip()}", 2**31)[0]
    return custom_model(lookup_model(name.strip()), **fields)


#: engines.LlamaCppDecode's model (``ROOFLINE_ENGINE_MODEL``, as ``ROOFLINE_MODEL``): Llama-3.2-1B cut to four
#: layers, 0.50 B weights read per token (its tied head 0.26 B): 1.0 GB in F16, 0.28 GB in Q4_0, each ≥ 4× an LLC
#: of up to 70 MB.
DEFAULT_ENGINE_MODEL = "llama-3.2-1b:layers=4"


def engine_model():
    """The ModelShape the engine classes decode: ``ROOFLINE_ENGINE_MODEL`` = ``preset[:field=N,...]``."""
    return _model_from(_text("ROOFLINE_ENGINE_MODEL") or DEFAULT_ENGINE_MODEL, "ROOFLINE_ENGINE_MODEL")
