"""Matplotlib pictures of training: loss curves (gradient flow and memory come later).

Every function takes data (lists, arrays) or a graph and returns the Figure; it
never changes what it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_curves"]


def plot_curves(curves: Mapping[str, Sequence[float]], xlabel: str = "step",
                ylabel: str = "loss", title: str | None = None, logy: bool = False,
                ax=None) -> Figure:
    """One line per named series, e.g. ``{"train": losses, "held-out": val_losses}``."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 3.5))
    else:
        fig = ax.figure
    for label, ys in curves.items():
        ax.plot(range(len(ys)), ys, label=label, marker="o" if len(ys) <= 60 else None, ms=3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    if len(curves) > 1:
        ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
