"""The comparison page (compare.html beside asv's HTML): static, offline, linked from asv's index; and a fresh
`roofline bench` set beside the gallery, merged into it and compared, so the gallery never falls behind the
suite unnoticed.

The e2e tests read the session's one `roofline bench` (conftest.made_bench) and open the pages in headless
Chromium with the network blocked; the screenshots land in ``artifacts/`` (``compare-page.png``: make bench's
page, reached from asv's navigation bar, copied to docs/compare-page.png; ``compare-gallery.png``: the bench
merged into a copy of the gallery, with a baseline).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import asv
import pytest

from roofline.cli import main
from roofline.report import compare_page
from roofline.suite.gallery import add_run
from roofline.suite.offline_html import asv_page
from roofline.suite.results import read_results

from .asv_fixtures import snapshot, two_machines
from .browser import errors_then_screenshot, offline_page, static_server
from .clitools import one_line_error

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
EXAMPLES = ROOT / "examples" / "results"
ASV_INDEX = Path(asv.__file__).parent / "www" / "index.html"
GALLERY_MACHINE = "xeon-2core-vm"
#: Every machine of the gallery: the page and the table give each a column.
GALLERY = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
#: An address a page would load from outside its folder (a link to asv's site in asv's own navbar is no load).
REMOTE = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", re.IGNORECASE)


def test_the_page_holds_the_table_and_the_picture_and_loads_nothing_remote(tmp_path, capsys):
    results = two_machines(tmp_path / "results")
    before = snapshot(results)
    assert main(["compare", str(results), "--baseline", "alpha", "--html", str(tmp_path / "page")]) == 0
    assert f"page: {tmp_path / 'page' / 'compare.html'}" in capsys.readouterr().out
    text = (tmp_path / "page" / compare_page.PAGE).read_text()
    assert (tmp_path / "page" / compare_page.PICTURE).read_text().startswith("<?xml")
    assert f'<img src="{compare_page.PICTURE}"' in text and "<script" not in text and not REMOTE.search(text)
    assert "<th>alpha (baseline)</th><th>beta</th>" in text
    assert re.search(r"n=256 batch=8</td><td class=\"unit\">↑ GFLOP/s</td>.*?>52.0</td>.*?>104 <span", text)
    assert '<span class="ratio better">2×</span>' in text  # higher is better: beta's double reads better
    assert "↑ higher is better, ↓ lower is better" in text
    assert snapshot(results) == before


def test_the_page_is_linked_from_asvs_index_once(tmp_path):
    (tmp_path / "index.html").write_text(ASV_INDEX.read_text())
    assert compare_page.link_from_index(tmp_path) and compare_page.link_from_index(tmp_path)
    text = (tmp_path / "index.html").read_text()
    assert text.count(compare_page.NAV_ID) == 1 and 'href="compare.html"' in text
    (tmp_path / "index.html").write_text("<html>not asv's</html>")
    assert not compare_page.link_from_index(tmp_path) and not compare_page.link_from_index(tmp_path / "none")


@pytest.mark.parametrize("where", ["inside", "file"])
def test_a_page_folder_it_cannot_use_is_one_line_exit_2(tmp_path, capsys, where):
    results = two_machines(tmp_path / "results")
    before = snapshot(results)
    target = results / "alpha" / "page" if where == "inside" else tmp_path / "a-file"
    if where == "file":
        target.write_text("x")
    assert main(["compare", str(results), "--html", str(target)]) == 2
    message = one_line_error(capsys.readouterr().err)
    assert ("never writes into the results directory" if where == "inside" else "not a directory") in message
    assert snapshot(results) == before


# ---- e2e: the session's one `roofline bench` ----------------------------------------------------


@pytest.fixture(scope="module")
def bench(made_bench):
    ARTIFACTS.mkdir(exist_ok=True)
    return made_bench


def compare_cli(bench, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "roofline", "compare", *args],
        cwd=bench["repo"], env=bench["env"], capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.e2e
def test_make_bench_writes_the_page_beside_asvs_and_links_it(bench, tmp_path):
    html = bench["html"]
    assert "machines compared in" in bench["proc"].stdout and "linked from asv's index" in bench["proc"].stdout
    asv = asv_page(html)  # behind roofline's landing page, which links the comparison too
    assert asv.name == "asv.html" and compare_page.NAV_ID in asv.read_text()
    assert f'href="{compare_page.PAGE}"' in (html / "index.html").read_text()
    with static_server(html) as base, offline_page(base, tmp_path / "profile") as (page, errors, refused):
        page.goto(f"{base}/{asv.name}", wait_until="load")
        page.wait_for_selector(".benchmark-container", timeout=30_000)
        page.click(f"#{compare_page.NAV_ID} a")
        page.wait_for_selector("table", timeout=30_000)
        heads = page.eval_on_selector_all("thead th", "els => els.map(e => e.textContent)")
        drawn = page.eval_on_selector("img", "img => img.complete && img.naturalWidth > 0")
        seen = errors_then_screenshot(page, errors, ARTIFACTS / "compare-page.png")
        url = page.url
    assert url.endswith("/compare.html") and seen == [] and refused == [], (seen, refused)
    assert heads[2:] == sorted(["box", *GALLERY]) and drawn


@pytest.mark.e2e
def test_your_machine_beside_the_gallery_in_one_command(bench):
    """The Done-when command: `roofline compare .asv/results examples/results --baseline <example>`."""
    out = compare_cli(bench, ".asv/results", "examples/results", "--baseline", GALLERY_MACHINE)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    others = sorted({"box", *GALLERY} - {GALLERY_MACHINE})  # after the baseline, each with its ratio
    columns = [x for m in others for x in (m, "ratio")]
    assert re.split(r"\s{2,}", lines[1].strip()) == ["machine", GALLERY_MACHINE, *columns]
    point = next(x for x in lines if x.strip().startswith("n=256 batch=1"))
    assert re.search(r"\d ±\d+(\.\d+)?%", point), point  # box's twin recorded its samples: an interval
    overhead = next(x for x in lines if x.startswith("call overhead, single"))
    assert re.search(r"‡\s+\S+ +[\d.]+×", overhead), overhead  # the example's older version, and a ratio
    assert "‡ recorded by another version of the benchmark" in out.stdout


@pytest.mark.e2e
def test_a_fresh_bench_merges_into_the_gallery_and_compares(bench, tmp_path, capsys):
    """The gallery can never fall behind the suite unnoticed: the suite's fresh results must merge into it (the
    same quantities, under any version) and compare beside every machine there, with nothing mixed."""
    shelf = tmp_path / "gallery"
    shutil.copytree(EXAMPLES, shelf)
    results = bench["repo"] / ".asv" / "results"
    res = read_results(results)
    plan = add_run(res, "box", res.machines["box"].latest(), shelf)
    assert plan.written  # beside machines recorded by older versions too (kept, flagged in compare)
    assert main(["compare", str(shelf), "--baseline", GALLERY_MACHINE, "--json"]) == 0
    table = {r["key"]: r for r in json.loads(capsys.readouterr().out)["table"]}
    for row in table.values():
        for machine, cell in row["cells"].items():
            assert not (cell["status"] == "changed meaning" and cell["value"] is not None), (row["key"], machine)
    assert table["bandwidth"]["cells"]["box"]["status"] == "current"
    assert table["crossover/observed"]["cells"]["box"]["ratio"] is not None
    page = tmp_path / "page"
    assert main(["compare", str(shelf), "--baseline", GALLERY_MACHINE, "--html", str(page)]) == 0
    capsys.readouterr()
    with static_server(page) as base, offline_page(base, tmp_path / "profile") as (tab, errors, refused):
        tab.goto(f"{base}/compare.html", wait_until="load")
        tab.wait_for_selector("table", timeout=30_000)
        drawn = tab.eval_on_selector("img", "img => img.complete && img.naturalWidth > 0")
        seen = errors_then_screenshot(tab, errors, ARTIFACTS / "compare-gallery.png")
    assert seen == [] and refused == [] and drawn, (seen, refused)
