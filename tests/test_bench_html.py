"""`make bench`'s own HTML, offline: `roofline bench` publishes in a scratch repository, then headless Chromium
opens the folder it left, with the network blocked, and reads what a person sees.

The folder opens on roofline's landing page (``index.html``: the picture, the report, links into asv's
graphs with what was measured selected); asv's own page is ``asv.html``. The screenshots land in
``artifacts/`` at the repository root (``asv-html-landing.png``: the landing page; ``asv-html-offline.png``:
the GFLOP/s graph the landing page links to; ``asv-html-offline-grid.png``: asv's benchmark grid), and the
test prints their paths: ``.venv/bin/python -m pytest tests/test_bench_html.py -q`` makes them. What the
tests assert they read from the page itself, not the screenshots: no grid title cut, one drawn series per
measured combination and none empty, distinct tick labels, the unit on the axis. The same page as plain
``asv publish`` leaves it, opened the same way, must fail (the control that shows the network really is
blocked). Without /usr/bin/chromium or playwright the browser tests skip, saying why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import asv
import pytest

from roofline.suite.offline_html import ASSETS, ASV_PAGE, VENDOR, local_server

from .browser import SERIES_WITH_POINTS, errors_then_screenshot, offline_page, serving, static_server

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
GFLOPS = "decode.DecodeDRAM.track_gflops"
SHOTS = {
    "grid": ARTIFACTS / "asv-html-offline-grid.png",
    "graph": ARTIFACTS / "asv-html-offline.png",
    "landing": ARTIFACTS / "asv-html-landing.png",
}
#: The grid's titles whose text is wider than their box (asv cuts them at 292 px).
CUT_TITLES = "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"
#: The main graph's series: (label, points with a value).
SERIES = "() => $('#main-graph').data('plot').getData().map(s => [s.label, s.data.filter(d => d[1] !== null).length])"
#: A graph axis's tick labels as drawn.
TICKS = "els => els.map(e => e.textContent.trim()).filter(t => t)"
ASV_INDEX = Path(asv.__file__).parent / "www" / "index.html"


@pytest.fixture(scope="module")
def bench(made_bench):
    """The session's one `roofline bench` at small sizes (conftest.made_bench); screenshots go to artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    return made_bench


def test_bench_leaves_a_page_that_needs_no_cdn(bench):
    out = bench["proc"].stdout
    assert "works offline (serve it with: roofline serve)" in out
    assert f"HTML in {(bench['html'] / 'index.html').resolve()}" in out
    assert "not listed, as no machine has a value for them: backends.CudaDecode.track_bandwidth" in out
    for page in ("index.html", ASV_PAGE):
        text = (bench["html"] / page).read_text()
        assert not any(url in text for url in ASSETS) and "https://cdn" not in text and "http://" not in text, page
    landing = (bench["html"] / "index.html").read_text()
    assert '<img src="roofline.png"' in landing and "crossover batch" in landing and 'href="asv.html#' in landing
    assert all((bench["html"] / VENDOR / a.file).is_file() for a in ASSETS.values())
    listed = json.loads((bench["html"] / "index.json").read_text())["benchmarks"]
    assert GFLOPS in listed and not any(name.startswith("backends.CudaDecode") for name in listed)
    assert listed[GFLOPS]["pretty_name"] == "DecodeDRAM.track_gflops [GFLOP/s, higher is better]"


@pytest.mark.parametrize("server", ["the folder as it is", "roofline serve"])
def test_the_page_opens_on_what_was_measured(bench, server, tmp_path, capsys):
    """The landing page shows the picture and the report, and its GFLOP/s link opens asv's graph on the
    measured combinations only (ROOFLINE_N=256, ROOFLINE_BATCH=1,8: two series, neither empty)."""
    opens_on_what_was_measured(bench["html"], server, tmp_path, capsys, shots=server == "the folder as it is")


def opens_on_what_was_measured(html: Path, server: str, tmp_path: Path, capsys, shots: bool) -> None:
    serve = static_server(html) if server == "the folder as it is" else serving(local_server(html, 0))
    gflops = f"#graphs a[href^='{ASV_PAGE}#{GFLOPS}?']"
    with serve as base, offline_page(base, tmp_path / "profile") as (page, errors, refused):
        page.goto(base + ("/" if server == "roofline serve" else "/index.html"), wait_until="load")
        picture = page.eval_on_selector("#picture img", "img => img.complete ? img.naturalWidth : 0")
        report = page.inner_text("#report pre")
        link = page.get_attribute(gflops, "href")
        if shots:
            page.screenshot(path=str(SHOTS["landing"]), full_page=True)
        page.click(gflops)
        page.wait_for_selector("#main-graph canvas.flot-base", timeout=30_000)
        page.wait_for_function(SERIES_WITH_POINTS, arg=2, timeout=30_000)
        series = page.evaluate(SERIES)
        y_ticks = page.eval_on_selector_all("#main-graph .flot-y-axis .flot-tick-label", TICKS)
        unit = page.evaluate("() => $('#main-graph').data('plot').getOptions().yaxes[0].axisLabel")
        title = page.inner_text("#graphdisplay-navigation")
        seen = errors_then_screenshot(page, errors, SHOTS["graph"]) if shots else list(errors)
    assert seen == [] and refused == [], (seen, refused)
    assert picture > 0 and "crossover batch" in report and "decode, weights from DRAM" in report
    assert "machine=box" in link and "p-n=256" in link and "p-batch=1&" in link and link.endswith("p-batch=8")
    assert "p-n=2048" not in link and "p-batch=64" not in link  # not measured here
    assert len(series) == 2 and all(points >= 1 for _, points in series), series  # batch 1 and 8, none empty
    assert len(y_ticks) >= 3 and len(set(y_ticks)) == len(y_ticks), y_ticks  # not "9.44" nine times
    assert unit == "GFLOP/s" and "decode" in title
    if shots:
        with capsys.disabled():
            print(f"\nscreenshots of the offline HTML (network blocked): {SHOTS['landing']} {SHOTS['graph']}")


@pytest.mark.parametrize("server", ["the folder as it is", "roofline serve"])
def test_asvs_grid_draws_with_the_network_blocked_and_its_titles_whole(bench, server, tmp_path, capsys):
    grid_draws(bench["html"], server, tmp_path, capsys, shots=server == "the folder as it is")


def grid_draws(html: Path, server: str, tmp_path: Path, capsys, shots: bool) -> None:
    serve = static_server(html) if server == "the folder as it is" else serving(local_server(html, 0))
    with serve as base, offline_page(base, tmp_path / "profile") as (page, errors, refused):
        page.goto(f"{base}/{ASV_PAGE}", wait_until="load")
        page.wait_for_selector(".benchmark-container", timeout=30_000)
        grid = page.eval_on_selector_all(".benchmark-text", "els => els.map(e => e.textContent)")
        cut = page.eval_on_selector_all(".benchmark-text", CUT_TITLES)
        swallow = page.locator("text=continental origin of swallow").count()
        if shots:
            page.screenshot(path=str(SHOTS["grid"]), full_page=True)
    assert errors == [] and refused == [] and swallow == 0, (errors, refused)
    assert "DecodeDRAM.track_gflops [GFLOP/s, higher is better]" in grid
    assert not any("CudaDecode" in name for name in grid)  # no empty boxes on a CPU-only machine
    assert cut == [], cut  # "track_bandwidth [GB/s, higher is bette" no more
    if shots:
        with capsys.disabled():
            print(f"\nscreenshot of asv's grid (network blocked): {SHOTS['grid']}")


@pytest.fixture(scope="module")
def republished(made_bench, tmp_path_factory):
    """make bench's folder published again by hand, as the README's "asv by hand" prints it: `asv publish`
    (roofline's asv plugin makes it roofline's page again), in a copy of the session's bench repository."""
    repo = tmp_path_factory.mktemp("republished") / "repo"
    shutil.copytree(made_bench["repo"], repo, symlinks=True)
    proc = subprocess.run(
        [sys.executable, "-m", "asv", "publish"],
        cwd=repo,
        env=made_bench["env"],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"proc": proc, "html": repo / ".asv" / "html"}


@pytest.mark.e2e
def test_plain_asv_publish_keeps_roofline_s_page(republished, tmp_path, capsys):
    """asv clears the folder; the plugin puts back the landing page, the picture, compare.html, the offline
    libraries and the hidden empty graphs, and Chromium reads them as it reads make bench's."""
    html = republished["html"]
    assert "HTML in" in republished["proc"].stdout and "works offline" in republished["proc"].stdout
    for page in ("index.html", ASV_PAGE, "compare.html"):
        text = (html / page).read_text()
        assert not any(url in text for url in ASSETS) and "https://cdn" not in text, page
    assert (html / "roofline.png").read_bytes()[:4] == b"\x89PNG"
    assert all((html / VENDOR / a.file).is_file() for a in ASSETS.values())
    listed = json.loads((html / "index.json").read_text())["benchmarks"]
    assert GFLOPS in listed and not any(name.startswith("backends.CudaDecode") for name in listed)
    opens_on_what_was_measured(html, "the folder as it is", tmp_path / "landing", capsys, shots=False)
    grid_draws(html, "the folder as it is", tmp_path / "grid", capsys, shots=False)


def test_the_page_as_asv_publishes_it_fails_with_the_network_blocked(bench, tmp_path):
    """The control: asv's own index.html over the same results asks the CDNs, is refused, and shows asv's error."""
    plain = tmp_path / "html"
    shutil.copytree(bench["html"], plain)
    shutil.copyfile(ASV_INDEX, plain / ASV_PAGE)
    with static_server(plain) as base, offline_page(base, tmp_path / "profile") as (page, errors, refused):
        page.goto(f"{base}/{ASV_PAGE}", wait_until="load")
        page.wait_for_selector("text=continental origin of swallow", timeout=30_000)
        drawn = page.locator(".benchmark-container").count()
    assert set(refused) == set(ASSETS), refused  # every library was asked for outside, and none arrived
    assert drawn == 0 and errors, errors
