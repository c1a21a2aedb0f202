"""Every op of minigrad: the forward pass and its VJP, side by side.

Reading guide. For an op ``y = f(x1, x2, ...)`` and a scalar loss ``L``:

* ``forward(ctx, *arrays, **attrs)`` computes ``y`` from NumPy arrays and keeps,
  with ``ctx.save_for_backward``, the values the VJP will need.
* ``backward(ctx, g)`` receives ``g = dL/dy`` (same shape as ``y``) and returns
  ``dL/dx_i = g @ J_i`` for every input: the vector-Jacobian product, computed
  without ever building the Jacobian ``J_i``. It may return ``None`` for inputs
  whose ``ctx.needs_input_grad`` is False.

The VJPs are written with operators and methods that NumPy arrays and Tensors
share (``@ * + - / .T .sum .reshape``) plus the few helpers below. Normally
they run on arrays. When a gradient must itself be differentiated
(``minigrad.grad(..., create_graph=True)``) the engine hands them Tensors, and
the same lines then build a graph of their own.
"""

from __future__ import annotations

import numpy as np

from .function import Context, Function, ShapeError
from .tensor import Tensor

# ---------------------------------------------------------------- helpers
# Each helper does the same thing to a NumPy array and to a Tensor.


def _exp(v):
    return v.exp() if isinstance(v, Tensor) else np.exp(v)


def _positive(v) -> np.ndarray:
    """The mask v > 0 as an array (a constant, also when v is a Tensor)."""
    return (v.data if isinstance(v, Tensor) else v) > 0


def sum_to(g, shape: tuple):
    """Undo broadcasting: sum ``g`` down to ``shape`` (the one 'unbroadcast' helper).

    NumPy broadcasting copies an input along new leading axes and along axes of
    size 1; every copy received part of the gradient, so those parts add up.
    """
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    if g.shape[lead:] == shape:  # only new leading axes (a bias): a plain sum has ``shape``
        return g.sum(axis=tuple(range(lead)))
    kept = tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=tuple(range(lead)) + kept, keepdims=True).reshape(shape)


def broadcast_to(g, shape: tuple):
    """Copy ``g`` along axes to ``shape`` (a read-only view for arrays)."""
    if isinstance(g, Tensor):
        return BroadcastTo.apply(g, shape=shape)
    return np.broadcast_to(g, shape)


def _scatter_add(g, idx, shape: tuple):
    """A zero array of ``shape`` with ``g`` added at ``idx`` (repeats add up)."""
    if isinstance(g, Tensor):
        return ScatterAdd.apply(g, idx=idx, shape=shape)
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, idx, g)
    return out


def _binary(name: str, f, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return f(a, b)
    except ValueError:
        raise ShapeError(
            f"{name}: shapes {a.shape} and {b.shape} cannot be broadcast together") from None


def _check_axis(name: str, axis, shape: tuple, *, none_ok: bool = True, tuple_ok: bool = True,
                extra: int = 0):
    """Raise as PyTorch does for a bad ``axis`` of an array of ``shape``; return ``axis``.

    A float (or bool) axis is a TypeError, an axis out of range an IndexError
    ("Dimension out of range"), an axis named twice a RuntimeError. ``extra`` widens
    the range for ops that add an axis (stack, unsqueeze).
    """
    if axis is None:
        if none_ok:
            return None
        raise TypeError(f"{name}: axis must be an int, got None (shape {shape})")
    if type(axis) is int and -len(shape) - extra <= axis < len(shape) + extra:
        return axis  # the common case, checked quickly
    axes = axis if tuple_ok and isinstance(axis, tuple) else (axis,)
    n = len(shape) + extra
    seen = set()
    for ax in axes:
        if isinstance(ax, (bool, np.bool_)) or not isinstance(ax, (int, np.integer)):
            kind = "an int or a tuple of ints" if tuple_ok else "an int"
            raise TypeError(f"{name}: axis must be {kind}, got {axis!r} "
                            f"({type(ax).__name__}) for shape {shape}")
        if not -n <= ax < n:
            raise IndexError(f"{name}: Dimension out of range (expected to be in range of "
                             f"[{-n}, {n - 1}], but got {ax}) for shape {shape}")
        k = int(ax) % n
        if k in seen:
            raise RuntimeError(f"{name}: axis {k} appears more than once in {axis!r} "
                               f"for shape {shape}")
        seen.add(k)
    return axis


def _in_dtype(grad, dtype):
    """``grad`` in its input's dtype: an op that mixed float32 with float64 hands each
    input back a gradient of its own dtype, as PyTorch does (arrays only)."""
    if grad is None or isinstance(grad, Tensor) or grad.dtype == dtype:
        return grad
    return grad.astype(dtype)


def _dtypes(*arrays) -> tuple | None:
    """The inputs' dtypes when they differ (None when all agree: nothing to cast back)."""
    first = arrays[0].dtype
    for a in arrays:
        if a.dtype != first:
            return tuple(x.dtype for x in arrays)
    return None


def _in_dtypes(ctx, *grads) -> tuple:
    if ctx.dtypes is None:
        return grads
    return tuple(_in_dtype(gr, dt) for gr, dt in zip(grads, ctx.dtypes))


def _raw(v):
    """The numbers of a saved value, whether the VJP received it as an array or a Tensor."""
    return v.data if isinstance(v, Tensor) else v


def _select(cond: np.ndarray, x, y):
    """``where(cond, x, y)`` for arrays and Tensors alike (cond is a plain bool array)."""
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        return Where.apply(x, y, cond=cond)
    return np.where(cond, x, y)


def _keepdims_shape(shape: tuple, axis) -> tuple:
    """The shape a reduction over ``axis`` has with keepdims=True."""
    if axis is None:
        return (1,) * len(shape)
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = {a % len(shape) for a in axes}
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


# -------------------------------------------------------- forward-mode helpers
# Each op's ``jvp(dots, args, out, **attrs)`` maps its inputs' tangents (``None`` for
# an input whose tangent is zero) to its output's tangent; see ``minigrad.forward``.


def _combine(out: np.ndarray, *terms: np.ndarray | None) -> np.ndarray:
    """Sum the non-zero tangent terms, broadcast to the output's shape (an input
    broadcast forward carries its tangent along the same copies)."""
    total = np.zeros(out.shape, dtype=out.dtype)
    for t in terms:
        if t is not None:
            total = total + t
    return total


def _zero_if_none(d, like: np.ndarray) -> np.ndarray:
    return np.zeros(like.shape, dtype=like.dtype) if d is None else d


def _targets(target) -> np.ndarray:
    return target.data if isinstance(target, Tensor) else np.asarray(target)


# ------------------------------------------------------------ arithmetic


class Add(Function):
    """y = a + b (broadcasting).   VJP: da = sum_to(g, a.shape), db = sum_to(g, b.shape)."""

    name = "add"
    elementwise = True
    inplace = staticmethod(lambda a, b: np.add(a, b, out=a, casting="unsafe"))  # add_

    @staticmethod
    def forward(ctx: Context, a, b):
        ctx.shapes, ctx.dtypes = (a.shape, b.shape), None if a.dtype is b.dtype else _dtypes(a, b)
        return _binary("add", np.add, a, b)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        need_a, need_b = ctx.needs_input_grad
        return _in_dtypes(ctx, sum_to(g, sa) if need_a else None,
                          sum_to(g, sb) if need_b else None)

    @staticmethod
    def jvp(dots, args, out):
        """y = a + b.   dy = da + db."""
        da, db = dots
        return _combine(out, da, db)


class Sub(Function):
    """y = a - b (broadcasting).   VJP: da = sum_to(g), db = -sum_to(g)."""

    name = "sub"
    elementwise = True
    inplace = staticmethod(lambda a, b: np.subtract(a, b, out=a, casting="unsafe"))  # sub_

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes, ctx.dtypes = (a.shape, b.shape), None if a.dtype is b.dtype else _dtypes(a, b)
        return _binary("sub", np.subtract, a, b)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        need_a, need_b = ctx.needs_input_grad
        return _in_dtypes(ctx, sum_to(g, sa) if need_a else None,
                          -sum_to(g, sb) if need_b else None)

    @staticmethod
    def jvp(dots, args, out):
        """y = a - b.   dy = da - db."""
        da, db = dots
        return _combine(out, da, None if db is None else -db)


class Mul(Function):
    """y = a * b (broadcasting).   VJP: da = sum_to(g * b), db = sum_to(g * a).

    Saves b only if a needs a gradient, and a only if b does.
    """

    name = "mul"
    elementwise = True
    inplace = staticmethod(lambda a, b: np.multiply(a, b, out=a, casting="unsafe"))  # mul_

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)  # only what a VJP reads
        ctx.shapes = (a.shape, b.shape)
        ctx.dtypes = None if a.dtype is b.dtype else _dtypes(a, b)
        return _binary("mul", np.multiply, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        sa, sb = ctx.shapes
        return _in_dtypes(ctx, sum_to(g * b, sa) if need_a else None,
                          sum_to(g * a, sb) if need_b else None)

    @staticmethod
    def jvp(dots, args, out):
        """y = a * b.   dy = da * b + a * db   (the product rule)."""
        (da, db), (a, b) = dots, args
        return _combine(out, None if da is None else da * b, None if db is None else a * db)


class Div(Function):
    """y = a / b (broadcasting).   VJP: da = sum_to(g / b), db = sum_to(-g * a / b**2)."""

    name = "div"
    elementwise = True
    inplace = staticmethod(lambda a, b: np.divide(a, b, out=a, casting="unsafe"))  # div_

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b)  # da reads b; db reads a and b
        ctx.shapes = (a.shape, b.shape)
        ctx.dtypes = None if a.dtype is b.dtype else _dtypes(a, b)
        return _binary("div", np.divide, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        sa, sb = ctx.shapes
        return _in_dtypes(ctx, sum_to(g / b, sa) if need_a else None,
                          sum_to(-g * a / (b * b), sb) if need_b else None)

    @staticmethod
    def jvp(dots, args, out):
        """y = a / b.   dy = da / b - a * db / b**2."""
        (da, db), (a, b) = dots, args
        return _combine(out, None if da is None else da / b,
                        None if db is None else -a * db / (b * b))


class Neg(Function):
    """y = -a.   VJP: da = -g."""

    name = "neg"
    elementwise = True

    @staticmethod
    def forward(ctx, a):
        return -a

    @staticmethod
    def backward(ctx, g):
        return (-g,)

    @staticmethod
    def jvp(dots, args, out):
        """y = -a.   dy = -da."""
        return -dots[0]


class Pow(Function):
    """y = a ** p for a Python number p.   VJP: da = g * p * a ** (p - 1).

    For p = 0, y = 1 is constant and da = 0 everywhere, also at a = 0 (where the
    formula would give 0 * inf = NaN), as PyTorch does.
    """

    name = "pow"
    elementwise = True

    @staticmethod
    def forward(ctx, a, p):
        ctx.save_for_backward(a)
        ctx.p = p
        return a ** p

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved
        p = ctx.p
        if p == 0:
            return (g * 0.0 if isinstance(g, Tensor) else np.zeros_like(g),)
        return (g * p * a ** (p - 1),)

    @staticmethod
    def jvp(dots, args, out, p):
        """y = a ** p.   dy = p * a ** (p - 1) * da   (0 for p = 0, also at a = 0)."""
        if p == 0:
            return np.zeros_like(out)
        return p * args[0] ** (p - 1) * dots[0]


class MatMul(Function):
    """C = A @ B, with NumPy's (and PyTorch's) matmul rules.

    2-D: A (N, D), B (D, M), C (N, M).
    VJP: dA = dC @ B.T   (N, M) @ (M, D) -> (N, D)
         dB = A.T @ dC   (D, N) @ (N, M) -> (D, M)
    Each entry C[n, m] = sum_d A[n, d] B[d, m], so dL/dA[n, d] = sum_m dC[n, m] B[d, m].

    1-D: a vector A (D,) multiplies as the row (1, D), a vector B (D,) as the column
    (D, 1), and the added axis is removed from C; the VJP puts it back on dC first.
    3-D and up: the last two axes multiply and the leading (batch) axes broadcast;
    an operand copied along batch axes gets the sum of its copies' gradients
    (``sum_to``), as with any broadcast.
    Saved: A only if B needs its gradient, B only if A needs its.
    """

    name = "matmul"

    @staticmethod
    def _save(ctx, a, b) -> None:
        """Check the shapes; save what the VJP reads for the inputs that need grad."""
        if not (a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0]):  # else: the slow checks
            if a.ndim == 0 or b.ndim == 0:
                raise ShapeError(f"matmul: both operands must have at least one axis, got shapes "
                                 f"{a.shape} and {b.shape}; use * to multiply by a scalar")
            ka, kb = a.shape[-1], b.shape[0] if b.ndim == 1 else b.shape[-2]
            if ka != kb:
                raise ShapeError(
                    f"matmul: shapes {a.shape} and {b.shape} are not aligned: "
                    f"{ka} (dim {a.ndim - 1} of A) != {kb} (dim {max(b.ndim - 2, 0)} of B)")
            try:
                np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            except ValueError:
                raise ShapeError(f"matmul: the batch dimensions {a.shape[:-2]} and {b.shape[:-2]} of "
                                 f"shapes {a.shape} and {b.shape} cannot be broadcast together") from None
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        ctx.shapes = (a.shape, b.shape)
        ctx.dtypes = None if a.dtype is b.dtype else _dtypes(a, b)

    @staticmethod
    def forward(ctx, a, b):
        MatMul._save(ctx, a, b)
        return a @ b

    @classmethod
    def forward_kept(cls, ctx, out, a, b):  # selective recomputation: save, do not multiply again
        MatMul._save(ctx, a, b)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        sa, sb = ctx.shapes
        need_a, need_b = ctx.needs_input_grad
        if len(sa) == 2 and len(sb) == 2:
            da = g @ b.T if need_a else None
            db = a.T @ g if need_b else None
            return (da, db) if ctx.dtypes is None else _in_dtypes(ctx, da, db)
        # Vectors become a row (A) or a column (B); dC gets the removed axes back.
        pa = (1,) + sa if len(sa) == 1 else sa
        pb = sb + (1,) if len(sb) == 1 else sb
        g = g.reshape(np.broadcast_shapes(pa[:-2], pb[:-2]) + (pa[-2], pb[-1]))
        da = sum_to(g @ _mT(b.reshape(pb)), pa).reshape(sa) if need_a else None
        db = sum_to(_mT(a.reshape(pa)) @ g, pb).reshape(sb) if need_b else None
        return _in_dtypes(ctx, da, db)

    @staticmethod
    def jvp(dots, args, out):
        """C = A @ B.   dC = dA @ B + A @ dB   (the product rule, in matrix form)."""
        (da, db), (a, b) = dots, args
        return _combine(out, None if da is None else da @ b, None if db is None else a @ db)


def _mT(x):
    """``x`` with its last two axes swapped (a batch of transposes)."""
    n = x.ndim
    return x.transpose(tuple(range(n - 2)) + (n - 1, n - 2))


# ------------------------------------------------------------ reductions


class Sum(Function):
    """y = a.sum(axis, keepdims).   VJP: da = g copied back along the summed axes."""

    name = "sum"

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        _check_axis("sum", axis, a.shape)
        ctx.in_shape, ctx.axis = a.shape, axis
        return np.add.reduce(a, axis=axis, keepdims=keepdims)  # np.sum, without its Python wrappers

    @staticmethod
    def backward(ctx, g):
        g = g.reshape(_keepdims_shape(ctx.in_shape, ctx.axis))
        return (broadcast_to(g, ctx.in_shape),)

    @staticmethod
    def jvp(dots, args, out, axis=None, keepdims=False):
        """y = a.sum(axis).   dy = da.sum(axis)."""
        return np.sum(dots[0], axis=axis, keepdims=keepdims)


class Mean(Function):
    """y = a.mean(axis, keepdims).   VJP: da = g / n copied back, n = elements averaged."""

    name = "mean"

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        _check_axis("mean", axis, a.shape)
        ctx.in_shape, ctx.axis = a.shape, axis
        out = np.mean(a, axis=axis, keepdims=keepdims)
        ctx.n = a.size // max(out.size, 1) if a.size else 1
        return out

    @staticmethod
    def backward(ctx, g):
        g = g.reshape(_keepdims_shape(ctx.in_shape, ctx.axis)) / ctx.n
        return (broadcast_to(g, ctx.in_shape),)

    @staticmethod
    def jvp(dots, args, out, axis=None, keepdims=False):
        """y = a.mean(axis).   dy = da.mean(axis)."""
        return np.mean(dots[0], axis=axis, keepdims=keepdims)


# ------------------------------------------------------------------ views
# A view shares memory (and, here, the version counter) with its input.


class Reshape(Function):
    """y = a.reshape(shape).   VJP: da = g.reshape(a.shape)."""

    name = "reshape"
    view = "maybe"  # NumPy copies when the strides do not allow a view (after a transpose)

    @staticmethod
    def forward(ctx, a, shape):
        for n in shape:
            if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
                raise TypeError(f"reshape: the new shape must be ints, got {tuple(shape)!r} "
                                f"({type(n).__name__} {n!r}) for a tensor of shape {a.shape}")
        ctx.in_shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError:
            raise ShapeError(f"reshape: cannot reshape a tensor of shape {a.shape} "
                             f"({a.size} elements) into shape {tuple(shape)}") from None

    @staticmethod
    def backward(ctx, g):
        return (g.reshape(ctx.in_shape),)

    @staticmethod
    def jvp(dots, args, out, shape):
        """y = a.reshape(shape).   dy = da.reshape(shape)."""
        return dots[0].reshape(out.shape)


class Transpose(Function):
    """y = a.transpose(axes) (reversed axes by default).   VJP: da = g.transpose(inverse axes)."""

    name = "transpose"
    view = True

    @staticmethod
    def forward(ctx, a, axes=None):
        if axes is not None:
            for ax in axes:  # types and range first, then repeats, then the count
                _check_axis("transpose", ax, a.shape, tuple_ok=False)
            _check_axis("transpose", tuple(axes), a.shape)
        if axes is not None and sorted(ax % a.ndim for ax in axes) != list(range(a.ndim)):
            raise ShapeError(f"transpose: axes {tuple(axes)} do not permute the {a.ndim} axes "
                             f"of shape {a.shape}")
        ctx.axes = axes
        return a.transpose(axes)

    @staticmethod
    def backward(ctx, g):
        if ctx.axes is None:
            return (g.transpose(),)
        return (g.transpose(tuple(np.argsort([a % g.ndim for a in ctx.axes]))),)

    @staticmethod
    def jvp(dots, args, out, axes=None):
        """y = a.transpose(axes).   dy = da.transpose(axes)."""
        return dots[0].transpose(axes)


class BroadcastTo(Function):
    """y = a copied along axes to ``shape``.   VJP: da = sum_to(g, a.shape)."""

    name = "broadcast_to"
    view = True

    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = a.shape
        try:
            return np.broadcast_to(a, shape)
        except ValueError:
            raise ShapeError(f"broadcast_to: cannot broadcast shape {a.shape} to {tuple(shape)}") from None

    @staticmethod
    def backward(ctx, g):
        return (sum_to(g, ctx.in_shape),)

    @staticmethod
    def jvp(dots, args, out, shape):
        """y = broadcast_to(a, shape).   dy = broadcast_to(da, shape)."""
        return np.broadcast_to(dots[0], out.shape)


def _plain_index(idx):
    """Indices may hold Tensors; NumPy needs arrays.

    As in PyTorch, an index tensor must hold integers or booleans (a mask, which
    selects the elements where it is True). A float index is an IndexError, never
    rounded: ``w[Tensor([0.7, 2.9])]`` would otherwise quietly read ``w[[0, 2]]``, and
    a 0/1 mask stored as floats would read rows 0 and 1.
    """
    if isinstance(idx, tuple):
        return tuple(_plain_index(i) for i in idx)
    if isinstance(idx, Tensor):
        idx = idx.data
    if isinstance(idx, np.ndarray) and idx.dtype.kind not in "biu":
        raise IndexError(f"getitem: tensors used as indices must be long, int, byte or bool "
                         f"tensors, got dtype {idx.dtype} and shape {idx.shape}; for a mask use "
                         f"a comparison such as x > 0, for positions an integer array")
    return idx


class GetItem(Function):
    """y = a[idx] (slices, integers, integer arrays, masks).

    VJP: da = zeros like a, with g added at idx (an index used twice gets both parts).
    """

    name = "getitem"
    view = "maybe"  # slices give a view of a (shared version counter), index arrays a copy

    @staticmethod
    def forward(ctx, a, idx):
        idx = _plain_index(idx)
        ctx.in_shape, ctx.idx = a.shape, idx
        try:
            return a[idx]
        except IndexError as e:
            raise IndexError(f"getitem: index {idx!r} is invalid for shape {a.shape}: {e}") from None

    @staticmethod
    def backward(ctx, g):
        return (_scatter_add(g, ctx.idx, ctx.in_shape),)

    @staticmethod
    def jvp(dots, args, out, idx):
        """y = a[idx].   dy = da[idx]."""
        return dots[0][_plain_index(idx)]


class ScatterAdd(Function):
    """y = zeros(shape) with a added at idx (the VJP of getitem).   VJP: da = g[idx]."""

    name = "scatter_add"

    @staticmethod
    def forward(ctx, a, idx, shape):
        ctx.idx = idx
        out = np.zeros(shape, dtype=a.dtype)
        np.add.at(out, idx, a)
        return out

    @staticmethod
    def backward(ctx, g):
        return (g[ctx.idx],)

    @staticmethod
    def jvp(dots, args, out, idx, shape):
        """y = zeros(shape) with a added at idx.   dy = zeros(shape) with da added at idx."""
        d = np.zeros(out.shape, dtype=out.dtype)
        np.add.at(d, _plain_index(idx), dots[0])
        return d


class SetItem(Function):
    """y = a with y[idx] = v (``a[idx] = v`` out of place; in place, ``Tensor.__setitem__``).

    VJP: da = g with g[idx] set to 0 (those entries were overwritten),
         dv = sum_to(g[idx], v.shape) (v was broadcast into the indexed part).
    Saves nothing but the index and v's shape.
    """

    name = "setitem"

    @staticmethod
    def forward(ctx, a, v, idx):
        ctx.idx, ctx.v_shape = idx, v.shape
        out = a.copy()
        out[idx] = v
        return out

    @staticmethod
    def backward(ctx, g):
        need_a, need_v = ctx.needs_input_grad
        da = None
        if need_a:
            keep = np.ones(g.shape, dtype=bool)
            keep[ctx.idx] = False
            da = g * keep
        return (da, sum_to(g[ctx.idx], ctx.v_shape) if need_v else None)

    @staticmethod
    def jvp(dots, args, out, idx):
        """y = a with y[idx] = v.   dy = da with dy[idx] = dv."""
        da, dv = dots
        d = np.zeros(out.shape, dtype=out.dtype) if da is None else np.array(da, dtype=out.dtype)
        d[idx] = 0 if dv is None else dv
        return d


class Clone(Function):
    """y = a copied into new memory.   VJP: da = g."""

    name = "clone"
    elementwise = True

    @staticmethod
    def forward(ctx, a):
        return a.copy()

    @staticmethod
    def backward(ctx, g):
        return (g,)

    @staticmethod
    def jvp(dots, args, out):
        """y = a copied.   dy = da."""
        return dots[0]


# ----------------------------------------------------------- elementwise


class Exp(Function):
    """y = exp(a).   VJP: da = g * y (the output is saved, not the input)."""

    name = "exp"
    elementwise = True
    inplace = staticmethod(lambda a: np.exp(a, out=a))  # exp_

    @staticmethod
    def forward(ctx, a):
        y = np.exp(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        return (g * y,)

    @staticmethod
    def jvp(dots, args, out):
        """y = exp(a).   dy = y * da."""
        return out * dots[0]


class Log(Function):
    """y = log(a).   VJP: da = g / a."""

    name = "log"
    elementwise = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved
        return (g / a,)

    @staticmethod
    def jvp(dots, args, out):
        """y = log(a).   dy = da / a."""
        return dots[0] / args[0]


class ReLU(Function):
    """y = max(a, 0).   VJP: da = g * (y > 0)   (y > 0 exactly where a > 0).

    Saved: the output y, as PyTorch's ReluBackward does. In an MLP the next
    layer's matmul saves that same array for its weight gradient, so ReLU costs
    no extra memory; a boolean mask (1 byte per element) would be an extra array.
    At a == 0 the subgradient is 0, as in PyTorch.
    """

    name = "relu"
    elementwise = True

    @staticmethod
    def forward(ctx, a):
        y = np.maximum(a, 0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        return (g * _positive(y),)

    @staticmethod
    def jvp(dots, args, out):
        """y = max(a, 0).   dy = da * (a > 0)   (slope 0 at a == 0, as in the VJP)."""
        return dots[0] * (args[0] > 0)


class Sigmoid(Function):
    """y = 1 / (1 + exp(-a)).   VJP: da = g * y * (1 - y)   (at most g / 4)."""

    name = "sigmoid"
    elementwise = True

    @staticmethod
    def forward(ctx, a):
        e = np.exp(-np.abs(a))  # never overflows
        y = np.where(a >= 0, 1.0, e) / (1.0 + e)
        y = y.astype(a.dtype, copy=False)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        return (g * y * (1 - y),)

    @staticmethod
    def jvp(dots, args, out):
        """y = sigmoid(a).   dy = y * (1 - y) * da."""
        return out * (1 - out) * dots[0]


class Tanh(Function):
    """y = tanh(a).   VJP: da = g * (1 - y**2)."""

    name = "tanh"
    elementwise = True

    @staticmethod
    def forward(ctx, a):
        y = np.tanh(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        return (g * (1 - y * y),)

    @staticmethod
    def jvp(dots, args, out):
        """y = tanh(a).   dy = (1 - y**2) * da."""
        return (1 - out * out) * dots[0]


# ---------------------------------------------------- softmax and losses


class Softmax(Function):
    """s = exp(a - max a) / sum exp(a - max a) along ``axis``.

    Jacobian: ds_i/da_j = s_i (1[i = j] - s_j), i.e. J = diag(s) - s s^T.
    VJP:      da = s * (g - sum(g * s))   -- O(C) per row instead of O(C^2).
    """

    name = "softmax"

    @staticmethod
    def forward(ctx, a, axis=-1):
        _check_axis("softmax", axis, a.shape, none_ok=False, tuple_ok=False)
        if a.size == 0:  # nothing to normalise: an empty result, as PyTorch gives
            ctx.save_for_backward(a.copy())
            ctx.axis = axis
            return a.copy()
        e = np.exp(a - a.max(axis=axis, keepdims=True))
        s = e / e.sum(axis=axis, keepdims=True)
        ctx.save_for_backward(s)
        ctx.axis = axis
        return s

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved
        return (s * (g - (g * s).sum(axis=ctx.axis, keepdims=True)),)

    @staticmethod
    def jvp(dots, args, out, axis=-1):
        """s = softmax(a).   ds = (diag(s) - s s^T) da = s * (da - sum(s * da))."""
        s, da = out, dots[0]
        return s * (da - (s * da).sum(axis=axis, keepdims=True))


class LogSumExp(Function):
    """y = log(sum(exp(a))) along ``axis``, as max + log(sum(exp(a - max))): no overflow.

    VJP: da = g * exp(a - y) = g * softmax(a), g and y copied back along the reduced axes.
    JVP: dy = sum(softmax(a) * da) along the axis.
    Saved: the input and the output, as PyTorch's LogsumexpBackward0 keeps self and result.
    """

    name = "logsumexp"

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        _check_axis("logsumexp", axis, a.shape)
        if a.size == 0:
            raise ValueError(f"logsumexp: the input of shape {a.shape} is empty")
        m = a.max(axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)  # all -inf (or inf) along the axis: no shift
        y = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
        ctx.in_shape, ctx.axis = a.shape, axis
        out = y if keepdims else y.reshape(_reduced_shape(a.shape, axis))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, y = ctx.saved
        shape = _keepdims_shape(ctx.in_shape, ctx.axis)
        return (g.reshape(shape) * _exp(a - y.reshape(shape)),)

    @staticmethod
    def jvp(dots, args, out, axis=None, keepdims=False):
        """y = logsumexp(a).   dy = sum(softmax(a) * da) along the axis."""
        (da,), (a,) = dots, args
        p = np.exp(a - out.reshape(_keepdims_shape(a.shape, axis)))
        return np.sum(p * da, axis=axis, keepdims=keepdims)


def _reduced_shape(shape: tuple, axis) -> tuple:
    """The shape a reduction over ``axis`` leaves (keepdims=False)."""
    return tuple(n for k, n in enumerate(_keepdims_shape(shape, axis)) if not (
        axis is None or k in {ax % len(shape) for ax in (axis if isinstance(axis, tuple) else (axis,))}))


class LogSoftmax(Function):
    """y = a - logsumexp(a) along ``axis``.   VJP: da = g - exp(y) * sum(g)."""

    name = "log_softmax"

    @staticmethod
    def forward(ctx, a, axis=-1):
        _check_axis("log_softmax", axis, a.shape, none_ok=False, tuple_ok=False)
        if a.size == 0:  # nothing to normalise: an empty result, as PyTorch gives
            y = a.copy()
            ctx.save_for_backward(y)
            ctx.axis = axis
            return y
        shifted = a - a.max(axis=axis, keepdims=True)
        y = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        ctx.save_for_backward(y)
        ctx.axis = axis
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        return (g - _exp(y) * g.sum(axis=ctx.axis, keepdims=True),)

    @staticmethod
    def jvp(dots, args, out, axis=-1):
        """y = log_softmax(a).   dy = da - sum(softmax(a) * da)."""
        da = dots[0]
        return da - (np.exp(out) * da).sum(axis=axis, keepdims=True)


def _check_targets(name: str, target, n: int, c: int) -> np.ndarray:
    t = target.data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind not in "iu":
        raise ValueError(f"{name}: targets must be integer class ids, got dtype {t.dtype}")
    if t.shape != (n,):
        raise ValueError(f"{name}: expected {n} targets (shape ({n},)) for input of shape "
                         f"({n}, {c}), got shape {t.shape}")
    # Negative ids wrap around to huge unsigned values, so one max() checks both ends
    # (a 64-bit array is read as unsigned in place; np.maximum.reduce is ndarray.max
    # without its Python wrapper).
    u = t.view(np.uint64) if t.dtype.itemsize == 8 else t.astype(np.uint64)
    if n and np.maximum.reduce(u) >= c:
        bad = t[(t < 0) | (t >= c)]
        raise ValueError(f"{name}: targets must lie in [0, {c - 1}] for {c} classes, got {bad[:5].tolist()}")
    return t


def _check_2d(name: str, a: np.ndarray, what: str) -> None:
    if a.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D (N, C) array of {what}, got shape {a.shape}")
    if a.shape[0] == 0:  # PyTorch returns nan here; a mean over no examples is refused instead
        raise ValueError(f"{name}: the batch is empty (input shape {a.shape}); the mean loss "
                         f"over no examples is undefined")


class CrossEntropy(Function):
    """L = mean_i -log p[i, y_i] on probabilities p of shape (N, C).

    As in the course's first engine (notebook 00), p is clipped to [1e-12, 1] before the log.
    VJP: dp[i, y_i] = -g / (N p[i, y_i]); every other entry is 0.
    An empty batch (N = 0) raises ValueError in forward (PyTorch returns nan).
    """

    name = "cross_entropy"

    @staticmethod
    def forward(ctx, p, target):
        _check_2d("cross_entropy", p, "probabilities")
        t = _check_targets("cross_entropy", target, *p.shape)
        rows = np.arange(p.shape[0])
        py = np.clip(p[rows, t], 1e-12, 1.0)
        ctx.save_for_backward(p)
        ctx.idx = (rows, t)
        return np.asarray(-np.log(py).mean(), dtype=p.dtype)

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved
        py = p[ctx.idx]
        if not isinstance(py, Tensor):
            py = np.clip(py, 1e-12, 1.0)
        n = p.shape[0]
        return (_scatter_add(-g / (n * py), ctx.idx, p.shape),)

    @staticmethod
    def jvp(dots, args, out, target):
        """L = mean_i -log p[i, y_i].   dL = -mean_i dp[i, y_i] / p[i, y_i]   (p clipped as in forward)."""
        (dp,), (p,) = dots, args
        rows = np.arange(p.shape[0])
        t = _targets(target)
        py = np.clip(p[rows, t], 1e-12, 1.0)
        return np.asarray(-(dp[rows, t] / py).sum() / p.shape[0], dtype=out.dtype)


class CrossEntropyWithLogits(Function):
    """L = mean_i [logsumexp(z_i) - z[i, y_i]] on logits z of shape (N, C).

    Fusing softmax with the log never forms p = 0, so logits of any size give
    finite values. VJP: dz = g * (softmax(z) - onehot(y)) / N.

    Saved: the log-probabilities log p = z - logsumexp(z) (N x C), as PyTorch's
    ``F.cross_entropy`` keeps the output of its ``log_softmax``, and the row
    indices with the targets (``ctx.idx``). Backward turns them into p with one
    ``exp``. The logits themselves are not kept.
    An empty batch (N = 0) raises ValueError in forward (PyTorch returns nan).
    """

    name = "cross_entropy_with_logits"

    @staticmethod
    def forward(ctx, z, target):
        _check_2d("cross_entropy_with_logits", z, "logits")
        t = _check_targets("cross_entropy_with_logits", target, *z.shape)
        n = z.shape[0]
        rows = np.arange(n)
        # (the ufuncs' reduce: z.max and .sum, without their Python wrappers)
        logp = z - np.maximum.reduce(z, axis=1, keepdims=True)  # <= 0: exp never overflows
        logp -= np.log(np.add.reduce(np.exp(logp), axis=1, keepdims=True))
        ctx.save_for_backward(logp)
        ctx.idx = (rows, t)
        return np.asarray(-np.add.reduce(logp[rows, t]) / n, dtype=z.dtype)

    @staticmethod
    def backward(ctx, g):
        (logp,) = ctx.saved
        n = logp.shape[0]
        if isinstance(g, Tensor):
            # Differentiating the gradient itself: p must be a function of the logits.
            # log p differs from z by one constant per row, and softmax ignores such a
            # constant, so the softmax of log p, standing in for z on z's edge, is p
            # with all of p's derivatives with respect to z.
            p = ctx.stand_in(0, 0).softmax(axis=1)
            return ((p - _scatter_add(np.ones(n, dtype=g.dtype), ctx.idx, p.shape)) * (g / n),)
        scale = float(g) / n
        d = np.exp(logp)
        d *= scale                  # g * softmax(z) / N, in a new array
        d[ctx.idx] -= scale         # the one-hot part: each row's target once
        return (d,)

    @staticmethod
    def jvp(dots, args, out, target):
        """L = mean_i logsumexp(z_i) - z[i, y_i].   dL = sum((softmax(z) - onehot(y)) * dz) / N."""
        (dz,), (z,) = dots, args
        n = z.shape[0]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        d = e / e.sum(axis=1, keepdims=True)
        d[np.arange(n), _targets(target)] -= 1.0
        return np.asarray((d * dz).sum() / n, dtype=out.dtype)

    @staticmethod
    def jvp_saved(dots, args, saved, target):
        """Saved: log p = z - logsumexp(z).   d(log p) = dz - sum(p * dz) per row."""
        (dz,), (logp,) = dots, saved[:1]
        return (dz - (np.exp(logp) * dz).sum(axis=1, keepdims=True),) + (None,) * (len(saved) - 1)


# ---------------------------------------------------------- normalisation


class LayerNorm(Function):
    """Normalise over the last axis (Ba, Kiros & Hinton, 2016), without gain or bias.

    Per row of D features:  mu = mean(x),  var = mean((x - mu)**2)  (biased, as
    PyTorch),  sigma = sqrt(var + eps),  y = x_hat = (x - mu) / sigma.

    VJP: dx = (1 / sigma) * (g - mean(g) - x_hat * mean(g * x_hat)), means over the
    last axis. The three terms come from the three ways x reaches y: directly,
    through mu, and through sigma (d sigma / d x_i = x_hat_i / (D sigma)).
    Hence every row of dx sums to zero: shifting a row by a constant does not
    change y, so the gradient has no component along (1, ..., 1).

    Saved: the input x, its row means and 1/sigma (one number per row each), as
    PyTorch's native_layer_norm saves input, mean and rstd.
    """

    name = "layer_norm"

    @staticmethod
    def forward(ctx, x, eps=1e-5):
        if x.ndim == 0:
            raise ValueError("layer_norm: needs at least one axis to normalise, got a 0-d tensor")
        if not (np.isfinite(eps) and eps > 0):
            raise ValueError(f"layer_norm: eps must be a positive number, got {eps!r}; it keeps "
                             f"1/sqrt(var + eps) finite for a constant row")
        mu = x.mean(axis=-1, keepdims=True)
        xc = x - mu
        inv_sigma = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
        ctx.save_for_backward(x, mu, inv_sigma)
        ctx.eps = eps
        return xc * inv_sigma

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            # Differentiating the gradient itself: x_hat and 1/sigma must be
            # functions of x, so rebuild them from the input with Tensor ops.
            x = ctx.saved[0]
            xc = x - x.mean(axis=-1, keepdims=True)
            inv_sigma = ((xc * xc).mean(axis=-1, keepdims=True) + ctx.eps) ** -0.5
            x_hat = xc * inv_sigma
        else:
            x, mu, inv_sigma = ctx.saved
            x_hat = (x - mu) * inv_sigma
        return (inv_sigma * (g - g.mean(axis=-1, keepdims=True)
                             - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)),)

    @staticmethod
    def jvp(dots, args, out, eps=1e-5):
        """y = (x - mean x) / sigma.   dy = (1/sigma) (dxc - y mean(y dxc)),  dxc = dx - mean(dx)."""
        (dx,), (x,) = dots, args
        xc = x - x.mean(axis=-1, keepdims=True)
        inv_sigma = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
        dxc = dx - dx.mean(axis=-1, keepdims=True)
        return inv_sigma * (dxc - out * (out * dxc).mean(axis=-1, keepdims=True))


def layer_norm(x, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) over the last axis of ``x`` (see :class:`LayerNorm`)."""
    return LayerNorm.apply(x, eps=eps)


class BatchNorm(Function):
    """Normalise each feature over the batch (Ioffe & Szegedy, 2015), without gain or bias.

    For an (N, D) input, per feature (column) j, over the N examples:
    mu_j = mean_n x[n, j],  var_j = mean_n (x[n, j] - mu_j)**2  (biased, as PyTorch in
    training),  sigma_j = sqrt(var_j + eps),  y = x_hat = (x - mu) / sigma.
    These are the batch's own statistics, i.e. training mode; evaluation with
    running statistics is an affine map of x (see ``minigrad.nn.BatchNorm1d``).

    VJP: dx = (1 / sigma) * (g - mean(g) - x_hat * mean(g * x_hat)), means over the
    batch axis 0. It is LayerNorm's VJP with the axis turned: the three terms are
    the paths from x to y directly, through mu and through sigma. So every column
    of dx sums to zero, and each example's gradient depends on the whole batch.

    Saved: the input x, the means and 1/sigma (one number per feature each), as
    PyTorch's native_batch_norm saves input, save_mean and save_invstd.
    N = 1 is refused, as in PyTorch: one example has variance 0, y would be 0
    whatever x, and the unbiased variance a running estimate needs is 0 / 0.
    """

    name = "batch_norm"

    @staticmethod
    def forward(ctx, x, eps=1e-5):
        if x.ndim != 2:
            raise ValueError(f"batch_norm: expected a 2-D (N, D) input (examples, features), "
                             f"got shape {x.shape}")
        if x.shape[0] < 2:
            raise ValueError(f"batch_norm: Expected more than 1 value per channel when training, "
                             f"got input of shape {x.shape}; batch statistics need at least 2 "
                             f"examples (use eval mode, with running statistics, for one)")
        if not (np.isfinite(eps) and eps > 0):
            raise ValueError(f"batch_norm: eps must be a positive number, got {eps!r}; it keeps "
                             f"1/sqrt(var + eps) finite for a constant feature")
        mu = x.mean(axis=0)
        xc = x - mu
        inv_sigma = 1.0 / np.sqrt((xc * xc).mean(axis=0) + eps)
        ctx.save_for_backward(x, mu, inv_sigma)
        ctx.eps = eps
        return xc * inv_sigma

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            # Differentiating the gradient itself: x_hat and 1/sigma must be
            # functions of x, so rebuild them from the input with Tensor ops.
            x = ctx.saved[0]
            xc = x - x.mean(axis=0)
            inv_sigma = ((xc * xc).mean(axis=0) + ctx.eps) ** -0.5
            x_hat = xc * inv_sigma
        else:
            x, mu, inv_sigma = ctx.saved
            x_hat = (x - mu) * inv_sigma
        return (inv_sigma * (g - g.mean(axis=0) - x_hat * (g * x_hat).mean(axis=0)),)

    @staticmethod
    def jvp(dots, args, out, eps=1e-5):
        """y = (x - mean x) / sigma over axis 0.   dy = (1/sigma) (dxc - y mean(y dxc)),
        dxc = dx - mean(dx), every mean over the batch axis 0 (LayerNorm's rule on the other axis)."""
        (dx,), (x,) = dots, args
        xc = x - x.mean(axis=0)
        inv_sigma = 1.0 / np.sqrt((xc * xc).mean(axis=0) + eps)
        dxc = dx - dx.mean(axis=0)
        return inv_sigma * (dxc - out * (out * dxc).mean(axis=0))


def batch_norm(x, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) per feature over the batch axis 0 of an (N, D) ``x``,
    with the batch's own statistics (see :class:`BatchNorm`)."""
    return BatchNorm.apply(x, eps=eps)


# ---------------------------------------------------------------- more ops
# Elementwise: abs, sqrt, maximum, minimum, where, pow with a tensor exponent;
# reductions: max, min; joining: concatenate, stack. (squeeze, unsqueeze,
# flatten, permute and expand are Reshape, Transpose and BroadcastTo under
# other names: see the Tensor methods.)


class Abs(Function):
    """y = |a|.   VJP: da = g * sign(a)   (0 at a == 0, the subgradient PyTorch picks).

    Only sign(a) is kept; it is piecewise constant, so a second derivative is 0.
    """

    name = "abs"
    elementwise = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(np.sign(a))
        return np.abs(a)

    @staticmethod
    def backward(ctx, g):
        (sign,) = ctx.saved
        return (g * sign,)

    @staticmethod
    def jvp(dots, args, out):
        """y = |a|.   dy = sign(a) * da."""
        return np.sign(args[0]) * dots[0]


class Sqrt(Function):
    """y = sqrt(a).   VJP: da = g / (2 y)   (the output is saved, not the input)."""

    name = "sqrt"
    elementwise = True

    @staticmethod
    def forward(ctx, a):
        y = np.sqrt(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        return (g / (2 * y),)

    @staticmethod
    def jvp(dots, args, out):
        """y = sqrt(a).   dy = da / (2 y)."""
        return dots[0] / (2 * out)


def _extremum(ctx, name: str, f, a: np.ndarray, axis, keepdims: bool) -> np.ndarray:
    """Forward of max/min: y = f(a, axis) and, for the VJP, the tie-sharing weights w."""
    _check_axis(name, axis, a.shape)
    axes = range(a.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    reduced = {int(ax) % a.ndim for ax in axes}
    empty = sorted(k for k in reduced if a.shape[k] == 0)
    if empty:
        raise IndexError(f"{name}: cannot reduce over the empty axis {empty[0]} "
                         f"of a tensor of shape {a.shape}; a max or min needs at least one element")
    y = f(a, axis=axis, keepdims=True)
    if ctx.needs_input_grad[0]:
        mask = a == y
        ctx.save_for_backward((mask / mask.sum(axis=axis, keepdims=True)).astype(a.dtype))
    ctx.in_shape, ctx.axis = a.shape, axis
    if keepdims:
        return y
    return y.reshape(tuple(n for k, n in enumerate(a.shape) if k not in reduced))

def _extremum_jvp(dots, args, out, axis, keepdims):
    """dy = sum(w * da) over the reduced axes, w = 1[a == y] / (number of ties), as in the VJP."""
    a, da = args[0], dots[0]
    y = out.reshape(_keepdims_shape(a.shape, axis))
    mask = a == y
    w = mask / mask.sum(axis=axis, keepdims=True)
    return np.sum(w * da, axis=axis, keepdims=keepdims)


class Max(Function):
    """y = a.max(axis, keepdims), the values only (PyTorch's ``amax``).

    VJP: da = g * w copied back along the reduced axes, w = 1[a == y] / (number of
    elements equal to y): tied maxima share the gradient evenly, as ``torch.amax``
    and the full ``torch.max()`` do. (``torch.max(x, dim)`` instead sends all of it
    to the one element whose index it returns.) w is piecewise constant, so it is
    kept as a constant and the second derivative is 0.
    """

    name = "max"

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        return _extremum(ctx, "max", np.max, a, axis, keepdims)

    @staticmethod
    def backward(ctx, g):
        (w,) = ctx.saved
        return (broadcast_to(g.reshape(_keepdims_shape(ctx.in_shape, ctx.axis)), ctx.in_shape) * w,)

    @staticmethod
    def jvp(dots, args, out, axis=None, keepdims=False):
        """y = max(a, axis).   dy = sum(w * da, axis), w = 1[a == y] / (number of ties)."""
        return _extremum_jvp(dots, args, out, axis, keepdims)


class Min(Function):
    """y = a.min(axis, keepdims), the values only (PyTorch's ``amin``).

    VJP: da = g * w, w = 1[a == y] / (number of elements equal to y): ties share
    the gradient evenly, as for :class:`Max`.
    """

    name = "min"

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        return _extremum(ctx, "min", np.min, a, axis, keepdims)

    @staticmethod
    def backward(ctx, g):
        (w,) = ctx.saved
        return (broadcast_to(g.reshape(_keepdims_shape(ctx.in_shape, ctx.axis)), ctx.in_shape) * w,)

    @staticmethod
    def jvp(dots, args, out, axis=None, keepdims=False):
        """y = min(a, axis).   dy = sum(w * da, axis), w = 1[a == y] / (number of ties)."""
        return _extremum_jvp(dots, args, out, axis, keepdims)


def _pick(ctx, name: str, f, wins, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Forward of maximum/minimum: y = f(a, b) and w = 1[wins(a, b)] + 1/2 1[a == b]."""
    y = _binary(name, f, a, b)
    ctx.shapes, ctx.dtypes = (a.shape, b.shape), None if a.dtype is b.dtype else _dtypes(a, b)
    if any(ctx.needs_input_grad):
        w = (wins(a, b) + 0.5 * (a == b)).astype(y.dtype)
        ctx.save_for_backward(np.broadcast_to(w, y.shape))
    return y


def _pick_backward(ctx, g) -> tuple:
    (w,) = ctx.saved
    sa, sb = ctx.shapes
    need_a, need_b = ctx.needs_input_grad
    return _in_dtypes(ctx, sum_to(g * w, sa) if need_a else None,
                      sum_to(g * (1 - w), sb) if need_b else None)

def _pick_jvp(dots, args, out, wins):
    (da, db), (a, b) = dots, args
    w = wins(a, b) + 0.5 * (a == b)
    return _combine(out, None if da is None else w * da, None if db is None else (1 - w) * db)


class Maximum(Function):
    """y = maximum(a, b) elementwise (broadcasting).

    VJP: da = sum_to(g * w), db = sum_to(g * (1 - w)), w = 1[a > b] + 1/2 1[a == b]:
    where a and b are equal each gets half the gradient, as PyTorch does.
    """

    name = "maximum"
    elementwise = True

    @staticmethod
    def forward(ctx, a, b):
        return _pick(ctx, "maximum", np.maximum, np.greater, a, b)

    @staticmethod
    def backward(ctx, g):
        return _pick_backward(ctx, g)

    @staticmethod
    def jvp(dots, args, out):
        """y = maximum(a, b).   dy = w da + (1 - w) db,  w = 1[a > b] + 1/2 1[a == b]."""
        return _pick_jvp(dots, args, out, np.greater)


class Minimum(Function):
    """y = minimum(a, b) elementwise (broadcasting).

    VJP: da = sum_to(g * w), db = sum_to(g * (1 - w)), w = 1[a < b] + 1/2 1[a == b].
    """

    name = "minimum"
    elementwise = True

    @staticmethod
    def forward(ctx, a, b):
        return _pick(ctx, "minimum", np.minimum, np.less, a, b)

    @staticmethod
    def backward(ctx, g):
        return _pick_backward(ctx, g)

    @staticmethod
    def jvp(dots, args, out):
        """y = minimum(a, b).   dy = w da + (1 - w) db,  w = 1[a < b] + 1/2 1[a == b]."""
        return _pick_jvp(dots, args, out, np.less)


class Where(Function):
    """y = where(cond, a, b): a where cond is True, b elsewhere (all three broadcast).

    cond is a boolean array (an attribute: it has no gradient).
    VJP: da = sum_to(g * cond, a.shape), db = sum_to(g * (1 - cond), b.shape).
    """

    name = "where"

    @staticmethod
    def forward(ctx, a, b, cond):
        try:
            y = np.where(cond, a, b)
        except ValueError:
            raise ShapeError(f"where: shapes {np.shape(cond)} (cond), {a.shape} and {b.shape} "
                             f"cannot be broadcast together") from None
        ctx.cond = cond
        ctx.shapes, ctx.dtypes = (a.shape, b.shape), None if a.dtype is b.dtype else _dtypes(a, b)
        return y

    @staticmethod
    def backward(ctx, g):
        c = ctx.cond
        sa, sb = ctx.shapes
        need_a, need_b = ctx.needs_input_grad
        return _in_dtypes(ctx, sum_to(g * c, sa) if need_a else None,
                          sum_to(g * ~c, sb) if need_b else None)

    @staticmethod
    def jvp(dots, args, out, cond):
        """y = where(cond, a, b).   dy = where(cond, da, db)."""
        (da, db), (a, b) = dots, args
        return np.where(cond, _zero_if_none(da, a), _zero_if_none(db, b)) + np.zeros_like(out)


def _as_condition(cond) -> np.ndarray:
    c = cond.data if isinstance(cond, Tensor) else np.asarray(cond)
    if c.dtype != np.bool_:
        raise RuntimeError(f"where: expected the condition to be boolean (a comparison such as "
                           f"x > 0), but got dtype {c.dtype} and shape {c.shape}")
    return c


class PowTensor(Function):
    """y = a ** p with a tensor (or array) exponent p, broadcasting; also ``2.0 ** p``.

    VJP: da = sum_to(g * p * a ** (p - 1)),   dp = sum_to(g * y * log(a)).
    Where p == 0 the first is 0 (y = 1 whatever a), and where a == 0 and p >= 0 the
    second is 0 (PyTorch's choice: log 0 = -inf would give NaN); a < 0 gives NaN
    for dp, as log(a) is not real.
    Saved: a and p, and y only if p needs its gradient.
    """

    name = "pow_tensor"
    elementwise = True

    @staticmethod
    def forward(ctx, a, p):
        y = _binary("pow", np.power, a, p)
        need_a, need_p = ctx.needs_input_grad
        ctx.save_for_backward(a, p, y if need_p else None)
        ctx.shapes, ctx.dtypes = (a.shape, p.shape), _dtypes(a, p)
        return y

    @staticmethod
    def backward(ctx, g):
        a, p, y = ctx.saved
        sa, sp = ctx.shapes
        need_a, need_p = ctx.needs_input_grad
        ra, rp = _raw(a), _raw(p)
        da = dp = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if need_a:
                da = sum_to(_select(np.broadcast_to(rp == 0, g.shape), 0.0, g * p * a ** (p - 1)), sa)
            if need_p:
                keep0 = np.broadcast_to((ra == 0) & (rp >= 0), g.shape)
                dp = sum_to(_select(keep0, 0.0, g * y * _log(a)), sp)
        return _in_dtypes(ctx, da, dp)

    @staticmethod
    def jvp(dots, args, out):
        """y = a ** p.   dy = p a ** (p - 1) da + y log(a) dp   (0 where p = 0, resp. a = 0 and p >= 0)."""
        (da, dp), (a, p) = dots, args
        with np.errstate(divide="ignore", invalid="ignore"):
            ta = None if da is None else np.where(p == 0, 0.0, p * a ** (p - 1)) * da
            tp = None if dp is None else np.where((a == 0) & (p >= 0), 0.0, out * np.log(a)) * dp
        return _combine(out, ta, tp)


def _log(v):
    return v.log() if isinstance(v, Tensor) else np.log(v)


class Concatenate(Function):
    """y = concatenate(xs, axis): the inputs laid end to end along an existing axis.

    VJP: dx_i = g[..., o_i : o_i + n_i, ...], the slice of g where x_i landed
    (o_i = sizes of the inputs before it along axis, n_i = its own).
    """

    name = "concatenate"

    @staticmethod
    def forward(ctx, *xs, axis=0):
        if not xs:
            raise ValueError("concatenate: expected a non-empty sequence of tensors")
        first = xs[0].shape
        if not first:
            raise ShapeError("concatenate: zero-dimensional tensors cannot be concatenated "
                             "(tensor 0 has shape ()); use stack")
        _check_axis("concatenate", axis, first, none_ok=False, tuple_ok=False)
        k = int(axis) % len(first)
        for i, x in enumerate(xs[1:], 1):
            if x.ndim != len(first) or any(n != m for j, (n, m) in enumerate(zip(x.shape, first))
                                           if j != k):
                raise ShapeError(f"concatenate: tensor {i} has shape {x.shape} but tensor 0 has "
                                 f"shape {first}; all sizes must match except along axis {k}")
        ctx.axis = k
        ctx.bounds = tuple(np.cumsum([0] + [x.shape[k] for x in xs]).tolist())
        ctx.dtypes = _dtypes(*xs)
        return np.concatenate(xs, axis=k)

    @staticmethod
    def backward(ctx, g):
        lead, b = (slice(None),) * ctx.axis, ctx.bounds
        return _in_dtypes(ctx, *(g[lead + (slice(b[i], b[i + 1]),)] if need else None
                                 for i, need in enumerate(ctx.needs_input_grad)))

    @staticmethod
    def jvp(dots, args, out, axis=0):
        """y = concatenate(xs, axis).   dy = concatenate(dxs, axis)."""
        return np.concatenate([_zero_if_none(d, x) for d, x in zip(dots, args)], axis=axis)


class Stack(Function):
    """y = stack(xs, axis): inputs of one shape joined along a new axis.

    VJP: dx_i = g[..., i, ...], the slice of g at position i of the new axis.
    """

    name = "stack"

    @staticmethod
    def forward(ctx, *xs, axis=0):
        if not xs:
            raise RuntimeError("stack: expected a non-empty sequence of tensors")
        first = xs[0].shape
        _check_axis("stack", axis, first, none_ok=False, tuple_ok=False, extra=1)
        for i, x in enumerate(xs[1:], 1):
            if x.shape != first:
                raise ShapeError(f"stack: tensor {i} has shape {x.shape} but tensor 0 has shape "
                                 f"{first}; stack needs tensors of one shape")
        ctx.axis = int(axis) % (len(first) + 1)
        ctx.dtypes = _dtypes(*xs)
        return np.stack(xs, axis=ctx.axis)

    @staticmethod
    def backward(ctx, g):
        lead = (slice(None),) * ctx.axis
        return _in_dtypes(ctx, *(g[lead + (i,)] if need else None
                                 for i, need in enumerate(ctx.needs_input_grad)))

    @staticmethod
    def jvp(dots, args, out, axis=0):
        """y = stack(xs, axis).   dy = stack(dxs, axis)."""
        return np.stack([_zero_if_none(d, x) for d, x in zip(dots, args)], axis=axis)


# The functions PyTorch has at module level (``torch.where`` and the like).

def _sequence(name: str, tensors) -> tuple:
    if isinstance(tensors, (Tensor, np.ndarray)) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}: expected a list or tuple of tensors, got {type(tensors).__name__}")
    return tuple(tensors)


def concatenate(tensors, axis: int = 0) -> Tensor:
    """Join tensors along an existing axis (NumPy's ``concatenate``, PyTorch's ``cat``)."""
    return Concatenate.apply(*_sequence("concatenate", tensors), axis=axis)


cat = concatenate


def stack(tensors, axis: int = 0) -> Tensor:
    """Join tensors of one shape along a new axis ``axis``."""
    return Stack.apply(*_sequence("stack", tensors), axis=axis)


def where(cond, a, b) -> Tensor:
    """``a`` where the boolean ``cond`` holds, ``b`` elsewhere (see :class:`Where`)."""
    return Where.apply(a, b, cond=_as_condition(cond))


def maximum(a, b) -> Tensor:
    """The elementwise maximum of ``a`` and ``b`` (ties share the gradient; see :class:`Maximum`)."""
    return Maximum.apply(a, b)


def minimum(a, b) -> Tensor:
    """The elementwise minimum of ``a`` and ``b`` (see :class:`Minimum`)."""
    return Minimum.apply(a, b)
