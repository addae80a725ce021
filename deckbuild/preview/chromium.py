"""Launch Debian's Chromium under Playwright, offline and quiet (no browser download ever).

One place for the flags: the browser tests and tools/screenshots.py share it.
"""

from __future__ import annotations

import os
from typing import Any

CHROMIUM = os.environ.get("DECKBUILD_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def launch_chromium(playwright: Any) -> Any:
    """A headless Chromium; fails with a clear message when the system browser is missing."""
    if not os.path.exists(CHROMIUM):
        raise RuntimeError(f"Chromium not found at {CHROMIUM}: apt-get install chromium (or set DECKBUILD_CHROMIUM)")
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
