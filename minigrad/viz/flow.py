"""Matplotlib pictures of gradient flow, layer by layer. They only read what they are given.

* ``plot_grad_flow``: mean and max |gradient| per layer, on a log axis;
* ``plot_activation_scale``: the same for the activations, the signal going forward;
* ``plot_histograms``: per-layer histograms of activations or gradients;
* ``plot_update_ratios``: lr * |grad| / |W| per layer over training steps.

Each takes a :class:`minigrad.flow.FlowRecord` (or a dict of named records, drawn
side by side or as one line each) and returns the Figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..flow import FlowRecord
from .style import LINESTYLES, MARKERS, OKABE_ITO, legend_outside

__all__ = ["plot_grad_flow", "plot_activation_scale", "plot_histograms", "plot_update_ratios"]

_KINDS = {
    "weight_grads": ("weight_grads", "|dL/dW|"),
    "activation_grads": ("activation_grads", "|dL/dh|"),
    "activations": ("activations", "|h|"),
}


def _named(records: FlowRecord | Mapping[str, FlowRecord]) -> dict[str, FlowRecord]:
    if isinstance(records, FlowRecord):
        return {"": records}
    if isinstance(records, Mapping) and records and all(
            isinstance(r, FlowRecord) for r in records.values()):
        return dict(records)
    raise TypeError("expected a FlowRecord or a non-empty dict of name -> FlowRecord, got "
                    f"{type(records).__name__}")


def _axes(ax, figsize):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax.figure, ax


def _mean_max_plot(records, kind: str, ax, title, show_max: bool, figsize) -> Figure:
    field, symbol = _KINDS[kind]
    named = _named(records)
    fig, ax = _axes(ax, figsize)
    for i, (label, rec) in enumerate(named.items()):
        arrays = getattr(rec, field)
        layers = [k + 1 for k, a in enumerate(arrays) if a.size]
        mean = [float(np.mean(np.abs(a))) for a in arrays if a.size]
        peak = [float(np.max(np.abs(a))) for a in arrays if a.size]
        # A record is a colour and a marker; the statistic is a line style (and a filled marker).
        c, m = OKABE_ITO[i % len(OKABE_ITO)], MARKERS[i % len(MARKERS)]
        ax.plot(layers, mean, color=c, ls="-", marker=m, ms=4, label=label or f"mean {symbol}")
        if show_max:
            ax.plot(layers, peak, color=c, ls="--", marker=m, ms=4, mfc="none", lw=1, alpha=0.8,
                    label=None if label else f"max {symbol}")
    ax.set_yscale("log")
    ax.set_xlabel("layer (1 = nearest the input)")
    ax.set_ylabel(f"mean {symbol}" + (" (solid), max (dashed)" if show_max else ""))
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3, which="major")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def plot_grad_flow(records: FlowRecord | Mapping[str, FlowRecord], which: str = "weights",
                   ax=None, title: str | None = None, show_max: bool = True,
                   figsize=(6.5, 3.6)) -> Figure:
    """Mean (solid, filled markers) and max (dashed, open markers) |gradient| per layer, log axis.

    ``which="weights"`` shows dL/dW of each layer's weight matrices;
    ``which="activations"`` shows dL/dh_l, the gradient flowing back between layers.
    Several named records are drawn with one colour and one marker each; the
    legend stands right of the axes.
    """
    kinds = {"weights": "weight_grads", "activations": "activation_grads"}
    if which not in kinds:
        raise ValueError(f"plot_grad_flow: which must be 'weights' or 'activations', got {which!r}")
    return _mean_max_plot(records, kinds[which], ax, title, show_max, figsize)


def plot_activation_scale(records: FlowRecord | Mapping[str, FlowRecord], ax=None,
                          title: str | None = None, show_max: bool = True,
                          figsize=(6.5, 3.6)) -> Figure:
    """Mean (solid) and max (dashed) |h_l| per layer on a log axis: the forward signal."""
    return _mean_max_plot(records, "activations", ax, title, show_max, figsize)


def plot_histograms(records: FlowRecord | Mapping[str, FlowRecord], which: str = "activations",
                    layers: Sequence[int] | None = None, bins: int = 60,
                    log_abs: bool | None = None, title: str | None = None) -> Figure:
    """Histograms of one quantity for a few layers, one panel per record.

    Each layer's outline has its own Okabe-Ito colour and line style; each
    panel's legend stands right of it.

    which: "activations", "activation_grads" or "weight_grads".
    layers: 0-based layer indices (default: five spread from first to last).
    log_abs: histogram log10|value| instead of the value (the default for
        gradients, whose sizes span many orders of magnitude; exact zeros are
        left out and counted in the legend).
    """
    if which not in _KINDS:
        raise ValueError(f"plot_histograms: which must be one of {sorted(_KINDS)}, got {which!r}")
    field, symbol = _KINDS[which]
    named = _named(records)
    if log_abs is None:
        log_abs = which != "activations"
    n = len(named)
    fig, axes = plt.subplots(1, n, figsize=(5.0 * n + 0.6, 3.2), squeeze=False)
    for ax, (label, rec) in zip(axes[0], named.items()):
        arrays = getattr(rec, field)
        picks = (list(layers) if layers is not None else
                 sorted(set(np.linspace(0, len(arrays) - 1, min(5, len(arrays))).round().astype(int))))
        for k in picks:
            if not -len(arrays) <= k < len(arrays):
                raise IndexError(f"plot_histograms: layer {k} does not exist; the record has "
                                 f"{len(arrays)} layers (0 to {len(arrays) - 1})")
        for j, k in enumerate(picks):
            a = np.asarray(arrays[k], dtype=np.float64).ravel()
            if not a.size:
                continue
            extra = ""
            if log_abs:
                zeros = int(np.sum(a == 0))
                a = np.log10(np.abs(a[a != 0]))
                extra = f" ({zeros} zeros)" if zeros else ""
            a = a[np.isfinite(a)]
            if not a.size:
                continue
            ax.hist(a, bins=bins, histtype="step", density=True, lw=1.3,
                    color=OKABE_ITO[j % len(OKABE_ITO)], linestyle=LINESTYLES[j % len(LINESTYLES)],
                    label=f"layer {k % len(arrays) + 1}{extra}")
        ax.set_xlabel(f"log10 {symbol}" if log_abs else symbol.strip("|"))
        ax.set_title(label, fontsize=10)
        legend_outside(ax)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("density")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_update_ratios(ratios: np.ndarray | Sequence | Mapping[str, np.ndarray | Sequence],
                       reference: float | None = 1e-3, title: str | None = None,
                       sharey: bool = True) -> Figure:
    """lr * ||grad|| / ||W|| of each layer (one line per layer) against the training step.

    ``ratios`` is an array of shape (steps, layers), e.g. stacked
    ``minigrad.flow.update_ratios(model, lr)`` results, or a dict of them drawn
    side by side. A black dashed line marks ``reference`` (1e-3 is a common rule of
    thumb: much smaller learns slowly, much larger tends to be unstable).

    Up to seven layers each get an Okabe-Ito colour, a line style and a marker,
    all named in the legend. More layers are coloured by depth on the viridis
    scale (dark = near the input, light = near the output: an order that reads
    without hue); the first and last, which the legend names, carry markers.
    The legend stands right of each panel.
    """
    named = dict(ratios) if isinstance(ratios, Mapping) else {"": ratios}
    n = len(named)
    fig, axes = plt.subplots(1, n, figsize=(4.8 * n + 0.8, 3.3), squeeze=False, sharey=sharey)
    cmap = plt.get_cmap("viridis")
    for ax, (label, r) in zip(axes[0], named.items()):
        r = np.asarray(r, dtype=np.float64)
        if r.ndim != 2:
            raise ValueError(f"plot_update_ratios: expected an array of shape (steps, layers), "
                             f"got shape {r.shape}")
        steps, layers = r.shape
        every = max(1, steps // 10)
        for k in range(layers):
            if layers <= len(OKABE_ITO) - 1:  # black is the reference line's
                style = {"color": OKABE_ITO[k], "ls": LINESTYLES[k], "marker": MARKERS[k]}
                name = f"layer {k + 1}"
            else:
                ends = {0: "o", layers - 1: "s"}
                style = {"color": cmap(k / (layers - 1)), "ls": "-", "marker": ends.get(k)}
                name = f"layer {k + 1}" if k in ends else None
            ax.plot(np.arange(steps), r[:, k], lw=1, ms=3.5, markevery=every, label=name, **style)
        if reference:
            ax.axhline(reference, color="black", ls="--", lw=1.2, label=f"{reference:g}")
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
        legend_outside(ax)
    axes[0][0].set_ylabel("lr·‖grad‖ / ‖W‖")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
