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

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from . import publish
from .errors import EXIT_BUSY, BadInput, Interrupted
from .files import atomic_write
from .interrupt import run_child, signals_raise
from .suite.notes import NOTES_VARIABLE, read_notes
from .suite.params import quick
from .suite.preflight import preflight

#: Where asv.conf.json puts the benchmarks (the fixed grid is read from there).
BENCHMARK_DIR = Path("benchmarks")
#: asv's configuration, and the folders it files results and HTML in: roofline bench's defaults.
ASV_CONF = Path("asv.conf.json")
RESULTS, HTML = Path(".asv/results"), Path(".asv/html")
#: A quick look's own folders (``ROOFLINE_QUICK=1``): its figures, at other sizes (llama.cpp's model smaller) under
#: the same benchmark names, would otherwise replace a default run's at the same commit.
QUICK_RESULTS, QUICK_HTML = Path(".asv/quick/results"), Path(".asv/quick/html")


def folders(results: Path | None = None, html: Path | None = None) -> tuple[Path, Path]:
    """The results and HTML folders of a run: those given, else a quick look's or asv.conf.json's."""
    default = (QUICK_RESULTS, QUICK_HTML) if quick() else (RESULTS, HTML)
    return results or default[0], html or default[1]


@contextmanager
def asv_config(results: Path, html: Path) -> Iterator[list[str]]:
    """asv's ``--config`` for a run filing its results and HTML in ``results`` and ``html``: none where those are
    asv.conf.json's (or it is not here: asv says why), else a copy of it with those two folders, beside it while
    the run lasts (asv runs in its config's folder: the copy's other paths read as the original's)."""
    from asv.util import load_json

    if not ASV_CONF.is_file():
        yield []
        return
    conf = load_json(str(ASV_CONF), js_comments=True)
    own = (Path(conf.get("results_dir", "results")).resolve(), Path(conf.get("html_dir", "html")).resolve())
    if own == (results.resolve(), html.resolve()):
        yield []
        return
    with tempfile.NamedTemporaryFile("w", dir=ASV_CONF.parent, prefix=".roofline-asv-", suffix=".json") as copy:
        json.dump({**conf, "results_dir": str(results.absolute()), "html_dir": str(html.absolute())}, copy)
        copy.flush()
        yield ["--config", copy.name]


def _say(line: str) -> None:
    print(f"roofline: {line}", file=sys.stderr)


def _asv(*args: str, env: dict[str, str] | None = None) -> int:
    return run_child([sys.executable, "-m", "asv", *args], stdin=subprocess.DEVNULL, env=env)


def launch_method() -> list[str]:
    """asv run's ``--launch-method``: ``forkserver`` where no CUDA device is here, else asv.conf.json's ``spawn``.

    With spawn every benchmark process starts Python and imports numpy and the suite: 0.45 s of each of a
    default run's ~170 processes here (76 s). The forkserver imports the suite once and forks a process per
    benchmark. CUDA and fork do not mix (a CUDA context does not survive a fork), so a machine with a
    device keeps spawn.
    """
    from .host import gpu_present

    return [] if gpu_present() else ["--launch-method", "forkserver"]


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


def base_interpreter() -> Path:
    """The interpreter that made this virtual environment (this one, outside a venv)."""
    return Path(getattr(sys, "_base_executable", None) or sys.executable)


def asv_python(folder: Path) -> tuple[str, dict[str, str]]:
    """asv's ``--python`` and environment so that its virtualenv is built by :func:`base_interpreter`.

    asv's virtualenv plugin looks ``python<X.Y>`` up on PATH, where a pyenv shim or another
    install may answer. ``folder`` gets a ``python<X.Y>`` link to the exact interpreter and
    goes first on PATH. BadInput, naming it, when that interpreter does not run.
    """
    exe = base_interpreter()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    try:
        proc = subprocess.run(
            [str(exe), "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        works = proc.returncode == 0 and proc.stdout.strip() == str(sys.version_info[:2])
    except (OSError, subprocess.SubprocessError):
        works = False
    if not works:
        raise BadInput(
            f"the interpreter that made this environment, {exe}, does not run as Python {version}; "
            "asv cannot build its environment with it (make clean, then make bench PYTHON=...)"
        )
    link = folder / f"python{version}"
    link.symlink_to(exe.resolve())
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}
    return version, env


#: Builds asv's environments for one Python version, as `asv setup` does (whose exit status is always 1
#: in asv 0.6.6: it returns its list of environments), then checks each one runs.
_BUILD_ENV = """
import sys
from asv import environment
from asv.commands.setup import Setup
from asv.config import Config

envs = list(environment.get_environments(Config.load("asv.conf.json"), [":" + sys.argv[1]], verbose=False))
Setup.perform_setup(envs, parallel=1)
ok = envs and all(env.check_presence() for env in envs)
if ok:
    print("ASV-PYTHONS", *(env.run(["-c", "import sys; print(sys.executable)"]).strip() for env in envs))
sys.exit(0 if ok else 3)
"""


def build_asv_env(version: str, env: dict[str, str]) -> list[str]:
    """Build asv's virtualenv for ``version`` now and return its interpreters; BadInput in one line,
    naming the interpreter, if it cannot."""
    with tempfile.TemporaryFile("w+") as log:
        status = run_child(
            [sys.executable, "-c", _BUILD_ENV, version],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.seek(0)
        lines = [line.strip() for line in log.read().splitlines() if line.strip()]
        if status != 0:
            why = lines[-1] if lines else f"exit status {status}"
            raise BadInput(f"asv could not build its virtualenv with {base_interpreter()}: {why}")
    return [exe for line in lines if line.startswith("ASV-PYTHONS ") for exe in line.split()[1:]]


def install_requirements(pythons: Sequence[str], requirements: Path, stamps: Path | None = None) -> list[str]:
    """pip-install ``requirements`` into each of asv's environments (once: pip keeps what is there).

    Returns one line per environment it could not install into; the benchmarks that need those
    packages then skip, as on a machine without them. An environment that installed this very file before
    keeps a stamp of it (:func:`requirements_stamp`, in ``stamps``, default the environment's own folder)
    and pip does not run again: asking pip what it has took 6 s of each make bench here.
    """
    problems = []
    for exe in pythons:
        stamp = requirements_stamp(exe, requirements, stamps)
        if stamp.is_file():
            continue
        with tempfile.TemporaryFile("w+") as log:
            status = run_child(
                [exe, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", str(requirements)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.seek(0)
            errors = [line.strip() for line in log.read().splitlines() if line.strip().startswith("ERROR")]
        if status != 0:
            why = errors[-1] if errors else f"pip exit status {status}"
            problems.append(f"{requirements} did not install into asv's environment ({why}): what needs it skips")
        else:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(f"{requirements}\n")
    return problems


def requirements_stamp(exe: str, requirements: Path, stamps: Path | None = None) -> Path:
    """The file that says ``exe``'s environment installed ``requirements`` as it reads now (its bytes'
    hash): in ``stamps``, default the environment's folder (it goes with the environment)."""
    digest = hashlib.sha256(Path(requirements).read_bytes() + str(Path(exe).absolute()).encode()).hexdigest()[:16]
    return (stamps or Path(exe).absolute().parent.parent) / ".roofline-requirements" / digest


def check_requirements(requirements: Sequence[Path] | Path | None, same_python: bool) -> None:
    """BadInput in one line for a requirements file roofline bench cannot use."""
    files = _requirement_files(requirements)
    if not files:
        return
    if same_python:
        raise BadInput(
            "--asv-env-requirements installs into asv's own virtualenv; with --python-same, install into this "
            "environment instead (pip install -r FILE)"
        )
    for path in files:
        if not path.is_file():
            raise BadInput(f"--asv-env-requirements: no file {path}")


def _requirement_files(requirements: Sequence[Path] | Path | None) -> list[Path]:
    """The requirements files, each installed on its own (one that fails leaves the others installed)."""
    if requirements is None:
        return []
    return [Path(requirements)] if isinstance(requirements, str | Path) else [Path(r) for r in requirements]


def asv_virtualenv(tmp: Path, requirements: Sequence[Path] | Path | None, stage: list[str]) -> tuple[str, dict]:
    """asv's virtualenv built (:func:`build_asv_env`) with ``requirements`` installed, as roofline bench and
    regress run in it: (its Python version, the environment asv is run with; its shim lives in ``tmp``)."""
    stage[0] = "asv's environment"
    version, env = asv_python(tmp)
    pythons = build_asv_env(version, env)
    for path in _requirement_files(requirements):
        stage[0] = f"installing {path} into asv's environment"
        for line in install_requirements(pythons, path):
            _say(line)
    return version, env


def _snapshot(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def kept_results(folder: Path, before: dict[Path, bytes]) -> str:
    """After an interrupted asv: restore any earlier file asv left unreadable; say what is kept."""
    restored = []
    for path, data in before.items():
        try:
            json.loads(path.read_bytes())
        except (OSError, ValueError):
            atomic_write(path, data)
            restored.append(path.name)
    files = [p for p in sorted(folder.glob("*.json")) if p.name != "machine.json"] if folder.is_dir() else []
    changed = [p.name for p in files if before.get(p) != p.read_bytes()]
    line = f"results kept in {folder}: {len(files)} result file(s)"
    line += f", {len(files) - len(changed)} untouched" if files else ""
    line += f"; written by this run: {', '.join(changed)}" if changed else "; this run recorded nothing"
    if restored:
        line += f"; restored from before the run: {', '.join(restored)}"
    return line


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
    (:func:`~roofline.suite.gallery.gallery_name`, never the host name). ``gallery``: a full default run (any
    sizes with ``trial``), then merged into that folder. Ends with the comparison page beside asv's HTML.
    ``results`` and ``html``: :func:`folders`.
    """
    try:
        import asv  # noqa: F401
    except ImportError:
        raise BadInput("roofline bench needs asv: pip install 'roofline[bench]'") from None
    stage = ["preflight"]
    before: dict[Path, bytes] = {}
    results, html = folders(results, html)
    folder = results
    with signals_raise():
        try:
            check_requirements(requirements, same_python)
            if gallery is not None:
                from .suite.gallery import check_default_run

                if not trial:
                    check_default_run()
            for line in preflight(results):
                print(f"roofline: {line}")
            commit = head_commit()
            stage[0] = "the contention check"
            busy = _busy_before(allow_busy)
            if busy is not None:
                return busy
            stage[0] = "the machine file"
            from .host import gpu_facts
            from .suite.machine_file import keys_results_lack, register

            # asv's machine file, non-interactively, with roofline's keys (the GPU's name too: the same
            # entry as `roofline machine` writes, so the key does not flip between the two)
            machine, entry, retired = register(machine, gpu=gpu_facts())
            _say_earlier_names(results, entry)
            if retired:
                _say(
                    f"machine {machine!r} still has keys roofline no longer writes ({', '.join(retired)}): "
                    f"`roofline machine --migrate {results}` takes them out of its results too, history kept whole"
                )
            folder = results / machine
            before = _snapshot(folder)
            new_keys = keys_results_lack(before, entry)  # the bytes just read, not the folder again
            if new_keys:
                _say(
                    f"machine {machine!r}'s earlier results lack keys this run records ({', '.join(new_keys)}): asv "
                    f"graphs them apart until `roofline machine --migrate {results}` fills them in, history kept whole"
                )
            status = _run(
                results, html, machine, commit, same_python, bench, stage, allow_busy, requirements,
                gallery or publish.DEFAULT_GALLERY,
            )  # fmt: skip
            if gallery is not None:
                stage[0] = "adding the run to the gallery"
                status = _to_gallery(results, machine, commit, gallery, status, allow_busy)
                publish.compare_page(results, html, gallery)  # again, with the run merged in
            return status
        except Interrupted as exc:
            print(f"roofline: {exc} during {stage[0]}", file=sys.stderr)
            print(f"roofline: {kept_results(folder, before)}", file=sys.stderr)
            return exc.exit_code


def _say_earlier_names(results: Path, entry: dict[str, object]) -> None:
    """Where a first run under this machine's name finds the same hardware's runs under other names (the host
    name, before runs were named by what the machine is): one line saying they stay readable, and how to go on."""
    from .suite.machine_file import earlier_names

    machine = str(entry["machine"])
    if (results / machine).exists():
        return
    for old in earlier_names(results, entry):
        _say(
            f"this machine's earlier runs are in {results / old}: they stay there, reported and compared beside "
            f"{machine!r} (roofline compare {results}); to go on filing under {old!r}: make bench MACHINE={old}"
        )


def _to_gallery(results: Path, machine: str, commit: str, gallery: Path, status: int, allow_busy: bool) -> int:
    """Merge the run just made into ``gallery`` unless it failed or was busy; the exit status."""
    from .suite.gallery import add_run

    if status != 0:
        _say(f"not added to the gallery {gallery}: the run {'was busy' if status == EXIT_BUSY else 'had failures'}")
        return status
    if allow_busy:
        _say("--allow-busy: the gallery may now hold figures measured beside other work; re-record on a quiet machine")
    try:
        plan = add_run(results, machine, commit, gallery)
    except BadInput as exc:
        print(f"roofline: not added to the gallery: {exc}", file=sys.stderr)
        return 2
    for line in plan.warnings:
        _say(f"warning: {line}")
    for line in plan.summary():
        print(f"roofline: gallery: {line}")
    return 0


#: ``1``: measure even on a busy machine, as ``--allow-busy`` (CI on shared runners, the README's recipes in tests).
ALLOW_BUSY_VARIABLE = "ROOFLINE_ALLOW_BUSY"


def allow_busy_from(flag: bool) -> bool:
    """``--allow-busy``, or :data:`ALLOW_BUSY_VARIABLE` set to 1 (0 or unset: not); BadInput on anything else."""
    text = os.environ.get(ALLOW_BUSY_VARIABLE, "").strip()
    if text not in ("", "0", "1"):
        raise BadInput(f"{ALLOW_BUSY_VARIABLE}={text!r}: use 1 (measure on a busy machine, flagged) or 0")
    return flag or text == "1"


def _busy_before(allow_busy: bool) -> int | None:
    """Watch the cores before measuring: EXIT_BUSY with one line when others take them, else None."""
    from .measure.contention import sample_cpu

    before = sample_cpu()
    if before.lost_share is None:
        _say("no /proc/stat here: the CPU time others take is not checked")
        return None
    line = f"before measuring, other processes took {before.lost_share:.0%} of the CPU time"
    if not before.contended:
        _say(f"{line}: quiet enough")
        return None
    if allow_busy:
        _say(f"{line}; measuring anyway (--allow-busy): the run will be flagged")
        return None
    print(
        f"roofline: busy machine: {line} ({'; '.join(before.reasons())}); measure on a quiet machine, "
        "or pass --allow-busy (make bench ALLOW_BUSY=1) to record flagged figures",
        file=sys.stderr,
    )
    return EXIT_BUSY


def asv_selection(bench: str | None) -> list[str]:
    """asv run's ``--bench`` arguments: the combinations the variables chose (and ``bench``'s narrowing)."""
    from .suite import params

    grid = params.read_grid(BENCHMARK_DIR)
    if grid is None:
        return ["--bench", bench] if bench else []
    return [arg for regex in params.selection(grid, bench) for arg in ("--bench", regex)]


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
    gallery: Path = Path("examples/results"),
) -> int:
    from .measure.contention import cpu_times, lost_shares

    with asv_config(results, html) as config:
        run = ["run", *config, "--show-stderr", "--record-samples", "--machine", machine, *launch_method()]
        run += ["-a", f"rounds={TWIN_ROUNDS}", "-a", "repeat=({},{},{})".format(*TWIN_REPEAT)]
        with tempfile.TemporaryDirectory(prefix="roofline-python-") as tmp:
            env = None
            if same_python:
                run += ["--python=same", "--set-commit-hash", commit]
            else:
                version, env = asv_virtualenv(Path(tmp), requirements, stage)
                run += [f"--python={version}", f"{commit} --max-count=1"]
            run += asv_selection(bench)
            stage[0] = "asv run"
            ahead = _snapshot(results / machine)
            first, own0 = cpu_times(), _own_cpu()
            notes = Path(tmp) / "notes.jsonl"  # why each model and engine row has no figure (suite.notes)
            asv_rc = _asv(*run, env={**(env or os.environ), NOTES_VARIABLE: str(notes)})
            last = cpu_times()
            said = read_notes(notes)
        during = lost_shares(first, last, _own_cpu() - own0)[0] if first and last else None
        if asv_rc != 0 and not measured_anything(results / machine, ahead):
            print(f"roofline: {NOTHING_MEASURED}", file=sys.stderr)
            return 1
        stage[0] = "asv publish"
        publish_rc = _asv("publish", *config, env={**os.environ, publish.BY_VARIABLE: "roofline"})
    if publish_rc == 0:
        publish_rc = publish.offline(html)
    status = 0 if asv_rc == 0 and publish_rc == 0 else 1
    if asv_rc != 0:
        print("roofline: some benchmarks failed (see above); the others are recorded", file=sys.stderr)
    stage[0] = "the report"
    headline, text = publish.report(results, machine, commit, html, during, notes=said)
    if publish_rc == 0:
        stage[0] = "the landing page"
        publish.compare_page(results, html, gallery)  # first: the landing page links it when it is there
        publish.landing(html, results, machine, commit, text)
    if headline and not allow_busy:
        print(
            f"roofline: {headline}; results kept, flagged (--allow-busy accepts them): exit {EXIT_BUSY}",
            file=sys.stderr,
        )
        return max(status, EXIT_BUSY)
    return status


#: What roofline bench and regress say, and all they say, when asv ran and measured nothing.
NOTHING_MEASURED = (
    "asv measured nothing (its lines above say why: a project that does not build, a benchmark suite that does "
    "not import, or every benchmark failing); no figure was recorded, and nothing is published or reported"
)


def measured_anything(folder: Path, before: dict[Path, bytes]) -> bool:
    """Whether a result file asv wrote in ``folder`` since ``before`` (a :func:`_snapshot`) holds any value: a
    project that does not build leaves none, or one whose every benchmark failed."""
    for path, data in _snapshot(folder).items():
        if path.name == "machine.json" or before.get(path) == data:
            continue
        try:
            rows = json.loads(data).get("results", {})
        except (ValueError, AttributeError):
            continue
        for row in rows.values() if isinstance(rows, dict) else ():
            values = row[0] if isinstance(row, list) and row else None
            values = values if isinstance(values, list) else [values]
            if any(isinstance(v, int | float) and v == v for v in values):
                return True
    return False


def _own_cpu() -> float:
    """CPU seconds of this process and of the children it has waited for (asv and its benchmarks)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
