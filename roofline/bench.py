"""`roofline bench`: the whole `make bench` after installation, as one command.

preflight → asv machine file (:func:`roofline.suite.machine_file.register`) → ``asv run`` →
``asv publish`` → the report and plot from the results just recorded → the landing page that shows
them (:mod:`roofline.report.page`; asv's page becomes ``asv.html``). asv runs as a
subprocess of this interpreter (``python -m asv``); a failed benchmark makes the exit status 1
after everything else has still been published and reported, so no result that ran is lost.

SIGINT or SIGTERM at any stage stops the run within a few seconds (see
:mod:`roofline.interrupt`): asv and its benchmarks are stopped, any earlier result file asv
left unreadable is restored, the results kept are named, and the exit status is 130 or 143.

A busy machine measures its neighbours, not itself. Before anything is measured the cores are
watched for a second and a half (:func:`roofline.measure.contention.sample_cpu`); a machine where
others take more than 10 % of the CPU time stops the run with one line naming that share and exit
status 3 (:data:`EXIT_BUSY`), unless ``allow_busy``. The whole asv run is watched the same way and
the run's own record of its conditions is read back: a run measured under contention says so in
the report's first line and exits 3 too, after everything was recorded, published and reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from . import asv_driver, publish
from .asv_driver import say
from .errors import EXIT_BUSY, BadInput, Interrupted, busy_exit
from .interrupt import signals_raise
from .suite.asv_files import MachineFolder, ResultsFolder
from .suite.notes import NOTES_VARIABLE, read_notes
from .suite.preflight import preflight
from .suite.results import GALLERY

#: asv's ``rounds`` and ``repeat`` for the ``time_`` twins of a ``make bench`` run: one round of 5 to 8
#: samples of ≥ 0.1 s (5 where a step lasts longer). In the suite's three rounds of 10 to 20 (for ``roofline
#: regress``, whose significance test across commits needs them, and asv by hand) the 66 twin processes of
#: a default run took 251 s of its 549 here; at three rounds of 4 to 6, 91 s of 286. The run's own points
#: keep their three passes.
TWIN_ROUNDS = 1
TWIN_REPEAT = (5, 8, 0.8)


def head_commit() -> str:
    """The commit asv will benchmark; BadInput outside a git checkout with commits."""
    proc = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BadInput("not in a git checkout with a commit: asv benchmarks commits (git init && git commit first)")
    return proc.stdout.strip()


def run_bench(
    results: Path | None = None,
    html: Path | None = None,
    machine: str | None = None,
    same_python: bool = False,
    bench: str | None = None,
    allow_busy: bool = False,
    requirements: Sequence[Path] | Path | None = None,
    gallery: Path | None = None,
    trial: bool = False,
) -> int:
    """Run the suite and report; returns the exit status.

    0; 1 if a benchmark failed; 3 if the machine was busy (unless ``allow_busy``); 130/143 if stopped.
    ``requirements``: pip requirements files installed into asv's environment before it runs, one after
    another (the optional backends: torch for models.ModelDecode, llama.cpp for engines.LlamaCppDecode).
    Results are filed under ``machine``, default what the machine is
    (:func:`~roofline.suite.machine_file.gallery_name`, never the host name). ``gallery``: a full default run (any
    sizes with ``trial``), then merged into that folder. Ends with the comparison page beside asv's HTML.
    ``results`` and ``html``: :func:`~roofline.asv_driver.folders`.
    """
    try:
        import asv  # noqa: F401
    except ImportError:
        raise BadInput("roofline bench needs asv: pip install 'roofline[bench]'") from None
    stage = ["preflight"]
    results, html = asv_driver.folders(results, html)
    folder, before = results, MachineFolder(results.name, results)
    with signals_raise():
        try:
            asv_driver.check_requirements(requirements, same_python)
            if gallery is not None:
                from .suite.gallery import check_default_run

                if not trial:
                    check_default_run()
            for line in preflight(results):
                print(f"roofline: {line}")
            commit = head_commit()
            stage[0] = "the contention check"
            busy = asv_driver.busy_before(allow_busy)
            if busy is not None:
                return busy
            stage[0] = "the machine file"
            machine, before = _register(results, machine)
            folder = results / machine
            status, after = _run(
                results, html, machine, commit, same_python, bench, stage, allow_busy, requirements,
                gallery or GALLERY, before,
            )  # fmt: skip
            if gallery is not None:
                stage[0] = "adding the run to the gallery"
                status = _to_gallery(after, machine, commit, gallery, status, allow_busy)
                publish.compare_page(after, html, gallery)  # again, with the run merged in
            return status
        except Interrupted as exc:
            print(f"roofline: {exc} during {stage[0]}", file=sys.stderr)
            print(f"roofline: {asv_driver.kept_results(folder, before)}", file=sys.stderr)
            return exc.exit_code


def _register(results: Path, machine: str | None) -> tuple[str, MachineFolder]:
    """asv's machine file written, non-interactively, with roofline's keys (the GPU's name too: the same entry as
    `roofline machine` writes, so the key does not flip between the two); the machine's name and its folder before
    asv runs, read once. Says where its earlier runs are, and which keys they lack or keep."""
    from .host import gpu_facts
    from .suite.machine_file import keys_results_lack, register

    machine, entry, retired = register(machine, gpu=gpu_facts())
    earlier = asv_driver.snapshot(results)
    _say_earlier_names(earlier, entry)
    if retired:
        say(
            f"machine {machine!r} still has keys roofline no longer writes ({', '.join(retired)}): "
            f"`roofline machine --migrate {results}` takes them out of its results too, history kept whole"
        )
    before = earlier.machine(machine)
    new_keys = keys_results_lack(before, entry)
    if new_keys:
        say(
            f"machine {machine!r}'s earlier results lack keys this run records ({', '.join(new_keys)}): asv "
            f"graphs them apart until `roofline machine --migrate {results}` fills them in, history kept whole"
        )
    return machine, before


def _say_earlier_names(results: ResultsFolder, entry: dict[str, object]) -> None:
    """Where a first run under this machine's name finds the same hardware's runs under other names (the host
    name, before runs were named by what the machine is): one line saying they stay readable, and how to go on."""
    from .suite.machine_file import earlier_names

    machine, path = str(entry["machine"]), results.path
    if machine in results.machines:
        return
    for old in earlier_names(results, entry):
        say(
            f"this machine's earlier runs are in {path / old}: they stay there, reported and compared beside "
            f"{machine!r} (roofline compare {path}); to go on filing under {old!r}: make bench MACHINE={old}"
        )


def _to_gallery(results: publish.Read, machine: str, commit: str, gallery: Path, status: int, allow_busy: bool) -> int:
    """Merge the run just made into ``gallery`` unless it failed or was busy; the exit status."""
    from .suite.gallery import add_run

    if status != 0:
        say(f"not added to the gallery {gallery}: the run {'was busy' if status == EXIT_BUSY else 'had failures'}")
        return status
    if allow_busy:
        say("--allow-busy: the gallery may now hold figures measured beside other work; re-record on a quiet machine")
    try:
        if isinstance(results, BadInput):
            raise results
        plan = add_run(results, machine, commit, gallery)
    except BadInput as exc:
        print(f"roofline: not added to the gallery: {exc}", file=sys.stderr)
        return 2
    for line in plan.warnings:
        say(f"warning: {line}")
    for line in plan.summary():
        print(f"roofline: gallery: {line}")
    return 0


def _run(
    results: Path,
    html: Path,
    machine: str,
    commit: str,
    same_python: bool,
    bench: str | None,
    stage: list[str],
    allow_busy: bool = False,
    requirements: Sequence[Path] | Path | None = None,
    gallery: Path = GALLERY,
    before: MachineFolder | None = None,
) -> tuple[int, publish.Read]:
    """asv run, asv publish, the report and the pages: (the exit status, the results folder as asv left it, read
    once for all of them). ``before``: the machine's folder before the run (read here where not given)."""
    with asv_driver.asv_config(results, html) as config:
        run = ["run", *config, "--show-stderr", "--record-samples", "--machine", machine, *asv_driver.launch_method()]
        run += ["-a", f"rounds={TWIN_ROUNDS}", "-a", "repeat=({},{},{})".format(*TWIN_REPEAT)]
        with tempfile.TemporaryDirectory(prefix="roofline-python-") as tmp:
            env = None
            if same_python:
                run += ["--python=same", "--set-commit-hash", commit]
            else:
                version, env = asv_driver.asv_virtualenv(Path(tmp), requirements, stage)
                run += [f"--python={version}", f"{commit} --max-count=1"]
            run += asv_driver.asv_selection(bench)
            stage[0] = "asv run"
            before = before if before is not None else asv_driver.snapshot(results).machine(machine)
            notes = Path(tmp) / "notes.jsonl"  # why each model and engine row has no figure (suite.notes)
            asv_rc, during = asv_driver.run_asv_watched(*run, env={**(env or os.environ), NOTES_VARIABLE: str(notes)})
            said = read_notes(notes)
        after = asv_driver.snapshot(results)  # the folder as asv left it, read once for everything below
        res = publish.read(after if results.is_dir() else results)
        if asv_rc != 0 and not asv_driver.measured_anything(after.machine(machine), before):
            print(f"roofline: {asv_driver.NOTHING_MEASURED}", file=sys.stderr)
            return 1, res
        stage[0] = "asv publish"
        publish_rc = asv_driver.run_asv("publish", *config, env={**os.environ, publish.BY_VARIABLE: "roofline"})
    if publish_rc == 0:
        publish_rc = publish.offline(html)
    status = 0 if asv_rc == 0 and publish_rc == 0 else 1
    if asv_rc != 0:
        print("roofline: some benchmarks failed (see above); the others are recorded", file=sys.stderr)
    stage[0] = "the report"
    headline, text = publish.report(res, machine, commit, html, during, notes=said)
    if publish_rc == 0:
        stage[0] = "the landing page"
        publish.compare_page(res, html, gallery)  # first: the landing page links it when it is there
        publish.landing(html, res, machine, commit, text)
    busy = busy_exit(status, bool(headline), allow_busy)
    if busy != status:
        say(f"{headline}; results kept, flagged (--allow-busy accepts them): exit {EXIT_BUSY}")
    return busy, res
