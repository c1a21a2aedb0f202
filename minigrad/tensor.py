"""The Tensor: a NumPy array plus the fields that let the engine walk back.

A Tensor carries the fields of the course's reading:

* ``data``          -- the numbers, a ``numpy.ndarray`` (float64 unless asked);
* ``grad``          -- dL/d(this tensor), ``None`` until a backward pass reaches it;
* ``requires_grad`` -- whether ops should record how this tensor is used;
* ``parents``       -- the tensors this one was computed from, in operand order;
* ``op``            -- the name of the op that made it (``""`` for a leaf);
* ``grad_fn``       -- the op's backward node (its ``ctx``): what it saved and
  how to turn the output's gradient into its inputs' gradients.

Every method below is sugar: it calls ``SomeOp.apply`` from ``ops.py``, where
each op's forward and VJP sit side by side.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Tensor", "as_tensor"]


def _check_numeric(arr: np.ndarray, where: str) -> None:
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"{where}: data must be numeric (bool, int or float), got an array of dtype "
            f"{arr.dtype} and shape {arr.shape}"
        )


class Tensor:
    __slots__ = ("data", "grad", "requires_grad", "parents", "op", "grad_fn",
                 "name", "_vc", "_retains_grad", "__weakref__")

    # Make NumPy hand `ndarray <op> Tensor` to the Tensor's reflected method.
    __array_ufunc__ = None

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None,
                 name: str | None = None):
        if isinstance(data, Tensor):
            data = data.data
        arr = np.asarray(data)
        _check_numeric(arr, "Tensor")
        dt = np.dtype(np.float64 if dtype is None else dtype)
        if dt.kind != "f":
            raise TypeError(f"Tensor: dtype must be a floating type, got {dt}")
        self.data = np.array(arr, dtype=dt)  # a Tensor owns its numbers
        self.grad: np.ndarray | None = None
        self.requires_grad = bool(requires_grad)
        self.parents: tuple[Tensor, ...] = ()
        self.op = ""
        self.grad_fn = None
        self.name = name
        self._vc = [0]
        self._retains_grad = False

    @classmethod
    def _make(cls, data, requires_grad, parents, op, grad_fn) -> Tensor:
        """Fast constructor used by ops: no checks, no copy."""
        t = object.__new__(cls)
        t.data = data
        t.grad = None
        t.requires_grad = requires_grad
        t.parents = parents
        t.op = op
        t.grad_fn = grad_fn
        t.name = None
        t._vc = [0]
        t._retains_grad = False
        return t

    # ----------------------------------------------------------- inspection
    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)

    @property
    def is_leaf(self) -> bool:
        """A leaf was made by the user (or under no_grad), not recorded by an op."""
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        """How many times the data was changed in place (shared with views)."""
        return self._vc[0]

    def item(self) -> float:
        if self.data.size != 1:
            raise ValueError(f"item: only a tensor with one element can be converted, got shape {self.shape}")
        self._note_read()
        return self.data.item()

    def numpy(self) -> np.ndarray:
        self._note_read()
        return self.data

    def _note_read(self) -> None:
        """Tell observers (a recording ``minigrad.trace``) that this value left the graph."""
        from .function import _state
        for hook in _state.hooks:
            hook("read", None, (self,), None, {})

    def __len__(self) -> int:
        return len(self.data)

    def __float__(self) -> float:
        return float(self.item())

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; "
                             f"use .data.any() or .data.all()")
        return bool(self.data)

    def __repr__(self) -> str:
        body = np.array2string(self.data, precision=4, separator=", ", threshold=20,
                               prefix="Tensor(")
        extra = ""
        if self.op:
            extra += f", op={self.op!r}"
        if self.requires_grad:
            extra += ", requires_grad=True"
        if self.data.dtype != np.float64:
            extra += f", dtype={self.data.dtype}"
        if self.name:
            extra += f", name={self.name!r}"
        return f"Tensor({body}{extra})"

    # ------------------------------------------------------------- autograd
    def backward(self, grad: Any = None, retain_graph: bool = False) -> None:
        """Fill ``.grad`` of every leaf that requires grad with dL/dleaf.

        ``grad`` is dL/d(self); it may be left out only when self has one element.
        Gradients add up across calls: call ``zero_grad()`` between steps.
        The values saved for backward are freed unless ``retain_graph=True``.
        For gradients of gradients, use ``minigrad.grad(..., create_graph=True)``.
        """
        _engine.backward(self, grad, retain_graph=retain_graph)

    def zero_grad(self) -> None:
        """Forget the gradient (back to ``None``: 'not computed yet', not 'zero')."""
        self.grad = None

    def retain_grad(self) -> Tensor:
        """Ask backward to keep ``.grad`` on this intermediate tensor too."""
        self._retains_grad = True
        return self

    def detach(self) -> Tensor:
        """The same numbers, cut from the graph (shares memory, like PyTorch)."""
        t = Tensor._make(self.data, False, (), "", None)
        t._vc = self._vc
        return t

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if self.grad_fn is not None and not flag:
            raise RuntimeError("requires_grad_: only a leaf can stop requiring grad; use detach()")
        self.requires_grad = bool(flag)
        return self

    # ------------------------------------------------------------- in place
    def _check_inplace(self, what: str) -> None:
        from .function import is_grad_enabled
        if self.requires_grad and is_grad_enabled():
            kind = "a leaf that requires grad" if self.is_leaf else "a tensor that is part of a graph"
            raise RuntimeError(
                f"{what}: {kind} (shape {self.shape}) cannot be changed in place while "
                f"gradients are recorded; wrap the update in `with minigrad.no_grad():` "
                f"or use the out-of-place op"
            )

    def _bump(self) -> None:
        self._vc[0] += 1

    def _inplace(self, what: str, ufunc, other: Any) -> Tensor:
        """data = ufunc(data, other) written into data, then bump the version counter.

        Checked before anything is written, so a bad call changes nothing.
        """
        self._check_inplace(what)
        value = other.data if isinstance(other, Tensor) else np.asarray(other)
        try:
            shape = np.broadcast_shapes(self.shape, value.shape)
        except ValueError:
            shape = None
        if shape != self.shape:
            raise ValueError(f"{what}: the operand of shape {value.shape} cannot be broadcast "
                             f"to the tensor's shape {self.shape} (an in-place op keeps the shape)")
        ufunc(self.data, value, out=self.data, casting="unsafe")
        self._bump()
        return self

    def add_(self, other: Any) -> Tensor:
        """In place: data += other. Bumps the version counter."""
        return self._inplace("add_", np.add, other)

    def mul_(self, other: Any) -> Tensor:
        """In place: data *= other. Bumps the version counter."""
        return self._inplace("mul_", np.multiply, other)

    def __setitem__(self, idx: Any, value: Any) -> None:
        """In place: data[idx] = value. Bumps the version counter."""
        self._check_inplace("__setitem__")
        value = value.data if isinstance(value, Tensor) else value
        try:
            self.data[idx] = value
        except (IndexError, ValueError) as e:
            raise type(e)(f"__setitem__: cannot set index {idx!r} of a tensor of shape "
                          f"{self.shape} to a value of shape {np.shape(value)}: {e}") from None
        self._bump()

    # ------------------------------------------------------------ operators
    def __add__(self, other):
        return _ops.Add.apply(self, other)

    def __radd__(self, other):
        return _ops.Add.apply(other, self)

    def __sub__(self, other):
        return _ops.Sub.apply(self, other)

    def __rsub__(self, other):
        return _ops.Sub.apply(other, self)

    def __mul__(self, other):
        return _ops.Mul.apply(self, other)

    def __rmul__(self, other):
        return _ops.Mul.apply(other, self)

    def __truediv__(self, other):
        return _ops.Div.apply(self, other)

    def __rtruediv__(self, other):
        return _ops.Div.apply(other, self)

    def __neg__(self):
        return _ops.Neg.apply(self)

    def __pow__(self, p):
        if isinstance(p, Tensor) or not np.isscalar(p):
            raise TypeError(f"pow: the exponent must be a Python number, got {type(p).__name__}")
        return _ops.Pow.apply(self, p=p)

    def __matmul__(self, other):
        return _ops.MatMul.apply(self, other)

    def __rmatmul__(self, other):
        return _ops.MatMul.apply(other, self)

    def __getitem__(self, idx):
        return _ops.GetItem.apply(self, idx=idx)

    # ----------------------------------------------------------- reductions
    def sum(self, axis=None, keepdims=False):
        return _ops.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return _ops.Mean.apply(self, axis=axis, keepdims=keepdims)

    # ---------------------------------------------------------------- views
    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _ops.Reshape.apply(self, shape=shape)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ops.Transpose.apply(self, axes=axes or None)

    @property
    def T(self):
        return _ops.Transpose.apply(self, axes=None)

    # ---------------------------------------------------------- elementwise
    def exp(self):
        return _ops.Exp.apply(self)

    def log(self):
        return _ops.Log.apply(self)

    def relu(self):
        return _ops.ReLU.apply(self)

    def sigmoid(self):
        return _ops.Sigmoid.apply(self)

    def tanh(self):
        return _ops.Tanh.apply(self)

    # --------------------------------------------------------------- losses
    def softmax(self, axis=-1):
        return _ops.Softmax.apply(self, axis=axis)

    def log_softmax(self, axis=-1):
        return _ops.LogSoftmax.apply(self, axis=axis)

    def cross_entropy(self, target):
        """Mean -log p[i, y_i] of a (N, C) tensor of probabilities (as in the reading)."""
        return _ops.CrossEntropy.apply(self, target=target)

    def cross_entropy_with_logits(self, target):
        """Fused, stable softmax + cross-entropy on (N, C) logits."""
        return _ops.CrossEntropyWithLogits.apply(self, target=target)


def as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """Wrap a number or array as a constant leaf, in ``like``'s float dtype."""
    if isinstance(x, Tensor):
        return x
    arr = np.asarray(x)
    _check_numeric(arr, "as_tensor")
    dt = like.data.dtype if like is not None else np.float64
    if arr.dtype != dt:
        arr = arr.astype(dt)
    return Tensor._make(arr, False, (), "", None)


from . import engine as _engine  # noqa: E402  (engine needs Tensor defined first)
from . import ops as _ops  # noqa: E402  (ops needs Tensor defined first)
