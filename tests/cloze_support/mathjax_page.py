"""Typeset many LaTeX snippets with the real MathJax 3 in chromium and collect errors.

Anki typesets cards with MathJax 3; the PyPI package django-static-mathjax ships MathJax
3.2.2, which is served locally.  Each snippet sits in its own ``<div>`` so an error names
the formula it came from.
"""

from __future__ import annotations

import html
import importlib.util
import json
import tempfile
from pathlib import Path

from browser import launch_browser, serve_directory

_CONFIG = {
    "tex": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processEscapes": False,
        # Anki loads 'noundefined', which paints unknown macros red instead of failing;
        # dropping it here turns an unknown macro into a real MathJax error.
        "packages": {"[-]": ["noundefined"]},
    },
    "startup": {"typeset": True},
}

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script>window.MathJax = %s;</script>
<script src="mathjax/tex-chtml.js" id="MathJax-script"></script>
</head><body>
%s
</body></html>
"""

_COLLECT = """async () => {
  await MathJax.startup.promise;
  const out = [];
  for (const div of document.querySelectorAll('div[data-name]')) {
    const errors = [...new Set([...div.querySelectorAll('mjx-merror, [data-mjx-error]')].map(
      e => e.getAttribute('data-mjx-error') || e.textContent))];
    const math = div.querySelectorAll('mjx-container').length;
    out.push([div.dataset.name, errors, math]);
  }
  return out;
}"""


def mathjax_dir() -> Path:
    """The es5 folder of MathJax inside the installed django-static-mathjax package."""
    spec = importlib.util.find_spec("mathjax")
    assert spec is not None and spec.origin is not None, "pip install django-static-mathjax"
    es5 = Path(spec.origin).parent / "static" / "mathjax" / "es5"
    assert (es5 / "tex-chtml.js").is_file(), es5
    return es5


def typeset(snippets: dict[str, str]) -> dict[str, list[str]]:
    """Typeset ``name -> HTML with \\( \\)/\\[ \\] math``; return ``name -> problems``.

    A problem is a MathJax error message, "no math found" (a snippet that should hold
    math produced none), or a browser console error (reported under ``<console>``).
    """
    body = "\n".join(f'<div data-name="{html.escape(name)}">{content}</div>' for name, content in snippets.items())
    with tempfile.TemporaryDirectory(prefix="deckbuild-mathjax-") as tmp:
        root = Path(tmp)
        (root / "mathjax").symlink_to(mathjax_dir(), target_is_directory=True)
        (root / "index.html").write_text(_PAGE % (json.dumps(_CONFIG), body), encoding="utf-8")
        console: list[str] = []
        with serve_directory(root) as base, launch_browser() as browser:
            page = browser.new_page()
            page.on(
                "console",
                lambda msg: console.append(msg.text) if msg.type == "error" else None,
            )
            page.on("pageerror", lambda exc: console.append(str(exc)))
            page.goto(base + "index.html")
            results = page.evaluate(_COLLECT)
    problems: dict[str, list[str]] = {}
    for name, errors, math_count in results:
        found = list(errors)
        if math_count == 0:
            found.append("no math found")
        if found:
            problems[name] = found
    if console:
        problems["<console>"] = console
    return problems
