"""Outputs that must not change unless a change means them to, byte for byte.

- what ``roofline compare``, ``roofline report --results`` (text and JSON) and ``roofline specs --json``
  print for the committed example results;
- every subcommand's flags;
- the asv benchmark inventory: every benchmark as asv discovers it (name, type, params, units,
  timeouts, repeats, the code and its version hash) at fixed small sizes. asv files history under
  the name, the parameters and the version: a change here orphans every recorded result.

After a deliberate change, regenerate every file in tests/golden/ from the code as it stands with

    .venv/bin/python -m tests.test_golden

and read ``git diff tests/golden`` before committing it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden"

#: golden file → the command's arguments; the file holds what it prints on stdout.
COMMANDS = {
    "compare.txt": ["compare", "examples/results"],
    "report.txt": ["report", "--results", "examples/results", "--machine", "epyc-zen4-2core-32mib-l3"],
    "report.json": ["report", "--results", "examples/results", "--machine", "epyc-zen4-2core-32mib-l3", "--json"],
    "specs.json": ["specs", "--json"],
}

#: Fixed sizes for the inventory, the GPU class's included (its defaults depend on the machine).
INVENTORY_ENV = {
    "ROOFLINE_N": "256",
    "ROOFLINE_BATCH": "1,8",
    "ROOFLINE_CACHE_N": "128",
    "ROOFLINE_SWEEP_N": "256",
    "ROOFLINE_GEMM_N": "256",
    "ROOFLINE_BACKEND_N": "256",
    "ROOFLINE_BACKEND_BATCH": "1,8",
    "ROOFLINE_GPU_N": "256",
    "ROOFLINE_GPU_BATCH": "1,8",
    "ROOFLINE_GPU_DTYPES": "fp32,tf32,bf16,fp16,fp8",
}

_DISCOVER = """
import json, sys
from asv_runner.discovery import disc_benchmarks, update_sys_path
update_sys_path(sys.argv[1])
out = {}
for b in disc_benchmarks(sys.argv[1]):
    # what asv writes to benchmarks.json, plus the tuples it leaves out there (repeat) but reads at run
    # time; less setup_cache_key, the line number of a setup_cache in its file (it keys no history)
    out[b.name] = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in b.__dict__.items()
        if isinstance(v, (str, int, float, list, dict, bool, tuple)) and not k.startswith("_")
        and k != "setup_cache_key"
    }
print(json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOFLINE_")}
    env.update({"PYTHONPATH": str(ROOT), "COLUMNS": "100", "PYTHONIOENCODING": "utf-8", **extra})
    return env


def command_output(args: list[str]) -> str:
    """What ``python -m roofline ARGS`` prints on stdout, run from the repository root."""
    proc = subprocess.run(
        [sys.executable, "-m", "roofline", *args], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stderr == "", (args, proc.returncode, proc.stderr)
    return proc.stdout


def benchmark_inventory(env: dict[str, str] = INVENTORY_ENV) -> str:
    """Every benchmark as asv 0.6's runner discovers it in benchmarks/, as sorted JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", _DISCOVER, str(ROOT / "benchmarks")],
        cwd=ROOT,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _action(a: argparse.Action) -> dict[str, object]:
    return {
        "flags": list(a.option_strings) or [a.dest],
        "dest": a.dest,
        "action": type(a).__name__,
        "nargs": a.nargs,
        "required": a.required,
        "default": repr(a.default),
        "type": getattr(a.type, "__name__", repr(a.type)) if a.type is not None else None,
        "choices": list(a.choices) if a.choices is not None else None,
        "metavar": a.metavar if not isinstance(a.metavar, tuple) else list(a.metavar),
        "help": a.help,
    }


def cli_flags() -> str:
    """Every subcommand's flags (and the top-level ones) as JSON."""
    code = (
        "import json; from tests.test_golden import _parser_flags; "
        "print(json.dumps(_parser_flags(), indent=1, sort_keys=True, ensure_ascii=False))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _parser_flags() -> dict[str, list[dict[str, object]]]:
    from roofline.cli import build_parser

    parser = build_parser()
    out = {"roofline": [_action(a) for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]}
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        out[name] = [_action(a) for a in p._actions]
    return out


def goldens() -> dict[str, object]:
    """golden file → the function that makes its content now."""
    made: dict[str, object] = {name: (lambda args=args: command_output(args)) for name, args in COMMANDS.items()}
    made["cli-flags.json"] = cli_flags
    made["benchmarks.json"] = benchmark_inventory
    return made


@pytest.mark.parametrize("name", sorted(goldens()))
def test_output_is_unchanged(name):
    want = (GOLDEN / name).read_text(encoding="utf-8")
    got = goldens()[name]()
    assert got == want, f"{name} changed: if that is meant, regenerate with `.venv/bin/python -m tests.test_golden`"


def test_inventory_holds_every_benchmark_written_in_benchmarks():
    """The inventory is asv's own discovery: every track_/time_ method in benchmarks/ is in it."""
    inventory = json.loads((GOLDEN / "benchmarks.json").read_text(encoding="utf-8"))
    written = {
        f"{path.stem}.{cls.name}.{fn.name}"
        for path in (ROOT / "benchmarks").glob("*.py")
        for cls in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(cls, ast.ClassDef)
        for fn in cls.body
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith(("track_", "time_"))
    }
    assert written and written <= set(inventory)
    assert inventory["decode.DecodeDRAM.track_gflops"]["params"] == [
        ["256", "1024", "2048", "8192"],
        ["1", "8", "64", "512"],
    ]


def test_the_grid_does_not_change_with_the_sizes_chosen():
    """asv files history under benchmarks.json: other sizes (or none set) discover the very same inventory."""
    other = {"ROOFLINE_N": "2048", "ROOFLINE_BATCH": "64", "ROOFLINE_CACHE_N": "1024", "ROOFLINE_GPU_N": "8192"}
    assert benchmark_inventory(other) == (GOLDEN / "benchmarks.json").read_text(encoding="utf-8")


def test_the_name_registry_names_benchmarks_of_the_inventory():
    from roofline.suite import names

    inventory = json.loads((GOLDEN / "benchmarks.json").read_text(encoding="utf-8"))
    registry = {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}
    registry -= {names.OVERHEAD, names.CUDA_CLASS, names.MODEL_CLASS}  # classes, not benchmarks
    registry |= {names.OVERHEAD.format("single"), names.OVERHEAD.format("amortized")}
    tracks = {cls: ("track_gflops", "track_bandwidth") for cls in names.DECODE_CLASSES.values()}
    tracks[names.CUDA_CLASS] = ("track_gflops", "track_bandwidth", "track_seconds")
    registry |= {f"{cls}.{track}" for cls, names_ in tracks.items() for track in names_}
    assert len(registry) == 24 and registry <= set(inventory), registry - set(inventory)


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, make in goldens().items():
        (GOLDEN / name).write_text(make(), encoding="utf-8")
        print(f"wrote {GOLDEN / name}")


if __name__ == "__main__":
    main()
