"""The house style every generator draws with: figure size, fonts, colours, captions.

A project's generators import it (``from deckbuild.diagrams import style``) for figure(),
note(), reserve_bottom() and the colour names; deckbuild applies STYLE around every call.

Design targets (see docs/diagrams/README.md): 720 px wide (3.6 in at 200 dpi), shown at
half size on a 360-px phone, so 8 pt (22 px in the PNG, 11 px on the phone) is the smallest
text.  White background and dark ink because night mode shows the image through
``filter: invert(1) hue-rotate(180deg)``: white turns black, dark ink turns light, and
mid-lightness saturated colours keep their hue and stay readable both ways.

Determinism: the Agg backend, a fixed rc style applied over matplotlib's defaults (the
user's matplotlibrc is ignored), the bundled DejaVu Sans font, fixed figure size and dpi,
and no "Software" metadata in the PNG.  Same sources -> same bytes.
"""

from __future__ import annotations

from typing import Any, Literal

import matplotlib

matplotlib.use("Agg")

import matplotlib.style
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine, TightLayoutEngine
from matplotlib.rcsetup import cycler

WIDTH_IN = 3.6
DPI = 200
MIN_PT = 8.0
SEED = 0
"""Every random sample a diagram draws starts here, so a picture is the same on every build."""

INK = "#222222"
MUTED = "#555555"
GRID = "#d0d0d0"
SHADE = "#e4e4e4"
SHADE_LINE = "#a8a8a8"
"""Thin background lines (raw noisy data): visible but quiet, both ways."""
# Mid-lightness, saturated: readable on white and, inverted, on black.
BLUE = "#1f63c6"
ORANGE = "#d35400"
GREEN = "#17875f"
PURPLE = "#7a4fc0"
RED = "#c8243b"
PALETTE = [BLUE, ORANGE, GREEN, PURPLE, RED]

STYLE: dict[str, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "legend.handlelength": 1.6,
    "figure.titlesize": 10,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "text.color": INK,
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "axes.linewidth": 0.8,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": GRID,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": cycler(color=PALETTE),
    "lines.linewidth": 1.8,
    "path.simplify": False,
    "svg.hashsalt": "deckbuild",
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "text.hinting": "default",
    "text.antialiased": True,
    "mathtext.fontset": "dejavusans",
}

ILLUSTRATIVE_LABEL = "illustrative values"
LABEL_STRIP_IN = 0.2


def figure(
    height: float,
    *,
    layout: Literal["constrained", "compressed", "tight", "none"] = "constrained",
) -> Figure:
    """A new 720-px-wide figure (no pyplot: no global state between renders)."""
    # matplotlib documents and accepts layout="none" (no layout engine); its Figure stub
    # leaves that value out (set_layout_engine's stub has it).
    return Figure(figsize=(WIDTH_IN, height), dpi=DPI, layout=layout)  # type: ignore[arg-type]


def note(fig: Figure, text: str, *, y: float = 0.005, ha: str = "left") -> None:
    """A small caption line along the bottom edge of the figure."""
    x = 0.01 if ha == "left" else 0.99
    fig.text(x, y, text, ha=ha, va="bottom", fontsize=MIN_PT, color=MUTED)


def reserve_bottom(fig: Figure, inches: float) -> None:
    """Keep a strip at the bottom free of axes so a caption does not collide."""
    engine = fig.get_layout_engine()
    frac = inches / fig.get_figheight()
    if isinstance(engine, (ConstrainedLayoutEngine, TightLayoutEngine)) and "rect" in engine.get():
        frac = max(frac, engine.get()["rect"][1])  # never shrink a bigger reserved strip
        engine.set(rect=(0, frac, 1, 1 - frac))
    else:
        fig.subplots_adjust(bottom=max(fig.subplotpars.bottom, frac + 0.12))


def check_text_sizes(fig: Figure, name: str) -> None:
    """Refuse a figure with text a phone could not read (below MIN_PT)."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        if not (text.get_visible() and text.get_text().strip()):
            continue
        size = text.get_fontsize()
        assert not isinstance(size, str)  # Text keeps its size in points, as a float
        if size < MIN_PT:
            raise ValueError(f"diagram {name!r}: text {text.get_text()!r} is {size} pt, below the {MIN_PT} pt minimum for phones")
