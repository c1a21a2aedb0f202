"""Forward-mode automatic differentiation: Jacobian-vector products (JVPs).

Reverse mode (``engine.py``) starts from a cotangent ``v`` at the output and
walks the graph backwards to get ``v^T J``: one pass per *output* direction.
Forward mode starts from a tangent ``u`` at the inputs and carries it forward,
next to the values, to get ``J u``: one pass per *input* direction.

The idea is the dual number. Every value ``x`` travels with a tangent ``dx``,
the rate at which ``x`` changes as the inputs move along ``u``. For an op
``y = f(a, b)`` the chain rule gives ``dy = (df/da) da + (df/db) db``: each op
needs a JVP rule that maps its inputs' tangents to its output's tangent. The
rules sit below, one per op of ``ops.py``, in the same order. Each receives

    rule(dots, args, out, **attrs) -> tangent of out

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
from collections.abc import Callable
from typing import Any

import numpy as np

from . import ops
from .function import Function
from .hooks import op_hook
from .tensor import Tensor

__all__ = ["JVP_RULES", "SAVED_JVP_RULES", "defjvp", "defjvp_saved", "jvp", "jacfwd"]

JVP_RULES: dict[type[Function], Callable[..., np.ndarray]] = {}


def defjvp(op: type[Function]):
    """Register ``rule`` as the forward-mode (JVP) rule of ``op``."""
    def register(rule):
        JVP_RULES[op] = rule
        return rule
    return register


# Forward over reverse (jvp of a function that calls grad(..., create_graph=True)) needs the
# tangent of every value a VJP reads. Inputs and outputs have theirs; an op that saves an
# array of its own making (the fused loss's log-probabilities) registers a rule for it:
# rule(dots, args, saved, **attrs) -> one tangent (or None) per saved value.
SAVED_JVP_RULES: dict[type[Function], Callable[..., tuple]] = {}


def defjvp_saved(op: type[Function]):
    """Register ``rule`` as the tangents of the values ``op`` saves that it made itself."""
    def register(rule):
        SAVED_JVP_RULES[op] = rule
        return rule
    return register


def _combine(out: np.ndarray, *terms: np.ndarray | None) -> np.ndarray:
    """Sum the non-zero terms, broadcast to the output's shape (an input broadcast
    forward carries its tangent along the same copies)."""
    total = np.zeros(out.shape, dtype=out.dtype)
    for t in terms:
        if t is not None:
            total = total + t
    return total


# ------------------------------------------------------------ arithmetic


@defjvp(ops.Add)
def _add(dots, args, out):
    """y = a + b.   dy = da + db."""
    da, db = dots
    return _combine(out, da, db)


@defjvp(ops.Sub)
def _sub(dots, args, out):
    """y = a - b.   dy = da - db."""
    da, db = dots
    return _combine(out, da, None if db is None else -db)


@defjvp(ops.Mul)
def _mul(dots, args, out):
    """y = a * b.   dy = da * b + a * db   (the product rule)."""
    (da, db), (a, b) = dots, args
    return _combine(out, None if da is None else da * b, None if db is None else a * db)


@defjvp(ops.Div)
def _div(dots, args, out):
    """y = a / b.   dy = da / b - a * db / b**2."""
    (da, db), (a, b) = dots, args
    return _combine(out, None if da is None else da / b,
                    None if db is None else -a * db / (b * b))


@defjvp(ops.Neg)
def _neg(dots, args, out):
    """y = -a.   dy = -da."""
    return -dots[0]


@defjvp(ops.Pow)
def _pow(dots, args, out, p):
    """y = a ** p.   dy = p * a ** (p - 1) * da   (0 for p = 0, also at a = 0)."""
    if p == 0:
        return np.zeros_like(out)
    return p * args[0] ** (p - 1) * dots[0]


@defjvp(ops.MatMul)
def _matmul(dots, args, out):
    """C = A @ B.   dC = dA @ B + A @ dB   (the product rule, in matrix form)."""
    (da, db), (a, b) = dots, args
    return _combine(out, None if da is None else da @ b, None if db is None else a @ db)


# ------------------------------------------------------------ reductions
# A linear op's JVP is the op itself, applied to the tangent.


@defjvp(ops.Sum)
def _sum(dots, args, out, axis=None, keepdims=False):
    """y = a.sum(axis).   dy = da.sum(axis)."""
    return np.sum(dots[0], axis=axis, keepdims=keepdims)


@defjvp(ops.Mean)
def _mean(dots, args, out, axis=None, keepdims=False):
    """y = a.mean(axis).   dy = da.mean(axis)."""
    return np.mean(dots[0], axis=axis, keepdims=keepdims)


# ------------------------------------------------------------------ views


@defjvp(ops.Reshape)
def _reshape(dots, args, out, shape):
    """y = a.reshape(shape).   dy = da.reshape(shape)."""
    return dots[0].reshape(out.shape)


@defjvp(ops.Transpose)
def _transpose(dots, args, out, axes=None):
    """y = a.transpose(axes).   dy = da.transpose(axes)."""
    return dots[0].transpose(axes)


@defjvp(ops.BroadcastTo)
def _broadcast_to(dots, args, out, shape):
    """y = broadcast_to(a, shape).   dy = broadcast_to(da, shape)."""
    return np.broadcast_to(dots[0], out.shape)


@defjvp(ops.GetItem)
def _getitem(dots, args, out, idx):
    """y = a[idx].   dy = da[idx]."""
    return dots[0][ops._plain_index(idx)]


@defjvp(ops.SetItem)
def _setitem(dots, args, out, idx):
    """y = a with y[idx] = v.   dy = da with dy[idx] = dv."""
    da, dv = dots
    d = np.zeros(out.shape, dtype=out.dtype) if da is None else np.array(da, dtype=out.dtype)
    d[idx] = 0 if dv is None else dv
    return d


@defjvp(ops.Clone)
def _clone(dots, args, out):
    """y = a copied.   dy = da."""
    return dots[0]


@defjvp(ops.ScatterAdd)
def _scatter_add(dots, args, out, idx, shape):
    """y = zeros(shape) with a added at idx.   dy = zeros(shape) with da added at idx."""
    d = np.zeros(out.shape, dtype=out.dtype)
    np.add.at(d, ops._plain_index(idx), dots[0])
    return d


# ----------------------------------------------------------- elementwise


@defjvp(ops.Exp)
def _exp(dots, args, out):
    """y = exp(a).   dy = y * da."""
    return out * dots[0]


@defjvp(ops.Log)
def _log(dots, args, out):
    """y = log(a).   dy = da / a."""
    return dots[0] / args[0]


@defjvp(ops.ReLU)
def _relu(dots, args, out):
    """y = max(a, 0).   dy = da * (a > 0)   (slope 0 at a == 0, as in the VJP)."""
    return dots[0] * (args[0] > 0)


@defjvp(ops.Sigmoid)
def _sigmoid(dots, args, out):
    """y = sigmoid(a).   dy = y * (1 - y) * da."""
    return out * (1 - out) * dots[0]


@defjvp(ops.Tanh)
def _tanh(dots, args, out):
    """y = tanh(a).   dy = (1 - y**2) * da."""
    return (1 - out * out) * dots[0]


# ---------------------------------------------------- softmax and losses


@defjvp(ops.Softmax)
def _softmax(dots, args, out, axis=-1):
    """s = softmax(a).   ds = (diag(s) - s s^T) da = s * (da - sum(s * da))."""
    s, da = out, dots[0]
    return s * (da - (s * da).sum(axis=axis, keepdims=True))


@defjvp(ops.LogSoftmax)
def _log_softmax(dots, args, out, axis=-1):
    """y = log_softmax(a).   dy = da - sum(softmax(a) * da)."""
    da = dots[0]
    return da - (np.exp(out) * da).sum(axis=axis, keepdims=True)


def _targets(target) -> np.ndarray:
    return target.data if isinstance(target, Tensor) else np.asarray(target)


@defjvp(ops.CrossEntropy)
def _cross_entropy(dots, args, out, target):
    """L = mean_i -log p[i, y_i].   dL = -mean_i dp[i, y_i] / p[i, y_i]   (p clipped as in forward)."""
    (dp,), (p,) = dots, args
    rows = np.arange(p.shape[0])
    t = _targets(target)
    py = np.clip(p[rows, t], 1e-12, 1.0)
    return np.asarray(-(dp[rows, t] / py).sum() / p.shape[0], dtype=out.dtype)


@defjvp(ops.CrossEntropyWithLogits)
def _cross_entropy_with_logits(dots, args, out, target):
    """L = mean_i logsumexp(z_i) - z[i, y_i].   dL = sum((softmax(z) - onehot(y)) * dz) / N."""
    (dz,), (z,) = dots, args
    n = z.shape[0]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    d = e / e.sum(axis=1, keepdims=True)
    d[np.arange(n), _targets(target)] -= 1.0
    return np.asarray((d * dz).sum() / n, dtype=out.dtype)


@defjvp_saved(ops.CrossEntropyWithLogits)
def _cross_entropy_with_logits_saved(dots, args, saved, target):
    """Saved: log p = z - logsumexp(z).   d(log p) = dz - sum(p * dz) per row."""
    (dz,), (logp,) = dots, saved[:1]
    return (dz - (np.exp(logp) * dz).sum(axis=1, keepdims=True),) + (None,) * (len(saved) - 1)


@defjvp(ops.LayerNorm)
def _layer_norm(dots, args, out, eps=1e-5):
    """y = (x - mean x) / sigma.   dy = (1/sigma) (dxc - y mean(y dxc)),  dxc = dx - mean(dx)."""
    (dx,), (x,) = dots, args
    xc = x - x.mean(axis=-1, keepdims=True)
    inv_sigma = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    dxc = dx - dx.mean(axis=-1, keepdims=True)
    return inv_sigma * (dxc - out * (out * dxc).mean(axis=-1, keepdims=True))


@defjvp(ops.BatchNorm)
def _batch_norm(dots, args, out, eps=1e-5):
    """y = (x - mean x) / sigma over axis 0.   dy = (1/sigma) (dxc - y mean(y dxc)),
    dxc = dx - mean(dx), every mean over the batch axis 0 (LayerNorm's rule on the other axis)."""
    (dx,), (x,) = dots, args
    xc = x - x.mean(axis=0)
    inv_sigma = 1.0 / np.sqrt((xc * xc).mean(axis=0) + eps)
    dxc = dx - dx.mean(axis=0)
    return inv_sigma * (dxc - out * (out * dxc).mean(axis=0))


# ---------------------------------------------------------------- more ops


def _zero_if_none(d, like: np.ndarray) -> np.ndarray:
    return np.zeros(like.shape, dtype=like.dtype) if d is None else d


@defjvp(ops.Abs)
def _abs(dots, args, out):
    """y = |a|.   dy = sign(a) * da."""
    return np.sign(args[0]) * dots[0]


@defjvp(ops.Sqrt)
def _sqrt(dots, args, out):
    """y = sqrt(a).   dy = da / (2 y)."""
    return dots[0] / (2 * out)


def _extremum_jvp(dots, args, out, axis, keepdims):
    """dy = sum(w * da) over the reduced axes, w = 1[a == y] / (number of ties), as in the VJP."""
    a, da = args[0], dots[0]
    y = out.reshape(ops._keepdims_shape(a.shape, axis))
    mask = a == y
    w = mask / mask.sum(axis=axis, keepdims=True)
    return np.sum(w * da, axis=axis, keepdims=keepdims)


@defjvp(ops.Max)
def _max(dots, args, out, axis=None, keepdims=False):
    """y = max(a, axis).   dy = sum(w * da, axis), w = 1[a == y] / (number of ties)."""
    return _extremum_jvp(dots, args, out, axis, keepdims)


@defjvp(ops.Min)
def _min(dots, args, out, axis=None, keepdims=False):
    """y = min(a, axis).   dy = sum(w * da, axis), w = 1[a == y] / (number of ties)."""
    return _extremum_jvp(dots, args, out, axis, keepdims)


def _pick_jvp(dots, args, out, wins):
    (da, db), (a, b) = dots, args
    w = wins(a, b) + 0.5 * (a == b)
    return _combine(out, None if da is None else w * da, None if db is None else (1 - w) * db)


@defjvp(ops.Maximum)
def _maximum(dots, args, out):
    """y = maximum(a, b).   dy = w da + (1 - w) db,  w = 1[a > b] + 1/2 1[a == b]."""
    return _pick_jvp(dots, args, out, np.greater)


@defjvp(ops.Minimum)
def _minimum(dots, args, out):
    """y = minimum(a, b).   dy = w da + (1 - w) db,  w = 1[a < b] + 1/2 1[a == b]."""
    return _pick_jvp(dots, args, out, np.less)


@defjvp(ops.Where)
def _where(dots, args, out, cond):
    """y = where(cond, a, b).   dy = where(cond, da, db)."""
    (da, db), (a, b) = dots, args
    return np.where(cond, _zero_if_none(da, a), _zero_if_none(db, b)) + np.zeros_like(out)


@defjvp(ops.PowTensor)
def _pow_tensor(dots, args, out):
    """y = a ** p.   dy = p a ** (p - 1) da + y log(a) dp   (0 where p = 0, resp. a = 0 and p >= 0)."""
    (da, dp), (a, p) = dots, args
    with np.errstate(divide="ignore", invalid="ignore"):
        ta = None if da is None else np.where(p == 0, 0.0, p * a ** (p - 1)) * da
        tp = None if dp is None else np.where((a == 0) & (p >= 0), 0.0, out * np.log(a)) * dp
    return _combine(out, ta, tp)


@defjvp(ops.Concatenate)
def _concatenate(dots, args, out, axis=0):
    """y = concatenate(xs, axis).   dy = concatenate(dxs, axis)."""
    return np.concatenate([_zero_if_none(d, x) for d, x in zip(dots, args)], axis=axis)


@defjvp(ops.Stack)
def _stack(dots, args, out, axis=0):
    """y = stack(xs, axis).   dy = stack(dxs, axis)."""
    return np.stack([_zero_if_none(d, x) for d, x in zip(dots, args)], axis=axis)


# ------------------------------------------------------------ the driver


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
        rule = JVP_RULES.get(fn)
        if rule is None:
            raise NotImplementedError(
                f"jvp: op '{fn.name}' ({fn.__name__}) has no forward-mode rule; register one "
                f"with @minigrad.forward.defjvp({fn.__name__})")
        d = np.asarray(rule(dots, tuple(t.data for t in tensors), out.data, **attrs), dtype=out.dtype)
        if d.shape != out.shape:
            raise RuntimeError(f"jvp: the rule of '{fn.name}' returned a tangent of shape {d.shape} "
                               f"for an output of shape {out.shape}")
        self.set(out, d)
        saved_rule = SAVED_JVP_RULES.get(fn)
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
