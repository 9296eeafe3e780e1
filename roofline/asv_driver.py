"""The asv driver that ``roofline bench`` and ``roofline regress`` share: how asv is run here.

- where asv files results and HTML (:func:`folders`) and the ``--config`` that moves them (:func:`asv_config`);
- asv's own virtualenv, built by the interpreter that made this one, with requirements files installed
  (:func:`asv_virtualenv`);
- ``asv run``'s launch method (:func:`launch_method`) and the combinations it runs (:func:`asv_selection`);
- the contention check before anything is measured (:func:`busy_before`) and the CPU time others take while
  asv runs, asv's own not counted (:func:`run_asv_watched`);
- what a run wrote: the folder before (:func:`snapshot`), whether anything was measured since
  (:func:`measured_anything`), and what is kept after an interruption (:func:`kept_results`).

asv runs as a subprocess of this interpreter (``python -m asv``), stopped with the command on SIGINT or SIGTERM
(:func:`roofline.interrupt.run_child`).
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

from .errors import BadInput, busy_exit
from .interrupt import run_child
from .suite import asv_files, params
from .suite.asv_files import MachineFolder, ResultsFolder

#: Where asv.conf.json puts the benchmarks (the fixed grid is read from there).
BENCHMARK_DIR = Path("benchmarks")
#: asv's configuration, and the folders it files results and HTML in: roofline bench's defaults.
ASV_CONF = Path("asv.conf.json")
RESULTS, HTML = Path(".asv/results"), Path(".asv/html")
#: A quick look's own folders (``ROOFLINE_QUICK=1``): its figures, at other sizes (llama.cpp's model smaller) under
#: the same benchmark names, would otherwise replace a default run's at the same commit.
QUICK_RESULTS, QUICK_HTML = Path(".asv/quick/results"), Path(".asv/quick/html")
#: ``1``: measure even on a busy machine, as ``--allow-busy`` (CI on shared runners, the README's recipes in tests).
ALLOW_BUSY_VARIABLE = "ROOFLINE_ALLOW_BUSY"
#: What roofline bench and regress say, and all they say, when asv ran and measured nothing.
NOTHING_MEASURED = (
    "asv measured nothing (its lines above say why: a project that does not build, a benchmark suite that does "
    "not import, or every benchmark failing); no figure was recorded, and nothing is published or reported"
)


def say(line: str) -> None:
    """One ``roofline:`` line on stderr."""
    print(f"roofline: {line}", file=sys.stderr)


def run_asv(*args: str, env: dict[str, str] | None = None) -> int:
    """``python -m asv ARGS`` with this interpreter, no stdin; its exit status."""
    return run_child([sys.executable, "-m", "asv", *args], stdin=subprocess.DEVNULL, env=env)


def run_asv_watched(*args: str, env: dict[str, str] | None = None) -> tuple[int, float | None]:
    """:func:`run_asv`, the cores watched meanwhile: (asv's exit status, the share of CPU time other processes
    took, asv and its benchmarks not counted; None without /proc/stat)."""
    from .measure import contention  # numpy: not for `roofline --help`

    first, own0 = contention.cpu_times(), contention.own_cpu_seconds()
    status = run_asv(*args, env=env)
    last = contention.cpu_times()
    own = contention.own_cpu_seconds() - own0  # asv and its benchmarks, waited for
    return status, contention.lost_shares(first, last, own)[0] if first and last else None


def folders(results: Path | None = None, html: Path | None = None) -> tuple[Path, Path]:
    """The results and HTML folders of a run: those given, else a quick look's or asv.conf.json's."""
    default = (QUICK_RESULTS, QUICK_HTML) if params.quick() else (RESULTS, HTML)
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


def launch_method() -> list[str]:
    """asv run's ``--launch-method``: ``forkserver`` where no CUDA device is here, else asv.conf.json's ``spawn``.

    With spawn every benchmark process starts Python and imports numpy and the suite: 0.45 s of each of a
    default run's ~170 processes here (76 s). The forkserver imports the suite once and forks a process per
    benchmark. CUDA and fork do not mix (a CUDA context does not survive a fork), so a machine with a
    device keeps spawn.
    """
    from . import host

    return [] if host.gpu_present() else ["--launch-method", "forkserver"]


def asv_selection(bench: str | None) -> list[str]:
    """asv run's ``--bench`` arguments: the combinations the variables chose (and ``bench``'s narrowing)."""
    grid = params.read_grid(BENCHMARK_DIR)
    if grid is None:
        return ["--bench", bench] if bench else []
    return [arg for regex in params.selection(grid, bench) for arg in ("--bench", regex)]


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
            say(line)
    return version, env


def allow_busy_from(flag: bool) -> bool:
    """``--allow-busy``, or :data:`ALLOW_BUSY_VARIABLE` set to 1 (0 or unset: not); BadInput on anything else."""
    text = os.environ.get(ALLOW_BUSY_VARIABLE, "").strip()
    if text not in ("", "0", "1"):
        raise BadInput(f"{ALLOW_BUSY_VARIABLE}={text!r}: use 1 (measure on a busy machine, flagged) or 0")
    return flag or text == "1"


def busy_before(allow_busy: bool) -> int | None:
    """Watch the cores before measuring: EXIT_BUSY with one line when others take them, else None."""
    from .measure import contention

    before = contention.sample_cpu()
    if before.lost_share is None:
        say("no /proc/stat here: the CPU time others take is not checked")
        return None
    line = f"before measuring, other processes took {before.lost_share:.0%} of the CPU time"
    status = busy_exit(0, before.contended, allow_busy)
    if not before.contended:
        say(f"{line}: quiet enough")
    elif status == 0:
        say(f"{line}; measuring anyway (--allow-busy): the run will be flagged")
    else:
        say(
            f"busy machine: {line} ({'; '.join(before.reasons())}); measure on a quiet machine, "
            "or pass --allow-busy (make bench ALLOW_BUSY=1) to record flagged figures"
        )
    return status or None


def snapshot(results: Path) -> ResultsFolder:
    """The results folder as it is now, each file read once (an empty one where there is none yet): before asv runs,
    to say what it wrote and to restore what an interrupted asv left unreadable; after, for everything read back."""
    return asv_files.load(results) if results.is_dir() else ResultsFolder(results)


def measured_anything(after: MachineFolder, before: MachineFolder) -> bool:
    """Whether a result file asv wrote in a machine's folder since ``before`` (its :func:`snapshot`) holds any value:
    a project that does not build leaves none, or one whose every benchmark failed."""
    old = before.snapshot()
    return any(file.measured() for file in after.files if old.get(file.path) != file.raw)


def kept_results(folder: Path, before: MachineFolder) -> str:
    """After an interrupted asv: restore any earlier file of a machine's ``folder`` asv left unreadable; say what
    is kept."""
    old, now = before.snapshot(), asv_files.load_machine(folder)
    restored = []
    for path, data in old.items():
        file = now.info if path.name == asv_files.MACHINE_FILE else now.file(path.name)
        if file is None or not file.parsed:
            asv_files.write(path, data)
            restored.append(path.name)
    if restored:
        now = asv_files.load_machine(folder)
    files = now.files
    changed = [f.path.name for f in files if old.get(f.path) != f.raw]
    line = f"results kept in {folder}: {len(files)} result file(s)"
    line += f", {len(files) - len(changed)} untouched" if files else ""
    line += f"; written by this run: {', '.join(changed)}" if changed else "; this run recorded nothing"
    if restored:
        line += f"; restored from before the run: {', '.join(restored)}"
    return line
