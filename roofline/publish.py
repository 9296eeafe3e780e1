"""Finishing asv's published HTML as roofline's page, whoever published it.

``asv publish`` clears its HTML folder and writes asv's page; this makes it what ``make bench`` leaves:
asv's page working offline (:func:`~roofline.suite.offline_html.make_offline`: its CDN libraries from
roofline, the graphs no machine has a value for not listed), the report's picture, the comparison page
(``compare.html``) and the landing page in front of asv's (moved to ``asv.html``). ``roofline bench``
calls these one by one with the run it just made; :func:`finish` does it for a plain ``asv publish``
(through :mod:`roofline.asv_plugin`), from the run last recorded.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from .errors import BadInput
from .host import llc_bytes
from .model.guards import llc_overridden
from .report.page import PICTURE
from .suite.notes import Note

#: Set by ``roofline bench`` for the ``asv publish`` it runs: it finishes the page itself, with the run's own
#: report, so the asv plugin leaves the folder as asv wrote it.
BY_VARIABLE = "ROOFLINE_PUBLISH_BY"

#: The gallery in a checkout (examples/results): make bench's comparison page sets this machine beside it.
DEFAULT_GALLERY = Path("examples/results")


def compare_page(results: Path, html: Path, gallery: Path) -> None:
    """The comparison page (compare.html) beside asv's index, linked from it: this run's machines and the
    gallery's; a line on stderr, and no page, where they cannot be compared."""
    from .report.compare import build_comparison, summarize
    from .report.compare_page import link_from_index, write_page
    from .suite.results import combine, read_results

    if not (html / "index.html").is_file():
        return
    folders = [results] + ([gallery] if gallery.is_dir() and gallery.resolve() != results.resolve() else [])
    try:
        summaries, _ = summarize(combine([read_results(f) for f in folders]))
        page = write_page(build_comparison(summaries, [str(f) for f in folders]), html)
    except (BadInput, OSError) as exc:
        print(f"roofline: no comparison page: {exc}", file=sys.stderr)
        return
    linked = link_from_index(html)
    print(
        f"roofline: machines compared in {page.resolve()}{', linked from asv' + chr(39) + 's index' if linked else ''}"
    )


def offline(html: Path) -> int:
    """asv's page made to work without the internet (its CDN libraries from roofline); 0, or 1 if it could not."""
    from .suite.offline_html import make_offline

    try:
        notes = make_offline(html)
    except BadInput as exc:
        print(f"roofline: {exc}", file=sys.stderr)
        return 1
    for line in notes:
        print(f"roofline: HTML: {line}")
    return 0


def landing(html: Path, results: Path, machine: str, commit: str, report_text: str | None) -> None:
    """roofline's landing page in front of asv's: the picture, the report, links into asv's graphs."""
    from .report.page import write_landing
    from .suite.results import read_results

    try:
        page = write_landing(html, report_text, read_results(results), machine, commit)
    except BadInput as exc:
        print(f"roofline: no landing page ({exc}); asv's page is {(html / 'index.html').resolve()}", file=sys.stderr)
        return
    print(f"roofline: HTML in {page.resolve()}, works offline (serve it with: roofline serve)")


def report(
    results: Path,
    machine: str,
    commit: str,
    html: Path,
    lost_during: float | None,
    echo: bool = True,
    notes: tuple[Note, ...] = (),
) -> tuple[str | None, str | None]:
    """The report of the results just recorded, printed (``echo``), and its picture beside the HTML; return its
    contention headline, if any, and its text. ``notes``: why rows have no figure, as the run said."""
    from .report.cpu import render_text
    from .report.from_results import report_from_results, with_reasons

    try:
        report = report_from_results(results, machine=machine, commit=commit, lost_during_run=lost_during)
        report = with_reasons(report, notes)
        # The machine file keeps the OS's LLC (a stable fact); the run just made sized its pools in this
        # environment, so a ROOFLINE_LLC_BYTES override is the LLC this report is about.
        llc, source = llc_bytes()
        if source == "ROOFLINE_LLC_BYTES":
            facts = {**report.facts, "llc_bytes": llc, "llc_source": source}
            warnings = (*report.warnings, *llc_overridden(float(llc), source))
            report = dataclasses.replace(report, facts=facts, warnings=warnings)
    except BadInput as exc:
        print(f"roofline: no report: {exc}", file=sys.stderr)
        return None, None
    text = render_text(report)
    if echo:
        print()
        print(text)
    try:
        from .report.plot import plot_report

        html.mkdir(parents=True, exist_ok=True)
        path = plot_report([report], html / PICTURE)
        print(f"{chr(10) if echo else ''}roofline plot: {path.resolve()}")
    except BadInput as exc:
        print(f"roofline: no plot: {exc}", file=sys.stderr)
    return (report.conditions.headline() if report.conditions is not None else None), text


def last_recorded(results: Path) -> tuple[str | None, str | None]:
    """(machine, commit) of the result file written last in ``results`` (None, None when there is none)."""
    files = [p for p in Path(results).glob("*/*.json") if p.name != "machine.json"]
    for path in sorted(files, key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            commit = json.loads(path.read_text(encoding="utf-8")).get("commit_hash")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(commit, str) and commit:
            return path.parent.name, commit
    return None, None


def finish(html: Path, results: Path, gallery: Path = DEFAULT_GALLERY) -> int:
    """Make a folder ``asv publish`` just wrote roofline's page (see the module); 0, or 1 where asv's page could
    not be made to work offline (the rest is then left as asv wrote it). The report and the landing page are
    of the run last recorded."""
    if offline(html) != 0:
        return 1
    machine, commit = last_recorded(results)
    text = report(results, machine, commit, html, None, echo=False)[1] if machine else None
    compare_page(results, html, gallery)
    landing(html, results, machine, commit, text)
    return 0
