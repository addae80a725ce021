"""Tiny shared helper: a headless Debian chromium via Playwright, and a local HTTP server.

Tests that need a real browser (MathJax typesetting, card templates) use these so the
launch flags live in one place.  Everything is local: no network is touched.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

from deckbuild.preview.chromium import launch_chromium


@contextlib.contextmanager
def launch_browser() -> Iterator[Browser]:
    """A headless chromium for the duration of the ``with`` block."""
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Static files without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    """Ignores clients that hang up mid-response (the browser closing after a test)."""

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@contextlib.contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 (a free port); yields the base URL ending in '/'."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
