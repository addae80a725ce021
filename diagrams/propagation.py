"""Signal-propagation diagrams: LSTM forget-gate retention, initialization scale."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("lstm-forget", title="LSTM forget-gate retention", illustrative=True, cost=120)
def lstm_forget() -> Figure:
    """fraction of cell content left after t steps when the forget gate is f: f^t."""
    t = np.arange(101)
    fig = s.figure(2.8)
    ax = fig.subplots()
    for f, colour in ((0.5, s.RED), (0.9, s.ORANGE), (0.99, s.BLUE)):
        ax.plot(t, f**t, color=colour, label=f"forget gate f = {f:g}")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("time steps t")
    ax.set_ylabel("fraction of cell kept (f^t)")
    ax.legend(loc="upper right", fontsize=8)
    ax.annotate(
        f"{0.99**100:.0%} left\nafter 100 steps",
        xy=(100, 0.99**100),
        xytext=(62, 0.62),
        fontsize=8,
        color=s.BLUE,
        arrowprops={"arrowstyle": "->", "color": s.BLUE, "lw": 0.9},
    )
    s.note(fig, "cell update: c_t = f ⊙ c_{t−1} + i ⊙ g")
    s.reserve_bottom(fig, 0.22)
    return fig


@diagram("init-signal", title="Initialization and signal propagation", cost=700)
def init_signal() -> Figure:
    """activation std through 30 ReLU layers (width 256) for three weight scales."""
    rng = np.random.default_rng(s.SEED)
    width, depth, batch = 256, 30, 512
    x0 = rng.standard_normal((batch, width))
    fig = s.figure(2.9)
    ax = fig.subplots()
    cases = [
        ("He: std √(2/n)", np.sqrt(2 / width), s.GREEN),
        ("Xavier: std √(1/n)", np.sqrt(1 / width), s.ORANGE),
        ("N(0, 1)", 1.0, s.RED),
    ]
    for label, scale, colour in cases:
        x, stds = x0, [float(x0.std())]
        for _ in range(depth):
            x = np.maximum(x @ (scale * rng.standard_normal((width, width))), 0)
            stds.append(float(x.std()))
        ax.plot(range(depth + 1), stds, "-o", ms=2.5, color=colour, label=label)
    ax.set_yscale("log")
    ax.set_xlim(0, depth)
    ax.set_ylim(1e-6, 1e38)
    ax.set_yticks([1e-5, 1, 1e10, 1e20, 1e30], ["1e-5", "1", "1e10", "1e20", "1e30"])
    ax.set_xlabel("ReLU layer (width 256, batch 512)")
    ax.set_ylabel("activation std")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("He holds, Xavier shrinks, N(0, 1) explodes", fontsize=8.5)
    return fig
