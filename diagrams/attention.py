"""Attention diagrams: masks and the 1/sqrt(d_k) scaling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("attention-masks", title="Attention masks", cost=220)
def attention_masks() -> Figure:
    """causal, key-padding, combined masks, and a fully masked row (softmax undefined)."""
    from matplotlib.colors import ListedColormap

    L = 6
    causal = np.tril(np.ones((L, L), bool))
    keep_right = np.arange(L) < 4  # last two keys are padding
    keep_left = np.arange(L) >= 2  # left padding: first two keys are padding
    cases = [
        ("causal", causal),
        ("key padding (last 2)", np.broadcast_to(keep_right, (L, L))),
        ("causal + padding", causal & keep_right),
        ("causal + left padding", causal & keep_left),
    ]
    cmap = ListedColormap([s.SHADE, s.BLUE])
    fig = s.figure(4.3)
    axes = fig.subplots(2, 2).ravel()
    for ax, (title, allowed) in zip(axes, cases, strict=True):
        ax.imshow(allowed, cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
        ax.set_xticks(np.arange(L) - 0.5, minor=True)
        ax.set_yticks(np.arange(L) - 0.5, minor=True)
        ax.grid(which="minor", color="white", lw=1.5)
        ax.grid(which="major", visible=False)
        ax.tick_params(which="both", length=0)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize=8.5)
        for row in np.flatnonzero(~allowed.any(axis=1)):
            ax.text(
                L / 2 - 0.5,
                row,
                "softmax undefined",
                ha="center",
                va="center",
                fontsize=8,
                color=s.RED,
                fontweight="bold",
            )
    axes[0].set_ylabel("query")
    axes[2].set_ylabel("query")
    axes[2].set_xlabel("key")
    axes[3].set_xlabel("key")
    s.note(
        fig,
        "blue = may attend (SDPA bool mask: True)\ngrey = blocked (key_padding_mask: True)",
    )
    s.reserve_bottom(fig, 0.42)
    return fig


@diagram("attention-scaling", title="Why divide by sqrt(d_k)", cost=1080)
def attention_scaling() -> Figure:
    """q.k grows like sqrt(d_k); unscaled softmax saturates, scaled stays soft."""
    rng = np.random.default_rng(s.SEED)
    dims = [4, 16, 64, 256, 1024]
    trials, keys = 2000, 16
    std: list[float] = []
    peak_raw: list[float] = []
    peak_scaled: list[float] = []
    for d in dims:
        q = rng.standard_normal((trials, d), dtype=np.float32)
        k = rng.standard_normal((trials, keys, d), dtype=np.float32)
        scores = np.einsum("td,tkd->tk", q, k).astype(np.float64)
        std.append(scores.std())
        for out, z in ((peak_raw, scores), (peak_scaled, scores / np.sqrt(d))):
            e = np.exp(z - z.max(axis=1, keepdims=True))
            out.append((e / e.sum(axis=1, keepdims=True)).max(axis=1).mean())
    fig = s.figure(4.2)
    ax1, ax2 = fig.subplots(2, 1)
    ax1.plot(dims, np.sqrt(dims), color=s.MUTED, lw=1.2, label="√d_k")
    ax1.plot(dims, std, "o", color=s.BLUE, ms=7, label="measured std of q·k")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log", base=2)
    ax1.set_yticks([2, 4, 8, 16, 32], ["2", "4", "8", "16", "32"])
    ax1.set_ylabel("std of q·k")
    ax1.legend(loc="upper left", fontsize=8)
    ax2.plot(dims, peak_raw, "o-", color=s.RED, label="softmax(q·k): saturates")
    ax2.plot(dims, peak_scaled, "o-", color=s.GREEN, label="softmax(q·k/√d_k): stays soft")
    ax2.axhline(1 / keys, color=s.MUTED, lw=0.8, ls=":")
    ax2.text(dims[-1], 1 / keys + 0.03, "uniform 1/16", ha="right", fontsize=8, color=s.MUTED)
    ax2.set_xscale("log", base=2)
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("largest weight\n(mean, 16 keys)")
    ax2.legend(loc="center right", fontsize=8)
    for ax in (ax1, ax2):
        ax.set_xticks(dims, [str(d) for d in dims])
    ax2.set_xlabel("key dimension d_k  (q, k ~ N(0, 1))")
    return fig
