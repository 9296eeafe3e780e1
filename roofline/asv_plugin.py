"""roofline's asv plugin: asv.conf.json's ``plugins`` names it, so every asv command of the suite loads it.

- ``asv run``, ``asv continuous``, ``asv find``: asv runs the combinations the ``ROOFLINE_*`` variables
  choose (:func:`roofline.suite.params.selection`, narrowed by ``--bench`` and ``ROOFLINE_BENCH``) and
  leaves out the classes that cannot run here (:mod:`roofline.suite.runnable`), one line saying why:
  asv starts no process for either. benchmarks.json keeps every benchmark (asv writes it from discovery).
- ``asv publish``: the folder it clears and rewrites becomes roofline's page again, as ``make bench``
  leaves it (:func:`roofline.publish.finish`): offline, the picture, the comparison and landing pages.

asv 0.6.6 loads a plugin module and calls its ``setup()`` but calls no hook of it (``run_hook`` has no
caller), so :func:`setup` wraps the two classmethods asv's commands go through: ``Benchmarks.discover``
and ``Publish.run``. The wrappers call asv's own and then do roofline's part; where roofline cannot (a
bad ``ROOFLINE_*`` value), asv stops with roofline's one line.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from pathlib import Path

_WRAPPED = "_roofline_wrapped"


def _say(line: str) -> None:
    print(f"roofline: {line}", file=sys.stderr, flush=True)


def _missing(env, names: list[str]) -> set[str] | None:
    """The modules of ``names`` asv's environment ``env`` cannot find; None when it cannot be asked."""
    from .suite.runnable import PROBE

    try:
        out = env.run(["-c", PROBE, *names], dots=False, display_error=False)
    except Exception:  # asv's ProcessError, an environment that is not there: leave every class in
        return None
    return {line.strip() for line in str(out).splitlines() if line.strip()}


def _labels(found) -> list[str]:
    """The names asv matches ``--bench`` against (``name(param, ...)``) of the benchmarks asv selected."""
    out = []
    for name, bench in found.items():
        params = bench.get("params") or []
        out += [f"{name}({', '.join(c)})" for c in itertools.product(*params)] if params else [name]
    return out


def narrowed(conf, environments, regex, found) -> list[str] | None:
    """asv's ``--bench`` regexes for this suite (None: not roofline's suite, asv's own selection stands); one
    line for each kind of benchmark left out that ``found`` (asv's own selection) holds."""
    from .suite import notes, params, runnable

    grid = params.read_grid(conf.benchmark_dir)
    if grid is None:
        return None
    names = runnable.modules_needed()
    left_out = runnable.cannot_run(_missing(env, names) for env in environments)
    labels = _labels(found)
    lines = runnable.summary([i for i in left_out if any(re.match(i.regex, label) for label in labels)])
    if lines:
        print(flush=True)  # asv leaves its "Discovering benchmarks" line open
    for line in lines:
        _say(line)
    notes.write_notes([notes.Note(i.what, (), "skipped", i.why) for i in left_out])
    user = [regex] if isinstance(regex, str) else list(regex or [])
    return params.selection(grid, user or None, [item.regex for item in left_out])


def _discover(original):
    def discover(cls, conf, repo, environments, commit_hash, regex=None, check=False):
        found = original(cls, conf, repo, environments, commit_hash, regex=regex, check=check)
        from asv import util

        from .errors import BadInput

        try:
            selection = narrowed(conf, environments, regex, found)
        except BadInput as exc:
            raise util.UserError(f"roofline: {exc}") from None
        if selection is None:
            return found
        return cls(conf, list(found._all_benchmarks.values()), regex=selection)

    return discover


def _publish(original):
    def run(cls, conf, range_spec=None, pull=True):
        status = original(cls, conf, range_spec=range_spec, pull=pull)
        from asv.console import log

        from .publish import BY_VARIABLE, finish

        if not status and os.environ.get(BY_VARIABLE) != "roofline":
            log.flush()
            print(flush=True)  # asv leaves its last line open
            finish(Path(conf.html_dir), Path(conf.results_dir))
        return status

    return run


def setup() -> None:
    """asv's plugin entry point (once per asv command): wrap discovery and publishing, once."""
    from asv.benchmarks import Benchmarks
    from asv.commands.publish import Publish

    for owner, attr, wrap in ((Benchmarks, "discover", _discover), (Publish, "run", _publish)):
        current = owner.__dict__[attr]
        if getattr(current.__func__, _WRAPPED, False):
            continue
        wrapped = wrap(current.__func__)
        setattr(wrapped, _WRAPPED, True)
        setattr(owner, attr, classmethod(wrapped))
