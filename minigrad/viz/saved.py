"""Pictures of what a graph keeps for backward: the tensors' fields, and bytes per op.

Both only read the graph (through :mod:`minigrad.inspect`); neither changes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..engine import topological_order
from ..inspect import KINDS, SavedRow, saved_values
from ..tensor import Tensor
from .graph import PALETTE, Graph

__all__ = ["draw_fields", "plot_saved", "KIND_COLORS"]

KIND_COLORS = {"parameter": "#4c8fd6", "input": "#9e9e9e", "activation": "#f0a030",
               "extra": "#d9534f"}


def _esc(s: str) -> str:
    """Escape the characters that mean something inside a Graphviz record label."""
    for ch in "\\{}|<>":
        s = s.replace(ch, "\\" + ch)
    return s


def _shape(t: Tensor) -> str:
    dt = "" if t.dtype == np.float64 else f" {t.dtype}"
    return f"{tuple(t.shape)}{dt}"


def draw_fields(root: Tensor, title: str | None = None, max_tensors: int = 12) -> Graph:
    """Every tensor of a small graph as the record it is: its fields and its backward node.

    One box per tensor lists ``data``, ``grad``, ``requires_grad``, ``op``,
    ``parents``, ``grad_fn`` and ``is_leaf``. Solid arrows go from ``parents``
    to the parent tensors; a dashed arrow leads to the ``grad_fn`` box, which
    shows ``needs_input_grad`` and what was saved; a dotted arrow marks a saved
    value that is the very array of another tensor (kept by reference, not copied).
    """
    order = topological_order(root)
    if len(order) > max_tensors:
        raise ValueError(f"draw_fields: the graph has {len(order)} tensors, more than max_tensors="
                         f"{max_tensors}; a record per tensor would not be readable. Use "
                         f"minigrad.viz.draw_graph for large graphs.")
    index = {id(t): i for i, t in enumerate(order)}
    rows = {r.index: r for r in saved_values(root)}
    g = Graph(graph_attr={"rankdir": "LR", "fontname": "Helvetica", "fontsize": "11",
                          "nodesep": "0.3"},
              node_attr={"fontname": "Helvetica", "fontsize": "10", "shape": "record"},
              edge_attr={"arrowsize": "0.6"})
    if title:
        g.attr(label=title, labelloc="b")
    for i, t in enumerate(order):
        grad = "None" if t.grad is None else f"array {tuple(t.grad.shape)}"
        parents = ", ".join(p.name or f"t{index[id(p)]}" for p in t.parents)
        fields = [  # (port, text): a port lets an edge start at that field
            ("", t.name or f"t{i}"),
            ("d", f"data: array {_shape(t)}"),
            ("", f"grad: {grad}"),
            ("", f"requires_grad: {t.requires_grad}"),
            ("", f"op: {t.op!r}"),
            ("p", f"parents: ({parents}{',' if len(t.parents) == 1 else ''})"),
            ("f" if t.grad_fn is not None else "", f"grad_fn: {t.grad_fn!r}"),
            ("", f"is_leaf: {t.is_leaf}"),
        ]
        label = "|".join((f"<{port}> " if port else "") + _esc(text) for port, text in fields)
        color = "#ffe08a" if t is root else (
            PALETTE["param"] if t.is_leaf and t.requires_grad else
            PALETTE["data"] if t.is_leaf else PALETTE["inner"])
        g.node(f"t{i}", label, style="filled", fillcolor=color)
        for p in t.parents:
            g.edge(f"t{i}:p", f"t{index[id(p)]}")
        if t.grad_fn is None:
            continue
        ctx, row = t.grad_fn, rows[i]
        parts = [_esc(repr(ctx)), _esc(f"needs_input_grad: {ctx.needs_input_grad}")]
        if row.released:
            parts.append("saved: released")
        elif not row.saved:
            parts.append("saved: nothing")
        for k, s in enumerate(row.saved):
            parts.append(f"<s{k}> " + _esc(f"saved {s.role}: {s.shape} {s.dtype}"))
        g.node(f"f{i}", "|".join(parts), style="filled", fillcolor=PALETTE["op"])
        g.edge(f"t{i}:f", f"f{i}", style="dashed")
        if row.released:
            continue
        for k, s in enumerate(row.saved):
            if s.role.startswith("input "):
                g.edge(f"f{i}:s{k}", f"t{index[id(t.parents[int(s.role[6:])])]}:d", style="dotted",
                       color="#888888")
    return g


def plot_saved(rows: Sequence[SavedRow], title: str | None = None, ax=None,
               unit: float = 1e3, unit_name: str = "kB") -> Figure:
    """Bytes each op keeps for backward, one bar per op, split by whose memory it is.

    ``rows`` come from :func:`minigrad.inspect.saved_values`. Each bar counts
    what that op's ctx refers to, so an array saved by two ops appears twice.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    else:
        fig = ax.figure
    labels = [f"t{r.index} {r.op}" for r in rows]
    y = np.arange(len(rows))[::-1]
    left = np.zeros(len(rows))
    for kind in KINDS:
        widths = np.array([sum(s.nbytes for s in r.saved if s.kind == kind) for r in rows]) / unit
        if widths.any():
            ax.barh(y, widths, left=left, color=KIND_COLORS[kind], label=kind, height=0.7)
        left += widths
    for yy, total in zip(y, left):
        ax.text(total, yy, f" {total:,.1f}", va="center", fontsize=8)
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"saved for backward ({unit_name})")
    ax.set_xlim(0, max(left.max(), 1e-9) * 1.18)
    if title:
        ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
