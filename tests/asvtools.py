"""Helpers for tests that run asv for real: a scratch copy of the project committed in git,
and asv invoked with a private HOME (its machine file) and small suite sizes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASV = [sys.executable, "-m", "asv"]

#: Sizes that keep a whole asv run to seconds.
SMALL_ENV = {
    "ROOFLINE_N": "256",
    "ROOFLINE_BATCH": "1,8",
    "ROOFLINE_CACHE_N": "256",
    "ROOFLINE_SWEEP_N": "256",
    "ROOFLINE_GEMM_N": "512",
    "ROOFLINE_LLC_BYTES": "1M",
    "ROOFLINE_BACKEND_N": "256",
    "ROOFLINE_BACKEND_BATCH": "1",
    # the CUDA class runs (and skips without a GPU) at its fixed grid's 8192 × 1, two of its dtypes
    "ROOFLINE_GPU_DTYPES": "bf16,fp8",
    "ROOFLINE_MODEL": "llama-3-8b:layers=1,hidden=64,heads=4,kv_heads=2,head_dim=16,intermediate=128,vocab=256",
    "ROOFLINE_ENGINE_MODEL": "llama-3.2-1b:layers=1,hidden=64,heads=4,kv_heads=2,intermediate=128,vocab=256",
    # each likwid-bench run sleeps 1 s, and the level sweep was ~40 % of a run's measurement: both stay on
    # only in the session's one shared bench (conftest.made_bench), which reads them
    "ROOFLINE_REFEREE": "off",
    "ROOFLINE_LEVELS": "off",
}


def scratch_repo(dest: Path) -> Path:
    """Copy the working tree (tracked and untracked-not-ignored files) into a fresh git repo."""
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "scratch")
    return dest


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()


def asv_env(repo: Path, home: Path, cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOFLINE_")}
    env.update(SMALL_ENV)
    env.update({"HOME": str(home), "ASV_PYTHONPATH": str(repo), "ROOFLINE_CACHE_DIR": str(cache)})
    env.update(extra)
    return env


#: Seconds an `asv run` or `roofline bench` at SMALL_ENV sizes may take before a test calls it hung.
#: Beside two busy loops on a 2-core VM one `roofline bench` took 322-428 s (three asv rounds of the
#: time_ twins, each running to its 10 s limit under load); 600 s timed out once at load average 5.3.
RUN_TIMEOUT_S = 900


def asv(repo: Path, env: dict[str, str], *args: str, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ASV, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def selection(repo: Path, env: dict[str, str], only: str | None = None) -> list[str]:
    """asv run's ``--bench`` arguments for the combinations ``env`` chooses (what `roofline bench` passes)."""
    code = (
        "import json, sys; from roofline.asv_driver import asv_selection; "
        "print(json.dumps(asv_selection(sys.argv[1] or None)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, only or ""], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


#: `roofline bench` as the tests run it. --allow-busy: they run beside other work
#: (test_bench_faults.test_a_busy_machine_stops_bench_before_it_measures checks the refusal without it).
BENCH = [sys.executable, "-m", "roofline", "bench", "--python-same", "--machine", "box", "--allow-busy"]


def bench(repo: Path, env: dict[str, str], *extra: str, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    """`roofline bench` (:data:`BENCH`, then ``extra``) in ``repo``, no standard input, its output captured."""
    return subprocess.run(
        [*BENCH, *extra], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def result_files(repo: Path, machine: str) -> list[Path]:
    d = repo / ".asv" / "results" / machine
    return sorted(p for p in d.glob("*.json") if p.name != "machine.json")


def load_results(path: Path) -> dict[str, list]:
    """benchmark name → (values, params) from one asv 0.6 result file."""
    doc = json.loads(path.read_text())
    cols = doc["result_columns"]
    out = {}
    for name, row in doc["results"].items():
        rec = dict(zip(cols, row, strict=False))  # asv trims trailing empty columns
        out[name] = (rec["result"], rec.get("params") or [])
    return out
