"""The backward pass: reverse topological order, accumulation, release.

The engine knows no op by name. For each node it calls ``node.grad_fn.fn.backward``
(the op's VJP) and adds what comes back into the parents' gradients. It works in
four steps:

1. order the graph without recursion, so a chain of any depth works;
2. check the whole graph first (released? changed in place?) so that an error
   leaves every ``.grad`` exactly as it was;
3. walk the nodes from the output back to the leaves. A node is processed only
   after all its consumers, so its gradient is complete. Gradients of
   intermediate tensors are dropped as soon as they are used, and each node's
   saved values are released unless ``retain_graph=True``;
4. add the leaves' gradients into ``.grad`` (or hand them back, for ``grad()``).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

import numpy as np

from .function import AnomalyError, _describe_nonfinite, _state
from .tensor import Tensor, as_tensor

__all__ = ["backward", "grad", "topological_order"]


def topological_order(root: Tensor) -> list[Tensor]:
    """Every tensor ``root`` depends on, each after all of its parents.

    Iterative depth-first search: parents are visited in operand order, so the
    result is deterministic. ``root`` comes last.
    """
    order: list[Tensor] = []
    seen = {id(root)}
    stack = [(root, iter(root.parents))]
    while stack:
        node, parents = stack[-1]
        for p in parents:
            if id(p) not in seen:
                seen.add(id(p))
                if p.parents:
                    stack.append((p, iter(p.parents)))
                    break
                order.append(p)  # a leaf has nothing to visit first
        else:
            stack.pop()
            order.append(node)
    return order


class _DiffCtx:
    """A ctx whose saved values are Tensors, so a VJP builds a graph (create_graph)."""

    def __init__(self, node: Tensor):
        ctx = node.grad_fn
        self._ctx = ctx
        self.inputs = node.parents
        self.saved = tuple(self._as_tensor(v, node) for v in ctx.saved)

    @staticmethod
    def _as_tensor(v: Any, node: Tensor) -> Any:
        """A saved input or output becomes that very Tensor; anything else, a constant."""
        if not isinstance(v, np.ndarray):
            return v
        for t in node.parents + (node,):
            if v is t.data:
                return t
        return as_tensor(v, like=node)

    def __getattr__(self, key: str) -> Any:
        return getattr(self._ctx, key)


def _check_node(node: Tensor) -> None:
    """Raise if ``node``'s saved values were freed or changed in place since they were saved.

    ``_run`` calls it only when a cheap comparison of version stamps flags the node;
    a changed input that the op did not save (relu keeps only a mask) is fine.
    """
    ctx = node.grad_fn
    if ctx.saved is None:
        raise RuntimeError(
            f"backward: trying to go through the graph a second time: the values "
            f"'{ctx.name}' saved for backward were already freed by an earlier backward "
            f"pass. Pass retain_graph=True to the first backward() if you need to call it twice.")
    if not ctx.versions:
        return
    tensors = node.parents + (node,)
    for i, (t, v) in enumerate(zip(tensors, ctx.versions)):
        if t._vc[0] != v and any(s is t.data for s in ctx.saved):
            what = "its output" if t is node else f"its input {i}"
            raise RuntimeError(
                f"backward: a value that '{ctx.name}' saved for backward was modified in "
                f"place: {what} (shape {t.shape}) is at version {t._vc[0]}, but version {v} "
                f"was saved. Don't change it in place before backward, or operate on a copy.")


def _check_grad(ctx, i: int, g: Any) -> None:
    data = g.data if isinstance(g, Tensor) else g
    if not np.all(np.isfinite(data)):
        raise AnomalyError(
            f"detect_anomaly: the backward pass of '{ctx.name}' returned "
            f"{_describe_nonfinite(np.asarray(data))} in the gradient of its input {i}.\n"
            f"The op was created at {ctx.created_at or '<created outside detect_anomaly>'}",
            op=ctx.name, phase="backward", frame=ctx.created_frame)


def _run(root: Tensor, grad: Any, capture: Sequence[Tensor] | None, retain_graph: bool,
         create_graph: bool) -> dict[int, tuple[Tensor, Any]]:
    """Backpropagate from ``root``; return {id(tensor): (tensor, gradient)} for the captured tensors.

    ``capture=None`` captures every leaf that requires grad and every tensor that
    called ``retain_grad()``.
    """
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
        g0 = np.empty(root.data.shape, root.data.dtype)
        g0.fill(1)
    else:
        gdata = grad.data if isinstance(grad, Tensor) else grad
        g0 = np.array(gdata, dtype=root.dtype)  # a copy: the caller keeps theirs
        if g0.shape != root.shape:
            raise ValueError(
                f"backward: grad has shape {g0.shape} but the tensor has shape {root.shape}")
    if create_graph:
        g0 = grad if isinstance(grad, Tensor) else as_tensor(g0)

    order = topological_order(root)
    for node in order:  # cheap comparisons here; _check_node explains and raises
        ctx = node.grad_fn
        if ctx is None:
            continue
        if ctx.saved is None:
            _check_node(node)
        versions = ctx.versions  # the inputs' stamps, then the output's
        if versions:
            for t, v in zip(node.parents, versions):
                if t._vc[0] != v:
                    _check_node(node)
            if node._vc[0] != versions[-1]:
                _check_node(node)

    if capture is None:
        wanted = {id(t) for t in order
                  if t.requires_grad and (t.grad_fn is None or t._retains_grad)}
    else:
        wanted = {id(t) for t in capture}
    anomaly = _state.anomaly

    grads: dict[int, Any] = {id(root): g0}
    owned: set[int] = set()  # keys whose gradient is a sum this loop made (safe to add into)
    found: dict[int, tuple[Tensor, Any]] = {}
    grad_mode = _state.grad_enabled
    _state.grad_enabled = create_graph  # record the VJPs' own ops only for create_graph
    try:
        for node in reversed(order):
            ctx = node.grad_fn
            if ctx is None:
                continue  # a leaf: its gradient stays in `grads` until the end
            key = id(node)
            g = grads.pop(key, None)
            if g is None:
                continue
            if key in wanted:
                found[key] = (node, g)
            in_grads = ctx.fn.backward(_DiffCtx(node) if create_graph else ctx, g)
            if not retain_graph:
                ctx.release()
            for i, (p, pg) in enumerate(zip(node.parents, in_grads)):
                if pg is None or not p.requires_grad:
                    continue
                if pg.shape != p.data.shape:
                    raise RuntimeError(
                        f"'{ctx.name}' backward returned a gradient of shape {pg.shape} for its "
                        f"input {i} of shape {p.shape}")
                if anomaly:
                    _check_grad(ctx, i, pg)
                key = id(p)
                prev = grads.get(key)
                if prev is None:
                    grads[key] = pg
                elif key in owned:
                    prev += pg  # our own array: add in place, no new allocation
                else:
                    # A VJP's result may be shared (add hands one g to both inputs)
                    # or read-only (a broadcast view): never write into it.
                    total = prev + pg
                    grads[key] = total
                    if type(total) is np.ndarray:
                        owned.add(key)
            if _state.hooks:
                for hook in _state.hooks:
                    hook("backward", ctx.fn, node.parents, node, {})
    finally:
        _state.grad_enabled = grad_mode
    for node in order:
        if node.grad_fn is None and id(node) in wanted and id(node) in grads:
            found[id(node)] = (node, grads[id(node)])
    return found


def _run_without_gc(*args: Any) -> dict[int, tuple[Tensor, Any]]:
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
    """``root.backward()``: add dL/dleaf into ``.grad`` of every leaf that requires grad."""
    found = _run_without_gc(root, grad, None, retain_graph, False)
    handed_out: set[int] = set()
    for t, g in found.values():
        # One array may be the gradient of two tensors (a + b hands g to both),
        # or a view of another; copy so that an in-place update of one .grad
        # can never change another.
        if id(g) in handed_out or g.base is not None or not g.flags.writeable:
            g = g.copy()
        handed_out.add(id(g))
        t.grad = g if t.grad is None else t.grad + g


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
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise ValueError(f"grad: input {i} must be a Tensor with requires_grad=True")
    if retain_graph is None:
        retain_graph = create_graph
    found = _run_without_gc(output, grad_output, inputs, retain_graph, create_graph)
    out = []
    for i, t in enumerate(inputs):
        g = found.get(id(t), (None, None))[1]
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"grad: input {i} (shape {t.shape}) was not used to compute the output; "
                    f"pass allow_unused=True to get None for it")
            out.append(None)
        elif isinstance(g, Tensor):
            out.append(g)
        else:
            out.append(Tensor._make(g.copy() if g.base is not None or not g.flags.writeable else g,
                                    False, (), "", None))
    return tuple(out)
