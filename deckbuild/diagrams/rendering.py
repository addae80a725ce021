"""One diagram to PNG bytes in this process: the spec checked, then drawn under the house style."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckbuild.diagrams.registry import REGISTRY
from deckbuild.diagrams.validation import merged_params

__all__ = ["render_png"]


def render_png(name: str, params: Mapping[str, Any] | None = None) -> bytes:
    """Render one diagram to PNG bytes (imports matplotlib; use materialize() to cache)."""
    merged = merged_params(name, params)
    from deckbuild.diagrams import _style  # matplotlib is loaded only to draw

    return _style.render(REGISTRY[name], merged)
