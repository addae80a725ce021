"""Cost diagrams: critical batch size and attention-score memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("critical-batch", title="Critical batch size trade-off", illustrative=True, cost=200)
def critical_batch(b_noise: int = 1000) -> Figure:
    """steps to a target S(B) = S_min (1 + B_noise / B): ~1/B below B_noise, flat above."""
    b = np.geomspace(16, 65536, 300)
    steps = 1 + b_noise / b  # in units of S_min
    fig = s.figure(2.9)
    ax = fig.subplots()
    ax.plot(b, b_noise / b, color=s.MUTED, ls="--", lw=1.2, label="perfect scaling ∝ 1/B")
    ax.axhline(1, color=s.MUTED, ls=":", lw=1.2)
    ax.plot(b, steps, color=s.BLUE, label="steps to target")
    ax.axvline(b_noise, color=s.ORANGE, lw=1.2)
    ax.text(b_noise * 1.15, 4, f"B_crit ≈ B_noise\n= {b_noise}", fontsize=8, color=s.ORANGE)
    ax.text(40000, 1.15, "S_min", fontsize=8, ha="right", va="bottom", color=s.MUTED)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(16, 65536)
    ax.set_ylim(0.5, 100)
    ax.set_xticks([16, 256, 4096, 65536], ["16", "256", "4k", "64k"])
    ax.set_xlabel("batch size B")
    ax.set_ylabel("optimizer steps / S_min")
    ax.legend(loc="upper right", fontsize=8)
    return fig


@diagram("attention-memory", title="Attention score memory vs sequence length", illustrative=True, cost=180)
def attention_memory(heads: int = 16) -> Figure:
    """bytes of one fp16 B x H x L x L score tensor (B = 1) grow with L squared."""
    length = np.linspace(0, 8192, 400)
    gib = 2 * heads * length**2 / 2**30
    fig = s.figure(2.8)
    ax = fig.subplots()
    ax.plot(length, gib, color=s.BLUE)
    for n in (2048, 4096, 8192):
        v = 2 * heads * n**2 / 2**30
        ax.plot([n], [v], "o", color=s.ORANGE, ms=5)
        ax.annotate(
            f"{v:g} GiB",
            (n, v),
            xytext=(-6, 6),
            textcoords="offset points",
            ha="right",
            fontsize=8,
        )
    ax.set_xlim(0, 8400)
    ax.set_ylim(0, 2 * heads * 8192**2 / 2**30 * 1.15)
    ax.set_xticks([0, 2048, 4096, 6144, 8192])
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("GiB per layer")
    ax.set_title(f"Scores: 1 × {heads} heads × L × L in fp16 (2 bytes)", fontsize=8.5)
    return fig
