"""Timeline diagrams: truncated BPTT and gradient accumulation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("truncated-bptt", title="Truncated BPTT", illustrative=True, cost=130)
def truncated_bptt(steps: int = 12, chunk: int = 4) -> Figure:
    """hidden state flows through every step; gradients stop at chunk boundaries."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    fig = s.figure(1.75)
    ax = fig.subplots()
    size = 0.7
    for t in range(steps):
        ax.add_patch(Rectangle((t, 0), size, size, facecolor="white", edgecolor=s.INK, lw=0.9))
        ax.text(t + size / 2, size / 2, str(t + 1), ha="center", va="center", fontsize=8.5)
        if t + 1 < steps:
            boundary = (t + 1) % chunk == 0
            ax.add_patch(
                FancyArrowPatch(
                    (t + size, size / 2),
                    (t + 1, size / 2),
                    arrowstyle="-|>",
                    mutation_scale=7,
                    color=s.ORANGE if boundary else s.INK,
                    ls="--" if boundary else "-",
                    lw=1,
                    shrinkA=0,
                    shrinkB=0,
                )
            )
    for c in range(steps // chunk):
        a, b = c * chunk, (c + 1) * chunk - 1
        ax.add_patch(
            FancyArrowPatch(
                (b + size / 2, -0.05),
                (a + size / 2, -0.05),
                arrowstyle="-|>",
                mutation_scale=10,
                color=s.RED,
                lw=1.5,
                connectionstyle="arc3,rad=-0.3",
            )
        )
    ax.text(0, 1.05, "forward: the hidden state is carried across chunks", fontsize=8)
    ax.text(
        0,
        -1.05,
        f"backward: gradients stop at each chunk of {chunk}\n(orange dashed = state passed on, detached)",
        fontsize=8,
        color=s.RED,
        va="top",
    )
    ax.set_xlim(-0.1, steps)
    ax.set_ylim(-1.9, 1.4)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return fig


@diagram("grad-accumulation", title="Gradient accumulation timeline", illustrative=True, cost=120)
def grad_accumulation(micro: int = 4) -> Figure:
    """K forward/backward passes add loss/K gradients; then one optimizer step."""
    from matplotlib.patches import Rectangle

    fig = s.figure(2.0)
    ax = fig.subplots()
    t = 0.0
    for _ in range(micro):
        ax.add_patch(Rectangle((t, 1), 1.0, 0.6, facecolor=s.BLUE, edgecolor="white"))
        ax.add_patch(Rectangle((t + 1.0, 1), 1.4, 0.6, facecolor=s.ORANGE, edgecolor="white"))
        ax.text(
            t + 0.5,
            1.3,
            "fwd",
            ha="center",
            va="center",
            fontsize=8,
            color="white",
            fontweight="bold",
        )
        ax.text(
            t + 1.7,
            1.3,
            "bwd",
            ha="center",
            va="center",
            fontsize=8,
            color="white",
            fontweight="bold",
        )
        ax.text(t + 1.2, 0.85, f"loss/{micro}\ngrads +=", ha="center", va="top", fontsize=8)
        t += 2.6
    ax.add_patch(Rectangle((t, 1), 1.3, 0.6, facecolor=s.GREEN, edgecolor="white"))
    ax.text(
        t + 0.65,
        1.3,
        "step",
        ha="center",
        va="center",
        fontsize=8,
        color="white",
        fontweight="bold",
    )
    ax.text(t + 0.65, 0.85, "1 update", ha="center", va="top", fontsize=8)
    ax.text(
        0,
        1.85,
        f"{micro} micro-batches = 1 update (effective batch ×{micro})",
        fontsize=8.5,
        fontweight="bold",
    )
    ax.text(
        0,
        -0.05,
        "step = optimizer.step(), scheduler.step(), zero_grad()\nBatchNorm still sees one micro-batch at a time.",
        fontsize=8,
        va="top",
    )
    ax.set_xlim(-0.1, t + 1.4)
    ax.set_ylim(-0.9, 2.1)
    ax.set_axis_off()
    return fig
