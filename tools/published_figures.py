"""Published decode figures against `roofline decode`'s bound: the table in docs/models.md.

    python tools/published_figures.py                  # print the markdown table
    python tools/published_figures.py --before DIR     # measured ÷ bound with the code in DIR/roofline
                                                       # (e.g. `git archive 1ec97b7 roofline | tar -x -C DIR`)

The figures, their sources and commands live in tests/published_figures.toml; tests/
test_published_figures.py holds every ratio ≤ 1 and the docs table equal to what this prints.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "tests" / "published_figures.toml"
sys.path.insert(0, str(ROOT))


def load(path: Path = FIGURES) -> list[dict]:
    with open(path, "rb") as f:
        return tomllib.load(f)["figure"]


def measured_total(fig: dict) -> float:
    """The measured figure for the whole group (a per-GPU throughput × tp)."""
    args = shlex.split(fig["args"])
    tp = int(args[args.index("--tp") + 1]) if "--tp" in args else 1
    return fig["measured"] * (tp if fig.get("per_gpu") else 1)


def ratio_from(doc: dict, fig: dict) -> float:
    """measured ÷ bound from a `roofline decode --json` answer: ≤ 1 when the bound holds."""
    measured = measured_total(fig)
    if fig["metric"] == "ttft_ms":
        return doc["requests"][0]["ttft_s"] * 1e3 / measured
    if fig["metric"] == "tokens_per_s":
        bound = doc["requests"][0]["tokens_per_s"] if doc.get("requests") else doc["steps"][0]["tokens_per_s"]
        return measured / bound
    raise ValueError(f"unknown metric {fig['metric']!r}")


def decode_json(args: str) -> dict:
    """`roofline decode ARGS --json` with this checkout's code."""
    from roofline.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["decode", *shlex.split(args), "--json"])
    if code != 0:
        raise RuntimeError(f"roofline decode {args} exited {code}")
    return json.loads(out.getvalue())


def ratio(fig: dict) -> float:
    return ratio_from(decode_json(fig["args"]), fig)


def before_ratio(fig: dict, code_dir: Path) -> float | None:
    """measured ÷ bound of ``before_args`` with the package in ``code_dir`` (None when there are none)."""
    if not fig["before_args"]:
        return None
    env = {**os.environ, "PYTHONPATH": str(code_dir)}
    cmd = [sys.executable, "-m", "roofline", "decode", *shlex.split(fig["before_args"]), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=code_dir, check=True)
    return ratio_from(json.loads(proc.stdout), fig)


def _cell(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def table(figs: list[dict]) -> list[str]:
    """The markdown table: figure, measured, command, measured ÷ bound before and after."""
    lines = [
        "| # | published figure (source) | measured | `roofline decode` command | before | after |",
        "|---|---|---|---|---|---|",
    ]
    for i, fig in enumerate(figs, 1):
        unit = fig["unit"] + (" per GPU" if fig.get("per_gpu") else "")
        lines.append(
            f"| {i} | {fig['what']} ([source]({_url(fig['source'])})) | {fig['measured']:,} {unit} | "
            f"`roofline decode {fig['args']}` | {_cell(fig.get('before'))} | {_cell(ratio(fig))} |"
        )
    return lines


def _url(source: str) -> str:
    return source[source.index("https://") :].rstrip(")")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, metavar="DIR", help="print measured ÷ bound with the code in DIR")
    args = p.parse_args(argv)
    figs = load()
    if args.before:
        for fig in figs:
            print(f"{_cell(before_ratio(fig, args.before))}  {fig['what']}")
        return 0
    print("\n".join(table(figs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
