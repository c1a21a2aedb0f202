"""Memory pictures: a training step's timeline as stacked areas, by category.

The layout follows PyTorch's memory profiler timeline
(``torch.profiler._memory_profiler.MemoryProfileTimeline``): time runs left to
right, live memory is stacked by category, and the phases of the step are
marked. Here "time" is the order of the ops (a sample after each, phases with
few ops widened), so the picture is the same on every machine. Drawing only
reads the timeline.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..memory import CATEGORIES, MiB, Timeline
from .style import HATCHES, OKABE_ITO_NAMES, legend_outside

__all__ = ["plot_memory_timeline", "MEMORY_COLORS", "MEMORY_HATCHES"]

# Okabe-Ito colours, neighbours in the stack differing in lightness; a hatch each as well,
# so that no two categories are told apart by colour alone.
MEMORY_COLORS = {
    "parameters": OKABE_ITO_NAMES["blue"],
    "gradients": OKABE_ITO_NAMES["sky blue"],
    "optimizer state": OKABE_ITO_NAMES["bluish green"],
    "saved activations": OKABE_ITO_NAMES["vermillion"],
    "graph outputs": OKABE_ITO_NAMES["orange"],
    "inputs": OKABE_ITO_NAMES["reddish purple"],
    "temporaries": OKABE_ITO_NAMES["yellow"],
}
MEMORY_HATCHES = dict(zip(CATEGORIES, HATCHES))


def _positions(timeline: Timeline, min_phase_width: float) -> np.ndarray:
    """x of each sample: one unit per sample, but every phase at least min_phase_width of the axis."""
    n = len(timeline)
    x = np.arange(n, dtype=float)
    if n < 2 or not timeline.phases:
        return x
    floor = min_phase_width * (n - 1)
    spans = sorted((s, e) for _, s, e in timeline.phases)
    cuts, widths, pos = [0], [], 0
    for s, e in spans:
        if s > pos:                         # samples outside any phase keep their width
            cuts.append(s)
            widths.append(s - pos)
        cuts.append(e)
        widths.append(max(e - s, floor))
        pos = e
    if pos < n - 1:
        cuts.append(n - 1)
        widths.append(n - 1 - pos)
    starts = np.concatenate([[0.0], np.cumsum(widths)])
    for (a, b), x0, w in zip(zip(cuts, cuts[1:]), starts, widths):
        x[a:b + 1] = x0 + (np.arange(a, b + 1) - a) / max(b - a, 1) * w
    return x


def plot_memory_timeline(timeline: Timeline, ax=None, unit: int = MiB, unit_name: str = "MiB",
                         title: str | None = None, show_peak: bool = True,
                         categories=CATEGORIES, legend: bool = True,
                         min_phase_width: float = 0.08) -> Figure:
    """Stacked areas of live NumPy memory per category, phases marked, peaks dashed.

    Samples are spaced evenly within each phase; a phase with few ops (the
    optimizer step is one sample) is widened to ``min_phase_width`` of the axis.
    The stack is drawn as steps: the stretch that ends at a sample shows what
    was live at that sample. The dashed line is the measured peak over the same
    stretch: it is never below the stack, and it rises above it when an op
    makes scratch arrays that are freed before the next sample.
    Each category has its own colour and hatch (``MEMORY_COLORS``,
    ``MEMORY_HATCHES``); the legend stands right of the axes.
    """
    if not isinstance(timeline, Timeline):
        raise TypeError(f"plot_memory_timeline: expected a minigrad.memory.Timeline, "
                        f"got {type(timeline).__name__}")
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown:
        raise ValueError(f"plot_memory_timeline: unknown categories {unknown}; choose from {CATEGORIES}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 4))
    else:
        fig = ax.figure
    x = _positions(timeline, min_phase_width)
    # Both the stack and the peak line are steps drawn the same way ("pre"): the
    # stretch from sample i-1 to sample i shows what was live at sample i and the
    # peak measured in between. A sample's peak is never below the totals of the
    # samples on either side, so the dashed line never dips under the stack; a
    # linearly interpolated stack (stackplot) would cut across the steps.
    lower = np.zeros(len(x))
    for c in categories:
        upper = lower + timeline.category(c) / unit
        ax.fill_between(x, lower, upper, step="pre", color=MEMORY_COLORS[c], alpha=0.9,
                        linewidth=0, label=c, hatch=MEMORY_HATCHES[c],
                        edgecolor=(0.0, 0.0, 0.0, 0.45))  # hatch lines take the edge colour
        lower = upper
    if show_peak and len(x) > 1:
        ax.step(x, timeline.peaks / unit, where="pre", color="black", lw=0.8, ls="--",
                label="peak between samples")
    top = max(float(timeline.peaks.max()), float(timeline.totals.max())) / unit
    top = top if top > 0 else 1.0
    ax.set_ylim(0, top * 1.25)
    width = max(float(x[-1]), 1.0)
    for i, (name, start, end) in enumerate(timeline.phases):
        x0, x1 = x[start], x[end]
        ax.axvline(x0, color="#444444", lw=0.8)
        ax.axvline(x1, color="#444444", lw=0.8)
        if i % 2:
            ax.axvspan(x0, x1, color="#000000", alpha=0.035, lw=0)
        narrow = (x1 - x0) < 0.2 * width          # stagger the names of narrow phases
        ax.text((x0 + x1) / 2, top * (1.05 if narrow and i % 2 else 1.15), name, ha="center",
                va="center", fontsize=8 if narrow else 9)
    ax.set_xlim(0, max(float(x[-1]), 1.0))
    ax.set_xticks([])
    ax.set_xlabel("ops in the order they ran (a sample after each; phases marked)")
    ax.set_ylabel(f"live NumPy memory ({unit_name})")
    if title:
        ax.set_title(title)
    if legend:
        handles, labels = ax.get_legend_handles_labels()
        legend_outside(ax, handles=handles[::-1], labels=labels[::-1], loc="center left",
                       bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig
