"""One look for every matplotlib figure of minigrad.viz, readable with any colour vision.

The colours are the palette of Okabe & Ito (2008, "Color Universal Design"):
eight colours chosen to stay distinguishable for people with the common forms
of colour blindness (protanopia, deuteranopia, tritanopia). Even so, a figure
here does not let colour alone carry a meaning: series that share an axis also
differ by line style or marker, and stacked areas or bars by hatch, so a figure
also survives grey-scale printing.

Importing :mod:`minigrad.viz` calls :func:`use_style`, which sets

* ``axes.prop_cycle`` to the Okabe-Ito colours (so any ``ax.plot`` gets them),
* ``font.size`` to 10 pt and ``legend.fontsize`` to 9 pt.

Call :func:`use_style` again after ``matplotlib.rcdefaults()`` or a style sheet.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
from matplotlib import cycler

__all__ = ["OKABE_ITO", "OKABE_ITO_NAMES", "LINESTYLES", "MARKERS", "HATCHES", "RC_PARAMS",
           "use_style", "series_style", "legend_outside", "distinguish"]

# The eight colours by name, in the order the prop cycle uses them: the darker,
# most saturated first; yellow (little contrast with white for thin lines) and
# black (kept for reference lines and text) last.
OKABE_ITO_NAMES: dict[str, str] = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "bluish green": "#009E73",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
    "sky blue": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}
OKABE_ITO: list[str] = list(OKABE_ITO_NAMES.values())

# Series i of a plot gets OKABE_ITO[i], LINESTYLES[i] and MARKERS[i] (modulo the length).
LINESTYLES: list[Any] = [
    "-",                          # solid
    "--",                         # dashed
    "-.",                         # dash-dot
    ":",                          # dotted
    (0, (5, 1.5, 1, 1.5, 1, 1.5)),  # dash-dot-dot
    (0, (9, 3)),                  # long dashes
    (0, (1, 3)),                  # sparse dots
    (0, (9, 2, 2, 2)),            # long dash, short dash
]
MARKERS: list[str] = ["o", "s", "^", "D", "v", "P", "X", "*"]
# Fill patterns for stacked areas and bars: each category its own, besides its colour.
HATCHES: list[str] = ["", "//", "\\\\", "xx", "..", "++", "oo", "--"]

RC_PARAMS: dict[str, Any] = {
    "axes.prop_cycle": cycler(color=OKABE_ITO),
    "font.size": 10,
    "legend.fontsize": 9,
}


def use_style() -> None:
    """Set matplotlib's defaults to :data:`RC_PARAMS` (done once when minigrad.viz is imported)."""
    mpl.rcParams.update(RC_PARAMS)


def series_style(i: int, marker: bool = True) -> dict[str, Any]:
    """The keyword arguments of ``ax.plot`` for series ``i``: colour, line style and marker.

    Two series with different ``i`` (fewer than eight apart) differ in all three,
    so a legend stays readable without colour.
    """
    style = {"color": OKABE_ITO[i % len(OKABE_ITO)], "linestyle": LINESTYLES[i % len(LINESTYLES)]}
    if marker:
        style["marker"] = MARKERS[i % len(MARKERS)]
    return style


def legend_outside(ax, **kwargs):
    """A legend to the right of the axes, where it cannot cover data (top-aligned, no frame).

    The figure's ``tight_layout`` (or constrained layout) then narrows the axes
    to make room for it. Keyword arguments go to ``ax.legend``.
    """
    opts = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0,
            "frameon": False}
    opts.update(kwargs)
    return ax.legend(**opts)


def distinguish(*axes, legend_on: int | None = -1) -> None:
    """Let no lesson rest on colour alone in figures already drawn, and keep legends off the data.

    Every line drawn with markers gets a marker shape of its own, and every
    unfilled patch (a histogram outline) a line style of its own: one per colour,
    in drawing order, so panels drawn from the same records match. The axes'
    legends are removed and one is put beside ``axes[legend_on]`` (none if
    ``legend_on`` is None).
    """
    from matplotlib.colors import to_hex

    for ax in axes:
        colours: list[str] = []
        for line in ax.get_lines():
            if line.get_marker() in ("None", "", None):
                continue
            c = to_hex(line.get_color())
            if c not in colours:
                colours.append(c)
            line.set_marker(MARKERS[colours.index(c) % len(MARKERS)])
        outlines: list[str] = []
        for patch in ax.patches:
            if patch.get_fill():
                continue
            c = to_hex(patch.get_edgecolor())
            if c not in outlines:
                outlines.append(c)
            patch.set_linestyle(LINESTYLES[outlines.index(c) % len(LINESTYLES)])
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if legend_on is not None:
        legend_outside(axes[legend_on])
    axes[0].figure.tight_layout()
