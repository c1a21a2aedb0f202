"""Forward-mode automatic differentiation: Jacobian-vector products (JVPs).

Reverse mode (``engine.py``) starts from a cotangent ``v`` at the output and
walks the graph backwards to get ``v^T J``: one pass per *output* direction.
Forward mode starts from a tangent ``u`` at the inputs and carries it forward,
next to the values, to get ``J u``: one pass per *input* direction.

The idea is the dual number. Every value ``x`` travels with a tangent ``dx``,
the rate at which ``x`` changes as the inputs move along ``u``. For an op
``y = f(a, b)`` the chain rule gives ``dy = (df/da) da + (df/db) db``: each op
needs a JVP rule that maps its inputs' tangents to its output's tangent. Each
op carries its own, beside its forward and its VJP in ``ops.py``:

    Op.jvp(dots, args, out, **attrs) -> tangent of out

where ``dots`` holds the inputs' tangents (``None`` for an input whose tangent
is zero, e.g. a constant), ``args`` the inputs' values, ``out`` the op's output
value and ``attrs`` the op's keyword arguments (an axis, a shape, a target).

How it runs. :func:`jvp` listens to the hook that ``Function.apply`` calls
after every op (the one ``trace`` uses). As soon as an op has computed its
value, the listener computes that value's tangent. Values and tangents are
therefore produced in one pass, in program order, and nothing is recorded:
forward mode needs no tape. Tangents are held per tensor and dropped when the
tensor is garbage-collected, so memory follows the values that are alive.

What forward mode cannot follow: arithmetic done on ``.data`` outside minigrad
ops (it is invisible, as it is to the backward pass), and in-place changes
(``add_``, ``t[...] = v``) to a tensor whose tangent is known; the latter raise
an error instead of giving a wrong tangent. The tangents are plain arrays, so a
``jvp`` inside another ``jvp`` does not give second derivatives.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import ops
from .function import Function
from .hooks import op_hook
from .tensor import Tensor

__all__ = ["JVP_RULES", "defjvp", "jvp", "jacfwd"]


class _Rules(Mapping):
    """Every op's JVP rule, read off the ops themselves: ``{Op: Op.jvp}``.

    A view, not a table: it lists the ops of ``minigrad.ops`` and any op given a
    rule with :func:`defjvp`, each with the ``jvp`` it carries.
    """

    def _ops(self) -> list:
        found, todo = [], list(Function.__subclasses__())
        while todo:
            c = todo.pop()
            todo.extend(c.__subclasses__())
            if "jvp" in vars(c) and (c.__module__ == ops.__name__ or c in _registered):
                found.append(c)
        return found

    def __getitem__(self, op):
        if op in self._ops():
            return op.jvp
        raise KeyError(op)

    def __iter__(self):
        return iter(self._ops())

    def __len__(self) -> int:
        return len(self._ops())


_registered: set = set()
JVP_RULES: Mapping = _Rules()


def defjvp(op: type[Function]):
    """Give ``op`` the forward-mode rule ``rule(dots, args, out, **attrs)``: the same as
    defining ``jvp`` as a static method of the op."""
    def register(rule):
        op.jvp = staticmethod(rule)
        _registered.add(op)
        return rule
    return register


class _TangentListener:
    """Computes each op's output tangent as the op runs (installed on the apply hook)."""

    def __init__(self):
        self._tangents: dict[int, tuple[weakref.ref, np.ndarray, int]] = {}
        # The same tangent by data buffer: a backward node hands a VJP (create_graph) a
        # fresh tensor around a value it saved, and that value's tangent must follow it.
        self._by_data: dict[int, tuple[weakref.ref, np.ndarray, int]] = {}

    def set(self, t: Tensor, d: np.ndarray) -> None:
        key = id(t)
        ref = weakref.ref(t, lambda _, k=key, table=self._tangents: table.pop(k, None))
        self._tangents[key] = (ref, d, t._vc[0])
        dkey = id(t.data)
        dref = weakref.ref(t.data, lambda _, k=dkey, table=self._by_data: table.pop(k, None))
        self._by_data[dkey] = (dref, d, t._vc[0])

    def get(self, t: Tensor) -> np.ndarray | None:
        entry = self._tangents.get(id(t))
        if entry is None or entry[0]() is not t:
            entry = self._by_data.get(id(t.data))
            if entry is None or entry[0]() is not t.data:
                return None
        _, d, version = entry
        if t._vc[0] != version:
            raise RuntimeError(
                f"jvp: a tensor of shape {t.shape} was changed in place (version {version} -> "
                f"{t._vc[0]}) after its tangent was computed; forward mode follows only "
                f"minigrad ops, so use the out-of-place op inside fn")
        return d

    def __call__(self, event: str, fn, tensors, out, attrs) -> None:
        if event != "forward":
            return
        dots = tuple(self.get(t) for t in tensors)
        if all(d is None for d in dots):
            return  # a constant as far as the inputs are concerned: zero tangent
        rule = getattr(fn, "jvp", None)
        if rule is None:
            raise NotImplementedError(
                f"jvp: op '{fn.name}' ({fn.__name__}) has no forward-mode rule; give it one: "
                f"a static method jvp(dots, args, out, **attrs) beside its forward and backward")
        d = np.asarray(rule(dots, tuple(t.data for t in tensors), out.data, **attrs), dtype=out.dtype)
        if d.shape != out.shape:
            raise RuntimeError(f"jvp: the rule of '{fn.name}' returned a tangent of shape {d.shape} "
                               f"for an output of shape {out.shape}")
        self.set(out, d)
        saved_rule = getattr(fn, "jvp_saved", None)
        node = out.grad_fn
        if saved_rule is not None and node is not None and node.saved:
            arrays = tuple(t.data for t in tensors)
            for v, dv in zip(node.saved, saved_rule(dots, arrays, node.saved, **attrs)):
                if dv is not None:
                    key = id(v)
                    ref = weakref.ref(v, lambda _, k=key, table=self._by_data: table.pop(k, None))
                    self._by_data[key] = (ref, np.asarray(dv, dtype=v.dtype), 0)


def _as_primal(x: Any, i: int) -> Tensor:
    if isinstance(x, Tensor):
        return Tensor._make(x.data.copy())  # a buffer of its own: tangents are keyed to it alone
    try:
        return Tensor(x)
    except TypeError as e:
        raise TypeError(f"jvp: input {i}: {e}") from None


def _as_tangent(u: Any, x: Tensor, i: int) -> np.ndarray:
    arr = np.asarray(u.data if isinstance(u, Tensor) else u)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"jvp: tangent {i} must be numeric, got an array of dtype {arr.dtype}")
    if arr.shape != x.shape:
        raise ValueError(
            f"jvp: tangent {i} has shape {arr.shape} but input {i} has shape {x.shape}; "
            f"a tangent is a direction in the input's space, so the shapes must be equal")
    return np.array(arr, dtype=x.dtype)  # a copy, in the input's dtype


def _is_single(x: Any) -> bool:
    return not isinstance(x, (tuple, list))


def jvp(fn: Callable[..., Any], inputs: Any, tangents: Any) -> tuple:
    """Forward mode: the value of ``fn(*inputs)`` and its derivative along ``tangents``.

    For ``y = fn(x_1, ..., x_k)`` and tangents ``u_1, ..., u_k`` (one per input,
    same shapes), returns ``(y, dy)`` with ``dy = sum_i J_i u_i``, where ``J_i``
    is the Jacobian of ``y`` with respect to ``x_i``. One call costs a small
    constant times one evaluation of ``fn``, whatever the sizes.

    Args:
        fn: a function written with minigrad ops, returning a Tensor or a
            tuple/list of Tensors.
        inputs: a Tensor (or array, or number), or a tuple/list of them.
        tangents: the same structure as ``inputs``; each tangent has its input's shape.

    Returns:
        ``(outputs, output_tangents)`` in the structure ``fn`` returned; the
        tangents are Tensors that do not require grad.

    Example: the directional derivative of ``f`` at ``x`` along ``u`` is
    ``jvp(f, x, u)[1]``; with ``u`` a one-hot vector it is one column of ``J``.
    """
    single = _is_single(inputs)
    xs = (inputs,) if single else tuple(inputs)
    if single != _is_single(tangents):
        raise TypeError(
            f"jvp: inputs and tangents must have the same structure: got "
            f"{'one input' if single else f'a sequence of {len(xs)} inputs'} and "
            f"{'one tangent' if _is_single(tangents) else 'a sequence of tangents'}")
    us = (tangents,) if single else tuple(tangents)
    if len(us) != len(xs):
        raise ValueError(f"jvp: got {len(xs)} inputs but {len(us)} tangents; give one tangent per input")
    primals = [_as_primal(x, i) for i, x in enumerate(xs)]
    dots = [_as_tangent(u, x, i) for i, (u, x) in enumerate(zip(us, primals))]

    listener = _TangentListener()
    for x, d in zip(primals, dots):
        listener.set(x, d)
    with op_hook(listener):
        result = fn(*primals)

    outs = (result,) if isinstance(result, Tensor) else result
    if not isinstance(outs, (tuple, list)) or not all(isinstance(o, Tensor) for o in outs):
        raise TypeError(f"jvp: fn must return a Tensor or a tuple of Tensors, got "
                        f"{type(result).__name__}")
    out_dots = []
    for o in outs:
        d = listener.get(o)
        out_dots.append(Tensor(np.zeros_like(o.data) if d is None else d, dtype=o.dtype))
    if isinstance(result, Tensor):
        return result, out_dots[0]
    return result, type(result)(out_dots)


def jacfwd(fn: Callable[[Tensor], Tensor], x: Any) -> np.ndarray:
    """The Jacobian of ``fn`` at ``x``, one column per JVP: ``J[:, j] = J e_j``.

    Forward mode needs ``x.size`` passes, whatever the size of the output; the
    result has shape ``(out.size, x.size)`` (inputs and outputs flattened).
    Reverse mode builds the same matrix one row per VJP, in ``out.size`` passes.
    """
    x0 = _as_primal(x, 0)
    cols = []
    for j in range(x0.size):
        e = np.zeros(x0.size, dtype=x0.dtype)
        e[j] = 1.0
        _, d = jvp(fn, x0, e.reshape(x0.shape))
        cols.append(d.data.reshape(-1))
    if not cols:
        raise ValueError("jacfwd: x has no elements")
    return np.stack(cols, axis=1)
