"""`roofline bench`: the whole `make bench` after installation, as one command.

preflight → asv machine file (:func:`roofline.suite.machine_file.register`) → ``asv run`` →
``asv publish`` → the report and plot from the results just recorded. asv runs as a
subprocess of this interpreter (``python -m asv``); a failed benchmark makes the exit status 1
after everything else has still been published and reported, so no result that ran is lost.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .errors import BadInput
from .suite.preflight import preflight


def _asv(*args: str) -> int:
    return subprocess.call([sys.executable, "-m", "asv", *args], stdin=subprocess.DEVNULL)


def head_commit() -> str:
    """The commit asv will benchmark; BadInput outside a git checkout with commits."""
    proc = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BadInput("not in a git checkout with a commit: asv benchmarks commits (git init && git commit first)")
    return proc.stdout.strip()


def run_bench(
    results: Path = Path(".asv/results"),
    html: Path = Path(".asv/html"),
    machine: str | None = None,
    same_python: bool = False,
    bench: str | None = None,
) -> int:
    """Run the suite and report; returns the exit status (0, or 1 if any benchmark failed)."""
    try:
        import asv  # noqa: F401
    except ImportError:
        raise BadInput("roofline bench needs asv: pip install 'roofline[bench]'") from None
    for line in preflight(results):
        print(f"roofline: {line}")
    commit = head_commit()
    from .host import gpu_facts
    from .suite.machine_file import register

    # asv's machine file, non-interactively, with roofline's keys (the GPU's name too: the same
    # entry as `roofline machine` writes, so the key does not flip between the two)
    machine, _, _ = register(machine, gpu=gpu_facts(), say=lambda line: print(f"roofline: {line}", file=sys.stderr))
    run = ["run", "--show-stderr", "--machine", machine]
    run += ["--python=same", "--set-commit-hash", commit] if same_python else [f"{commit} --max-count=1"]
    if bench:
        run += ["--bench", bench]
    asv_rc = _asv(*run)
    if asv_rc < 0 or asv_rc == 130:
        print("roofline: asv run was interrupted; results recorded so far are kept", file=sys.stderr)
        return 130
    publish_rc = _asv("publish")
    if publish_rc == 0:
        print(f"roofline: HTML in {(html / 'index.html').resolve()} (serve it with: asv preview)")
    status = 0 if asv_rc == 0 and publish_rc == 0 else 1
    if asv_rc != 0:
        print("roofline: some benchmarks failed (see above); the others are recorded", file=sys.stderr)
    _report(results, machine, commit, html)
    return status


def _report(results: Path, machine: str, commit: str, html: Path) -> None:
    from .report.cpu import render_text
    from .report.from_results import report_from_results
    from .report.plot import plot_report

    try:
        report = report_from_results(results, machine=machine, commit=commit)
    except BadInput as exc:
        print(f"roofline: no report: {exc}", file=sys.stderr)
        return
    print()
    print(render_text(report))
    try:
        html.mkdir(parents=True, exist_ok=True)
        path = plot_report([report], html / "roofline.png")
        print(f"\nroofline plot: {path.resolve()}")
    except BadInput as exc:
        print(f"roofline: no plot: {exc}", file=sys.stderr)
