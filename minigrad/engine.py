"""The backward pass: reverse topological order over backward nodes, accumulation, release.

The graph the engine walks is made of backward nodes (each tensor's ``grad_fn``),
as in PyTorch. A node keeps what its op saved and, in ``node.parents``, one edge
per input: the input's node, or ``None``. A leaf that requires grad is reached
through its :class:`~minigrad.function.AccumulateGrad` node. The engine knows no
op by name: for each node it calls ``node.fn.backward(node, g)`` (the op's VJP)
and sends what comes back along the edges. It works in three steps:

1. ``_order``: order the nodes without recursion, so a chain of any depth works,
   and check every node on the way (released? changed in place?), so that an
   error comes before anything has changed;
2. ``_walk``: run the nodes from the output back to the leaves. A node runs only
   after all its consumers, so its gradient is complete. Each gradient is
   dropped as soon as it has been used, and each node's saved values are
   released right after its VJP has run, unless ``retain_graph=True``;
3. ``_store``: add the leaves' gradients into ``.grad`` (all of them, or, on an
   error, none), or hand them back, for ``grad()``.

Hooks and anomaly mode cost one check per node when they are off.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .function import (
    AccumulateGrad,
    AnomalyError,
    Part,
    ShapeError,
    _describe_nonfinite,
    _GradMode,
    _leaf_hooks,
    _state,
    gradient_edge,
)
from .tensor import Tensor, as_tensor

__all__ = ["backward", "grad", "topological_order", "GradShapeError"]


class GradShapeError(ShapeError):
    """A gradient of the wrong shape: a RuntimeError, as PyTorch raises (and a ValueError)."""


def topological_order(root: Tensor | Any) -> list:
    """Every backward node ``root`` depends on, each after all of its inputs' nodes.

    ``root`` is a tensor (its ``grad_fn``, or a leaf's accumulator, is where the
    walk starts), a node, or a list of them. Iterative depth-first search: edges
    are followed in operand order, so the result is deterministic. The root's
    node comes last; leaves (``AccumulateGrad`` nodes) come before the ops that
    use them. A tensor that needs no gradient has no node, and the result is empty.
    """
    roots = root if isinstance(root, (list, tuple)) else [root]
    order: list = []
    seen: set = set()  # nodes hash by identity
    for r in roots:
        start = gradient_edge(r) if isinstance(r, Tensor) else r
        if start is None or start in seen:
            continue
        seen.add(start)
        stack = [start]
        while stack:
            for p in stack[-1].parents:  # (a node is looked at again after each input it visits)
                if p is not None and p not in seen:
                    seen.add(p)
                    if p.parents:
                        stack.append(p)
                        break
                    order.append(p)  # nothing to visit first
            else:
                order.append(stack.pop())
    return order


def _order(roots: list) -> list:
    """The nodes in topological order, each checked before anything changes."""
    order = topological_order(roots)
    for node in order:
        if node.saved is None:
            node.check_saved()  # explains, unless the node had nothing to free
        for _, _, counter, version in node._stamps:  # a saved input or output changed in place?
            if counter[0] != version:
                node.check_saved()
    return order


# ------------------------------------------------------------------ seeds


def _seed(root: Any, grad: Any, create_graph: bool):
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
                f"one has shape {root.shape}. Pass gradient=, an array of shape {root.shape} "
                f"holding dL/d(this tensor).")
        data = root.data  # (np.array for a 0-d root: np.ones is a Python function, and slower)
        g0 = np.array(1, data.dtype) if data.ndim == 0 else np.ones(data.shape, data.dtype)
    else:
        arr = np.asarray(grad.data if isinstance(grad, Tensor) else grad)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"backward: grad must hold real numbers, got an array of dtype "
                            f"{arr.dtype} (shape {arr.shape}) for a tensor of shape {root.shape}")
        if arr.shape != root.shape:
            raise GradShapeError(
                f"backward: grad has shape {arr.shape} but the tensor has shape {root.shape}")
        g0 = np.array(arr, dtype=root.dtype)  # a copy: the caller keeps theirs
    if create_graph:
        return grad if isinstance(grad, Tensor) else as_tensor(g0)
    return g0


def _roots(roots: Any, grads: Any, create_graph: bool) -> dict:
    """{root's node: its seed gradient} for one root or a list of them."""
    if isinstance(roots, Tensor):
        roots, grads = [roots], [grads]
    else:
        roots = list(roots)
        grads = [None] * len(roots) if grads is None else list(grads)
        if len(grads) != len(roots):
            raise RuntimeError(f"backward: got {len(roots)} tensors but {len(grads)} gradients")
    seeds: dict = {}
    for r, g in zip(roots, grads):
        g0 = _seed(r, g, create_graph)
        node = r.grad_fn or gradient_edge(r)
        seeds[node] = g0 if node not in seeds else seeds[node] + g0
    return seeds


# ------------------------------------------------------------------ the walk


def _walk(order: list, seeds: dict, wanted: dict | None, retain_graph: bool,
          create_graph: bool) -> list:
    """Run every node's VJP in reverse order; return [(tensor, gradient)] for the captured nodes.

    ``wanted`` maps nodes to the tensors whose gradients are asked for (``grad()``,
    ``backward(inputs=...)``); ``None`` captures every leaf and every tensor that
    called ``retain_grad()``.
    """
    pending = dict(seeds)
    owned: set = set()  # nodes whose pending gradient is a sum this walk made (safe to add into)
    found: list = []
    observed = _state.observed
    for node in reversed(order):
        g = pending.pop(node, None)
        if g is None:
            continue
        if type(node) is AccumulateGrad:  # a leaf: its gradient goes to .grad at the end
            _reach_leaf(node, g, wanted, found, observed)
            continue
        if node._hooks:
            g = _run_hooks(node._hooks, g)
        if wanted is not None or node._retain:
            _capture(node, g, wanted, found)
        if type(g) is not _Parts:
            in_grads = node.fn.backward(_DiffCtx(node) if create_graph else node, g)
        else:  # an op with several outputs: one gradient for each
            in_grads = node.fn.backward(node, *_filled(node, g, create_graph))
        _send(node, in_grads, pending, owned)
        if observed:
            _observe(node, "backward", in_grads, g)
        if not retain_graph:
            node.release()
    return found


def _capture(node, g: Any, wanted: dict | None, found: list) -> None:
    """Keep the gradient of a tensor that asked for it (``retain_grad()``, or ``wanted``)."""
    if wanted is None:
        t = node._out()
        if t is not None:
            found.append((t, g))
    elif node in wanted:
        found.append((wanted[node], g))


def _reach_leaf(node, g: Any, wanted: dict | None, found: list, observed: bool) -> None:
    """A leaf's gradient is complete: keep it for ``.grad`` (or for ``grad()``)."""
    if _leaf_hooks and id(node.variable) in _leaf_hooks:
        g = _run_hooks(_leaf_hooks[id(node.variable)], g)
    if wanted is None:
        found.append((node.variable, g))
    elif node in wanted:
        found.append((wanted[node], g))
    if observed:
        _observe(node, "accumulate", (), g)


def _send(node, in_grads: Any, pending: dict, owned: set) -> None:
    """Add each input's gradient to what its node has received so far."""
    edges = node.parents
    if type(in_grads) is not tuple or len(in_grads) != len(edges):
        in_grads = _as_grads(node, in_grads)
    for p, pg in zip(edges, in_grads):
        if p is None or pg is None:
            continue
        if type(pg) is not _ndarray or pg.dtype.kind == "c":
            if type(pg) is Part:  # for one output of an op with several
                _receive(p, pg, pending)
                continue
            pg = _check_grad_type(node, edges.index(p), pg, p)
        if pg.shape != p.out_shape:  # the input's shape is its node's output shape
            raise GradShapeError(
                f"'{node.name}' backward returned a gradient of shape {pg.shape} for "
                f"its input {edges.index(p)}, which has shape {p.out_shape}")
        prev = pending.get(p)
        if prev is None:
            pending[p] = pg
        else:  # the node's second consumer (or later): add up
            _accumulate(p, prev, pg, pending, owned)


def _accumulate(p, prev: Any, pg: Any, pending: dict, owned: set) -> None:
    """Add ``pg`` to the gradient ``p`` has received so far, ``prev``."""
    if p in owned:
        prev += pg  # our own array: add in place, no new allocation
    else:
        # A VJP's result may be shared (add hands one g to both inputs)
        # or read-only (a broadcast view): never write into it.
        total = pending[p] = prev + pg
        if type(total) is _ndarray:
            owned.add(p)


_ndarray = np.ndarray


class _Parts(list):
    """The gradients of the outputs of an op with several outputs, as they arrive (None: not yet)."""


def _receive(node, part: Part, pending: dict) -> None:
    """Add one output's gradient to what the op's node has received so far."""
    grads = pending.get(node)
    if grads is None:
        grads = pending[node] = _Parts([None] * len(node.out_shape))  # one shape per output
    k = part.index
    grads[k] = part.grad if grads[k] is None else grads[k] + part.grad


def _filled(node, grads: _Parts, create_graph: bool) -> list:
    """One gradient per output: zeros for an output that received none (PyTorch's default)."""
    if create_graph:
        raise NotImplementedError(
            f"'{node.name}' has several outputs: its backward cannot be recorded (create_graph=True); "
            f"gradients of gradients need ops with one output")
    return [np.zeros(shape, dtype) if g is None else g
            for g, shape, dtype in zip(grads, node.out_shape, node.out_dtypes)]


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
    elif n == 1 and (in_grads is None or isinstance(in_grads, (np.ndarray, Tensor))):
        return (in_grads,)
    else:
        got = f"a {type(in_grads).__name__} ({in_grads!r:.40})"
    raise TypeError(
        f"'{node.name}' backward returned {got}, but the op has {n} input(s): return a "
        f"tuple with one entry per input, each the gradient for that input (a NumPy array "
        f"of the input's shape) or None")


def _check_grad_type(node, i: int, pg: Any, edge) -> Any:
    """A gradient that is not a plain array: a Tensor (create_graph), a NumPy scalar
    (a 0-d result), or a clear error."""
    if not isinstance(pg, (Tensor, np.ndarray, np.generic)):
        raise TypeError(
            f"'{node.name}' backward returned a {type(pg).__name__} ({pg!r:.40}) as the gradient "
            f"of its input {i}; expected a NumPy array of shape {edge.out_shape} (or None)")
    if pg.dtype.kind == "c":
        raise TypeError(
            f"'{node.name}' backward returned a complex gradient (dtype {pg.dtype}) for its "
            f"input {i}, which is real (shape {edge.out_shape}); return the real gradient")
    return np.asarray(pg) if isinstance(pg, np.generic) else pg


def _run_hooks(hooks: tuple, g: Any) -> Any:
    """A tensor's ``register_hook`` callables, in order: each may replace the gradient."""
    for hook in hooks:
        new = hook(g if isinstance(g, Tensor) else Tensor._make(g))
        if new is not None:
            new = new.data if isinstance(new, Tensor) and not isinstance(g, Tensor) else new
            if np.shape(new) != np.shape(g):
                raise GradShapeError(f"a hook on a tensor of shape {np.shape(g)} returned a "
                                     f"gradient of shape {np.shape(new)}")
            g = new
    return g


def _observe(node, event: str, in_grads: Any, g: Any) -> None:
    """Anomaly checks and the observers' hooks for one step of the walk."""
    if _state.anomaly and event == "backward":
        for i, pg in enumerate(in_grads):
            if pg is not None:
                _check_finite_grad(node, i, pg)
    for hook in _state.hooks:
        hook(event, node.fn, in_grads, node, {"grad": g})


def _check_finite_grad(node, i: int, g: Any) -> None:
    data = g.data if isinstance(g, Tensor) else g
    if not np.all(np.isfinite(data)):
        raise AnomalyError(
            f"detect_anomaly: the backward pass of '{node.name}' returned "
            f"{_describe_nonfinite(np.asarray(data))} in the gradient of its input {i}.\n"
            f"The op was created at {node.created_at or '<created outside detect_anomaly>'}",
            op=node.name, phase="backward", frame=node.created_frame)


def _run(roots: Any, grads: Any, wanted: dict | None, retain_graph: bool,
         create_graph: bool) -> list:
    """Seed, order and check, walk; on an error, say truthfully why a retry cannot work.

    The cycle collector is paused meanwhile: the graph holds no reference cycles
    and the walk makes none, so the collector would only re-scan every live object
    now and then, which on a deep graph costs more than the walk itself.
    """
    seeds = _roots(roots, grads, create_graph)
    order = _order(list(seeds))
    collecting = gc.isenabled()
    gc.disable()
    grad_mode = _state.grad_enabled
    _state.grad_enabled = bool(create_graph)  # record the VJPs' own ops only for create_graph
    try:
        return _walk(order, seeds, wanted, retain_graph, create_graph)
    except BaseException as e:
        if not retain_graph:
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            for node in order:  # released ones refuse a retry, whatever they kept
                if node.released and node._freed_by is None:
                    node._freed_by = reason
                    node._kept_nothing = False
        raise
    finally:
        _state.grad_enabled = grad_mode
        if collecting:
            gc.enable()


# ------------------------------------------------------------------ results


def _store(found: list) -> None:
    """Add each gradient into its tensor's ``.grad``: all of them, after checking all."""
    _check_grads(found)
    handed_out: set = set()
    for t, g in found:
        old = t.grad
        if type(old) is Tensor:  # left by backward(create_graph=True): never written into
            old = old.data
        elif old is not None and old.flags.writeable:
            old += g  # in place, as PyTorch: a reference to .grad stays current
            continue
        g = _own(g, t.data.dtype, handed_out)
        t.grad = g if old is None else old + g


def _store_graph(found: list) -> None:
    """``backward(create_graph=True)``: each ``.grad`` becomes a Tensor with its graph.

    As in PyTorch, the sum with an existing ``.grad`` is recorded too (out of
    place), so ``.grad`` can be differentiated as a whole."""
    _check_grads(found)
    handed_out: set = set()
    with _GradMode(True):
        for t, g in found:
            if not isinstance(g, Tensor):  # a constant gradient (a VJP that used no input)
                g = Tensor._make(_own(g, t.data.dtype, handed_out))
            old = t.grad
            t.grad = g if old is None else (old if isinstance(old, Tensor) else Tensor._make(old)) + g


def _check_grads(found: list) -> None:
    """Raise, before any ``.grad`` changes, if an existing ``.grad`` cannot take its gradient."""
    for t, _ in found:
        old = t.grad
        if type(old) is Tensor:
            old = old.data
        if old is not None and (type(old) is not np.ndarray or old.shape != t.data.shape):
            raise RuntimeError(
                f"backward: the existing .grad of a tensor of shape {t.shape} has shape "
                f"{np.shape(old)}; it cannot take a gradient of shape {t.shape}. Set .grad to "
                f"None (zero_grad()) before backward.")


def _own(g: Any, dtype, handed_out: set) -> np.ndarray:
    """``g`` as an array in ``dtype`` that no other ``.grad`` or VJP shares.

    One array may be the gradient of two tensors (a + b hands g to both), or a
    view of another: copy it, so that an in-place update of one ``.grad`` can
    never change another.
    """
    if type(g) is not np.ndarray:
        g = np.asarray(g)
    if g.dtype != dtype:
        g = g.astype(dtype)
    elif id(g) in handed_out or g.base is not None or not g.flags.writeable:
        g = g.copy()
    handed_out.add(id(g))
    return g


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Any = None) -> None:
    """Add dL/dleaf into ``.grad`` of every leaf that requires grad (``torch.autograd.backward``).

    ``tensors`` is one root or a list of roots (their gradients add up), with
    ``grad_tensors`` one seed per root. ``inputs`` limits which tensors receive
    ``.grad``. Every ``.grad`` is checked before any changes, so an error leaves
    them all as they were.

    ``.grad`` is a NumPy array, except after ``create_graph=True``: the backward
    pass is then recorded and each ``.grad`` is a Tensor with its own graph, to
    be differentiated again (``x.grad.sum().backward()``). A later backward
    without ``create_graph`` adds its gradient out of place and leaves an array.
    As in PyTorch, such a ``.grad`` holds a graph that leads back to its own
    tensor: set it to None when it has been used.
    """
    if retain_graph is None:
        retain_graph = create_graph
    wanted = None
    if inputs is not None:
        wanted = _wanted("backward", (inputs,) if isinstance(inputs, Tensor) else tuple(inputs))
    found = _run(tensors, grad_tensors, wanted, retain_graph, create_graph)
    (_store_graph if create_graph else _store)(found)


def _wanted(where: str, inputs: tuple) -> dict:
    for i, t in enumerate(inputs):  # RuntimeError in both cases, as torch.autograd.grad raises
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{where}: input {i} must be a Tensor with requires_grad=True, got a "
                               f"{type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"{where}: input {i} (shape {t.shape}) does not require grad; only "
                               f"a Tensor with requires_grad=True can be differentiated against")
    return {gradient_edge(t): t for t in inputs}


def grad(output: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_output: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple:
    """d(output)/d(inputs) as a tuple, without touching any ``.grad``.

    Like ``torch.autograd.grad``. With ``create_graph=True`` the backward pass is
    itself recorded, so the returned Tensors can be differentiated again (for
    Hessian-vector products, for instance). ``output`` may be a list of roots,
    with ``grad_output`` one seed per root.
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wanted = _wanted("grad", inputs)
    if retain_graph is None:
        retain_graph = create_graph
    found = {gradient_edge(t): g for t, g in _run(output, grad_output, wanted, retain_graph,
                                                   create_graph)}
    out = []
    for i, t in enumerate(inputs):
        g = found.get(gradient_edge(t))
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"grad: input {i} (shape {t.shape}) was not used to compute the output; "
                    f"pass allow_unused=True to get None for it")
            out.append(None)
        elif isinstance(g, Tensor):
            out.append(g)
        else:
            out.append(Tensor._make(_own(g, t.dtype, set())))
    return tuple(out)


# ------------------------------------------------------------------ create_graph


class _DiffCtx:
    """A node whose saved values are Tensors, so that a VJP builds a graph (create_graph).

    A saved input becomes a tensor whose gradient flows along that input's edge;
    the saved output becomes a tensor of this very node.
    """

    def __init__(self, ctx):
        self._ctx = ctx
        inputs: list = [None] * len(ctx.parents)
        saved = []
        for r in ctx.saved_values:
            v, which = r.value, r.which
            if not isinstance(v, np.ndarray):
                saved.append(v)
            elif which is None:
                saved.append(as_tensor(v))
            elif which == -1:
                t = ctx._out()
                saved.append(t if t is not None and t.data is v else Tensor._make(v, True, ctx))
            else:
                if inputs[which] is None:
                    inputs[which] = _alias(v, ctx.parents[which])
                saved.append(inputs[which])
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
