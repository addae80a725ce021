"""Pictures this deck draws by code: a card names one with `diagram: {name: ..., params: ...}`.

Each generator is a function marked with @diagram("name"); its parameters, each with a
default, are what a card's `params:` may set.  deckbuild's house style makes the figure
(style.figure): 360 px wide on a phone, readable in light and night mode.  Import matplotlib
only inside a generator, never at the top of this file.  See docs/format.md, "Diagrams
drawn by code".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:  # for the annotation only: never imported when the file is loaded
    from matplotlib.figure import Figure


@diagram("quadratic", title="The graph of y = ax² + bx + c", cost=60)
def quadratic(a: float = 1.0, b: float = 0.0, c: float = -1.0) -> Figure:
    """The parabola, its real roots (if any) and its vertex."""
    vertex = -b / (2 * a)
    x = np.linspace(vertex - 2.5, vertex + 2.5, 401)
    fig = style.figure(2.4)
    ax = fig.subplots()
    ax.axhline(0, color=style.MUTED, lw=0.8)
    ax.plot(x, a * x**2 + b * x + c, color=style.BLUE, label=f"y = {a:g}x² + {b:g}x + {c:g}")
    discriminant = b * b - 4 * a * c
    if discriminant >= 0:
        roots = [(-b - s * np.sqrt(discriminant)) / (2 * a) for s in (1, -1)]
        ax.plot(roots, [0, 0], "o", color=style.ORANGE, label="roots")
    ax.plot([vertex], [a * vertex**2 + b * vertex + c], "s", color=style.GREEN, label="vertex")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(loc="upper center")
    return fig
