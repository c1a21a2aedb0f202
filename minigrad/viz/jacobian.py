"""Matplotlib pictures for the operator notebooks: a Jacobian as a heatmap, and costs as sizes grow.

Both functions take data and return the Figure; they never change what they are given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from .style import legend_outside, series_style

__all__ = ["plot_jacobian", "plot_scaling"]


def plot_jacobian(J: np.ndarray, title: str | None = None, blocks: tuple[int, int] | None = None,
                  xlabel: str = "input element j", ylabel: str = "output element i",
                  annotate: bool | None = None, ax=None) -> Figure:
    """Show a matrix (typically ``J[i, j] = dy_i/dx_j``) as a heatmap centred on 0.

    Red is positive, blue negative, white zero, so structure (diagonals, blocks,
    zeros) stands out. ``blocks=(rows, cols)`` draws grid lines every ``rows``
    rows and ``cols`` columns, e.g. to mark the Kronecker blocks of a matmul.
    ``annotate`` writes each value in its cell (default: when J has at most 64 entries).
    """
    J = np.asarray(J, dtype=float)
    if J.ndim != 2:
        raise ValueError(f"plot_jacobian: expected a 2-D matrix, got shape {J.shape}")
    if ax is None:
        h = min(6.0, 1.2 + 0.35 * J.shape[0])
        w = min(7.5, 1.8 + 0.35 * J.shape[1])
        fig, ax = plt.subplots(figsize=(max(w, 3.0), max(h, 2.2)))
    else:
        fig = ax.figure
    lim = float(np.abs(J).max()) if J.size and np.abs(J).max() > 0 else 1.0
    im = ax.imshow(J, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim), interpolation="nearest")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if blocks is not None:
        r, c = blocks
        for k in range(r, J.shape[0], r):
            ax.axhline(k - 0.5, color="0.3", lw=0.8)
        for k in range(c, J.shape[1], c):
            ax.axvline(k - 0.5, color="0.3", lw=0.8)
    if annotate is None:
        annotate = J.size <= 64
    if annotate:
        for (i, j), v in np.ndenumerate(J):
            if v != 0:
                ax.text(j, i, f"{v:.2g}", ha="center", va="center", fontsize=8,
                        color="white" if abs(v) > 0.6 * lim else "black")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if J.shape[1] <= 24:
        ax.set_xticks(range(J.shape[1]))
    if J.shape[0] <= 24:
        ax.set_yticks(range(J.shape[0]))
    ax.tick_params(labelsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def plot_scaling(sizes: Sequence[float], curves: Mapping[str, Sequence[float]],
                 xlabel: str = "size", ylabel: str = "cost", title: str | None = None,
                 loglog: bool = True, ax=None) -> Figure:
    """One line per named cost (bytes, FLOPs, seconds...) against a growing size, log-log by default.

    On log-log axes a cost that grows like size**k is a straight line of slope k,
    so O(n) and O(n**2) are told apart at a glance. Each curve has its own
    Okabe-Ito colour, line style and marker; the legend stands right of the axes.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 3.5))
    else:
        fig = ax.figure
    for i, (label, ys) in enumerate(curves.items()):
        if len(ys) != len(sizes):
            raise ValueError(f"plot_scaling: curve {label!r} has {len(ys)} values for "
                             f"{len(sizes)} sizes")
        ax.plot(sizes, ys, ms=4, label=label, **series_style(i))
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    legend_outside(ax)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
