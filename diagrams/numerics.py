"""Numerics diagrams: batch-statistic noise, gradient clipping, float formats, loss scaling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("batch-stat-noise", title="Batch-statistic noise vs batch size", cost=350)
def batch_stat_noise(small_batch: int = 4, large_batch: int = 256) -> Figure:
    """per-batch mean estimates spread as 1/sqrt(B): tiny batches give noisy BN stats."""
    rng = np.random.default_rng(s.SEED)
    fig = s.figure(3.5)
    axes = fig.subplots(2, 1, sharex=True)
    bins = np.linspace(-2, 2, 81)
    x = np.linspace(-2, 2, 801)
    for ax, b, colour in (
        (axes[0], small_batch, s.ORANGE),
        (axes[1], large_batch, s.BLUE),
    ):
        means = rng.standard_normal((5000, b)).mean(axis=1)
        sd = 1 / np.sqrt(b)
        ax.hist(means, bins=bins, density=True, color=colour, alpha=0.5, lw=0)
        ax.plot(
            x,
            np.exp(-0.5 * (x / sd) ** 2) / (sd * np.sqrt(2 * np.pi)),
            color=colour,
            lw=1.4,
        )
        ax.axvline(0, color=s.INK, lw=1, ls=":")
        ax.set_title(f"batch size {b}", fontsize=8.5)
        ax.text(
            0.98,
            0.9,
            f"std of batch mean\n= 1/√{b} = {sd:.2g}",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=8,
            color=colour,
        )
        ax.set_yticks([])
        ax.set_xlim(-2, 2)
    axes[0].text(0.03, 0.9, "true mean 0", transform=axes[0].transAxes, fontsize=8, va="top")
    axes[1].set_xlabel("mean of one batch (data ~ N(0, 1); 5000 batches)")
    return fig


@diagram("grad-clipping", title="Gradient clipping by norm vs by value", cost=110)
def grad_clipping() -> Figure:
    """clip-by-norm keeps the direction; clip-by-value changes it."""
    from matplotlib.patches import Circle, Rectangle

    g = np.array([6.0, 8.0])
    c = 2.0
    by_norm = g * c / np.linalg.norm(g)
    by_value = np.clip(g, -c, c)
    fig = s.figure(3.5)
    ax = fig.subplots()
    ax.add_patch(
        Rectangle(
            (-c, -c),
            2 * c,
            2 * c,
            facecolor=s.SHADE,
            edgecolor=s.ORANGE,
            lw=1.2,
            ls="--",
        )
    )
    ax.add_patch(Circle((0, 0), c, facecolor="none", edgecolor=s.BLUE, lw=1.2))
    arrows = [
        (g, s.INK, "g = (6, 8), ‖g‖ = 10", (3.3, 8.3)),
        (by_norm, s.BLUE, "by norm (max 2):\n(1.2, 1.6), same direction", (-3.3, 5.0)),
        (by_value, s.ORANGE, "by value (±2):\n(2, 2), direction changes", (2.4, 0.6)),
    ]
    for vec, colour, text, pos in arrows:
        ax.annotate(
            "",
            xy=tuple(vec),
            xytext=(0, 0),
            arrowprops={
                "arrowstyle": "-|>",
                "color": colour,
                "lw": 2,
                "mutation_scale": 12,
                "shrinkA": 0,
                "shrinkB": 0,
            },
        )
        ax.text(*pos, text, fontsize=8, color=colour)
    ax.text(2.6, -1.9, "circle: ‖g‖ = 2\nbox: |gᵢ| = 2", fontsize=8, color=s.MUTED)
    ax.set_aspect("equal")
    ax.set_xlim(-3.5, 9)
    ax.set_ylim(-2.5, 9)
    ax.set_xticks([-2, 0, 2, 4, 6, 8])
    ax.set_yticks([-2, 0, 2, 4, 6, 8])
    ax.axhline(0, color=s.MUTED, lw=0.6)
    ax.axvline(0, color=s.MUTED, lw=0.6)
    return fig


@diagram("float-formats", title="fp32 / fp16 / bf16: bits and range", cost=140)
def float_formats() -> Figure:
    """bit layouts of fp32/fp16/bf16 and the magnitudes each can represent."""
    from matplotlib.patches import Rectangle

    f16, f32 = np.finfo(np.float16), np.finfo(np.float32)
    bf16_max = (2 - 2.0**-7) * 2.0**127
    formats = [
        # name, (sign, exponent, mantissa), min subnormal, min normal, max, epsilon
        (
            "fp32",
            (1, 8, 23),
            float(f32.smallest_subnormal),
            float(f32.tiny),
            float(f32.max),
            "2⁻²³",
        ),
        ("bf16", (1, 8, 7), 2.0**-133, 2.0**-126, bf16_max, "2⁻⁷"),
        (
            "fp16",
            (1, 5, 10),
            float(f16.smallest_subnormal),
            float(f16.tiny),
            float(f16.max),
            "2⁻¹⁰",
        ),
    ]
    fig = s.figure(4.3)
    ax1, ax2 = fig.subplots(2, 1, height_ratios=[1, 1.15])
    for row, (_name, bits, *_rest, eps) in enumerate(formats):
        y = 2 - row
        x = 0
        for width, colour, part in zip(bits, (s.RED, s.BLUE, s.GREEN), ("s", "exp", "mantissa"), strict=True):
            ax1.add_patch(Rectangle((x, y - 0.35), width, 0.7, facecolor=colour, edgecolor="white", lw=1))
            if width >= 5:
                ax1.text(
                    x + width / 2,
                    y,
                    f"{part} {width}" if width > 5 else str(width),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                    fontweight="bold",
                )
            x += width
        ax1.text(x + 0.5, y, f"ε = {eps}", va="center", fontsize=8)
    ax1.set_yticks([2, 1, 0], [f[0] for f in formats])
    ax1.set_xlim(0, 40)
    ax1.set_ylim(-0.6, 2.6)
    ax1.set_xticks([0, 8, 16, 24, 32])
    ax1.set_xlabel("bits (sign, exponent, mantissa)", fontsize=8)
    ax1.grid(False)
    ax1.spines["left"].set_visible(False)
    ax1.tick_params(axis="y", length=0)
    for row, (_name, _bits, sub, tiny, big, _eps) in enumerate(formats):
        y = 2 - row
        lo, mid, hi = np.log10(sub), np.log10(tiny), np.log10(big)
        ax2.barh(y, mid - lo, left=lo, height=0.55, color=s.SHADE, edgecolor=s.MUTED, lw=0.6)
        ax2.barh(y, hi - mid, left=mid, height=0.55, color=s.PALETTE[row])
    ax2.text(np.log10(65504) + 1, 0, "max 65504", va="center", fontsize=8)
    ax2.text(np.log10(3.4e38) - 1, 1.42, "max ≈ 3.4e38", ha="right", fontsize=8)
    ax2.text(-37.6, 1.42, "min normal 1.2e-38", ha="left", fontsize=8)
    ax2.text(-4.2, -0.7, "min normal 6.1e-5", ha="center", fontsize=8)
    ax2.set_yticks([2, 1, 0], [f[0] for f in formats])
    ax2.set_xlim(-46, 40)
    ax2.set_ylim(-1.0, 2.6)
    ax2.set_xticks([-40, -20, 0, 20, 38], ["1e-40", "1e-20", "1", "1e20", "1e38"])
    ax2.set_xlabel("magnitude (log scale); grey = subnormal", fontsize=8)
    ax2.grid(axis="y", visible=False)
    ax2.tick_params(axis="y", length=0)
    ax2.spines["left"].set_visible(False)
    return fig


@diagram("loss-scaling", title="Why loss scaling works", illustrative=True, cost=310)
def loss_scaling(scale: int = 128) -> Figure:
    """fp16 flushes tiny gradients to zero; multiplying the loss by S shifts them up."""
    rng = np.random.default_rng(s.SEED)
    log_g = rng.normal(-7, 1, 100_000)
    grads = 10.0**log_g
    f16 = np.finfo(np.float16)
    # Below half the smallest subnormal, round-to-nearest gives exactly 0.
    flush = np.log10(float(f16.smallest_subnormal) / 2)
    tiny = np.log10(float(f16.tiny))
    fig = s.figure(4.0)
    axes = fig.subplots(2, 1, sharex=True)
    bins = np.linspace(-12, 0, 97)
    for ax, mult, title in (
        (axes[0], 1, "gradients as computed"),
        (axes[1], scale, f"loss × {scale} (gradients × {scale})"),
    ):
        zero = float(np.mean(np.asarray(grads * mult, dtype=np.float16) == 0))
        ax.axvspan(-12, flush, color=s.SHADE, lw=0)
        ax.axvspan(flush, tiny, color=s.SHADE, alpha=0.45, lw=0)
        ax.hist(log_g + np.log10(mult), bins=bins, color=s.BLUE, lw=0)
        ax.set_title(title, fontsize=8.5)
        ax.text(
            -11.8,
            0.88,
            f"flushed to 0\nin fp16: {zero * 100:.3g}%",
            transform=ax.get_xaxis_transform(),
            fontsize=8,
            va="top",
            color=s.RED,
            fontweight="bold",
        )
        ax.set_yticks([])
        ax.grid(axis="y", visible=False)
        ax.set_xlim(-12, 0)
    axes[0].text(
        tiny - 0.1,
        0.95,
        "subnormal",
        transform=axes[0].get_xaxis_transform(),
        fontsize=8,
        ha="right",
        va="top",
        color=s.MUTED,
    )
    axes[1].set_xlabel("log₁₀ |gradient|")
    return fig
