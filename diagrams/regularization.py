"""Regularization diagrams: snapshot restarts, dropout, stochastic depth, label
smoothing, sharp vs flat minima."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@diagram("cosine-restarts", title="Cosine restarts and snapshot points", illustrative=True, cost=140)
def cosine_restarts(cycles: int = 5) -> Figure:
    """SGDR cosine cycles; each cycle's end is one snapshot for the ensemble."""
    t0 = 1000
    t = np.arange(cycles * t0 + 1)
    eta = 0.5 * (1 + np.cos(np.pi * (t % t0) / t0))
    eta[-1] = 0.0  # the last step ends the last cycle
    fig = s.figure(2.6)
    ax = fig.subplots()
    ax.plot(t, eta, color=s.BLUE)
    ends = np.arange(1, cycles + 1) * t0 - 1
    ax.plot(ends, eta[ends], "o", color=s.ORANGE, ms=7, zorder=3)
    for i, e in enumerate(ends, start=1):
        ax.text(
            float(e),
            0.08,
            f"snapshot {i}",
            rotation=90,
            ha="right",
            va="bottom",
            fontsize=8,
            color=s.ORANGE,
        )
    ax.set_xlim(0, cycles * t0 + 30)
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("training step")
    ax.set_ylabel("LR / peak")
    ax.set_title(f"{cycles} cosine cycles → ensemble of {cycles} snapshots", fontsize=8.5)
    return fig


def _grid(ax: Axes, values: np.ndarray, colours: np.ndarray, title: str) -> None:
    from matplotlib.patches import Rectangle

    n = values.shape[0]
    for (i, j), v in np.ndenumerate(values):
        ax.add_patch(Rectangle((j, n - 1 - i), 1, 1, facecolor=colours[i, j], edgecolor=s.INK, lw=0.8))
        ax.text(j + 0.5, n - 0.5 - i, f"{v:g}", ha="center", va="center", fontsize=9)
    ax.set_xlim(0, n)
    ax.set_ylim(0, n)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(title, fontsize=8.5)


@diagram("inverted-dropout", title="Inverted dropout", illustrative=True, cost=210)
def inverted_dropout() -> Figure:
    """training keeps each unit with p = 0.5 and doubles survivors; eval is identity."""
    rng = np.random.default_rng(s.SEED)
    n = 4
    act = rng.integers(1, 6, size=(n, n)).astype(float)
    keep = rng.random((n, n)) >= 0.5
    out = np.where(keep, act / 0.5, 0)
    white = np.full((n, n), "white", dtype=object)
    fig = s.figure(2.0)
    axes = fig.subplots(1, 3)
    _grid(axes[0], act, white, "activations")
    _grid(axes[1], keep.astype(int), np.where(keep, s.SHADE, "white"), "keep mask")
    _grid(axes[2], out, np.where(keep, "#f6c9a8", "white"), "train: a·m / 0.5")
    s.note(
        fig,
        "Kept values double (3 → 6).\nEval: no mask, output = input.",
    )
    s.reserve_bottom(fig, 0.42)
    return fig


@diagram("stochastic-depth", title="Stochastic depth: drop probability by depth", illustrative=True, cost=140)
def stochastic_depth(blocks: int = 24, final_drop: float = 0.2) -> Figure:
    """linear rule p_l = l/L * p_L for the chance a residual block is skipped."""
    layer = np.arange(1, blocks + 1)
    p = layer / blocks * final_drop
    fig = s.figure(2.7)
    ax = fig.subplots()
    ax.bar(layer, p, color=s.BLUE, width=0.75)
    ax.set_xlim(0.3, blocks + 0.7)
    ax.set_ylim(0, final_drop * 1.35)
    ax.set_xlabel("residual block l")
    ax.set_ylabel("drop probability")
    ax.text(
        1,
        final_drop * 1.3,
        f"p_l = l / L · {final_drop:g}   (L = {blocks})\n"
        "dropped block: only the identity path\npasses, output x instead of x + F(x)",
        va="top",
        fontsize=8,
    )
    return fig


@diagram("label-smoothing", title="Label smoothing targets", cost=120)
def label_smoothing(classes: int = 4, eps: float = 0.1) -> Figure:
    """one-hot target vs smoothed target (1 - eps + eps/K on the true class)."""
    k = np.arange(classes)
    onehot = (k == 0).astype(float)
    smooth = onehot * (1 - eps) + eps / classes
    fig = s.figure(2.6)
    ax = fig.subplots()
    w = 0.38
    ax.bar(k - w / 2, onehot, w, color=s.MUTED, label="one-hot")
    ax.bar(k + w / 2, smooth, w, color=s.BLUE, label=f"smoothed, ε = {eps:g}")
    for x, v in zip(k + w / 2, smooth, strict=True):
        if v > 0.5:  # inside the tall bar, where it cannot collide with its neighbour
            ax.text(
                x,
                v - 0.04,
                f"{v:.3g}",
                ha="center",
                va="top",
                fontsize=8,
                color="white",
                fontweight="bold",
                rotation=90,
            )
        else:
            ax.text(
                x,
                v + 0.02,
                f"{v:.3g}",
                ha="center",
                va="bottom",
                fontsize=8,
                color=s.BLUE,
            )
    ax.set_xticks(k, ["true class"] + [f"class {i + 1}" for i in k[1:]])
    ax.set_ylim(0, 1.2)
    ax.set_ylabel("target probability")
    ax.legend(loc="upper right")
    return fig


@diagram("sharp-flat-minima", title="Sharp vs flat minima", illustrative=True, cost=190)
def sharp_flat_minima(shift: float = 0.3) -> Figure:
    """shifting the loss surface (train -> test) costs a sharp minimum far more."""
    w = np.linspace(-4, 5, 901)

    def loss(x: np.ndarray) -> np.ndarray:
        value: np.ndarray = np.minimum(8 * (x + 2) ** 2, 0.5 * (x - 2) ** 2 + 0.05)
        return value

    fig = s.figure(2.9)
    ax = fig.subplots()
    ax.plot(w, loss(w), color=s.BLUE, label="training loss")
    ax.plot(
        w,
        loss(w - shift),
        color=s.ORANGE,
        ls="--",
        label=f"test loss (shifted {shift:g})",
    )
    label_at = {"sharp": (-3.9, 0.9), "flat": (0.3, 0.3)}
    for m, name in ((-2.0, "sharp"), (2.0, "flat")):
        train, test = float(loss(np.array(m))), float(loss(np.array(m - shift)))
        ax.plot([m, m], [train, test], color=s.RED, lw=2.2)
        ax.plot([m], [train], "o", color=s.BLUE, ms=5)
        ax.annotate(
            f"{name}:\n+{test - train:.2f}",
            xy=(m, (train + test) / 2),
            xytext=label_at[name],
            fontsize=8,
            color=s.RED,
            arrowprops={"arrowstyle": "->", "color": s.RED, "lw": 0.9},
        )
    ax.set_xlim(-4, 5)
    ax.set_ylim(0, 1.6)
    ax.set_xlabel("weight w")
    ax.set_ylabel("loss")
    ax.legend(loc="upper right", fontsize=8)
    return fig
