"""The landing page `make bench` opens on: asv's page moved to asv.html, links that select what was measured."""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
import urllib.request

import pytest

from roofline.errors import BadInput
from roofline.report import page
from roofline.suite import offline_html as oh
from roofline.suite.results import read_results

from .asv_fixtures import write_benchmarks, write_machine, write_run
from .test_offline_html import ASV_INDEX, published

SUITE = {
    "decode.DecodeDRAM.track_gflops": ("track", "GFLOP/s", ["n", "batch"], [["256", "2048"], ["1", "8", "64"]], "v"),
    "ceilings.CacheBandwidth.track_bandwidth": ("track", "GB/s", ["level"], [["'L1'", "'L2'", "'DRAM'"]], "v"),
    "crossover.Crossover.track_observed_crossover_batch": ("track", "unit", [], [], "v"),
}


@pytest.fixture
def results(tmp_path):
    """One machine, one commit: n=256 at batches 1 and 8 measured (64 skipped, n=2048 not chosen), L1 and DRAM."""
    root = tmp_path / "results"
    write_benchmarks(root, SUITE)
    write_machine(root, "box")
    values = {
        "decode.DecodeDRAM.track_gflops": [10.0, 40.0, None, None, None, None],
        "ceilings.CacheBandwidth.track_bandwidth": [300.0, None, 25.0],
        "crossover.Crossover.track_observed_crossover_batch": [24.0],
    }
    write_run(root, "box", "a" * 40, values, suite=SUITE)
    return read_results(root)


def index_of(suite=SUITE) -> dict:
    return {
        "benchmarks": {
            name: {"param_names": pn, "params": p, "pretty_name": f"{name.split('.', 1)[1]} [{u}]"}
            for name, (_, u, pn, p, _) in suite.items()
        },
        "params": {"machine": ["box"]},
    }


def test_a_graph_link_selects_the_measured_values_by_asvs_reprs(results):
    run = results.machines["box"].run("a" * 40)
    entry = index_of()["benchmarks"]["decode.DecodeDRAM.track_gflops"]
    measured = page.measured_params(run, "decode.DecodeDRAM.track_gflops")
    assert measured == {"n": [256], "batch": [1, 8]}
    link = page.graph_link("decode.DecodeDRAM.track_gflops", entry, measured, "box")
    assert link == "asv.html#decode.DecodeDRAM.track_gflops?machine=box&p-n=256&p-batch=1&p-batch=8"
    every = page.graph_link("decode.DecodeDRAM.track_gflops", entry, {"n": [256], "batch": [1, 8, 64]}, "box")
    assert every.endswith("&p-batch=64&x-axis=batch")  # every batch measured: batch along the x-axis
    levels = page.measured_params(run, "ceilings.CacheBandwidth.track_bandwidth")
    entry = index_of()["benchmarks"]["ceilings.CacheBandwidth.track_bandwidth"]
    link = page.graph_link("ceilings.CacheBandwidth.track_bandwidth", entry, levels, "box")
    query = urllib.parse.parse_qs(link.split("?", 1)[1])  # asv decodes its hash with decodeURIComponent
    assert query == {"machine": ["box"], "p-level": ["'L1'", "'DRAM'"]}  # the reprs index.json lists


def test_the_landing_page_takes_index_html_and_asvs_page_moves(tmp_path, results):
    html = published(tmp_path)
    (html / "index.json").write_text(json.dumps(index_of()))
    (html / page.PICTURE).write_bytes(b"\x89PNG\r\n\x1a\n")
    out = page.write_landing(html, "crossover batch (float32 weights): <predicted> 20", results, "box", "a" * 40)
    assert out == html / "index.html"
    assert (html / oh.ASV_PAGE).read_text() == ASV_INDEX.read_text()  # asv's page, moved as it was
    text = out.read_text()
    assert not oh.is_asv_page(text) and "http://" not in text and "https://" not in text  # nothing to fetch
    assert '<img src="roofline.png"' in text and "&lt;predicted&gt; 20" in text  # the report, escaped
    assert 'href="asv.html#decode.DecodeDRAM.track_gflops?machine=box&amp;p-n=256&amp;p-batch=1' in text
    assert "Machines in these results: box" in text and page.COMPARE_PAGE not in text
    # again, with a comparison page there: asv's page stays where it is and the landing page links to it
    (html / page.COMPARE_PAGE).write_text("<html></html>")
    page.write_landing(html, "report", results, "box", "a" * 40)
    assert (html / oh.ASV_PAGE).read_text() == ASV_INDEX.read_text()
    assert f'<a href="{page.COMPARE_PAGE}">' in (html / "index.html").read_text()


def test_only_what_the_run_measured_is_listed(tmp_path, results):
    html = published(tmp_path)
    suite = {**SUITE, "backends.CudaDecode.track_gflops": ("track", "GFLOP/s", ["n"], [["256"]], "v")}
    (html / "index.json").write_text(json.dumps(index_of(suite)))
    text = page.write_landing(html, None, results, "box", "a" * 40).read_text()
    rows = re.findall(r'<tr><td><a href="asv\.html#([\w.]+)[?"]', text)
    assert rows == [
        "decode.DecodeDRAM.track_gflops",
        "ceilings.CacheBandwidth.track_bandwidth",
        "crossover.Crossover.track_observed_crossover_batch",
    ]  # decode first; the CUDA class recorded nothing here
    assert "no report" in text and "roofline.png" not in text  # neither was made: said, not linked


def test_make_offline_finds_asvs_page_after_it_moved(tmp_path, results):
    html = published(tmp_path)
    page.write_landing(html, "report", results, "box", "a" * 40)
    landing = (html / "index.html").read_text()
    oh.make_offline(html)
    assert (html / "index.html").read_text() == landing
    assert "vendor/jquery-3.3.1.min.js" in (html / oh.ASV_PAGE).read_text()


def test_serve_rewrites_asvs_page_wherever_it_is_and_leaves_the_landing_page(tmp_path, results):
    html = published(tmp_path)
    page.write_landing(html, "the report", results, "box", "a" * 40)
    server = oh.local_server(html, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(f"{base}/", timeout=30) as r:
            assert b"the report" in r.read()
        with urllib.request.urlopen(f"{base}/{oh.ASV_PAGE}", timeout=30) as r:
            body = r.read()
        assert b"vendor/jquery-3.3.1.min.js" in body and oh.STYLE.encode() in body
        assert not any(url.encode() in body for url in oh.ASSETS)
    finally:
        server.shutdown()
        server.server_close()


def test_no_published_page_is_one_line(tmp_path):
    with pytest.raises(BadInput, match="holds no published page"):
        page.write_landing(tmp_path)


def test_the_grid_titles_wrap_once():
    text, _ = oh.offline_index(ASV_INDEX.read_text())
    assert text.count('id="roofline-style"') == 1 and oh.offline_index(text)[0].count('id="roofline-style"') == 1
    assert "white-space:normal" in oh.STYLE
