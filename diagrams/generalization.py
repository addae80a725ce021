"""Generalization and training-curve diagrams: double descent, grokking, EMA, early stopping."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("double-descent", title="Deep double descent (computed)", illustrative=True, cost=1500)
def double_descent(n_train: int = 40, seeds: int = 10) -> Figure:
    """min-norm least squares on random ReLU features; test error peaks at p = n."""
    d, n_test, noise, p_max = 10, 1000, 0.3, 200
    ps = np.arange(1, p_max + 1)
    train = np.zeros((seeds, p_max))
    test = np.zeros((seeds, p_max))
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        beta = rng.standard_normal(d) / np.sqrt(d)
        x, x_test = rng.standard_normal((n_train, d)), rng.standard_normal((n_test, d))
        y = x @ beta + noise * rng.standard_normal(n_train)
        w = rng.standard_normal((d, p_max)) / np.sqrt(d)
        f, f_test = np.maximum(x @ w, 0), np.maximum(x_test @ w, 0)
        for i, p in enumerate(ps):
            coef = np.linalg.pinv(f[:, :p]) @ y  # minimum-norm solution once p >= n
            train[seed, i] = np.mean((f[:, :p] @ coef - y) ** 2)
            test[seed, i] = np.mean((f_test[:, :p] @ coef - x_test @ beta) ** 2)
    fig = s.figure(3.0)
    ax = fig.subplots()
    med = np.median(test, 0)
    ax.plot(ps, med, color=s.BLUE, label="test error")
    ax.plot(ps, np.median(train, 0), color=s.ORANGE, label="train error")
    ax.axvline(n_train, color=s.RED, ls=":", lw=1.2)
    ax.text(
        n_train + 3,
        25,
        f"interpolation\nthreshold p = n = {n_train}",
        fontsize=8,
        color=s.RED,
        va="top",
    )
    sweet = int(np.argmin(med[: n_train - 1]))
    ax.plot([ps[sweet]], [med[sweet]], "o", color=s.GREEN, ms=6, zorder=3)
    ax.annotate(
        "sweet spot",
        xy=(ps[sweet], med[sweet]),
        xytext=(3, 2.5),
        fontsize=8,
        color=s.GREEN,
        arrowprops={"arrowstyle": "->", "color": s.GREEN, "lw": 0.9},
    )
    ax.text(n_train + 4, 0.013, "train error = 0 from here on", fontsize=8, color=s.ORANGE)
    ax.set_yscale("log")
    ax.set_ylim(1e-2, 30)
    ax.set_xlim(0, p_max)
    ax.set_xlabel("model size: number of random features p")
    ax.set_ylabel("mean squared error")
    ax.text(
        p_max - 4,
        0.09,
        "over-parameterized:\nbeats the sweet spot",
        ha="right",
        va="top",
        fontsize=8,
        color=s.BLUE,
    )
    ax.legend(loc="upper right")
    return fig


@diagram("grokking", title="Grokking (schematic)", illustrative=True, cost=230)
def grokking() -> Figure:
    """train accuracy saturates early; validation jumps long after (schematic)."""
    fig = s.figure(2.8)
    ax = fig.subplots()
    x = np.linspace(1, 5, 801)
    chance = 0.01
    train = 1 / (1 + np.exp(-6 * (x - 2.5)))
    val = chance + (1 - chance) / (1 + np.exp(-8 * (x - 4.3)))
    steps = 10**x
    ax.plot(steps, 100 * train, color=s.ORANGE, label="train")
    ax.plot(steps, 100 * val, color=s.BLUE, label="validation")
    ax.set_xscale("log")
    ax.set_xlim(10, 1e5)
    ax.set_ylim(-3, 105)
    ax.annotate(
        "",
        xy=(10**4.3, 50),
        xytext=(10**2.9, 50),
        arrowprops={"arrowstyle": "<->", "color": s.INK, "lw": 0.9},
    )
    ax.text(10**3.6, 54, "long plateau", ha="center", fontsize=8)
    ax.set_xlabel("optimization step (log scale)")
    ax.set_ylabel("accuracy (%)")
    ax.legend(loc="center left")
    s.note(fig, "schematic after Power et al. 2022")
    return fig


@diagram("weight-ema", title="EMA of weights smooths the trajectory", illustrative=True, cost=170)
def weight_ema() -> Figure:
    """a noisy weight trajectory, its EMAs (alpha 0.99, 0.999) and an SWA average."""
    rng = np.random.default_rng(s.SEED)
    t = np.arange(3001)
    theta = 1 + 0.5 * np.exp(-t / 300) + 0.1 * rng.standard_normal(t.size)
    fig = s.figure(2.9)
    ax = fig.subplots()
    ax.plot(t, theta, color=s.SHADE_LINE, lw=0.6, label="raw weight")
    for alpha, colour in ((0.99, s.BLUE), (0.999, s.ORANGE)):
        ema = np.empty_like(theta)
        ema[0] = theta[0]
        for i in range(1, t.size):
            ema[i] = alpha * ema[i - 1] + (1 - alpha) * theta[i]
        ax.plot(t, ema, color=colour, label=f"EMA α={alpha} (~{1 / (1 - alpha):.0f} steps)")
    swa_from = 2000
    ax.hlines(
        theta[swa_from:].mean(),
        swa_from,
        t[-1],
        color=s.GREEN,
        lw=3,
        label="SWA: mean of last 1000",
        zorder=4,
    )
    ax.set_xlim(0, t[-1])
    ax.set_ylim(0.7, 2.0)
    ax.set_xlabel("training step")
    ax.set_ylabel("weight value")
    ax.legend(loc="upper right", fontsize=8)
    return fig


@diagram("early-stopping", title="Early stopping with patience", illustrative=True, cost=160)
def early_stopping(patience: int = 10) -> Figure:
    """train loss falls, validation loss turns up; keep the best, stop after patience."""
    e = np.arange(61)
    train = np.exp(-e / 15) + 0.05
    val = 0.35 + 0.6 * np.exp(-e / 12) + 0.004 * np.maximum(0, e - 30)
    best = int(np.argmin(val))
    stop = best + patience
    fig = s.figure(2.9)
    ax = fig.subplots()
    ax.axvspan(best, stop, color=s.SHADE, lw=0)
    ax.plot(e, train, color=s.ORANGE, label="train loss")
    ax.plot(e, val, color=s.BLUE, label="validation loss")
    ax.plot([best], [val[best]], "o", color=s.GREEN, ms=7, zorder=3)
    ax.annotate(
        f"best checkpoint\n(epoch {best})",
        xy=(best, val[best]),
        xytext=(12, 0.68),
        fontsize=8,
        color=s.GREEN,
        arrowprops={"arrowstyle": "->", "color": s.GREEN, "lw": 0.9},
    )
    ax.axvline(stop, color=s.RED, lw=1.2)
    ax.text(stop + 1, 0.88, f"stop\n(epoch {stop})", fontsize=8, color=s.RED, va="top")
    ax.text((best + stop) / 2, 0.2, f"patience\n{patience}", ha="center", fontsize=8)
    ax.set_xlim(0, 60)
    ax.set_ylim(0, 1.0)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.legend(loc="lower left")
    return fig


@diagram("train-above-val", title="Why training loss can sit above validation loss", illustrative=True, cost=160)
def train_above_val() -> Figure:
    """the logged train loss averages a falling curve (and has dropout on): it lags."""
    rng = np.random.default_rng(s.SEED)
    epoch, epochs = 500, 6
    t = np.arange(epoch * epochs + 1)
    clean = 0.3 + 2 * np.exp(-t / 800)
    per_step = clean + 0.05 + 0.06 * rng.standard_normal(t.size)
    ends = np.arange(1, epochs + 1) * epoch
    means = [per_step[e - epoch : e].mean() for e in ends]
    fig = s.figure(3.0)
    ax = fig.subplots()
    ax.plot(
        t,
        per_step,
        color=s.SHADE_LINE,
        lw=0.6,
        label="train loss per step (dropout on)",
    )
    ax.plot(t, clean, color=s.MUTED, lw=1, ls="--")
    ax.plot(ends, means, "s", color=s.ORANGE, ms=6, label="logged train loss = epoch mean")
    ax.plot(ends, clean[ends], "o", color=s.BLUE, ms=6, label="validation at epoch end")
    ax.annotate(
        "mean of the epoch:\nlags ~½ epoch",
        xy=(ends[0], means[0]),
        xytext=(1000, 2.0),
        fontsize=8,
        arrowprops={"arrowstyle": "->", "color": s.INK, "lw": 0.8},
    )
    ax.set_xticks(ends, [str(i) for i in range(1, epochs + 1)])
    ax.set_xlim(0, t[-1] + 60)
    ax.set_ylim(0, 3.3)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.legend(loc="upper right", fontsize=8)
    return fig
