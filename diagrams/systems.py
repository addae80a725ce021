"""Scale diagrams: sharded-training memory per GPU and Chinchilla compute-optimal sizing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("zero-memory", title="Memory per GPU: DDP vs ZeRO-1/2/3", illustrative=True, cost=190)
def zero_memory(params_billion: float = 7.5, gpus: int = 64, k: int = 12) -> Figure:
    """per-GPU model-state memory under DDP and ZeRO stages 1-3 (ZeRO-paper accounting)."""
    psi = params_billion  # GB per byte-per-parameter, since 1e9 params x 1 byte = 1 GB
    rows = [
        ("DDP", 2 * psi, 2 * psi, k * psi),
        ("ZeRO-1", 2 * psi, 2 * psi, k * psi / gpus),
        ("ZeRO-2", 2 * psi, 2 * psi / gpus, k * psi / gpus),
        ("ZeRO-3", 2 * psi / gpus, 2 * psi / gpus, k * psi / gpus),
    ]
    fig = s.figure(4.2)
    ax, ax2 = fig.subplots(2, 1, height_ratios=[3, 1.1])
    parts = [
        ("fp16 params 2Ψ", s.BLUE),
        ("fp16 grads 2Ψ", s.ORANGE),
        (f"optimizer state {k}Ψ", s.GREEN),
    ]
    for i, (_name, *sizes) in enumerate(rows):
        y = len(rows) - 1 - i
        left = 0.0
        for size, (_label, colour) in zip(sizes, parts, strict=True):
            ax.barh(y, size, left=left, color=colour, height=0.6)
            left += size
        ax.text(left + 2, y, f"{left:.3g} GB", va="center", fontsize=8.5, fontweight="bold")
    ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)])
    ax.set_xlim(0, 150)
    ax.set_xlabel("GB per GPU (model states only)")
    ax.grid(axis="y", visible=False)
    ax.set_title(f"Ψ = {params_billion:g}B params, {gpus} GPUs, Adam K = {k}", fontsize=8.5)
    for label, colour in parts:
        ax.barh(0, 0, color=colour, label=label)
    ax.legend(loc="lower right", fontsize=8)
    left = 0
    for size, label, colour in (
        (4, "weights 4P", s.BLUE),
        (4, "grads 4P", s.ORANGE),
        (8, "Adam m, v 8P", s.GREEN),
    ):
        ax2.barh(0, size, left=left, color=colour, height=0.6, edgecolor="white")
        ax2.text(
            left + size / 2,
            0,
            label,
            ha="center",
            va="center",
            fontsize=8,
            color="white",
            fontweight="bold",
        )
        left += size
    ax2.set_xlim(0, 16)
    ax2.set_xticks([0, 4, 8, 16], ["0", "4P", "8P", "16P"])
    ax2.set_yticks([])
    ax2.grid(False)
    ax2.set_title("all-fp32 Adam: 16P bytes + activations", fontsize=8.5)
    return fig


@diagram("chinchilla", title="Chinchilla compute-optimal allocation", cost=260)
def chinchilla() -> Figure:
    """compute-optimal params and tokens from C = 6NT and T = 20N."""
    c = np.geomspace(1e18, 1e26, 200)
    n = np.sqrt(c / 120)
    fig = s.figure(3.1)
    ax = fig.subplots()
    ax.plot(c, 20 * n, color=s.ORANGE, label="tokens T = 20 N")
    ax.plot(c, n, color=s.BLUE, label="parameters N = √(C/120)")
    c0 = 5.76e23
    n0 = np.sqrt(c0 / 120)
    ax.plot([c0, c0], [n0, 20 * n0], "o", color=s.INK, ms=5)
    ax.annotate(
        f"C = 5.76e23 FLOPs:\n~{n0 / 1e9:.0f}B params,\n~{20 * n0 / 1e12:.1f}T tokens",
        xy=(c0, n0),
        xytext=(1.5e19, 3e11),
        fontsize=8,
        arrowprops={"arrowstyle": "->", "color": s.INK, "lw": 0.8},
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1e18, 1e26)
    ax.set_ylim(1e7, 1e14)
    ax.set_xlabel("training compute C (FLOPs), C = 6NT")
    ax.set_ylabel("count")
    ax.legend(loc="lower right", fontsize=8)
    return fig
