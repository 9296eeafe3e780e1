"""Headless Chromium (Debian's, driven by playwright) on a page served from 127.0.0.1, with the network blocked.

Every request that is not to the page's own server is refused three times over: Chromium resolves
no host name but 127.0.0.1, sends whatever is not loopback to a proxy on a closed loopback port,
and playwright aborts the request first (and records it, so a test can assert that the page asked
for nothing outside). A browser that is missing skips the test, saying why; nothing is downloaded.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9",  # the discard port, closed: loopback itself bypasses proxies
]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass


@contextmanager
def static_server(folder: Path) -> Iterator[str]:
    """``python -m http.server --bind 127.0.0.1`` on ``folder``, on a free port; yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    with serving(server) as url:
        yield url


@contextmanager
def serving(server: http.server.HTTPServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def offline_page(base: str, profile: Path) -> Iterator[tuple[object, list[str], list[str]]]:
    """A Chromium page that may reach ``base`` only; yields (page, errors, refused requests)."""
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (tools/install-test-deps.sh installs Debian's chromium as root)")
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright's Python package (the test extra)")
    errors: list[str] = []
    refused: list[str] = []

    def route(r):
        if r.request.url.startswith(base):
            return r.continue_()
        refused.append(r.request.url)
        return r.abort("internetdisconnected")

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(profile),  # a fresh --user-data-dir
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
            service_workers="block",
        )
        try:
            page = browser.new_page()
            page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
            page.on("console", lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None)
            page.route("**/*", route)
            yield page, errors, refused
        finally:
            browser.close()


#: The graph page's plot holds at least ``n`` series with points (asv draws one per machine and parameter).
SERIES_WITH_POINTS = (
    "n => { const p = $('#main-graph').data('plot');"
    " return p && p.getData().filter(s => s.data.some(d => d[1] !== null)).length >= n; }"
)


def errors_then_screenshot(page, errors: list[str], path: Path) -> list[str]:
    """The page's errors so far, then a full-page screenshot of it.

    The screenshot resizes the window, and asv's graph view redraws on every resize, also while a graph
    has no width to draw into (flot: "Invalid dimensions for plot, width = 0"): an error the screenshot
    makes, not the page, so the errors asserted on are those from before it.
    """
    seen = list(errors)
    page.screenshot(path=str(path), full_page=True)
    return seen
