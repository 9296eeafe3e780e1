"""The comparison page: ``compare.html`` beside asv's HTML, static and offline.

asv has no page that sets machines side by side (asv issue #1220). :func:`write_page` writes one
into a folder (``roofline compare --html DIR``; ``make bench`` into asv's html folder, linked from
asv's navigation bar by :func:`link_from_index`): the table of :mod:`roofline.report.compare`
and one picture, ``compare.svg``, of every machine's measured roofs and DRAM decode points with
each machine's crossover (``compare --plot``'s picture); with ``compare --model`` a second one
beside it, ``compare-decode.svg``, of each machine's predicted and bound tokens/s by batch
(:func:`draw_decode`). Plain HTML and SVG images, no script and no address outside the folder:
it opens from the disk as well as from a server.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from ..errors import BadInput
from ..files import atomic_write
from ..suite.offline_html import asv_page
from .compare import CHANGED, Comparison, Row, cell_text, direction_mark, legend
from .plot import DPI, plot_overlay, pyplot, save_figure  # the one picture of several machines, compare --plot's

PAGE = "compare.html"
PICTURE = "compare.svg"
#: compare --model's picture: predicted tokens/s by batch, beside the rooflines.
DECODE_PICTURE = "compare-decode.svg"
#: The entry :func:`link_from_index` adds to asv's navigation bar, found again by its id.
NAV_ID = "nav-li-roofline-compare"
NAV_ITEM = f'<li id="{NAV_ID}"><a href="{PAGE}">Machines compared</a></li>'

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 2px 10px; border-bottom: 1px solid #e4e4e4; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th.section { text-align: left; background: #f3f3f3; padding-top: 6px; }
td.unit { color: #666; }
.ratio { color: #555; font-size: 90%; }
.better { color: #1a7f37; } .worse { color: #b42318; }
.changed { color: #b42318; }
ul.legend { color: #444; }
img { max-width: 100%; border: 1px solid #ddd; }
.pictures { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.pictures img { max-width: 62%; } .pictures img.decode { max-width: 36%; }
"""


def check_page_folder(folder: Path) -> None:
    """BadInput unless ``folder`` is a folder, or can be made one in an existing folder."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise BadInput(f"--html {folder}: not a directory")
    if not folder.exists() and not folder.resolve().parent.is_dir():
        raise BadInput(f"--html {folder}: folder {folder.resolve().parent} does not exist")


def _ratio_class(row: Row, ratio: float | None) -> str:
    if ratio is None or row.better is None or ratio == 1:
        return "ratio"
    good = ratio > 1 if row.better == "higher" else ratio < 1
    return f"ratio {'better' if good else 'worse'}"


def _cell(cmp: Comparison, row: Row, i: int) -> str:
    cell = row.cells[i]
    text = html.escape(cell_text(row, cell))
    title = html.escape(cell.note or cell.interval_from)
    classes = "fact" if row.kind == "fact" else "num changed" if cell.status == CHANGED else "num"
    out = f'<td class="{classes}" title="{title}">{text}'
    if row.ratios and cmp.baseline and cmp.names[i] != cmp.baseline and row.ratios[i] is not None:
        out += f' <span class="{_ratio_class(row, row.ratios[i])}">{row.ratios[i]:.3g}×</span>'
    return out + "</td>"


def table_html(cmp: Comparison) -> str:
    """The comparison table: a section heading per group of rows, a column per machine."""
    head = "".join(f"<th>{html.escape(m)}{' (baseline)' if m == cmp.baseline else ''}</th>" for m in cmp.names)
    lines = [f"<table><thead><tr><th>machine</th><th></th>{head}</tr></thead><tbody>"]
    section = ""
    for row in cmp.rows:
        if row.key == "machine":
            continue
        if row.section != section:
            section = row.section
            lines.append(f'<tr><th class="section" colspan="{len(cmp.names) + 2}">{html.escape(section)}</th></tr>')
        unit = f"{direction_mark(row.better)} {row.unit}".strip() if row.kind != "fact" else ""
        cells = "".join(_cell(cmp, row, i) for i in range(len(cmp.names)))
        lines.append(
            f'<tr><td>{html.escape(row.label.strip())}</td><td class="unit">{html.escape(unit)}</td>{cells}</tr>'
        )
    lines.append("</tbody></table>")
    return "\n".join(lines)


def page_html(cmp: Comparison, picture: str | None, note: str = "", decode: str | None = None) -> str:
    """The whole page: sources, the pictures (the rooflines, and ``decode``'s tokens/s beside them), the table,
    its legend."""
    sources = ", ".join(html.escape(s) for s in cmp.sources) or "asv results"
    images = [f'<img src="{picture}" alt="every machine\'s roofline and crossover">'] if picture else []
    if decode:
        title = html.escape(cmp.question.title) if cmp.question else ""
        images.append(f'<img class="decode" src="{decode}" alt="predicted decode tokens/s by batch, {title}">')
    figure = f'<div class="pictures">{"".join(images)}</div>' if images else ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in legend(cmp))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>roofline: machines compared</title>
<style>{STYLE}</style></head><body>
<h1>Machines compared</h1>
<p>From {sources}: {len(cmp.names)} machine(s){f", baseline {html.escape(cmp.baseline)}" if cmp.baseline else ""}.
Written by <code>roofline compare --html</code>;
<a href="index.html">the run's page</a> and asv's pages hold each machine's history.</p>
{figure}{f"<p>{html.escape(note)}</p>" if note else ""}
{table_html(cmp)}
<ul class="legend">{items}</ul>
</body></html>
"""


def draw_decode(cmp: Comparison):
    """``compare --model``'s picture: each machine's predicted tokens/s by batch (solid, its colour in the
    rooflines beside it) and its bound (dotted; a datasheet device's dashed), log-log: an H100's bound
    sits two decades above a 2-core CPU's. BadInput without a question or without matplotlib."""
    q = cmp.question
    if q is None:
        raise BadInput("no model asked: compare --model draws the decode picture")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 6.4), dpi=DPI)
    measured = cmp.measured
    for s in cmp.machines:
        rows = tuple(r for r in q.answers.get(s.machine, ()) if r.fits is not False)
        if not rows:
            continue
        i = measured.index(s) if s in measured else len(measured) + cmp.machines.index(s)
        color, batches = f"C{i % 10}", [r.batch for r in rows]
        bound = " bound (datasheet)" if s.datasheet_only else " bound"
        ax.plot(batches, [r.bound_tokens_per_s for r in rows], ls="--" if s.datasheet_only else ":", marker="s",
                mfc="none", color=color, label=s.machine + bound)  # fmt: skip
        predicted = [(r.batch, r.tokens_per_s) for r in rows if r.tokens_per_s]
        if predicted:
            ax.plot(*zip(*predicted, strict=True), marker="o", lw=2, color=color, label=f"{s.machine} predicted")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(list(q.batches), [str(b) for b in q.batches])
    ax.set_xlabel("batch (sequences decoded together)")
    ax.set_ylabel("tokens/s, all sequences")
    ax.set_title(f"decode {q.title}", fontsize=11)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _pictures(cmp: Comparison, folder: Path) -> tuple[str | None, str | None, str]:
    """Draw the page's pictures into ``folder``: the rooflines' name, the decode picture's (None without
    ``compare --model``), and a note where matplotlib is missing."""
    try:
        plot_overlay(cmp.measured, folder / PICTURE)
        if cmp.question is None:
            return PICTURE, None, ""
        save_figure(draw_decode(cmp), folder / DECODE_PICTURE)
        return PICTURE, DECODE_PICTURE, ""
    except BadInput as exc:  # matplotlib missing: the table alone, saying why
        return None, None, f"No picture: {exc}"


def write_page(cmp: Comparison, folder: Path) -> Path:
    """Write ``compare.html``, ``compare.svg`` and (``compare --model``) ``compare-decode.svg`` into ``folder``
    (made if missing); the page's path."""
    check_page_folder(folder)
    folder = Path(folder)
    try:
        folder.mkdir(exist_ok=True)
        picture, decode, note = _pictures(cmp, folder)
        atomic_write(folder / PAGE, page_html(cmp, picture, note, decode))
    except OSError as exc:
        raise BadInput(f"cannot write the page into {folder}: {exc.strerror or exc}") from None
    return folder / PAGE


def link_from_index(folder: Path) -> bool:
    """Add "Machines compared" to asv's navigation bar (once), in ``folder``'s asv page (index.html as asv
    publish leaves it, asv.html behind roofline's landing page); whether it is there."""
    index = asv_page(Path(folder))
    try:
        text = index.read_text(encoding="utf-8")
    except OSError:
        return False
    if NAV_ID in text:
        return True
    anchor = re.search(r'<li id="nav-li-regressions">.*?</li>', text, re.DOTALL)
    if anchor is None:
        return False
    atomic_write(index, text[: anchor.end()] + f"\n\t{NAV_ITEM}" + text[anchor.end() :])
    return True
