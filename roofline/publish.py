"""Finishing asv's published HTML as roofline's page, whoever published it.

``asv publish`` clears its HTML folder and writes asv's page; this makes it what ``make bench`` leaves:
asv's page working offline (:func:`~roofline.suite.offline_html.make_offline`: its CDN libraries from
roofline, the graphs no machine has a value for not listed), the report's picture, the comparison page
(``compare.html``) and the landing page in front of asv's (moved to ``asv.html``). ``roofline bench``
calls these one by one with the run it just made; :func:`finish` does it for a plain ``asv publish``
(through :mod:`roofline.asv_plugin`), from the run last recorded. Each reads the results folder as the command
read it once (:func:`read`): its :class:`~roofline.suite.results.Results`, or why there are none, which each page
that needs them says.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from .errors import BadInput
from .host import llc_bytes
from .model.guards import llc_overridden
from .report.page import PICTURE
from .suite import asv_files
from .suite.asv_files import ResultsFolder
from .suite.notes import Note
from .suite.results import GALLERY, Results, read_results, results_of

#: The results folder as a command read it once: its results, or why it holds none (:func:`read`).
Read = Results | BadInput

#: Set by ``roofline bench`` for the ``asv publish`` it runs: it finishes the page itself, with the run's own
#: report, so the asv plugin leaves the folder as asv wrote it.
BY_VARIABLE = "ROOFLINE_PUBLISH_BY"

def read(results: Path | ResultsFolder) -> Read:
    """The results folder (a path, or the files :func:`~roofline.suite.asv_files.load` read already) as the
    pages below take it: its results, or the BadInput that says why it holds none."""
    try:
        return results_of(results) if isinstance(results, ResultsFolder) else read_results(results)
    except BadInput as exc:
        return exc


def _results(results: Read) -> Results:
    """``results``, or the BadInput that says why there are none, raised."""
    if isinstance(results, BadInput):
        raise results
    return results


def compare_page(results: Read, html: Path, gallery: Path) -> None:
    """The comparison page (compare.html) beside asv's index, linked from it: this run's machines and the
    gallery's (read here: it is another folder); a line on stderr, and no page, where they cannot be compared."""
    from .report.compare import build_comparison
    from .report.compare_page import link_from_index, write_page
    from .report.summary import summarize
    from .suite.results import combine

    if not (html / "index.html").is_file():
        return
    try:
        res = _results(results)
        other = gallery.is_dir() and gallery.resolve() != res.path.resolve()
        folders = [res.path] + ([gallery] if other else [])
        summaries, _ = summarize(combine([res] + [read_results(f) for f in folders[1:]]))
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


def landing(html: Path, results: Read, machine: str | None, commit: str | None, report_text: str | None) -> None:
    """roofline's landing page in front of asv's: the picture, the report, links into asv's graphs."""
    from .report.page import write_landing

    try:
        page = write_landing(html, report_text, _results(results), machine, commit)
    except BadInput as exc:
        print(f"roofline: no landing page ({exc}); asv's page is {(html / 'index.html').resolve()}", file=sys.stderr)
        return
    print(f"roofline: HTML in {page.resolve()}, works offline (serve it with: roofline serve)")


def report(
    results: Read,
    machine: str,
    commit: str,
    html: Path,
    lost_during: float | None,
    echo: bool = True,
    notes: tuple[Note, ...] = (),
) -> tuple[str | None, str | None]:
    """The report of the results just recorded, printed (``echo``), and its picture beside the HTML; return its
    contention headline, if any, and its text. ``notes``: why rows have no figure, as the run said."""
    from .report.from_results import report_from_results, with_reasons
    from .report.text import render_text

    try:
        report = report_from_results(_results(results), machine=machine, commit=commit, lost_during_run=lost_during)
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


def last_recorded(results: ResultsFolder) -> tuple[str | None, str | None]:
    """(machine, commit) of the result file written last in ``results`` (None, None when there is none)."""
    files = [f for m in results.machines.values() for f in m.files if f.commit]
    last = max(files, key=lambda f: f.mtime, default=None)
    return (last.path.parent.name, last.commit) if last is not None else (None, None)


def finish(html: Path, results: Path, gallery: Path = GALLERY) -> int:
    """Make a folder ``asv publish`` just wrote roofline's page (see the module); 0, or 1 where asv's page could
    not be made to work offline (the rest is then left as asv wrote it). The report and the landing page are
    of the run last recorded; the results folder is read once for all of them."""
    if offline(html) != 0:
        return 1
    try:
        folder: ResultsFolder | None = asv_files.load(results)
    except BadInput:
        folder = None
    res = read(folder if folder is not None else results)
    machine, commit = last_recorded(folder) if folder is not None else (None, None)
    text = report(res, machine, commit, html, None, echo=False)[1] if machine else None
    compare_page(res, html, gallery)
    landing(html, res, machine, commit, text)
    return 0
