"""Placeholder cloze emitter; replaced by the full implementation (issue 4)."""

from __future__ import annotations

import html
from collections.abc import Callable


def to_anki_formula(formula: str) -> str:
    return "\\[ " + html.escape(formula, quote=False) + " \\]"


def render_fact(text: str, markdown_to_html: Callable[[str], str]) -> str:
    return markdown_to_html(text)
