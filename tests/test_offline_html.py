"""asv's published page without the internet: the shipped libraries, index.html pointed at them, the empty
benchmarks taken out of the lists, `roofline serve` on 127.0.0.1 only; and the names that say which way is better."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import asv
import pytest

from roofline.cli import main
from roofline.errors import BadInput, Interrupted
from roofline.suite import offline_html as oh
from roofline.suite.harness import tracked

from .clitools import one_line_error
from .test_golden import benchmark_inventory

ASV_INDEX = Path(asv.__file__).parent / "www" / "index.html"
TOOL = Path(__file__).resolve().parents[1] / "tools" / "asv_offline_assets.py"
#: the npm files that are the CDN's byte for byte (asv's own integrity hash matches); cdnjs's minified
#: flot 0.8.3 and stupidtable 1.0.1 are not on npm (flot's source and stupidtable 1.1.3 stand in)
IDENTICAL = {"jquery@3.3.1", "flot-orderbars@1.0.0", "blueimp-md5@2.19.0", "bootstrap@3.1.1"}


def test_the_shipped_libraries_are_the_pinned_files():
    assert oh.check_assets() == []


def test_every_shipped_package_has_its_licence_beside_it():
    text = (oh.WWW / oh.LICENSES).read_text()
    headings = set(re.findall(r"^(\S+@\S+) \(", text, re.MULTILINE))
    assert headings == {asset.package for asset in oh.ASSETS.values()}
    assert text.count("Permission is hereby granted") >= 5  # MIT texts, not just names


def test_the_vendoring_tool_checks_the_shipped_files_and_knows_every_licence():
    out = subprocess.run([sys.executable, str(TOOL), "check"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and f"{len(oh.ASSETS)} files" in out.stdout, out.stderr
    bad = subprocess.run([sys.executable, str(TOOL), "fetch"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "usage" in bad.stderr
    spec = importlib.util.spec_from_file_location("asv_offline_assets", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert set(tool.LICENCES) == {asset.package for asset in oh.ASSETS.values()}


def test_a_library_that_is_not_the_pinned_file_is_refused(tmp_path, monkeypatch):
    www = tmp_path / "www"
    shutil.copytree(oh.WWW, www)
    monkeypatch.setattr(oh, "WWW", www)
    (www / "md5-2.19.0.min.js").write_text("/* not md5 */")
    assert oh.check_assets() == [
        f"{www / 'md5-2.19.0.min.js'} is not the file of blueimp-md5@2.19.0 it should be (SHA-256 differs)"
    ]
    with pytest.raises(BadInput, match="blueimp-md5"):
        oh.make_offline(published(tmp_path))


def test_which_are_the_cdns_own_bytes_by_asvs_integrity_hashes():
    html = ASV_INDEX.read_text()
    same = set()
    for url, asset in oh.ASSETS.items():
        tag = re.search(rf'<[^>]*"{re.escape(url)}"[^>]*>', html).group(0)
        algo, want = re.search(r'integrity="(sha\d+)-([^"]+)"', tag).groups()
        got = base64.b64encode(hashlib.new(algo, oh.asset_path(asset).read_bytes()).digest()).decode()
        if got == want:
            same.add(asset.package)
    assert same == IDENTICAL


def test_asvs_index_points_at_vendor_and_nothing_remote_is_left():
    text, remote = oh.offline_index(ASV_INDEX.read_text())
    assert remote == [] and not any(url in text for url in oh.ASSETS)
    for asset in oh.ASSETS.values():
        tag = re.search(rf'<[^>]*"vendor/{re.escape(asset.file)}"[^>]*>', text).group(0)
        assert "integrity" not in tag and "crossorigin" not in tag
    assert oh.offline_index(text) == (text, [])  # idempotent
    _, remote = oh.offline_index('<script src="https://cdn.example/x.js"></script><a href="https://x.org/">x</a>')
    assert remote == ['src="https://cdn.example/x.js"']  # a library roofline does not know; links are no loads


def published(tmp_path: Path) -> Path:
    """A folder as asv publish leaves it: two benchmarks, one with values, one skipped everywhere."""
    html = tmp_path / "html"
    (html / "graphs" / "machine-a").mkdir(parents=True)
    (html / "index.html").write_text(ASV_INDEX.read_text())
    benchmarks = {"d.D.track_gflops": {"unit": "GFLOP/s"}, "b.Cuda.track_gflops": {"unit": "GFLOP/s"}}
    (html / "index.json").write_text(json.dumps({"benchmarks": benchmarks, "params": {}}))
    (html / "graphs" / "machine-a" / "d.D.track_gflops.json").write_text("[[1, [null, 12.5]], [2, [NaN, null]]]")
    (html / "graphs" / "machine-a" / "b.Cuda.track_gflops.json").write_text("[[1, [null, NaN]], [2, null]]")
    rows = [{"name": name, "idx": 0, "pretty_name": name} for name in benchmarks]
    (html / "graphs" / "machine-a" / "summary.json").write_text(json.dumps(rows))
    return html


def test_make_offline_copies_rewrites_and_unlists_the_empty(tmp_path):
    html = published(tmp_path)
    lines = oh.make_offline(html)
    assert lines == ["not listed, as no machine has a value for them: b.Cuda.track_gflops"]
    for asset in oh.ASSETS.values():
        assert (html / "vendor" / asset.file).read_bytes() == oh.asset_path(asset).read_bytes()
    assert (html / "vendor" / oh.LICENSES).read_text() == (oh.WWW / oh.LICENSES).read_text()
    assert "vendor/jquery-3.3.1.min.js" in (html / "index.html").read_text()
    assert list(json.loads((html / "index.json").read_text())["benchmarks"]) == ["d.D.track_gflops"]
    rows = json.loads((html / "graphs" / "machine-a" / "summary.json").read_text())
    assert [r["name"] for r in rows] == ["d.D.track_gflops"]
    before = {p: p.read_bytes() for p in html.rglob("*") if p.is_file()}
    assert oh.make_offline(html) == []  # again: nothing to do
    assert {p: p.read_bytes() for p in html.rglob("*") if p.is_file()} == before


def test_make_offline_needs_a_published_page(tmp_path):
    with pytest.raises(BadInput, match="no index.html"):
        oh.make_offline(tmp_path)


def get(url: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.headers["Content-Type"], r.read()


def test_serve_binds_loopback_only_and_serves_the_page_offline(tmp_path):
    html = published(tmp_path)  # as plain asv publish left it: CDN addresses, the empty benchmark listed
    server = oh.local_server(html, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        base = f"http://127.0.0.1:{port}"
        status, kind, body = get(f"{base}/")
        assert status == 200 and kind.startswith("text/html") and b"vendor/jquery-3.3.1.min.js" in body
        assert not any(url.encode() in body for url in oh.ASSETS)
        for asset in oh.ASSETS.values():
            assert get(f"{base}/vendor/{asset.file}")[2] == oh.asset_path(asset).read_bytes()
        assert list(json.loads(get(f"{base}/index.json")[2])["benchmarks"]) == ["d.D.track_gflops"]
        rows = json.loads(get(f"{base}/graphs/machine-a/summary.json")[2])
        assert [r["name"] for r in rows] == ["d.D.track_gflops"]
        assert b"12.5" in get(f"{base}/graphs/machine-a/d.D.track_gflops.json")[2]
        with pytest.raises(BadInput, match="cannot listen on 127.0.0.1"):
            oh.local_server(html, port)  # taken
    finally:
        server.shutdown()
        server.server_close()
    assert json.loads((html / "index.json").read_text())["benchmarks"].keys() == {
        "d.D.track_gflops",
        "b.Cuda.track_gflops",
    }


def listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp* writes them) of the sockets listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                found.append(local.rsplit(":", 1)[0])
    return found


def test_roofline_serve_listens_on_loopback_only_until_ctrl_c(tmp_path):
    html = published(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "roofline", "serve", "--html", str(html), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    try:
        first = proc.stdout.readline()  # printed once listening; blocks until then, however loaded the machine
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        assert url, first + proc.stderr.read()
        port = int(url.group(1))
        assert listening(port) == ["0100007F"], listening(port)  # 127.0.0.1, no wildcard, no IPv6
        status, kind, body = get(f"http://127.0.0.1:{port}/index.html")
        assert status == 200 and b"vendor/jquery-3.3.1.min.js" in body
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "Traceback" not in err, err


@pytest.mark.parametrize("args", [["--html", "nowhere"], ["--port", "70000"], ["--port", "http"]])
def test_serve_bad_input_is_one_line(tmp_path, capsys, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    assert main(["serve", *args]) == 2
    one_line_error(capsys.readouterr().err)


def test_track_values_are_rounded_to_four_significant_digits():
    assert tracked(14.023987654321) == 14.02 and tracked(0.000123456) == 0.0001235 and tracked(293) == 293.0
    assert type(tracked(1)) is float and tracked(float("nan")) != tracked(float("nan"))


def test_every_throughput_and_latency_track_says_which_way_is_better():
    """asv reads every number as lower-is-better: the page names the direction (asv's pretty_name)."""
    inventory = json.loads(benchmark_inventory())
    for name, b in inventory.items():
        if b["type"] != "track" or b["unit"] in ("batch", "unit", "bytes") or name.startswith("conditions."):
            continue  # no direction: a batch, a size, or the run's conditions (facts recorded with the results)
        if b["unit"].startswith("kernel path"):
            continue  # no direction: which kernels ran, a fact
        way = "lower" if b["unit"].startswith("µs") else "higher"
        cls, method = name.split(".")[1:]
        assert b.get("pretty_name") == f"{cls}.{method} [{b['unit']}, {way} is better]", name
    assert inventory["decode.DecodeCacheResident.track_gflops"]["pretty_name"].startswith("DecodeCacheResident.")
    conditions = [b for name, b in inventory.items() if name.startswith("conditions.")]
    assert conditions and all("pretty_name" not in b for b in conditions)


def test_a_ctrl_c_while_a_request_is_handed_to_its_thread_stops_the_server(tmp_path, monkeypatch):
    """Under load, Ctrl-C can land in the main thread inside Thread.start() of a request: socketserver
    reports an Exception there as a failed request and serves on; Interrupted must stop it instead."""
    server = oh.local_server(published(tmp_path), 0)
    port = server.server_address[1]

    def ctrl_c_here(request, client_address):  # where the signal handler raised, as seen under load
        raise Interrupted(signal.SIGINT)

    monkeypatch.setattr(server, "process_request", ctrl_c_here)
    client = threading.Thread(target=lambda: _get_quietly(f"http://127.0.0.1:{port}/index.html"), daemon=True)
    client.start()
    serving_on = threading.Timer(30, server.shutdown)  # where it serves on, the test fails instead of hanging
    serving_on.start()
    try:
        with pytest.raises(Interrupted):
            server.serve_forever(poll_interval=0.05)
    finally:
        serving_on.cancel()
        server.server_close()
    client.join(timeout=30)
    assert not client.is_alive()  # its connection was closed, not left hanging


def _get_quietly(url: str) -> None:
    try:
        get(url)
    except OSError:
        pass
