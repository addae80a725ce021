"""Adversarial-example geometry: FGSM and PGD in an L-infinity ball."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("fgsm-pgd", title="FGSM / PGD geometry", illustrative=True, cost=140)
def fgsm_pgd(eps: float = 0.3, alpha: float = 0.1, steps: int = 5) -> Figure:
    """a linear classifier, the eps-box around x, one FGSM step and projected PGD."""
    from matplotlib.patches import Rectangle

    w = np.array([1.0, 2.0])
    x = np.array([0.2, -0.3])
    # The loss grows along +w (toward the boundary w.x = 0), so ascend sign(w).
    grad_sign = np.sign(w)
    fgsm = x + eps * grad_sign
    # PGD starts at a random point of the box (fixed here) and takes small signed steps;
    # each step is projected (clipped) back into the box, so it slides along the edge.
    z = x + np.array([-0.25, 0.15])
    path = [z.copy()]
    for _ in range(steps):
        z = np.clip(z + alpha * grad_sign, x - eps, x + eps)
        path.append(z.copy())
    pgd = np.array(path)
    fig = s.figure(3.3)
    ax = fig.subplots()
    xs = np.linspace(-0.4, 0.9, 10)
    ax.plot(xs, -xs / 2, color=s.INK, lw=1.2)
    ax.text(0.62, -0.27, "decision\nboundary\nw·x = 0", fontsize=8, va="top")
    corner = x - eps
    ax.add_patch(Rectangle((corner[0], corner[1]), 2 * eps, 2 * eps, facecolor=s.SHADE, edgecolor=s.MUTED, ls="--"))
    ax.plot(*x, "o", color=s.BLUE, ms=7)
    ax.text(x[0] - 0.02, x[1] - 0.04, "x", ha="right", va="top", fontsize=9, color=s.BLUE)
    ax.annotate(
        "",
        xy=tuple(fgsm),
        xytext=tuple(x),
        arrowprops={"arrowstyle": "-|>", "color": s.RED, "lw": 1.8},
    )
    ax.text(fgsm[0] + 0.02, fgsm[1] + 0.02, "FGSM: x + ε·sign(∇)", fontsize=8, color=s.RED)
    ax.plot(pgd[:, 0], pgd[:, 1], "-o", color=s.ORANGE, ms=4, lw=1.3)
    ax.plot(*pgd[0], "s", color=s.ORANGE, ms=6)
    ax.text(
        -0.38,
        0.36,
        f"PGD: random start, {steps} steps of α = {alpha:g},\nprojected back into the box",
        fontsize=8,
        color=s.ORANGE,
    )
    ax.text(
        x[0] + eps - 0.02,
        x[1] - eps + 0.02,
        f"ε = {eps:g}",
        ha="right",
        va="bottom",
        fontsize=8,
        color=s.MUTED,
    )
    ax.set_aspect("equal")
    ax.set_xlim(-0.4, 0.9)
    ax.set_ylim(-0.75, 0.5)
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    return fig
