"""Matplotlib pictures of training: loss curves (gradient flow and memory come later).

Every function takes data (lists, arrays) or a graph and returns the Figure; it
never changes what it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .style import legend_outside, series_style

__all__ = ["plot_curves"]


def plot_curves(curves: Mapping[str, Sequence[float]], xlabel: str = "step",
                ylabel: str = "loss", title: str | None = None, logy: bool = False,
                ax=None) -> Figure:
    """One line per named series, e.g. ``{"train": losses, "held-out": val_losses}``.

    Curve i has the i-th Okabe-Ito colour, line style and marker, so the curves
    differ without colour too; on a curve of more than 60 points only about 15
    markers are drawn. With several curves the legend stands right of the axes,
    off the data.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 3.5))
    else:
        fig = ax.figure
    several = len(curves) > 1
    for i, (label, ys) in enumerate(curves.items()):
        dense = len(ys) > 60
        style = series_style(i, marker=several or not dense)
        ax.plot(range(len(ys)), ys, label=label, ms=3, markevery=max(1, len(ys) // 15) if dense else None,
                **style)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    if several:
        legend_outside(ax)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
