"""What a graph keeps for its backward pass, measured array by array.

Every recorded op has a ctx (its ``grad_fn``) holding what its VJP will need:
``ctx.saved`` plus a few array attributes such as an index. This module reads
those values without changing anything, and says for each one

* its *role* for the op: ``"input i"`` (the very array of input i),
  ``"output"`` (the op's own result), ``"new"`` (an array made only for
  backward, such as relu's boolean mask) or ``"ctx.<name>"`` (an attribute);
* its *kind*, i.e. whose memory it is: ``"parameter"`` (a leaf that requires
  grad), ``"input"`` (a leaf that does not: the data, constants),
  ``"activation"`` (the result of a recorded op) or ``"extra"`` (memory that
  exists only because backward will need it).

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
from .function import _arrays
from .tensor import Tensor

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
    """One recorded op: its tensor's topological index (``t<index>`` in draw_graph) and what it keeps."""

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


def _kind_of(t: Tensor) -> str:
    if t.grad_fn is not None:
        return "activation"
    return "parameter" if t.requires_grad else "input"


def _owners(order: list[Tensor]) -> dict[int, str]:
    """{id(owner buffer): kind} for every tensor of the graph; the first tensor to use a buffer names it."""
    kinds: dict[int, str] = {}
    for t in order:
        kinds.setdefault(id(_owner(t.data)), _kind_of(t))
    return kinds


def saved_values(root: Tensor) -> list[SavedRow]:
    """One row per recorded op in ``root``'s graph, in topological order: what its ctx keeps.

    After a backward pass without ``retain_graph`` every row is empty and
    ``released`` is True.
    """
    order = topological_order(root)
    kinds = _owners(order)
    rows = []
    for i, t in enumerate(order):
        ctx = t.grad_fn
        if ctx is None:
            continue
        items = []
        for v in ctx.saved or ():
            if not isinstance(v, np.ndarray):
                continue
            role = "new"
            if v is t.data:
                role = "output"
            else:
                for j, p in enumerate(t.parents):
                    if v is p.data:
                        role = f"input {j}"
                        break
            items.append(_item(role, v, kinds))
        for name, value in vars(ctx).items():
            if name == "saved":
                continue
            arrays = _arrays(value)
            for k, a in enumerate(arrays):
                label = f"ctx.{name}" if isinstance(value, np.ndarray) else f"ctx.{name}[{k}]"
                items.append(_item(label, a, kinds))
        rows.append(SavedRow(i, t.op, tuple(t.shape), tuple(items), ctx.released))
    return rows


def _item(role: str, a: np.ndarray, kinds: dict[int, str]) -> SavedArray:
    kind = kinds.get(id(_owner(a)), "extra")
    return SavedArray(role, kind, tuple(a.shape), str(a.dtype), int(a.nbytes))


def saved_memory(root: Tensor) -> dict[str, int]:
    """Bytes kept for backward by ``root``'s graph, each buffer counted once, by kind.

    Returns ``{"parameter": ..., "input": ..., "activation": ..., "extra": ...,
    "total": ...}``. The memory that training needs on top of inference is
    ``activation + extra`` (parameters and the input batch exist either way).
    """
    order = topological_order(root)
    kinds = _owners(order)
    seen: dict[int, np.ndarray] = {}
    for t in order:
        ctx = t.grad_fn
        if ctx is None:
            continue
        values = [v for v in ctx.saved or () if isinstance(v, np.ndarray)]
        for name, value in vars(ctx).items():
            if name != "saved":
                values += _arrays(value)
        for v in values:
            seen.setdefault(id(_owner(v)), _owner(v))
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
        lines.append((f"t{r.index}", r.op, str(r.shape), what, f"{r.nbytes:,}"))
    head = ("node", "op", "output", "saved for backward", "bytes")
    widths = [max(len(x[c]) for x in [head, *lines]) for c in range(5)]
    fmt = "  ".join(f"{{:{'>' if c == 4 else '<'}{w}}}" for c, w in enumerate(widths))
    total = sum(r.nbytes for r in rows)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*x) for x in lines]
    out.append(fmt.format("", "", "", "sum over ops", f"{total:,}"))
    return "\n".join(line.rstrip() for line in out)
