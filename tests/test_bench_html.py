"""`make bench`'s own HTML, offline: `roofline bench` publishes in a scratch repository, then headless Chromium
opens the folder it left, with the network blocked, and sees the graphs.

The screenshots land in ``artifacts/`` at the repository root (``asv-html-offline.png``: the GFLOP/s
graph; ``asv-html-offline-grid.png``: the benchmark grid), and the test prints their paths:
``.venv/bin/python -m pytest tests/test_bench_html.py -q`` makes them. The same page as plain
``asv publish`` leaves it, opened the same way, must fail (the control that shows the network
really is blocked). Without /usr/bin/chromium or playwright the browser tests skip, saying why.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import asv
import pytest

from roofline.suite.offline_html import ASSETS, VENDOR, local_server

from .browser import SERIES_WITH_POINTS, errors_then_screenshot, offline_page, serving, static_server

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
GFLOPS = "decode.DecodeDRAM.track_gflops"
SHOTS = {"grid": ARTIFACTS / "asv-html-offline-grid.png", "graph": ARTIFACTS / "asv-html-offline.png"}
ASV_INDEX = Path(asv.__file__).parent / "www" / "index.html"


@pytest.fixture(scope="module")
def bench(made_bench):
    """The session's one `roofline bench` at small sizes (conftest.made_bench); screenshots go to artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    return made_bench


def test_bench_leaves_a_page_that_needs_no_cdn(bench):
    out = bench["proc"].stdout
    assert "works offline (serve it with: roofline serve)" in out
    assert "not listed, as no machine has a value for them: backends.CudaDecode.track_bandwidth" in out
    index = (bench["html"] / "index.html").read_text()
    assert not any(url in index for url in ASSETS) and "https://cdn" not in index
    assert all((bench["html"] / VENDOR / a.file).is_file() for a in ASSETS.values())
    listed = json.loads((bench["html"] / "index.json").read_text())["benchmarks"]
    assert GFLOPS in listed and not any(name.startswith("backends.CudaDecode") for name in listed)
    assert listed[GFLOPS]["pretty_name"] == "DecodeDRAM.track_gflops [GFLOP/s, higher is better]"


@pytest.mark.parametrize("server", ["the folder as it is", "roofline serve"])
def test_the_graphs_draw_with_the_network_blocked(bench, server, tmp_path, capsys):
    html = bench["html"]
    serve = static_server(html) if server == "the folder as it is" else serving(local_server(html, 0))
    with serve as base, offline_page(base, tmp_path / "profile") as (page, errors, refused):
        page.goto(f"{base}/index.html", wait_until="load")
        page.wait_for_selector(".benchmark-container", timeout=30_000)
        grid = page.eval_on_selector_all(".benchmark-text", "els => els.map(e => e.textContent)")
        if server == "the folder as it is":
            page.screenshot(path=str(SHOTS["grid"]), full_page=True)
        page.goto(f"{base}/index.html#{GFLOPS}?x-axis=batch", wait_until="load")
        page.wait_for_selector("#main-graph canvas.flot-base", timeout=30_000)
        page.wait_for_function(SERIES_WITH_POINTS, arg=1, timeout=30_000)
        nav = page.inner_text("#graphdisplay-navigation")
        swallow = page.locator("text=continental origin of swallow").count()
        seen = errors_then_screenshot(page, errors, SHOTS["graph"]) if server == "the folder as it is" else list(errors)
    assert seen == [] and refused == [] and swallow == 0, (seen, refused)
    assert "DecodeDRAM.track_gflops [GFLOP/s, higher is better]" in grid
    assert not any("CudaDecode" in name for name in grid)  # no empty boxes on a CPU-only machine
    assert "decode" in nav
    if server == "the folder as it is":
        with capsys.disabled():
            print(f"\nscreenshots of the offline HTML (network blocked): {SHOTS['graph']} {SHOTS['grid']}")


def test_the_page_as_asv_publishes_it_fails_with_the_network_blocked(bench, tmp_path):
    """The control: asv's own index.html over the same results asks the CDNs, is refused, and shows asv's error."""
    plain = tmp_path / "html"
    shutil.copytree(bench["html"], plain)
    shutil.copyfile(ASV_INDEX, plain / "index.html")
    with static_server(plain) as base, offline_page(base, tmp_path / "profile") as (page, errors, refused):
        page.goto(f"{base}/index.html", wait_until="load")
        page.wait_for_selector("text=continental origin of swallow", timeout=30_000)
        drawn = page.locator(".benchmark-container").count()
    assert set(refused) == set(ASSETS), refused  # every library was asked for outside, and none arrived
    assert drawn == 0 and errors, errors
