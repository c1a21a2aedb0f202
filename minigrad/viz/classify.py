"""Matplotlib pictures for classifiers: a grid of small images, and a confusion matrix.

Each function takes arrays and returns the Figure; it changes nothing it is given.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_images", "plot_confusion"]


def plot_images(images, titles: Sequence[str] | None = None, ncols: int = 10,
                cmap: str = "gray_r", vmax: float | None = None, size: float = 0.9,
                suptitle: str | None = None) -> Figure:
    """Show (N, H, W) images (or (N, H*W) with a square H*W) in a grid, one title each."""
    imgs = np.asarray(images)
    if imgs.ndim == 2:
        side = int(round(np.sqrt(imgs.shape[1])))
        if side * side != imgs.shape[1]:
            raise ValueError(f"plot_images: flat images of length {imgs.shape[1]} are not square")
        imgs = imgs.reshape(len(imgs), side, side)
    if imgs.ndim != 3 or len(imgs) == 0:
        raise ValueError(f"plot_images: expected a non-empty (N, H, W) array, got shape {imgs.shape}")
    if titles is not None and len(titles) != len(imgs):
        raise ValueError(f"plot_images: {len(imgs)} images but {len(titles)} titles")
    ncols = max(1, min(ncols, len(imgs)))
    nrows = -(-len(imgs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows * 1.25),
                             squeeze=False)
    top = imgs.max() if vmax is None else vmax
    for k, ax in enumerate(axes.flat):
        ax.axis("off")
        if k < len(imgs):
            ax.imshow(imgs[k], cmap=cmap, vmin=0, vmax=top, interpolation="nearest")
            if titles is not None:
                ax.set_title(titles[k], fontsize=8)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return fig


def plot_confusion(matrix, class_names: Sequence[str] | None = None, title: str | None = None,
                   ax=None) -> Figure:
    """A confusion matrix (rows: true class, columns: predicted), counts written in the cells.

    The colour is the row-normalised rate, so small classes are as visible as large ones.
    """
    m = np.asarray(matrix)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"plot_confusion: expected a square matrix, got shape {m.shape}")
    k = m.shape[0]
    names = [str(i) for i in range(k)] if class_names is None else list(class_names)
    if len(names) != k:
        raise ValueError(f"plot_confusion: {k} classes but {len(names)} class names")
    if ax is None:
        fig, ax = plt.subplots(figsize=(0.45 * k + 1.6, 0.45 * k + 1.2))
    else:
        fig = ax.figure
    rates = m / np.maximum(m.sum(axis=1, keepdims=True), 1)
    ax.imshow(rates, cmap="Blues", vmin=0, vmax=1)
    for i in range(k):
        for j in range(k):
            if m[i, j]:
                ax.text(j, i, str(m[i, j]), ha="center", va="center", fontsize=8,
                        color="white" if rates[i, j] > 0.5 else "black")
    ax.set_xticks(range(k), names)
    ax.set_yticks(range(k), names)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
