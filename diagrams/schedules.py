"""Learning-rate diagrams: schedules, the range test, step size, batch-size scaling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _warmup_cosine(t: np.ndarray, total: int, warmup: int) -> np.ndarray:
    """eta(t): linear 0 -> 1 over warmup, then cosine to 0 at total (normalized peak)."""
    cos = 0.5 * (1 + np.cos(np.pi * (t - warmup) / (total - warmup)))
    return np.where(t < warmup, t / warmup, cos)


def _thousands(x: float, _pos: int) -> str:
    return f"{x / 1000:g}k" if x else "0"


@diagram("warmup-cosine", title="Linear warmup + cosine decay", illustrative=True, cost=120)
def warmup_cosine(total: int = 10000, warmup: int = 1000, accumulation_bug: bool = False) -> Figure:
    """warmup + cosine (and a linear-decay variant); optionally the 4x-accumulation bug."""
    from matplotlib.ticker import FuncFormatter

    fig = s.figure(4.6 if accumulation_bug else 2.7)
    axes = fig.subplots(2 if accumulation_bug else 1, 1, squeeze=False)[:, 0]
    t = np.linspace(0, total, 2001)
    ax = axes[0]
    lin = np.where(t < warmup, t / warmup, 1 - (t - warmup) / (total - warmup))
    ax.plot(t, lin, ls="--", color=s.MUTED, lw=1.4, label="linear decay")
    ax.plot(t, _warmup_cosine(t, total, warmup), color=s.BLUE, label="cosine decay")
    ax.axvspan(0, warmup, color=s.SHADE, lw=0)
    ax.text(warmup + total * 0.015, 0.1, "◀ warmup", ha="left", va="center", fontsize=8)
    ax.set_title("LR per optimizer update")
    ax.set_ylabel("LR / peak")
    ax.legend(loc="upper right")
    if accumulation_bug:
        ax = axes[1]
        # Bug: scheduler.step() per micro-batch with 4-way accumulation -> 4x too fast.
        ax.plot(
            t,
            _warmup_cosine(np.minimum(4 * t, total), total, warmup),
            color=s.RED,
            label="stepped per micro-batch",
        )
        ax.plot(
            t,
            _warmup_cosine(t, total, warmup),
            color=s.BLUE,
            lw=1.2,
            ls="--",
            label="stepped per update",
        )
        ax.annotate(
            "LR hits 0 at 25%\nof training",
            xy=(total / 4, 0),
            xytext=(total * 0.42, 0.45),
            fontsize=8,
            arrowprops={"arrowstyle": "->", "color": s.INK, "lw": 0.8},
        )
        ax.set_title("Bug: 4 micro-batches per update")
        ax.set_ylabel("LR / peak")
        ax.legend(loc="upper right")
    for ax in axes:
        ax.set_xlim(0, total)
        ax.set_ylim(0, 1.08)
        ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
    axes[-1].set_xlabel("optimizer update")
    return fig


@diagram("one-cycle", title="One-cycle policy: LR and momentum", illustrative=True, cost=160)
def one_cycle(pct_start: float = 0.3, div: float = 25.0) -> Figure:
    """one-cycle LR (up then down, linear) with momentum mirrored."""
    fig = s.figure(3.6)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    steps = 1000
    x = np.array([0, pct_start * steps, steps])
    ax1.plot(x, [1 / div, 1, 1 / div], color=s.BLUE)
    ax1.set_ylabel("LR / LR_max")
    ax1.set_ylim(0, 1.1)
    ax1.text(pct_start * steps, 1.0, "  LR_max", va="top", fontsize=8)
    ax1.annotate(
        f"start and end:\nLR_max/{div:g}",
        xy=(8, 1 / div),
        xytext=(pct_start * steps + 40, 0.12),
        fontsize=8,
        arrowprops={"arrowstyle": "->", "color": s.INK, "lw": 0.8},
    )
    ax1.set_title("Learning rate")
    ax2.plot(x, [0.95, 0.85, 0.95], color=s.ORANGE)
    ax2.set_ylim(0.83, 0.97)
    ax2.set_ylabel("momentum")
    ax2.set_title("Momentum: low when LR is high")
    ax2.set_xlabel("training step")
    for ax in (ax1, ax2):
        ax.axvline(pct_start * steps, color=s.MUTED, lw=0.9, ls=":")
        ax.set_xlim(0, steps)
    ax2.set_xticks([0, pct_start * steps, steps], ["0", f"{pct_start:.0%}", "100%"])
    return fig


def _range_loss(u: np.ndarray) -> np.ndarray:
    return 2.3 - 1.6 / (1 + np.exp(-2.5 * (u + 2.5))) + 0.05 * np.exp(4 * (u + 0.5))


@diagram("lr-range-test", title="LR range test", illustrative=True, cost=200)
def lr_range_test() -> Figure:
    """loss while the LR grows exponentially; steepest slope, divergence, the pick."""
    fig = s.figure(2.9)
    ax = fig.subplots()
    u = np.linspace(-7, 1, 4001)
    loss = _range_loss(u)
    lr = 10.0**u
    ax.plot(lr, loss, color=s.BLUE)
    ax.set_xscale("log")
    ax.set_xlim(1e-7, 10)
    ax.set_ylim(0, 3.0)
    slope = np.gradient(loss, u)
    steep = u[np.argmin(slope)]
    lmin = loss.min()
    div = u[np.argmax((loss > lmin + 0.5) & (u > u[np.argmin(loss)]))]
    pick = div - 1
    marks = [
        (steep, s.GREEN, "steepest\ndescent", (-5.6, 0.45)),
        (div, s.RED, "diverges", (-0.5, 2.6)),
        (pick, s.ORANGE, "pick ≈\ndiverge/10", (-3.3, 2.2)),
    ]
    for uu, colour, text, (tx, ty) in marks:
        yy = float(_range_loss(np.array(uu)))
        ax.plot([10**uu], [yy], "o", color=colour, ms=6, zorder=3)
        ax.annotate(
            text,
            xy=(10**uu, yy),
            xytext=(10**tx, ty),
            fontsize=8,
            color=colour,
            arrowprops={"arrowstyle": "->", "color": colour, "lw": 0.9},
        )
    ax.set_xticks([1e-7, 1e-5, 1e-3, 1e-1, 10])
    ax.set_xlabel("learning rate (log scale, grows each step)")
    ax.set_ylabel("training loss")
    return fig


@diagram("lr-too-small-large", title="Learning rate too small / right / too large", illustrative=True, cost=290)
def lr_too_small_large() -> Figure:
    """gradient descent on (w-4)^2 from w=1 for four step sizes."""
    fig = s.figure(3.9)
    axes = fig.subplots(2, 2, sharex=True).ravel()
    cases = [
        (0.02, "crawls", s.MUTED),
        (0.1, "good", s.GREEN),
        (0.9, "zig-zags in", s.ORANGE),
        (1.05, "diverges", s.RED),
    ]
    k = np.arange(16)
    for ax, (eta, what, colour) in zip(axes, cases, strict=True):
        w = 4 + (1 - 4) * (1 - 2 * eta) ** k  # closed form of w <- w - eta*2(w-4)
        ax.axhline(4, color=s.INK, lw=0.8, ls=":")
        ax.plot(k, w, "-o", color=colour, ms=3, lw=1.2)
        ax.set_title(f"η = {eta:g}: {what}", fontsize=8.5)
        lim = max(8.0, float(np.abs(w - 4).max()) + 4.5)
        ax.set_ylim(4 - lim if eta > 1 else -1, 4 + lim if eta > 1 else 8)
    axes[0].text(15, 4.4, "minimum w=4", ha="right", va="bottom", fontsize=8)
    axes[1].text(1.6, 1.3, "1 → 1.6", fontsize=8, color=s.GREEN, va="center")
    for ax in axes[2:]:
        ax.set_xlabel("step")
    for ax in axes[::2]:
        ax.set_ylabel("w")
    fig.suptitle("Descent on L(w) = (w−4)², start w = 1", fontsize=9.5, fontweight="bold")
    return fig


@diagram("lr-batch-scaling", title="LR vs batch size: linear and sqrt rules", cost=190)
def lr_batch_scaling(base_lr: float = 0.1, base_batch: int = 256) -> Figure:
    """linear vs square-root LR scaling from a base (LR, batch) pair."""
    fig = s.figure(2.9)
    ax = fig.subplots()
    b = np.geomspace(32, 65536, 200)
    ax.axvspan(8192, 65536, color=s.SHADE, lw=0)
    ax.axvline(8192, color=s.MUTED, ls=":", lw=1)
    ax.set_ylim(base_lr * 0.1, base_lr * 400)
    ax.text(
        8192 * 0.85,
        base_lr * 0.13,
        "~8k: linear rule\nstill works",
        ha="right",
        fontsize=8,
        color=s.MUTED,
    )
    ax.text(23000, base_lr * 0.13, "past ~8k:\nLARS/LAMB,\nto 32k+", ha="center", fontsize=8)
    ax.plot(b, base_lr * b / base_batch, color=s.BLUE, label="linear: LR ∝ B")
    ax.plot(b, base_lr * np.sqrt(b / base_batch), color=s.ORANGE, label="sqrt: LR ∝ √B")
    ax.plot([base_batch], [base_lr], "o", color=s.INK, ms=5)
    ax.annotate(
        f"{base_lr:g} @ {base_batch}",
        (base_batch, base_lr),
        xytext=(6, -12),
        textcoords="offset points",
        fontsize=8,
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(32, 65536)
    ax.set_xticks([32, 256, 2048, 16384, 65536], ["32", "256", "2k", "16k", "64k"])
    ax.set_xlabel("batch size B")
    ax.set_ylabel("learning rate")
    ax.legend(loc="upper left")
    return fig
