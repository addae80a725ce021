"""Classifier-output diagrams: temperature scaling and the accuracy paradox."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@diagram("temperature", title="Temperature scaling", cost=110)
def temperature() -> Figure:
    """softmax([2, 1]) at T = 0.5, 1, 2: confidence changes, the argmax does not."""
    logits = np.array([2.0, 1.0])
    temps = [0.5, 1.0, 2.0]
    fig = s.figure(2.7)
    ax = fig.subplots()
    w = 0.36
    for i, t in enumerate(temps):
        z = np.exp(logits / t)
        p = z / z.sum()
        for j, (v, colour) in enumerate(zip(p, (s.BLUE, s.ORANGE), strict=True)):
            x = i + (j - 0.5) * w
            ax.bar(
                x,
                v,
                w,
                color=colour,
                label=(["class A (logit 2)", "class B (logit 1)"][j] if i == 0 else None),
            )
            ax.text(x, v + 0.02, f"{v:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(temps)), [f"T = {t:g}" for t in temps])
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("softmax(logits / T)")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title("Same logits [2, 1]: A always wins", fontsize=8.5)
    return fig


@diagram("accuracy-paradox", title="Accuracy paradox", cost=60)
def accuracy_paradox() -> Figure:
    """an always-negative classifier on 1% positives: 99% accuracy, recall 0."""
    from matplotlib.patches import Rectangle

    cm = np.array([[990, 0], [10, 0]])  # rows: actual neg/pos; cols: predicted neg/pos
    fig = s.figure(3.0)
    ax = fig.subplots()
    colours = [[s.SHADE, "white"], ["#f6b8c0", "white"]]
    names = [["TN", "FP"], ["FN", "TP"]]
    for i in range(2):
        for j in range(2):
            ax.add_patch(Rectangle((j, 1 - i), 1, 1, facecolor=colours[i][j], edgecolor=s.INK, lw=1))
            ax.text(
                j + 0.5,
                1.5 - i,
                f"{names[i][j]}\n{cm[i, j]}",
                ha="center",
                va="center",
                fontsize=10,
                fontweight="bold",
            )
    ax.set_xlim(0, 2)
    ax.set_ylim(0, 2)
    ax.set_aspect("equal")
    ax.set_xticks([0.5, 1.5], ["predicted −", "predicted +"])
    ax.set_yticks([1.5, 0.5], ["actual −", "actual +"])
    ax.tick_params(length=0)
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title("Always predict negative, 1% positives", fontsize=8.5)
    s.note(fig, "accuracy = 990/1000 = 99%,  recall = 0/10 = 0")
    s.reserve_bottom(fig, 0.25)
    return fig
