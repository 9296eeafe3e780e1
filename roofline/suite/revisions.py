"""Commits by any name git knows, and the asv environments this interpreter's runs are filed under.

``roofline compare --commits`` and ``roofline regress`` take what a user types (``HEAD~1``, a tag, a branch,
a hash prefix) and resolve it with ``git rev-parse`` in the project's repository (the folder they run in,
as asv does); results are filed under the full hash.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..errors import BadInput
from .results import Results


def rev_parse(rev: str, repo: Path | None = None) -> str | None:
    """The full commit hash git gives ``rev`` in ``repo`` (default: the current folder); None where git does
    not know it there (no repository, no such revision, no git)."""
    text = (rev or "").strip()
    if not text or text.startswith("-"):
        return None
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{text}^{{commit}}"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = proc.stdout.strip()
    return out if proc.returncode == 0 and len(out) >= 40 else None


def commit_of(rev: str, repo: Path | None = None) -> str:
    """:func:`rev_parse` or BadInput naming the revision and the repository."""
    full = rev_parse(rev, repo)
    if full is None:
        where = Path(repo or ".").resolve()
        raise BadInput(f"git rev-parse does not know {rev!r} as a commit in {where}")
    return full


def env_names(python: str | None = None) -> dict[str, str]:
    """{asv environment name: what runs in it} for this interpreter, most likely first: asv's virtualenv
    for its Python version (``make bench``, ``roofline regress``) and this very interpreter (``asv run
    --python=same``, ``roofline bench --python-same``). asv's own naming where asv is installed."""
    version = python or f"{sys.version_info.major}.{sys.version_info.minor}"
    exe = os.path.abspath(sys.executable)
    try:
        from asv.environment import get_env_name

        virtualenv = get_env_name("virtualenv", version, {}, {})
        existing = get_env_name("existing", exe.replace(os.path.sep, "_"), {}, {})
    except ImportError:
        virtualenv, existing = f"virtualenv-py{version}", f"existing-py{exe.replace(os.path.sep, '_')}"
    return {
        virtualenv: f"make bench and roofline regress run in (asv's virtualenv, Python {version})",
        existing: "asv run --python=same runs in (this interpreter)",
    }


def resolve_revision(results: Results, rev: str, repo: Path | None = None) -> str:
    """The full hash of ``rev`` among the results: a hash prefix they hold, else what ``git rev-parse`` names
    in ``repo`` (the current folder: the project's repository). BadInput naming it where neither holds."""
    text = (rev or "").strip()
    hexlike = bool(text) and all(c in "0123456789abcdef" for c in text.lower())
    problem = None
    if hexlike:
        try:
            return results.resolve_commit(text)
        except BadInput as exc:
            problem = exc
    full = rev_parse(text, repo)
    if full is None:
        if problem is not None:
            raise problem
        where = Path(repo or ".").resolve()
        raise BadInput(f"commit {rev!r} is neither a hash in the results nor a revision git knows in {where}")
    try:
        return results.resolve_commit(full)
    except BadInput:
        known = sorted({c for m in results.machines.values() for c in m.runs})
        sample = ", ".join(c[:8] for c in known[:6]) or "none"
        raise BadInput(
            f"commit {rev!r} ({full[:8]}) has no results in {results.path} (known: {sample}); "
            "roofline regress BEFORE AFTER measures both"
        ) from None
