"""The page ``make bench``'s HTML opens on: what was measured, with asv's history one click away.

asv's own page, after a first run, is a grid of thumbnails with one point each. roofline's landing page
(``index.html``) shows instead the roofline picture, the report, the machine comparison and a table of
asv's graphs, each link opening asv's graph page (``asv.html``, asv's ``index.html`` moved) with the
parameters that were measured selected and, where every batch was measured, batch on the x-axis.
Like asv's page it needs no network: one file, its style inline.

The page is a list of :class:`Section`; :func:`sections` builds the default ones and
:func:`write_landing` writes them. A generator of another page (``compare.html``) links from here by
existing: the comparison section links to :data:`COMPARE_PAGE` when the file is there when the landing
page is written, so write it first (or call :func:`write_landing` again after).
"""

from __future__ import annotations

import html as _html
import json
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..files import atomic_path
from ..suite.offline_html import ASV_PAGE, INDEX, asv_page_in_index
from ..suite.results import Results, Run, parse_param

#: The machine comparison's page, beside this one (written by its own generator, before this page).
COMPARE_PAGE = "compare.html"
#: The picture ``make bench`` writes beside the HTML.
PICTURE = "roofline.png"

STYLE = """
body { font: 16px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 78rem; padding: 0 1.5rem 3rem; color: #222; }
h1 { font-size: 1.7rem; margin: 1.2rem 0 0.3rem; } h2 { font-size: 1.3rem; margin-top: 2rem; }
nav a { margin-right: 1.2rem; } img { max-width: 100%; border: 1px solid #ddd; }
pre { font-size: 13px; line-height: 1.35; background: #f7f7f7; padding: 0.8rem; overflow-x: auto; }
table { border-collapse: collapse; font-size: 14px; } td, th { padding: 0.25rem 0.7rem; text-align: left; }
tr:nth-child(even) { background: #f4f4f4; } th { border-bottom: 1px solid #999; } .lead { color: #444; }
"""


@dataclass(frozen=True)
class Section:
    """One part of the page: its anchor, heading and HTML body."""

    id: str
    title: str
    body: str


def _e(text: object) -> str:
    return _html.escape(str(text), quote=True)


def graph_link(name: str, entry: dict[str, object], measured: dict[str, list[object]], machine: str | None) -> str:
    """asv's graph page for ``name`` with the measured parameter values selected (asv's ``p-<param>``
    selections, by its repr strings as ``index.json`` lists them), the machine picked and, where every
    batch of the grid was measured, batch on the x-axis (asv spans the axis over all of them)."""
    query: list[tuple[str, str]] = [("machine", machine)] if machine else []
    names = list(entry.get("param_names") or [])
    for name_, reprs in zip(names, entry.get("params") or [], strict=False):
        wanted = measured.get(name_, [])
        query += [(f"p-{name_}", r) for r in reprs if parse_param(r) in wanted]
    batches = dict(zip(names, entry.get("params") or [], strict=False)).get("batch", [])
    if len(measured.get("batch", [])) > 1 and len(measured["batch"]) == len(batches):
        query.append(("x-axis", "batch"))  # every batch of the grid: a curve (a subset would sit squeezed at the left)
    text = "&".join(f"{urllib.parse.quote(k)}={urllib.parse.quote(str(v), safe='')}" for k, v in query)
    return f"{ASV_PAGE}#{name}" + (f"?{text}" if text else "")


def measured_params(run: Run, name: str) -> dict[str, list[object]]:
    """Each parameter's values with a figure in ``run`` (failed and skipped combinations left out)."""
    out: dict[str, list[object]] = {}
    for params, value in run.points(name):
        if value is None:
            continue
        for key, v in params.items():
            if v not in out.setdefault(key, []):
                out[key].append(v)
    return out


def _measured_text(measured: dict[str, list[object]]) -> str:
    return "; ".join(f"{k} {', '.join(str(v) for v in vs)}" for k, vs in measured.items()) or "(no parameters)"


def graphs_section(index: dict[str, object], run: Run | None, machine: str | None) -> Section:
    """A row per benchmark asv lists that this run measured, its link opening what was measured."""
    benchmarks = index.get("benchmarks") if isinstance(index.get("benchmarks"), dict) else {}
    rows = []
    order = sorted(benchmarks, key=lambda n: (not n.startswith("decode."), n))
    for name in order:
        measured = measured_params(run, name) if run is not None else {}
        if run is not None and not any(v is not None for _, v in run.points(name)):
            continue
        entry = benchmarks[name]
        title = entry.get("pretty_name") or name
        link = graph_link(name, entry, measured, machine)
        rows.append(
            f'<tr><td><a href="{_e(link)}">{_e(title)}</a></td><td>{_e(name.split(".")[0])}</td>'
            f"<td>{_e(_measured_text(measured))}</td></tr>"
        )
    body = (
        f"<p class=\"lead\">Each link opens asv's graph with what this run measured selected; asv's own pages: "
        f'<a href="{ASV_PAGE}">every benchmark</a>, <a href="{ASV_PAGE}#regressions">regressions</a>, '
        f'<a href="{ASV_PAGE}#summarylist">the list</a>.</p>'
        "<table><tr><th>graph</th><th>module</th><th>measured</th></tr>" + "".join(rows) + "</table>"
    )
    return Section("graphs", "In asv: the history of each figure", body)


def compare_section(html: Path, machines: Sequence[str]) -> Section:
    """The link to the machine comparison where its page exists; else how to get one."""
    if (html / COMPARE_PAGE).is_file():
        body = f'<p><a href="{COMPARE_PAGE}">This machine beside the others</a> ({len(machines)} in these results).</p>'
    else:
        names = ", ".join(machines) or "none"
        body = (
            f"<p>Machines in these results: {_e(names)}. Another machine's results, gathered here with "
            "<code>roofline merge</code>, are compared with <code>roofline compare .asv/results --plot FILE</code>.</p>"
        )
    return Section("compare", "Machines compared", body)


def sections(
    html: Path, report_text: str | None, results: Results | None, machine: str | None, commit: str | None
) -> list[Section]:
    """The landing page's default sections: the picture, the report, the comparison, asv's graphs."""
    try:
        index = json.loads((html / "index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        index = {}
    run = None
    if results is not None and machine in results.machines:
        m = results.machines[machine]
        run = m.run(commit) if commit in m.runs else m.run(m.latest() or "")
    out = []
    if (html / PICTURE).is_file():
        alt = "the measured roofline: each memory level's and dtype's roof, the decode points under them"
        out.append(Section("picture", "The roofline", f'<img src="{PICTURE}" alt="{_e(alt)}">'))
    text = report_text if report_text else "no report: see what roofline bench printed"
    out.append(Section("report", "The report", f"<pre>{_e(text)}</pre>"))
    out.append(compare_section(html, sorted(results.machines) if results is not None else []))
    out.append(graphs_section(index if isinstance(index, dict) else {}, run, machine))
    return out


def render(title: str, lead: str, parts: Sequence[Section]) -> str:
    """The page: a heading, a line under it, a contents line, then each section."""
    nav = " ".join(f'<a href="#{_e(s.id)}">{_e(s.title)}</a>' for s in parts)
    body = "".join(f'<section id="{_e(s.id)}"><h2>{_e(s.title)}</h2>{s.body}</section>' for s in parts)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{_e(title)}</h1><p class="lead">{lead}</p><nav>{nav}</nav>{body}</body></html>\n'
    )


def write_landing(
    html: Path,
    report_text: str | None = None,
    results: Results | None = None,
    machine: str | None = None,
    commit: str | None = None,
) -> Path:
    """Move asv's page to ``asv.html`` (when ``index.html`` is still asv's) and write the landing page in its place.

    BadInput when ``html`` holds no published page or cannot be written; nothing is moved then.
    """
    html = Path(html)
    if not (html / INDEX).is_file() and not (html / ASV_PAGE).is_file():
        raise BadInput(f"{html} holds no published page (run asv publish first)")
    where = f"{machine} at {commit[:8]}" if machine and commit else machine or "this machine"
    lead = (
        "Where LLM decoding stops waiting on memory and starts waiting on arithmetic, measured here: "
        f'the picture, the report, and <a href="{ASV_PAGE}">asv\'s pages</a> with the history of every figure.'
    )
    page = render(f"roofline: {where}", lead, sections(html, report_text, results, machine, commit))
    try:
        with atomic_path(html / INDEX) as tmp:
            tmp.write_text(page, encoding="utf-8")
            if asv_page_in_index(html):
                (html / INDEX).replace(html / ASV_PAGE)
    except OSError as exc:
        raise BadInput(f"cannot write the landing page in {html}: {exc.strerror or exc}") from None
    return html / INDEX
