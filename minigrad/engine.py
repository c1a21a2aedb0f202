"""The backward pass: reverse topological order over backward nodes, accumulation, release.

The graph the engine walks is made of backward nodes (each tensor's ``grad_fn``),
as in PyTorch. A node keeps what its op saved and, in ``node.parents``, one edge
per input: the input's node, or ``None``. A leaf that requires grad is reached
through its :class:`~minigrad.function.AccumulateGrad` node. The engine knows no
op by name: for each node it calls ``node.fn.backward(node, g)`` (the op's VJP)
and sends what comes back along the edges. It works in four steps:

1. order the nodes without recursion, so a chain of any depth works;
2. check the whole graph first (released? changed in place?), and every leaf's
   existing ``.grad``, so that an error leaves every ``.grad`` exactly as it was;
3. walk the nodes from the output back to the leaves. A node runs only after
   all its consumers, so its gradient is complete. Each gradient is dropped as
   soon as it has been used, and each node's saved values are released right
   after its VJP has run, unless ``retain_graph=True``;
4. add the leaves' gradients into ``.grad`` (all of them, or, on an error,
   none), or hand them back, for ``grad()``.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .function import AccumulateGrad, AnomalyError, _describe_nonfinite, _state, gradient_edge
from .tensor import Tensor, as_tensor

__all__ = ["backward", "grad", "topological_order"]


def topological_order(root: Tensor | Any) -> list:
    """Every backward node ``root`` depends on, each after all of its inputs' nodes.

    ``root`` is a tensor (its ``grad_fn``, or a leaf's accumulator, is where the
    walk starts) or a node. Iterative depth-first search: edges are followed in
    operand order, so the result is deterministic. ``root``'s node comes last;
    leaves (``AccumulateGrad`` nodes) come before the ops that use them. A
    tensor that needs no gradient has no node, and the result is empty.
    """
    start = gradient_edge(root) if isinstance(root, Tensor) else root
    if start is None:
        return []
    order: list = []
    seen = {start}  # nodes hash by identity
    stack = [(start, iter(start.parents))]
    while stack:
        node, parents = stack[-1]
        for p in parents:
            if p is not None and p not in seen:
                seen.add(p)
                if p.parents:
                    stack.append((p, iter(p.parents)))
                    break
                order.append(p)  # nothing to visit first
        else:
            stack.pop()
            order.append(node)
    return order


class _DiffCtx:
    """A node whose saved values are Tensors, so that a VJP builds a graph (create_graph).

    A saved input becomes a tensor whose gradient flows along that input's edge;
    the saved output becomes a tensor of this very node.
    """

    def __init__(self, ctx):
        self._ctx = ctx
        inputs: list = [None] * len(ctx.parents)
        saved = []
        for v, role in zip(ctx.saved, ctx.roles or (None,) * len(ctx.saved)):
            if not isinstance(v, np.ndarray):
                saved.append(v)
                continue
            if role is None:
                t = as_tensor(v)
            elif role == -1:
                t = ctx._out()
                if t is None or t.data is not v:
                    t = Tensor._make(v, True, ctx)
            else:
                t = inputs[role]
                if t is None:
                    t = inputs[role] = _alias(v, ctx.parents[role])
            saved.append(t)
        self.saved = tuple(saved)
        self.inputs = tuple(inputs)

    def __getattr__(self, key: str) -> Any:
        return getattr(self._ctx, key)

    def stand_in(self, i: int, k: int) -> Tensor:
        """A tensor holding saved value ``k`` whose gradient flows along input ``i``'s edge.

        For a VJP that rebuilds a function of input ``i`` from a value it saved
        instead of the input, where the function cannot tell the two apart. It
        holds the saved buffer itself, so forward mode finds that value's tangent.
        """
        return _alias(self._ctx.saved[k], self._ctx.parents[i])


def _alias(v: np.ndarray, edge) -> Tensor:
    """A tensor holding ``v`` whose gradient flows into ``edge`` (an input's node)."""
    if isinstance(edge, AccumulateGrad):
        if edge.variable.data is v:
            return edge.variable
        t = Tensor._make(v, True)  # a stand-in for the leaf: it shares the leaf's accumulator
        t._acc = weakref.ref(edge)
        return t
    return Tensor._make(v, edge is not None, edge)


def _check_node(ctx) -> None:
    """Raise if the values ``ctx`` saved were freed, or changed in place since they were saved."""
    if ctx.saved is None:
        why = (f"an earlier backward pass that stopped with an error ({ctx._freed_by})"
               if ctx._freed_by else "an earlier backward pass")
        raise RuntimeError(
            f"backward: trying to go through the graph a second time: the values "
            f"'{ctx.name}' saved for backward were already freed by {why}. Pass "
            f"retain_graph=True to the first backward() if you need to call it twice, or run "
            f"the forward pass again.")
    for vc, v, which in ctx.versions:
        if vc[0] != v:
            if which == -1:
                shape = next(s.shape for s, r in zip(ctx.saved, ctx.roles) if r == -1)
                what = f"its output (shape {shape})"
            else:
                shape = next(s.shape for s, r in zip(ctx.saved, ctx.roles) if r == which)
                what = f"its input {which} (shape {shape})"
            raise RuntimeError(
                f"backward: a value that '{ctx.name}' saved for backward was modified in "
                f"place: {what} is at version {vc[0]}, but version {v} was saved. Don't "
                f"change it in place before backward, or operate on a copy (clone()).")


def _check_grad(ctx, i: int, g: Any) -> None:
    data = g.data if isinstance(g, Tensor) else g
    if not np.all(np.isfinite(data)):
        raise AnomalyError(
            f"detect_anomaly: the backward pass of '{ctx.name}' returned "
            f"{_describe_nonfinite(np.asarray(data))} in the gradient of its input {i}.\n"
            f"The op was created at {ctx.created_at or '<created outside detect_anomaly>'}",
            op=ctx.name, phase="backward", frame=ctx.created_frame)


def _as_grads(node, in_grads: Any) -> tuple:
    """A VJP's result as one entry per input, or a clear error.

    As in PyTorch, an op with one input may return its gradient bare; otherwise a
    VJP returns a tuple (or list) with one entry per input: an array, or None.
    """
    n = len(node.parents)
    if isinstance(in_grads, (tuple, list)):
        if len(in_grads) == n:
            return tuple(in_grads)
        got = f"{len(in_grads)} gradient{'' if len(in_grads) == 1 else 's'}"
    elif n == 1 and (in_grads is None or hasattr(in_grads, "shape")):
        return (in_grads,)
    else:
        got = f"a {type(in_grads).__name__}"
    raise TypeError(
        f"'{node.name}' backward returned {got}, but the op has {n} input(s): return a "
        f"tuple with one entry per input, the gradient for that input or None")


def _seed(root: Tensor, grad: Any, create_graph: bool):
    """dL/droot: ones for a one-element root, else ``grad`` checked and copied."""
    if not isinstance(root, Tensor):
        raise TypeError(f"backward: expected a Tensor, got {type(root).__name__}")
    if not root.requires_grad:
        raise RuntimeError(
            f"backward: the tensor (shape {root.shape}) does not require grad: none of the "
            f"tensors it was computed from has requires_grad=True, or it was computed "
            f"under no_grad()")
    if grad is None:
        if root.data.size != 1:
            raise RuntimeError(
                f"backward: grad can be left out only for a tensor with one element; this "
                f"one has shape {root.shape}. Pass grad=, an array of shape {root.shape} "
                f"holding dL/d(this tensor).")
        data = root.data
        g0 = np.array(1, data.dtype) if data.ndim == 0 else np.ones(data.shape, data.dtype)
    else:
        gdata = grad.data if isinstance(grad, Tensor) else grad
        arr = np.asarray(gdata)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"backward: grad must hold real numbers, got an array of dtype "
                            f"{arr.dtype} (shape {arr.shape}) for a tensor of shape {root.shape}")
        g0 = np.array(arr, dtype=root.dtype)  # a copy: the caller keeps theirs
        if g0.shape != root.shape:
            raise ValueError(
                f"backward: grad has shape {g0.shape} but the tensor has shape {root.shape}")
    if create_graph:
        g0 = grad if isinstance(grad, Tensor) else as_tensor(g0)
    return g0


def _run(root: Tensor, grad: Any, capture: Sequence[Tensor] | None, retain_graph: bool,
         create_graph: bool) -> dict[Any, tuple[Any, Any]]:
    """Backpropagate from ``root``; return {node: (tensor, gradient)} for the captured nodes.

    ``capture=None`` captures every leaf that requires grad and every tensor that
    called ``retain_grad()``; otherwise the nodes of the given tensors. Nodes
    hash by identity, so they are the keys of every table here.
    """
    g0 = _seed(root, grad, create_graph)
    order = topological_order(root)
    for node in order:  # everything is checked before anything changes; _check_node explains
        if node.saved is None:
            _check_node(node)
        for vc, v, _ in node.versions:
            if vc[0] != v:
                _check_node(node)

    wanted: dict[Any, Tensor] | None = None
    if capture is not None:
        wanted = {}
        for t in capture:
            e = gradient_edge(t)
            if e is not None:
                wanted[e] = t
    anomaly = _state.anomaly
    hooks = _state.hooks

    grads: dict[Any, Any] = {order[-1]: g0}
    owned: set = set()  # nodes whose gradient is a sum this loop made (safe to add into)
    found: dict[Any, tuple[Any, Any]] = {}
    grad_mode = _state.grad_enabled
    _state.grad_enabled = create_graph  # record the VJPs' own ops only for create_graph
    try:
        for node in reversed(order):
            g = grads.pop(node, None)
            if g is None:
                continue
            if type(node) is AccumulateGrad:  # a leaf: its gradient is added into .grad at the end
                if wanted is None:
                    found[node] = (node.variable, g)
                elif node in wanted:
                    found[node] = (wanted[node], g)
                for hook in hooks:
                    hook("accumulate", node.fn, (), node, {"grad": g})
                continue
            if wanted is not None:
                if node in wanted:
                    found[node] = (wanted[node], g)
            elif node._retain:
                t = node._out()
                if t is not None:
                    found[node] = (t, g)
            in_grads = node.fn.backward(_DiffCtx(node) if create_graph else node, g)
            edges = node.parents
            if type(in_grads) is not tuple or len(in_grads) != len(edges):
                in_grads = _as_grads(node, in_grads)
            for i, p in enumerate(edges):
                if p is None:
                    continue
                pg = in_grads[i]
                if pg is None:
                    continue
                if pg.shape != p.out_shape:  # the input's shape is its node's output shape
                    raise RuntimeError(
                        f"'{node.name}' backward returned a gradient of shape {pg.shape} for "
                        f"its input {i}, which has shape {p.out_shape}")
                if anomaly:
                    _check_grad(node, i, pg)
                prev = grads.get(p)
                if prev is None:
                    grads[p] = pg
                elif p in owned:
                    prev += pg  # our own array: add in place, no new allocation
                else:
                    # A VJP's result may be shared (add hands one g to both inputs)
                    # or read-only (a broadcast view): never write into it.
                    total = prev + pg
                    grads[p] = total
                    if type(total) is np.ndarray:
                        owned.add(p)
            for hook in hooks:
                hook("backward", node.fn, in_grads, node, {"grad": g})
            if not retain_graph:
                node.release()
    except BaseException as e:
        if not retain_graph:  # say truthfully why a retry cannot work
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            for node in order:
                if node.saved is None and not isinstance(node, AccumulateGrad) and node._freed_by is None:
                    node._freed_by = reason
        raise
    finally:
        _state.grad_enabled = grad_mode
    return found


def _run_without_gc(*args: Any) -> dict[Any, tuple[Any, Any]]:
    """``_run`` with Python's cycle collector paused.

    The graph holds no reference cycles and the walk makes none, so the collector
    would only re-scan every live object now and then, which on a deep graph
    costs more than the walk itself.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(*args)
    finally:
        if collecting:
            gc.enable()


def backward(root: Tensor, grad: Any = None, retain_graph: bool = False) -> None:
    """``root.backward()``: add dL/dleaf into ``.grad`` of every leaf that requires grad.

    Every leaf is checked before any ``.grad`` changes, so an error leaves them all as they were.
    """
    found = _run_without_gc(root, grad, None, retain_graph, False)
    for t, _ in found.values():  # check every leaf before any .grad changes
        old = t.grad
        if old is not None and (type(old) is not np.ndarray or old.shape != t.data.shape):
            raise RuntimeError(
                f"backward: the existing .grad of a tensor of shape {t.shape} has shape "
                f"{np.shape(old)}; it cannot take a gradient of shape {t.shape}. Set .grad to "
                f"None (zero_grad()) before backward.")
    handed_out: set[int] = set()
    for t, g in found.values():
        # One array may be the gradient of two tensors (a + b hands g to both),
        # or a view of another; copy so that an in-place update of one .grad
        # can never change another. A leaf's .grad keeps the leaf's dtype.
        if type(g) is not np.ndarray:
            g = np.asarray(g)
        dt = t.data.dtype
        if g.dtype is not dt and g.dtype != dt:
            g = g.astype(dt)
        elif id(g) in handed_out or g.base is not None or not g.flags.writeable:
            g = g.copy()
        handed_out.add(id(g))
        old = t.grad
        t.grad = g if old is None else old + g


def grad(output: Tensor, inputs: Tensor | Sequence[Tensor], grad_output: Any = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple:
    """d(output)/d(inputs) as a tuple, without touching any ``.grad``.

    Like ``torch.autograd.grad``. With ``create_graph=True`` the backward pass is
    itself recorded, so the returned Tensors can be differentiated again (for
    Hessian-vector products, for instance).
    """
    single = isinstance(inputs, Tensor)
    inputs = (inputs,) if single else tuple(inputs)
    for i, t in enumerate(inputs):  # RuntimeError in both cases, as torch.autograd.grad raises
        if not isinstance(t, Tensor):
            raise RuntimeError(f"grad: input {i} must be a Tensor with requires_grad=True, got a "
                               f"{type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} (shape {t.shape}) does not require grad; only a Tensor "
                               f"with requires_grad=True can be differentiated against")
    if retain_graph is None:
        retain_graph = create_graph
    found = _run_without_gc(output, grad_output, inputs, retain_graph, create_graph)
    out = []
    for i, t in enumerate(inputs):
        e = gradient_edge(t)
        g = found.get(e, (None, None))[1]
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"grad: input {i} (shape {t.shape}) was not used to compute the output; "
                    f"pass allow_unused=True to get None for it")
            out.append(None)
        elif isinstance(g, Tensor):
            out.append(g)
        else:
            g = np.asarray(g)
            if g.dtype != t.dtype:
                g = g.astype(t.dtype)
            elif g.base is not None or not g.flags.writeable:
                g = g.copy()
            out.append(Tensor._make(g))
    return tuple(out)
