"""Network-architecture diagrams: activations, gradient products, convolutions, norm axes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from deckbuild.diagrams import style as s
from deckbuild.diagrams.api import diagram

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from mpl_toolkits.mplot3d.axes3d import Axes3D


@diagram("activations", title="Activation functions and derivatives", cost=240)
def activations() -> Figure:
    """ReLU, leaky ReLU, sigmoid, tanh and their derivatives on [-5, 5]."""
    x = np.linspace(-5, 5, 1001)
    sig = 1 / (1 + np.exp(-x))
    funcs = [
        ("ReLU", np.maximum(x, 0), (x > 0).astype(float), s.BLUE, "-"),
        (
            "leaky ReLU 0.01",
            np.where(x > 0, x, 0.01 * x),
            np.where(x > 0, 1, 0.01),
            s.PURPLE,
            "--",
        ),
        ("sigmoid", sig, sig * (1 - sig), s.ORANGE, "-"),
        ("tanh", np.tanh(x), 1 - np.tanh(x) ** 2, s.GREEN, "-"),
    ]
    fig = s.figure(4.6)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    for name, f, df, colour, ls in funcs:
        ax1.plot(x, f, color=colour, ls=ls, label=name)
        ax2.plot(x, df, color=colour, ls=ls)
    ax1.set_ylim(-1.2, 2.2)
    ax1.set_title("Activation f(x)")
    ax1.legend(loc="upper left", ncols=1)
    ax2.set_ylim(-0.05, 1.15)
    ax2.set_title("Derivative f′(x)")
    ax2.text(4.9, 0.29, "sigmoid′ ≤ 0.25", ha="right", fontsize=8, color=s.ORANGE)
    ax2.text(0.25, 1.05, "tanh′ ≤ 1", fontsize=8, color=s.GREEN)
    ax2.text(-4.9, 0.55, "ReLU′ = 0 for x < 0\n(dead ReLU)", fontsize=8, color=s.BLUE)
    ax2.set_xlabel("x")
    ax2.set_xlim(-5, 5)
    return fig


@diagram("vanishing-exploding", title="Vanishing / exploding products", cost=190)
def vanishing_exploding(layers: int = 20) -> Figure:
    """a product of per-layer factors 0.5 or 1.5 over depth, on a log axis."""
    n = np.arange(layers + 1)
    fig = s.figure(2.9)
    ax = fig.subplots()
    ax.plot(n, 1.5**n, "-o", ms=3, color=s.RED, label="factor 1.5 per layer: explodes")
    ax.plot(n, 0.5**n, "-o", ms=3, color=s.BLUE, label="factor 0.5 per layer: vanishes")
    ax.axhline(1, color=s.MUTED, lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_xlim(0, layers + 0.5)
    ax.set_ylim(1e-7, 1e5)
    ax.annotate(
        f"0.5^{layers} ≈ {0.5**layers:.1e}",
        xy=(layers, 0.5**layers),
        xytext=(layers * 0.4, 3e-7),
        fontsize=8,
        color=s.BLUE,
        arrowprops={"arrowstyle": "->", "color": s.BLUE, "lw": 0.9},
    )
    ax.annotate(
        f"1.5^{layers} ≈ {1.5**layers:,.0f}",
        xy=(layers, 1.5**layers),
        xytext=(layers * 0.55, 3e-2),
        fontsize=8,
        color=s.RED,
        arrowprops={"arrowstyle": "->", "color": s.RED, "lw": 0.9},
    )
    ax.set_xlabel("number of layers n")
    ax.set_ylabel("gradient scale (product)")
    ax.legend(loc="upper left", fontsize=8)
    return fig


def _cells(
    ax: Axes,
    xs: Sequence[float],
    y: float,
    labels: list[str],
    fills: list[str],
    size: float = 0.9,
) -> None:
    from matplotlib.patches import Rectangle

    for x, label, fill in zip(xs, labels, fills, strict=True):
        ax.add_patch(
            Rectangle(
                (x - size / 2, y - size / 2),
                size,
                size,
                facecolor=fill,
                edgecolor=s.INK,
                lw=0.8,
            )
        )
        if label:
            ax.text(x, y, label, ha="center", va="center", fontsize=8)


def _bare(ax: Axes) -> None:
    ax.set_axis_off()
    ax.set_aspect("equal")


def _conv_case(ax: Axes, length: int, k: int, p: int, st: int, d: int, title: str) -> None:
    out = (length + 2 * p - d * (k - 1) - 1) // st + 1
    xs = list(range(length + 2 * p))
    fills = ["white" if p <= i < p + length else s.SHADE for i in xs]
    labels = ["0" if f == s.SHADE else "" for f in fills]
    _cells(ax, xs, 2.6, labels, fills)
    ox = [i * st + d * (k - 1) / 2 for i in range(out)]
    _cells(ax, ox, 0, [str(i + 1) for i in range(out)], ["white"] * out)
    for i in range(out):
        colour = s.PALETTE[i % 2]
        for tap in range(k):
            x = i * st + tap * d
            ax.plot([ox[i], x], [0.45, 2.15], color=colour, lw=1.1)
    ax.text(-0.6, 3.35, title, fontsize=8.5, fontweight="bold", ha="left")
    ax.text(
        -0.6,
        -0.95,
        f"L={length}, K={k}, P={p}, S={st}, D={d} → {out} outputs",
        fontsize=8,
        ha="left",
    )
    ax.set_xlim(-0.7, length + 2 * p)
    ax.set_ylim(-1.3, 3.7)
    _bare(ax)


@diagram("conv-output-size", title="Convolution output size", cost=200)
def conv_output_size() -> Figure:
    """1-D sliding windows: which inputs (incl. zero padding) each output reads."""
    fig = s.figure(3.6)
    ax1, ax2 = fig.subplots(2, 1)
    _conv_case(ax1, 9, 3, 1, 2, 1, "A: stride 2, padding 1")
    _conv_case(ax2, 9, 3, 2, 2, 2, "B: dilation 2 (effective kernel 5)")
    s.note(
        fig,
        "grey 0 = zero padding.  out = ⌊(L + 2P − D(K−1) − 1)/S⌋ + 1\nseed examples: 32 → 16;  31 → 16 → 14",
    )
    s.reserve_bottom(fig, 0.4)
    return fig


def _rf_case(ax: Axes, layers: list[tuple[int, int]], title: str) -> int:
    """Draw input -> layer 1 -> layer 2 (cells at their input-space centres) and shade
    the cells one layer-2 unit depends on."""
    n_in = 11
    centres = [[float(i) for i in range(n_in)]]
    for k, st in layers:
        below = centres[-1]
        n = (len(below) - k) // st + 1
        centres.append([(below[i * st] + below[i * st + k - 1]) / 2 for i in range(n)])
    top = len(centres[-1]) // 2
    reach = [{top}]
    for k, st in reversed(layers):
        reach.insert(0, {i * st + tap for i in reach[0] for tap in range(k)})
    r, j = 1, 1
    for k, st in layers:
        r, j = r + (k - 1) * j, j * st
    names = ["input", "layer 1", "layer 2"]
    for level, xs in enumerate(centres):
        y = 1.6 * level
        if level:
            k, st = layers[level - 1]
            for i in reach[level]:
                for tap in range(k):
                    source = i * st + tap
                    ax.plot(
                        [xs[i], centres[level - 1][source]],
                        [y - 0.4, y - 1.2],
                        color=s.ORANGE,
                        lw=1.0,
                    )
        fills = [s.ORANGE if i in reach[level] else "white" for i in range(len(xs))]
        _cells(ax, xs, y, [""] * len(xs), fills, size=0.8)
        ax.text(-0.8, y, names[level], ha="right", va="center", fontsize=8)
    ax.text(-3.6, 4.25, title, fontsize=8.5, fontweight="bold", ha="left")
    ax.text(
        n_in - 0.3,
        0.0,
        f" RF = {r}",
        fontsize=9,
        va="center",
        color=s.ORANGE,
        fontweight="bold",
    )
    ax.set_xlim(-3.6, n_in + 2.6)
    ax.set_ylim(-0.6, 4.6)
    _bare(ax)
    return r


@diagram("receptive-field", title="Receptive-field growth", cost=120)
def receptive_field() -> Figure:
    """two stacked kernel-3 layers; input cells one top unit depends on."""
    fig = s.figure(3.4)
    ax1, ax2 = fig.subplots(2, 1)
    _rf_case(ax1, [(3, 1), (3, 1)], "k3/s1 then k3/s1")
    _rf_case(ax2, [(3, 2), (3, 1)], "k3/s2 then k3/s1")
    s.note(fig, "r ← r + (k−1)·d·j,  then j ← j·s   (start r = 1, j = 1)")
    s.reserve_bottom(fig, 0.25)
    return fig


@diagram("grouped-conv", title="Grouped and depthwise connectivity", cost=100)
def grouped_conv() -> Figure:
    """which input channels feed each output channel: dense, 4 groups, depthwise."""
    c_in, c_out = 8, 16
    cases = [("groups=1", 1), ("groups=4", 4), ("depthwise", c_in)]
    fig = s.figure(3.3)
    axes = fig.subplots(1, 3)
    big_in, big_out, kk = 32, 64, 9
    for ax, (title, g) in zip(axes, cases, strict=True):
        mask = np.zeros((c_out, c_in))
        for o in range(c_out):
            grp = o // (c_out // g)
            mask[o, grp * (c_in // g) : (grp + 1) * (c_in // g)] = 1
        ax.imshow(
            mask,
            cmap="Blues",
            vmin=-0.15,
            vmax=1.2,
            interpolation="nearest",
            aspect="auto",
        )
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
        for spine in ax.spines.values():
            spine.set_visible(True)
        ax.set_title(title, fontsize=8.5)
        big_groups = big_in if g == c_in else g  # depthwise: groups = input channels
        weights = big_out * (big_in // big_groups) * kk
        ax.set_xlabel(f"{weights:,}\nweights", fontsize=8)
    axes[0].set_ylabel("output channel")
    s.note(
        fig,
        "columns: input channels, blue = connected.\nWeights for 32 → 64 channels, 3×3, no bias.",
    )
    s.reserve_bottom(fig, 0.4)
    return fig


def _cube(ax: Axes3D, shade: np.ndarray, labels: tuple[str, str, str], title: str) -> None:
    """A voxel block N x C x HW with the elements sharing one mean/variance shaded."""
    colours = np.empty(shade.shape, dtype=object)
    colours[:] = "#f4f4f4"
    colours[shade] = s.BLUE
    ax.voxels(
        np.ones(shade.shape, bool),
        facecolors=colours,
        edgecolor="#7a7a7a",
        linewidth=0.3,
    )
    ax.set_box_aspect(shade.shape)
    ax.view_init(elev=22, azim=-58)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_zticks([])
    ax.set_xlabel(labels[0], labelpad=-12, fontsize=8.5)
    ax.set_ylabel(labels[1], labelpad=-12, fontsize=8.5)
    ax.set_zlabel(labels[2], labelpad=-12, fontsize=8.5)
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_pane_color((1, 1, 1, 0))
        axis.line.set_color((1, 1, 1, 0))
    ax.set_title(title, fontsize=8.5, pad=-2)
    ax.grid(False)


@diagram("norm-axes", title="BatchNorm vs LayerNorm vs GroupNorm axes", cost=710)
def norm_axes() -> Figure:
    """elements normalized together by BatchNorm, LayerNorm, GroupNorm; LN per token."""
    n, c, hw, groups = 4, 6, 5, 2
    fig = s.figure(4.4, layout="none")
    specs = []
    bn = np.zeros((n, c, hw), bool)
    bn[:, 0, :] = True
    specs.append((bn, ("N", "C", "HW"), "BatchNorm:\nper channel"))
    ln = np.zeros((n, c, hw), bool)
    ln[0] = True
    specs.append((ln, ("N", "C", "HW"), "LayerNorm:\nper sample"))
    gn = np.zeros((n, c, hw), bool)
    gn[0, : c // groups, :] = True
    specs.append((gn, ("N", "C", "HW"), "GroupNorm: per\nsample and group"))
    tok = np.zeros((n, c, hw), bool)
    tok[0, 0, :] = True
    specs.append((tok, ("B", "T", "hidden"), "Transformer LN:\nper token"))
    for i, (mask, labels, title) in enumerate(specs):
        ax = cast("Axes3D", fig.add_subplot(2, 2, i + 1, projection="3d"))
        _cube(ax, mask, labels, title)
    fig.subplots_adjust(left=0.0, right=0.95, bottom=0.02, top=0.84, wspace=0.12, hspace=0.3)
    fig.suptitle("Blue: share one mean and variance", fontsize=9, y=0.995)
    return fig
