"""A small application served on loopback for browser-flow tests (http.server in a thread)."""

from __future__ import annotations

import http.server
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ax_exec import CHROMIUM_PACKAGE, find_chromium

_NO_BROWSER = (
    f"no chromium on PATH (install Debian's {CHROMIUM_PACKAGE!r} package)"
    if find_chromium(os.environ) is None
    else "Playwright for Python is not installed (ax's 'browser' extra)"
    if importlib.util.find_spec("playwright") is None
    else None
)
needs_browser = pytest.mark.skipif(_NO_BROWSER is not None, reason=_NO_BROWSER or "")

HOME = b"""<!doctype html><title>Home</title>
<h1>Welcome</h1>
<input id=name><button id=go onclick="document.querySelector('#out').textContent =
 'Hello, ' + document.querySelector('#name').value">Go</button>
<p id=out></p>
<ul><li>a</li><li>b</li></ul>
<a id=next href="/next" data-kind="internal">next</a>
<a id=away href="http://192.0.2.1/elsewhere">away</a>
<a id=bounce href="/bounce">bounce</a>
"""
NEXT = b"<!doctype html><title>Next</title><h1>Second page</h1>"
NOISY = b"""<!doctype html><title>Noisy</title><h1>Noisy</h1>
<img src="/missing.png"><img src="http://192.0.2.1/tracker.gif">
<script>console.error('boom from the page');
new WebSocket('ws://192.0.2.1/socket')</script>"""


# How long /slow keeps a request waiting (a flow's step is then surely in progress).
SLOW_S = 30


class Handler(http.server.BaseHTTPRequestHandler):
    # Set once /slow is asked for: a test acts there, mid-step, on a page that never loads.
    slow_asked: threading.Event

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.slow_asked.set()
            time.sleep(SLOW_S)
        pages = {"/": HOME, "/next": NEXT, "/noisy": NOISY}
        if self.path == "/bounce":
            self.send_response(302)
            self.send_header("Location", "http://192.0.2.1/landed")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = pages.get(self.path)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def served(slow_asked: threading.Event | None = None) -> Iterator[str]:
    """The application's URL, as ax-preview would record it (http://127.0.0.1:PORT)."""
    handler = type("Served", (Handler,), {"slow_asked": slow_asked or threading.Event()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
