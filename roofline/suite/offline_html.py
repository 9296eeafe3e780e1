"""asv's published HTML without the internet: its CDN libraries served from this package.

asv 0.6.6's ``index.html`` loads jQuery, flot, bootstrap and three small plugins from
code.jquery.com, cdnjs and jsdelivr; with none reachable the page says "Can not determine
continental origin of swallow" and draws nothing. roofline ships the same libraries in
``asv_www/`` (:data:`ASSETS`: each CDN address, the npm package it was taken from and its
SHA-256; ``tools/asv_offline_assets.py`` fetches and checks them). :func:`make_offline` copies them
into ``<html>/vendor/`` and points ``index.html`` there, so the folder works offline from any
local web server; ``roofline serve`` does the same on the fly for a folder plain ``asv publish``
left pointing at the CDNs. It also drops from the page's list the benchmarks that have no value on
any machine (the CUDA class on CPU-only machines), which asv would show as empty boxes, and lets the
grid's titles wrap (asv cuts them at 292 px: "track_bandwidth [GB/s, higher is bette").

``make bench`` then moves asv's page to ``asv.html`` and writes roofline's own landing page as
``index.html`` (:mod:`roofline.report.page`); everything here finds asv's page in either place.

cdnjs's minified builds of flot 0.8.3 and stupidtable 1.0.1 are not on npm: those come as flot's
0.8.3 source (unminified, the same code) and stupidtable 1.1.3, the nearest published release.
The integrity (SRI) attributes go with the CDN addresses: the files are now the page's own.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import math
import os
import re
import shutil
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput, Interrupted
from ..files import atomic_write

#: Where the libraries live in this package, and where :func:`make_offline` puts them in the HTML folder.
WWW = Path(__file__).resolve().parent / "asv_www"
VENDOR = "vendor"
#: The libraries' licence texts, shipped beside them (and copied with them).
LICENSES = "LICENSES.txt"
#: The folder's entry page, and where asv's page goes when roofline's landing page takes that name.
INDEX, ASV_PAGE = "index.html", "asv.html"
#: asv's grid titles wrap instead of being cut at the thumbnail's width (bootstrap's .btn does not wrap).
STYLE = (
    '<style id="roofline-style">.benchmark-container{height:auto;min-height:116px;white-space:normal}'
    ".benchmark-text{white-space:normal;overflow:visible;word-break:break-word}</style>"
)


@dataclass(frozen=True)
class Asset:
    """One library file: its name here, the npm package and the path inside it, its SHA-256."""

    file: str
    package: str
    inner: str
    sha256: str


#: asv 0.6.6's CDN addresses → the file standing in for each.
ASSETS = {
    "https://code.jquery.com/jquery-3.3.1.min.js": Asset(
        "jquery-3.3.1.min.js",
        "jquery@3.3.1",
        "dist/jquery.min.js",
        "160a426ff2894252cd7cebbdd6d6b7da8fcd319c65b70468f10b6690c45d02ef",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": Asset(
        "jquery.flot-0.8.3.js",
        "flot@0.8.3",
        "jquery.flot.js",
        "b7b931f273c38b1277b9c6c1f4e05c4ec09885a487bddaf3279e2d7e49a38e12",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": Asset(
        "jquery.flot.time-0.8.3.js",
        "flot@0.8.3",
        "jquery.flot.time.js",
        "a582c832adc7138a6b05aaf61f16ebac274701f1be4afea77e739a1c34b9c41a",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js": Asset(
        "jquery.flot.selection-0.8.3.js",
        "flot@0.8.3",
        "jquery.flot.selection.js",
        "e6c85f6c1ebe4b4da29d8ae238c7c5060283f05f7ef054f6b91817d02c092918",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js": Asset(
        "jquery.flot.categories-0.8.3.js",
        "flot@0.8.3",
        "jquery.flot.categories.js",
        "6e81664b28ea795c734906f4aa15614640a75ac7fbd399a7fb9084040698351a",
    ),
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": Asset(
        "jquery.flot.orderBars-1.0.0.js",
        "flot-orderbars@1.0.0",
        "js/jquery.flot.orderBars.js",
        "39735b4f46f96ff4e082572401f47c55a2767b366fd1d1e821e44a8d830a12bf",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js": Asset(
        "stupidtable-1.1.3.min.js",
        "stupid-table-plugin@1.1.3",
        "stupidtable.min.js",
        "4642380f28ebe9ed7cac251793b281ef8620c4386205d92788f9b12f5cceb4e0",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": Asset(
        "md5-2.19.0.min.js",
        "blueimp-md5@2.19.0",
        "js/md5.min.js",
        "64d7ded388c562e4bde9e58ce205e5fa01b9734fcd434d496eb7b4fbfe9b927d",
    ),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js": Asset(
        "bootstrap-3.1.1.min.js",
        "bootstrap@3.1.1",
        "dist/js/bootstrap.min.js",
        "898d05a17f2cfc5120ddcdba47a885c378c0b466f30f0700e502757e24b403a1",
    ),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css": Asset(
        "bootstrap-3.1.1.min.css",
        "bootstrap@3.1.1",
        "dist/css/bootstrap.min.css",
        "e9503448692b738dd260fbd7f7cabf2e11f09b600fa97e6eb3a56eba5b1a7e9b",
    ),
}

#: A <script> or <link> tag, and an address in it that leaves this machine.
_TAG = re.compile(r"<(?:script|link)\b[^>]*>", re.IGNORECASE)
_REMOTE = re.compile(r"""\b(?:src|href)\s*=\s*["'](?:https?:)?//[^"']+["']""", re.IGNORECASE)
_CDN_ONLY = re.compile(r"""\s+(?:integrity|crossorigin|referrerpolicy)\s*=\s*["'][^"']*["']""", re.IGNORECASE)


def asset_path(asset: Asset) -> Path:
    return WWW / asset.file


def check_assets() -> list[str]:
    """Problems with the shipped libraries (missing, or not the bytes :data:`ASSETS` names); [] when sound."""
    problems = []
    for url, asset in ASSETS.items():
        path = asset_path(asset)
        if not path.is_file():
            problems.append(f"{path} is missing (the stand-in for {url})")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != asset.sha256:
            problems.append(f"{path} is not the file of {asset.package} it should be (SHA-256 differs)")
    if not (WWW / LICENSES).is_file():
        problems.append(f"{WWW / LICENSES} is missing (the libraries' licences)")
    return problems


def _vendored() -> dict[str, Path]:
    """What goes into ``vendor/``: each library under its file name, and the licences."""
    return {**{asset.file: asset_path(asset) for asset in ASSETS.values()}, LICENSES: WWW / LICENSES}


def offline_index(html: str) -> tuple[str, list[str]]:
    """asv's index.html with every CDN library pointed at ``vendor/``; and the addresses left remote.

    The integrity, crossorigin and referrerpolicy attributes of the rewritten tags go: they belong to
    the CDN. Idempotent. A remote script or stylesheet this does not know (a newer asv) is returned.
    """

    def local(tag: re.Match[str]) -> str:
        text = tag.group(0)
        for url, asset in ASSETS.items():
            if f'"{url}"' in text:
                return _CDN_ONLY.sub("", text.replace(f'"{url}"', f'"{VENDOR}/{asset.file}"'))
        return text

    out = _TAG.sub(local, html)
    if 'id="roofline-style"' not in out and "</head>" in out:
        out = out.replace("</head>", f"{STYLE}</head>", 1)
    remote = [m.group(0) for tag in _TAG.finditer(out) for m in _REMOTE.finditer(tag.group(0))]
    return out, remote


def is_asv_page(text: str) -> bool:
    """Whether an HTML text is asv's own page (it loads asv's scripts), not roofline's landing page."""
    return 'src="asv.js"' in text and 'src="graphdisplay.js"' in text


def asv_page_in_index(html: Path) -> bool:
    """Whether ``html``'s index.html is still asv's page (as ``asv publish`` leaves it)."""
    try:
        return is_asv_page((Path(html) / INDEX).read_text(encoding="utf-8"))
    except OSError:
        return False


def asv_page(html: Path) -> Path:
    """Where asv's page is: index.html as asv publish leaves it, asv.html once make bench moved it."""
    html = Path(html)
    return html / INDEX if asv_page_in_index(html) or not (html / ASV_PAGE).is_file() else html / ASV_PAGE


def _has_value(node: object) -> bool:
    """Any finite number in a published graph's data (values nest in lists; null is no value)."""
    if isinstance(node, list):
        return any(_has_value(x) for x in node)
    return isinstance(node, int | float) and not isinstance(node, bool) and math.isfinite(node)


#: asv's summary list of a graph folder (``graphs/<params>/summary.json``): a row per benchmark.
SUMMARY = "summary.json"


def benchmarks_with_values(html: Path) -> set[str]:
    """Benchmarks that have at least one value in some published graph (``graphs/**/<name>.json``)."""
    found: set[str] = set()
    for root, _, files in os.walk(html / "graphs"):
        for name in files:
            bench = name.removesuffix(".json")
            if bench in found or not name.endswith(".json") or name == SUMMARY:
                continue
            try:
                data = json.loads((Path(root) / name).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if _has_value([point[1:] for point in data if isinstance(point, list)]):
                found.add(bench)
    return found


def make_offline(html: Path) -> list[str]:
    """Make an ``asv publish`` folder work offline, in place; returns one line per thing done or left.

    Copies the libraries and their licences into ``html/vendor/``, rewrites ``index.html`` (atomically), and takes the
    benchmarks without a value anywhere out of ``index.json``'s list. BadInput when ``html`` holds
    no published page or the shipped libraries are not sound.
    """
    html = Path(html)
    index = asv_page(html)
    if not index.is_file():
        raise BadInput(f"{html} holds no index.html (run asv publish first)")
    problems = check_assets()
    if problems:
        raise BadInput(f"cannot make the HTML work offline: {problems[0]}")
    lines = []
    try:
        (html / VENDOR).mkdir(exist_ok=True)
        for name, source in _vendored().items():
            target = html / VENDOR / name
            if not target.is_file() or target.read_bytes() != source.read_bytes():
                shutil.copyfile(source, target)
        text, remote = offline_index(index.read_text(encoding="utf-8"))
        atomic_write(index, text)
        lines += [f"{index.name} still loads {r} from the internet (not a library roofline knows)" for r in remote]
        hidden = hide_empty_benchmarks(html)
    except OSError as exc:
        raise BadInput(f"cannot make {html} work offline: {exc.strerror or exc}") from None
    if hidden:
        lines.append(f"not listed, as no machine has a value for them: {', '.join(hidden)}")
    return lines


def shown_only(data: object, shown: set[str], kind: str) -> object:
    """index.json (``kind`` "index") or a summary list ("summary") without the benchmarks not in ``shown``."""
    if kind == "index" and isinstance(data, dict) and isinstance(data.get("benchmarks"), dict):
        return {**data, "benchmarks": {k: v for k, v in data["benchmarks"].items() if k in shown}}
    if kind == "summary" and isinstance(data, list):
        return [row for row in data if not isinstance(row, dict) or row.get("name") in shown]
    return data


def hide_empty_benchmarks(html: Path) -> list[str]:
    """Take the benchmarks with no value in any graph out of index.json and every summary list; their names.

    asv's pages draw every benchmark index.json lists, and its list view reads the summary lists:
    both go, or the page would look up a benchmark it no longer knows.
    """
    path = html / "index.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    benchmarks = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(benchmarks, dict):
        return []
    shown = benchmarks_with_values(html)
    hidden = sorted(name for name in benchmarks if name not in shown)
    if not hidden:
        return []
    for summary in sorted((html / "graphs").rglob(SUMMARY)):
        try:
            rows = json.loads(summary.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        atomic_write(summary, json.dumps(shown_only(rows, shown, "summary")))
    atomic_write(path, json.dumps(shown_only(data, shown, "index")))
    return hidden


def make_handler(html: Path) -> type[http.server.SimpleHTTPRequestHandler]:
    """A request handler serving ``html`` read-only, offline: asv's page (index.html or asv.html) rewritten by
    :func:`offline_index`, ``vendor/`` from this package, index.json without the benchmarks no machine has a
    value for."""
    html = Path(html)
    files = _vendored()
    shown = benchmarks_with_values(html)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(html), **kwargs)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
            pass

        def send_head(self):  # GET and HEAD both come here
            path = urllib.parse.urlsplit(self.path).path
            page = html / (INDEX if path == "/" else path.lstrip("/"))
            if path in ("/", f"/{INDEX}", f"/{ASV_PAGE}") and page.is_file():
                text = page.read_text(encoding="utf-8")
                body = (offline_index(text)[0] if is_asv_page(text) else text).encode()
                return self._send(body, "text/html; charset=utf-8")
            if path.startswith(f"/{VENDOR}/") and path.removeprefix(f"/{VENDOR}/") in files:
                name = path.removeprefix(f"/{VENDOR}/")
                kind = "text/css" if name.endswith(".css") else "text/plain" if name == LICENSES else "text/javascript"
                return self._send(files[name].read_bytes(), kind)
            kind = "index" if path == "/index.json" else "summary" if path.endswith(f"/{SUMMARY}") else None
            file = Path(self.translate_path(path))
            if kind and file.is_file():
                try:
                    data = shown_only(json.loads(file.read_text(encoding="utf-8")), shown, kind)
                except ValueError:
                    return super().send_head()
                return self._send(json.dumps(data).encode(), "application/json")
            return super().send_head()

        def _send(self, body: bytes, kind: str) -> io.BytesIO:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            return io.BytesIO(body)

    return Handler


class LoopbackServer(http.server.ThreadingHTTPServer):
    """asv's HTML over HTTP, one thread per request; a Ctrl-C always stops it.

    socketserver reports any ``Exception`` raised while a request is handed to its thread and serves
    on. Ctrl-C raises :class:`~roofline.errors.Interrupted` in the main thread (roofline.interrupt),
    and under load it can land just there, inside ``Thread.start()``: it must stop the server, not be
    reported as a failed request.
    """

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], Interrupted):
            self.shutdown_request(request)
            raise
        super().handle_error(request, client_address)


def local_server(html: Path, port: int) -> LoopbackServer:
    """A server for ``html`` on 127.0.0.1 only (asv 0.6.6's ``preview`` listens on every interface).

    ``port`` 0 picks a free one (``server.server_address[1]``). BadInput when ``html`` holds no
    published page or the port is taken.
    """
    html = Path(html)
    if not (html / "index.html").is_file():
        raise BadInput(f"{html} holds no index.html: run make bench (or asv publish) first")
    problems = check_assets()
    if problems:
        raise BadInput(f"cannot serve the HTML offline: {problems[0]}")
    try:
        return LoopbackServer(("127.0.0.1", port), make_handler(html))
    except OSError as exc:
        raise BadInput(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc} (pick another --port)") from None
