"""Pictures of what a graph keeps for backward: the tensors' fields, and bytes per op.

Both only read the graph (through :mod:`minigrad.inspect`); neither changes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..function import AccumulateGrad, gradient_edge
from ..inspect import KINDS, SavedRow, saved_values
from ..tensor import Tensor
from .graph import Graph, graph_view, node_style
from .style import OKABE_ITO_NAMES, legend_outside

__all__ = ["draw_fields", "plot_saved", "KIND_COLORS", "KIND_HATCHES"]

# Okabe-Ito colours and a hatch per kind: the bars' parts differ without colour too.
KIND_COLORS = {"parameter": OKABE_ITO_NAMES["blue"], "input": OKABE_ITO_NAMES["sky blue"],
               "activation": OKABE_ITO_NAMES["orange"], "extra": OKABE_ITO_NAMES["vermillion"]}
KIND_HATCHES = {"parameter": "", "input": "..", "activation": "//", "extra": "xx"}


def _esc(s: str) -> str:
    """Escape the characters that mean something inside a Graphviz record label."""
    for ch in "\\{}|<>":
        s = s.replace(ch, "\\" + ch)
    return s


def _shape(t: Tensor) -> str:
    dt = "" if t.dtype == np.float64 else f" {t.dtype}"
    return f"{tuple(t.shape)}{dt}"


def draw_fields(root, title: str | None = None, max_tensors: int = 12) -> Graph:
    """Every node of a small graph, and every tensor Python still holds, as the records they are.

    A tensor's box lists ``data``, ``grad``, ``requires_grad``, ``op``,
    ``parents``, ``grad_fn`` and ``is_leaf`` (so its state is in words as well as
    in its fill: blue for a leaf that requires grad, grey with a dotted border for
    one that does not, yellow with a bold border and name for the root); a dashed
    arrow leads to its ``grad_fn``. A node's box (yellow) shows ``needs_input_grad`` and what it
    saved; solid arrows are its edges (``node.parents``: the input's node, or a
    leaf's accumulator, drawn as the leaf's own box); a dotted arrow marks a saved
    value that is the very array of a tensor still alive (kept by reference, not
    copied). A value no name holds has no box: only its node remains.
    """
    order, index = graph_view(root)
    if len(order) > max_tensors:
        raise ValueError(f"draw_fields: the graph has {len(order)} nodes, more than max_tensors="
                         f"{max_tensors}; a record per node would not be readable. Use "
                         f"minigrad.viz.draw_graph for large graphs.")
    rows = {r.index: r for r in saved_values(root)}
    g = Graph(graph_attr={"rankdir": "LR", "fontname": "Helvetica", "fontsize": "11",
                          "nodesep": "0.3"},
              node_attr={"fontname": "Helvetica", "fontsize": "10", "shape": "record"},
              edge_attr={"arrowsize": "0.6"})
    if title:
        g.attr(label=title, labelloc="b")
    names = {}
    for i, node in enumerate(order):
        t = node.output
        names[i] = (t.name if t is not None else None) or f"t{i}"
    box_of = {}  # id(tensor) -> DOT name of its record
    for i, node in enumerate(order):
        t = node.output
        if t is None:
            continue
        box_of[id(t)] = f"t{i}"
        grad = "None" if t.grad is None else f"array {tuple(t.grad.shape)}"
        parents = ", ".join(names[index[id(gradient_edge(q))]] if gradient_edge(q) is not None and
                            id(gradient_edge(q)) in index else (q.name or "const") for q in t.parents)
        fields = [  # (port, text): a port lets an edge end at that field
            ("", names[i]),
            ("d", f"data: array {_shape(t)}"),
            ("", f"grad: {grad}"),
            ("", f"requires_grad: {t.requires_grad}"),
            ("", f"op: {t.op!r}"),
            ("", f"parents: ({parents}{',' if len(t.parents) == 1 else ''})"),
            ("f" if t.grad_fn is not None else "", f"grad_fn: {t.grad_fn!r}"),
            ("", f"is_leaf: {t.is_leaf}"),
        ]
        label = "|".join((f"<{port}> " if port else "") + _esc(text) for port, text in fields)
        kind = "root" if t is root else (
            "param" if t.is_leaf and t.requires_grad else "data" if t.is_leaf else "inner")
        # A record draws one border: its fields requires_grad and is_leaf say what a double border would.
        look = {k: v for k, v in node_style(kind).items() if k != "peripheries"}
        g.node(f"t{i}", label, **look)
    for i, node in enumerate(order):
        if isinstance(node, AccumulateGrad):
            continue
        row = rows[i]
        parts = [_esc(repr(node)), _esc(f"needs_input_grad: {node.needs_input_grad}")]
        if row.released:
            parts.append("saved: released")
        elif not row.saved:
            parts.append("saved: nothing")
        for k, sv in enumerate(row.saved):
            parts.append(f"<s{k}> " + _esc(f"saved {sv.role}: {sv.shape} {sv.dtype}"))
        g.node(f"f{i}", "|".join(parts), **node_style("op"))
        t = node.output
        if t is not None:
            g.edge(f"t{i}:f", f"f{i}", style="dashed")
        for p in node.parents:
            if p is None:
                continue
            j = index[id(p)]
            g.edge(f"f{i}", f"t{j}" if isinstance(p, AccumulateGrad) else f"f{j}")
        if row.released:
            continue
        inputs = node.inputs
        for k, sv in enumerate(row.saved):
            if sv.role.startswith("input "):
                q = inputs[int(sv.role[6:])]
                if q is not None and id(q) in box_of:
                    g.edge(f"f{i}:s{k}", f"{box_of[id(q)]}:d", style="dotted", color="#888888")
    return g


def plot_saved(rows: Sequence[SavedRow], title: str | None = None, ax=None,
               unit: float = 1e3, unit_name: str = "kB") -> Figure:
    """Bytes each op keeps for backward, one bar per op, split by whose memory it is.

    ``rows`` come from :func:`minigrad.inspect.saved_values`. Each bar counts
    what that op's ctx refers to, so an array saved by two ops appears twice.
    Each kind has a colour and a hatch; the legend stands right of the axes. A
    segment too thin to see (under 2% of the longest bar) is named beside its bar's total.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    else:
        fig = ax.figure
    labels = [f"op{r.index} {r.op}" for r in rows]
    y = np.arange(len(rows))[::-1]
    left = np.zeros(len(rows))
    parts = {}
    for kind in KINDS:
        widths = np.array([sum(s.nbytes for s in r.saved if s.kind == kind) for r in rows]) / unit
        if widths.any():
            ax.barh(y, widths, left=left, color=KIND_COLORS[kind], hatch=KIND_HATCHES[kind],
                    edgecolor=(0.0, 0.0, 0.0, 0.45), linewidth=0, label=kind, height=0.7)
        left += widths
        parts[kind] = widths
    tiny = 0.02 * max(left.max(), 1e-9)            # a segment this thin cannot be seen: say it in words
    for k, (yy, total) in enumerate(zip(y, left)):
        hidden = [f"{kind} {parts[kind][k]:,.1f}" for kind in KINDS
                  if 0 < parts[kind][k] < tiny and parts[kind][k] < total]
        note = f" (of which {', '.join(hidden)})" if hidden else ""
        ax.text(total, yy, f" {total:,.1f}{note}", va="center", fontsize=8)
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"saved for backward ({unit_name})")
    ax.set_xlim(0, max(left.max(), 1e-9) * 1.3)
    if title:
        ax.set_title(title)
    legend_outside(ax)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
