"""What a graph keeps for its backward pass, measured array by array.

Every recorded op has a backward node (its ``grad_fn``) holding what its VJP
will need: ``node.saved`` plus a few array attributes such as an index, all
listed by ``node.arrays()``. This module reads those values without changing
anything, and says for each one

* its *role* for the op: ``"input i"`` (the very array of input i),
  ``"output"`` (the op's own result), ``"new"`` (an array made only for
  backward, such as layer_norm's row means) or ``"ctx.<name>"`` (an attribute);
* its *kind*, i.e. whose memory it is: ``"parameter"`` (a leaf that requires
  grad), ``"input"`` (a value that needs no gradient: the data, constants),
  ``"activation"`` (the result of a recorded op) or ``"extra"`` (memory that
  exists only because backward will need it). A buffer has one kind: if it is
  a parameter (or an input) anywhere in the graph, it is that everywhere.

Counting per op overstates the total, because one array is often saved by
several ops (a matmul and the next op both keep the same activation), and a
saved parameter costs nothing extra: it exists anyway. :func:`saved_memory`
therefore counts each buffer once. A view counts as the whole buffer it keeps
alive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .engine import topological_order
from .function import AccumulateGrad, _arrays

__all__ = ["SavedArray", "SavedRow", "saved_values", "saved_memory", "format_saved", "KINDS"]

KINDS = ("parameter", "input", "activation", "extra")


@dataclass(frozen=True)
class SavedArray:
    """One array an op keeps for backward."""

    role: str
    kind: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int


@dataclass(frozen=True)
class SavedRow:
    """One recorded op: its node's topological index (``op<index>`` in draw_graph) and what it keeps."""

    index: int
    op: str
    shape: tuple[int, ...]
    saved: tuple[SavedArray, ...]
    released: bool

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.saved)


def _owner(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory (``a`` itself unless it is a view)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _kind(node, role) -> str:
    """Whose memory a saved value is: decided by where the node's edge for it leads."""
    if role is None:
        return "extra"
    if role == -1:
        return "activation"
    edge = node.parents[role]
    if isinstance(edge, AccumulateGrad):
        return "parameter"
    return "input" if edge is None else "activation"


def _node_items(node) -> list[tuple[str, str, np.ndarray]]:
    """(role, kind, array) for every array ``node`` keeps, in the order ``node.arrays()`` lists them."""
    items = []
    for rec in node.saved_values or ():
        v, r = rec.value, rec.which
        if isinstance(v, np.ndarray):
            role = "new" if r is None else ("output" if r == -1 else f"input {r}")
            items.append((role, _kind(node, r), v))
    for name, value in vars(node).items():
        arrays = _arrays(value)
        for k, arr in enumerate(arrays):
            label = f"ctx.{name}" if isinstance(value, np.ndarray) else f"ctx.{name}[{k}]"
            items.append((label, "extra", arr))
    return items


def _buffer_kinds(order: list) -> dict[int, str]:
    """{id(owner buffer): kind}: a buffer that is a parameter or an input somewhere is that."""
    kinds: dict[int, str] = {}
    rank = {k: i for i, k in enumerate(KINDS)}
    for node in order:
        if isinstance(node, AccumulateGrad):
            kinds[id(_owner(node.variable.data))] = "parameter"
            continue
        for _, kind, a in _node_items(node):
            key = id(_owner(a))
            if key not in kinds or rank[kind] < rank[kinds[key]]:
                kinds[key] = kind
    return kinds


def saved_values(root) -> list[SavedRow]:
    """One row per recorded op in ``root``'s graph, in topological order: what its node keeps.

    ``index`` is the node's topological index (``op<index>`` in ``draw_graph``).
    After a backward pass without ``retain_graph`` every row is empty and
    ``released`` is True.
    """
    order = topological_order(root)
    kinds = _buffer_kinds(order)
    rows = []
    for i, node in enumerate(order):
        if isinstance(node, AccumulateGrad):
            continue
        items = [_item(role, a, kinds) for role, _, a in _node_items(node)]
        shape = tuple(node.out_shape)
        rows.append(SavedRow(i, node.name, shape, tuple(items), node.released))
    return rows


def _item(role: str, a: np.ndarray, kinds: dict[int, str]) -> SavedArray:
    kind = kinds.get(id(_owner(a)), "extra")
    return SavedArray(role, kind, tuple(a.shape), str(a.dtype), int(a.nbytes))


def saved_memory(root) -> dict[str, int]:
    """Bytes kept for backward by ``root``'s graph, each buffer counted once, by kind.

    Returns ``{"parameter": ..., "input": ..., "activation": ..., "extra": ...,
    "total": ...}``. What training needs on top of inference is ``activation +
    extra`` (parameters and the input batch exist either way); a parameter is
    never counted as an activation. This is the accounting the memory
    profiler's "saved activations" uses too: ``node.arrays()``, each buffer once.
    """
    order = topological_order(root)
    kinds = _buffer_kinds(order)
    seen: dict[int, np.ndarray] = {}
    for node in order:
        for a in node.arrays():
            seen.setdefault(id(_owner(a)), _owner(a))
    out = dict.fromkeys(KINDS, 0)
    for key, buf in seen.items():
        out[kinds.get(key, "extra")] += int(buf.nbytes)
    out["total"] = sum(out[k] for k in KINDS)
    return out


def format_saved(rows: list[SavedRow]) -> str:
    """A plain-text table of :func:`saved_values` rows: op, output shape, what it keeps, bytes."""

    def describe(s: SavedArray) -> str:
        dt = "" if s.dtype == "float64" else f" {s.dtype}"
        return f"{s.role} {s.shape}{dt}"

    lines = []
    for r in rows:
        what = ", ".join(describe(s) for s in r.saved) or ("(released)" if r.released else "nothing")
        lines.append((f"op{r.index}", r.op, str(r.shape), what, f"{r.nbytes:,}"))
    head = ("node", "op", "output", "saved for backward", "bytes")
    widths = [max(len(x[c]) for x in [head, *lines]) for c in range(5)]
    fmt = "  ".join(f"{{:{'>' if c == 4 else '<'}{w}}}" for c, w in enumerate(widths))
    total = sum(r.nbytes for r in rows)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*x) for x in lines]
    out.append(fmt.format("", "", "", "sum over ops", f"{total:,}"))
    return "\n".join(line.rstrip() for line in out)
