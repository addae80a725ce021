"""Debugging diagrams: broadcasting bug, padding-aware loss averaging, finite
differences."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _table(
    ax: Axes,
    values: np.ndarray,
    fills: np.ndarray,
    x0: float,
    y0: float,
    fmt: str = "{:g}",
) -> None:
    """Draw a small grid of numbered cells with its top-left corner at (x0, y0)."""
    from matplotlib.patches import Rectangle

    for (i, j), v in np.ndenumerate(values):
        ax.add_patch(
            Rectangle(
                (x0 + j, y0 - i - 1),
                1,
                1,
                facecolor=fills[i, j],
                edgecolor=s.INK,
                lw=0.8,
            )
        )
        text = "" if np.isnan(v) else fmt.format(v)
        ax.text(x0 + j + 0.5, y0 - i - 0.5, text, ha="center", va="center", fontsize=8.5)


@diagram("broadcasting-bug", title="Broadcasting bug in a regression loss", illustrative=True, cost=140)
def broadcasting_bug() -> Figure:
    """pred [4, 1] minus target [4] broadcasts to a [4, 4] residual matrix."""
    pred = np.array([1.0, 2.0, 3.0, 4.0])
    target = np.array([1.5, 2.0, 2.5, 5.0])
    resid = pred[:, None] - target[None, :]
    fig = s.figure(3.0)
    ax = fig.subplots()
    white = np.full((4, 1), "white", dtype=object)
    _table(ax, pred[:, None], white, 0, 4)
    ax.text(0.5, 4.1, "pred\n[4, 1]", ha="center", va="bottom", fontsize=8)
    _table(ax, target[None, :], np.full((1, 4), "white", dtype=object), 2.2, 5.6)
    ax.text(4.2, 5.7, "target [4]", ha="center", va="bottom", fontsize=8)
    fills = np.where(np.eye(4, dtype=bool), "#f6c9a8", s.SHADE)
    _table(ax, resid, fills, 2.2, 4)
    ax.text(
        6.5,
        2.0,
        "pred − target\nis [4, 4]:\nonly the diagonal\nwas intended",
        fontsize=8,
        va="center",
    )
    mse_bug = float(np.mean(resid**2))
    mse_ok = float(np.mean((pred - target) ** 2))
    ax.text(
        0,
        -0.6,
        f"mean of all 16: {mse_bug:.3g}   intended MSE: {mse_ok:.3g}",
        fontsize=8.5,
        va="top",
        color=s.RED,
    )
    ax.set_xlim(-0.2, 10)
    ax.set_ylim(-1.4, 6.8)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return fig


@diagram("padding-loss", title="Padding-aware loss averaging", illustrative=True, cost=100)
def padding_loss() -> Figure:
    """token mean vs sequence mean over padded batches; DDP ranks with unequal tokens."""
    losses = np.array([[1.0, 3.0, np.nan, np.nan], [1.0, 1.0, 1.0, 1.0]])
    fills = np.where(np.isnan(losses), s.SHADE, "white").astype(object)
    fig = s.figure(2.6)
    ax = fig.subplots()
    _table(ax, losses, fills, 0, 2)
    for i, label in enumerate(["seq 1 (2 tokens)", "seq 2 (4 tokens)"]):
        ax.text(-0.2, 1.5 - i, label, ha="right", va="center", fontsize=8)
    ax.text(4.2, 1.5, "grey = padding,\nleft out", fontsize=8, va="center", color=s.MUTED)
    tok = np.nanmean(losses)
    seq = np.mean(np.nanmean(losses, axis=1))
    ax.text(-3.3, -0.45, f"token mean = 8/6 = {tok:.2f}", fontsize=8.5, color=s.BLUE)
    ax.text(
        -3.3,
        -1.15,
        f"sequence mean = (2 + 1)/2 = {seq:.2f}",
        fontsize=8.5,
        color=s.ORANGE,
    )
    ax.text(
        -3.3,
        -1.5,
        "DDP: rank A has 10 tokens, rank B 30. Averaging\nrank means weights them 1:1; the token mean, 1:3.",
        fontsize=8,
        va="top",
    )
    ax.set_xlim(-3.4, 6.6)
    ax.set_ylim(-2.9, 2.2)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return fig


@diagram("finite-difference", title="Centered vs forward difference", illustrative=True, cost=150)
def finite_difference(eps: float = 0.5) -> Figure:
    """f(x) = x^3 at x = 1: forward vs centered secants against the tangent."""
    x = np.linspace(0, 1.8, 400)
    x0 = 1.0
    f0, df = x0**3, 3 * x0**2
    fwd = ((x0 + eps) ** 3 - f0) / eps
    ctr = ((x0 + eps) ** 3 - (x0 - eps) ** 3) / (2 * eps)
    fig = s.figure(3.1)
    ax = fig.subplots()
    ax.plot(x, x**3, color=s.INK, label="f(x) = x³")
    lines = [
        (df, s.GREEN, "-", f"tangent: slope {df:g}"),
        (fwd, s.RED, "--", f"forward: {fwd:g} (error {fwd - df:+.2f})"),
        (ctr, s.BLUE, "--", f"centered: {ctr:g} (error {ctr - df:+.2f})"),
    ]
    for slope, colour, ls, label in lines:
        ax.plot(x, f0 + slope * (x - x0), color=colour, ls=ls, lw=1.5, label=label)
    for px in (x0 - eps, x0, x0 + eps):
        ax.plot([px], [px**3], "o", color=s.INK, ms=4)
    ax.set_xlim(0, 1.8)
    ax.set_ylim(-1.5, 5)
    ax.set_xlabel(f"x   (ε = {eps:g} around x = 1)")
    ax.set_ylabel("f(x)")
    ax.legend(loc="upper left", fontsize=8)
    return fig
