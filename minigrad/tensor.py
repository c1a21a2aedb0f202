"""The Tensor: a NumPy array plus the fields that let the engine walk back.

A Tensor carries the fields of the course's reading:

* ``data``          -- the numbers, a ``numpy.ndarray`` (float64 unless asked);
* ``grad``          -- dL/d(this tensor), ``None`` until a backward pass reaches it;
* ``requires_grad`` -- whether ops should record how this tensor is used;
* ``grad_fn``       -- the backward node of the op that made it (``None`` for a
  leaf): what the op saved for backward, and edges to its inputs' nodes;
* ``op``            -- the name of that op (``""`` for a leaf);
* ``parents``       -- what this tensor was computed from: the op's input tensors
  that Python still holds, in operand order.

As in PyTorch, a tensor does not keep its inputs alive: the graph is made of
backward nodes (``grad_fn``), and each node keeps only what its op saved. So an
intermediate result that no node saved is freed as soon as no Python name refers
to it, and ``parents`` then leaves it out. The node still knows its edges
(``t.grad_fn.parents``), which is what ``backward()`` walks.

Every method below is sugar: it calls ``SomeOp.apply`` from ``ops.py``, where
each op's forward and VJP sit side by side.
"""

from __future__ import annotations

from operator import attrgetter
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
    __slots__ = ("data", "_grad", "requires_grad", "grad_fn", "name", "_vc", "_view", "_acc",
                 "__weakref__")

    # Make NumPy hand `ndarray <op> Tensor` to the Tensor's reflected method.
    __array_ufunc__ = None

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None,
                 name: str | None = None):
        if isinstance(data, Tensor):
            data = data.data
        arr = _to_array(data, "Tensor")
        if dtype is None:
            dt = np.dtype(np.bool_ if arr.dtype == np.bool_ else np.float64)  # a mask stays a mask
        else:
            try:
                dt = np.dtype(dtype)
            except TypeError:
                raise TypeError(f"Tensor: dtype {dtype!r} is not a NumPy dtype; use a floating "
                                f"type such as np.float64 or np.float32") from None
        if dt.kind not in "fb":
            raise TypeError(f"Tensor: dtype must be a floating type (or bool, for a mask), got {dt}")
        if dt.kind == "b" and requires_grad:
            raise RuntimeError("Tensor: only floating-point tensors can require gradients; "
                               "this one is bool (a mask)")
        self.data = np.array(arr, dtype=dt)  # a Tensor owns its numbers
        self.grad: np.ndarray | None = None
        self.requires_grad = bool(requires_grad)
        self.grad_fn = None
        self.name = name
        self._vc = [0]
        self._view = None   # for a view: (the shared version when it was made, the base tensor)
        self._acc = _dead   # weak reference to this leaf's AccumulateGrad node

    @classmethod
    def _make(cls, data, requires_grad=False, grad_fn=None) -> Tensor:
        """Fast constructor used by ops: no checks, no copy."""
        t = object.__new__(cls)
        t.data = data
        t.grad = None
        t.requires_grad = requires_grad
        t.grad_fn = grad_fn
        t.name = None
        t._vc = [0]
        t._view = None
        t._acc = _dead
        return t

    # pickle and copy.deepcopy: a leaf is its numbers, grad, requires_grad and name; the
    # graph bookkeeping (version counter, AccumulateGrad reference) starts afresh.
    def __getstate__(self) -> dict:
        if self.grad_fn is not None:
            raise RuntimeError(f"Tensor: only a leaf can be pickled or deep-copied; this tensor "
                               f"(shape {self.shape}) was computed by '{self.op}' and belongs to a "
                               f"graph. Keep t.detach() instead, or the leaves it came from")
        return {"data": self.data, "grad": self.grad, "requires_grad": self.requires_grad,
                "name": self.name}

    def __setstate__(self, state: dict) -> None:
        self.data, self.grad = state["data"], state["grad"]
        self.requires_grad, self.name = state["requires_grad"], state["name"]
        self.grad_fn, self._vc, self._view, self._acc = None, [0], None, _dead

    @property
    def op(self) -> str:
        """The name of the op that made this tensor (``""`` for a leaf)."""
        f = self.grad_fn
        return f.fn.name if f is not None else ""

    @property
    def parents(self) -> tuple[Tensor, ...]:
        """What this tensor was computed from: the op's input tensors still alive, in operand order.

        A leaf has none. An input that no Python name holds any more is left out
        (the graph does not keep tensors alive; its node keeps only what the op
        saved). The graph's edges themselves are ``self.grad_fn.parents``.
        """
        f = self.grad_fn
        if f is None:
            return ()
        return tuple([t for t in f.inputs if t is not None])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(t)``: the numbers, for a tensor that needs no gradient (as PyTorch)."""
        if self.requires_grad:
            raise RuntimeError(
                f"np.asarray: can't convert a tensor that requires grad (shape {self.shape}) to a "
                f"NumPy array, since the array would leave the graph; use t.detach().numpy(), "
                f"or t.data")
        self._note_read()
        if dtype is not None and dtype != self.data.dtype:
            return self.data.astype(dtype)
        return self.data.copy() if copy else self.data

    # ----------------------------------------------------------- inspection
    # (attrgetter reads them in C: these are read on every op, so no Python call each time)
    shape = property(attrgetter("data.shape"), doc="The shape of the numbers (``data.shape``).")
    dtype = property(attrgetter("data.dtype"), doc="Their dtype (``data.dtype``).")
    ndim = property(attrgetter("data.ndim"), doc="Their number of axes.")
    size = property(attrgetter("data.size"), doc="Their number of elements.")

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
        if self.grad_fn is not None:
            extra += f", op={self.op!r}"
        if self.requires_grad:
            extra += ", requires_grad=True"
        if self.data.dtype != np.float64:
            extra += f", dtype={self.data.dtype}"
        if self.name:
            extra += f", name={self.name!r}"
        return f"Tensor({body}{extra})"

    # ------------------------------------------------------------- autograd
    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None, *, grad: Any = None) -> None:
        """Fill ``.grad`` of every leaf that requires grad with dL/dleaf (``torch.Tensor.backward``).

        ``gradient`` (also accepted as ``grad=``) is dL/d(self); it may be left out
        only when self has one element. Gradients add up across calls: call
        ``zero_grad()`` between steps. The values saved for backward are freed
        unless ``retain_graph=True`` (which ``create_graph=True`` implies).
        ``create_graph=True`` records the backward pass itself, so that ``.grad``
        can be differentiated again; ``inputs`` limits which leaves receive ``.grad``.
        """
        if grad is not None:
            if gradient is not None:
                raise TypeError("backward: pass the gradient once, as gradient= (or grad=)")
            gradient = grad
        _engine.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph,
                         inputs=inputs)

    def zero_grad(self) -> None:
        """Forget the gradient (back to ``None``: 'not computed yet', not 'zero')."""
        self.grad = None

    def retain_grad(self) -> Tensor:
        """Ask backward to keep ``.grad`` on this intermediate tensor too (a leaf always gets it)."""
        if self.grad_fn is not None:
            self.grad_fn._retain = True
        return self

    def register_hook(self, hook):
        """Call ``hook(grad)`` each time backward computes this tensor's gradient; if the
        hook returns a Tensor or array, that is used instead. ``.remove()`` on the handle
        it returns takes it off (``torch.Tensor.register_hook``)."""
        return _register_hook(self, hook)

    def detach(self) -> Tensor:
        """The same numbers, cut from the graph (shares memory, like PyTorch)."""
        t = Tensor._make(self.data)
        t._vc = self._vc
        return t

    def clone(self) -> Tensor:
        """A copy of the numbers that stays in the graph (``da = g``)."""
        return _ops.Clone.apply(self)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if self.grad_fn is not None and not flag:
            raise RuntimeError("requires_grad_: only a leaf can stop requiring grad; use detach()")
        self.requires_grad = bool(flag)
        return self

    # ------------------------------------------------------------- in place
    # As in PyTorch: under no_grad (or when nothing requires grad) the numbers
    # change and the version counter goes up. While gradients are recorded, an
    # in-place op on a tensor of the graph records a node, and the tensor's
    # history is rebased onto it; a leaf that requires grad refuses.
    def _inplace(self, what: str, op, value: Any = None, **attrs: Any) -> Tensor:
        """``self = op(self, value)`` in place (``value`` None for a unary op), recorded when
        gradients are: the op runs out of place, its result is copied into ``self.data``,
        and its node becomes ``self``'s history."""
        operands = (self,)
        if value is not None or "idx" in attrs:
            value = value if isinstance(value, Tensor) else as_tensor(_to_array(value, what), like=self)
            operands = (self, value)
        recording = _state.grad_enabled and any(t.requires_grad for t in operands)
        _check_inplace(self, what, operands[1] if len(operands) == 2 else None, attrs, recording)
        if not recording:
            if "idx" in attrs:
                self.data[attrs["idx"]] = value.data
            else:
                op.inplace(*(t.data for t in operands))
            self._vc[0] += 1
            return self
        new = op.apply(*operands, **attrs)
        node = new.grad_fn
        node.forget_input(0)  # the old numbers are about to be overwritten
        np.copyto(self.data, new.data, casting="unsafe")
        self._vc[0] += 1
        node.rebase(self, self.grad_fn)
        self.grad_fn = node
        self.requires_grad = True
        return self

    def add_(self, other: Any) -> Tensor:
        """In place: data += other (recorded in a graph, as in PyTorch). Bumps the version counter."""
        return self._inplace("add_", _ops.Add, other)

    def sub_(self, other: Any) -> Tensor:
        """In place: data -= other. Bumps the version counter."""
        return self._inplace("sub_", _ops.Sub, other)

    def mul_(self, other: Any) -> Tensor:
        """In place: data *= other. Bumps the version counter."""
        return self._inplace("mul_", _ops.Mul, other)

    def div_(self, other: Any) -> Tensor:
        """In place: data /= other. Bumps the version counter."""
        return self._inplace("div_", _ops.Div, other)

    def exp_(self) -> Tensor:
        """In place: data = exp(data). Bumps the version counter."""
        return self._inplace("exp_", _ops.Exp)

    def fill_(self, value: Any) -> Tensor:
        """In place: every element set to ``value`` (a number or a one-element Tensor)."""
        self._inplace("fill_", _ops.SetItem, value, idx=Ellipsis)
        return self

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def __setitem__(self, idx: Any, value: Any) -> None:
        """In place: data[idx] = value (a number, an array, or a Tensor). Bumps the version counter."""
        self._inplace("__setitem__", _ops.SetItem, value, idx=_ops._plain_index(idx))

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
        """``self ** p``: a real number p (op ``pow``) or a Tensor/array p (op ``pow_tensor``)."""
        if _is_real_number(p):
            return _ops.Pow.apply(self, p=p)
        return _ops.PowTensor.apply(self, _real_operand("pow", "exponent", p))

    def __rpow__(self, base):
        """``base ** self`` for a real number or array ``base``: dself = g * y * log(base)."""
        return _ops.PowTensor.apply(_real_operand("pow", "base", base), self)

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

    def logsumexp(self, axis=None, keepdims=False):
        """log(sum(exp(self))) along ``axis``, computed without overflow (``torch.logsumexp``)."""
        return _ops.LogSumExp.apply(self, axis=axis, keepdims=keepdims)

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
        """Mean -log p[i, y_i] of a (N, C) tensor of probabilities (clipped at 1e-12, as in notebook 00).

        This takes probabilities. PyTorch's ``F.cross_entropy`` takes logits: its
        minigrad counterpart is :meth:`cross_entropy_with_logits`.
        """
        return _ops.CrossEntropy.apply(self, target=target)

    def cross_entropy_with_logits(self, target):
        """Fused, stable softmax + cross-entropy on (N, C) logits (PyTorch's ``F.cross_entropy``)."""
        return _ops.CrossEntropyWithLogits.apply(self, target=target)


    # ------------------------------------------------------------- more ops
    # Each is a thin call of an op in ops.py (see the op's docstring for its VJP).
    def abs(self):
        return _ops.Abs.apply(self)

    __abs__ = abs

    def sqrt(self):
        return _ops.Sqrt.apply(self)

    def max(self, axis=None, keepdims=False):
        """The largest values along ``axis`` (values only, like ``torch.amax``; tied
        elements share the gradient evenly)."""
        return _ops.Max.apply(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        """The smallest values along ``axis`` (like ``torch.amin``; ties share the gradient)."""
        return _ops.Min.apply(self, axis=axis, keepdims=keepdims)

    amax, amin = max, min

    def maximum(self, other):
        return _ops.Maximum.apply(self, other)

    def minimum(self, other):
        return _ops.Minimum.apply(self, other)

    def where(self, cond, other):
        """``self`` where the boolean ``cond`` holds, ``other`` elsewhere (``torch.Tensor.where``)."""
        return _ops.where(cond, self, other)

    def squeeze(self, axis=None):
        """Drop axes of size 1 (all of them, or those named; a named axis of another size
        is kept, as in PyTorch). A reshape: its VJP reshapes g back."""
        if axis is None:
            drop = {k for k, n in enumerate(self.shape) if n == 1}
        else:
            _ops._check_axis("squeeze", axis, self.shape)
            axes = axis if isinstance(axis, tuple) else (axis,)
            drop = {int(a) % self.ndim for a in axes if self.shape[a] == 1}
        return _ops.Reshape.apply(self, shape=tuple(n for k, n in enumerate(self.shape) if k not in drop))

    def unsqueeze(self, axis):
        """Insert an axis of size 1 at position ``axis`` (a reshape)."""
        _ops._check_axis("unsqueeze", axis, self.shape, none_ok=False, tuple_ok=False, extra=1)
        k = int(axis) % (self.ndim + 1)
        return _ops.Reshape.apply(self, shape=self.shape[:k] + (1,) + self.shape[k:])

    def flatten(self, start_dim=0, end_dim=-1):
        """Merge axes start_dim..end_dim into one (a reshape; a 0-d tensor becomes shape (1,))."""
        if self.ndim == 0:
            return _ops.Reshape.apply(self, shape=(1,))
        _ops._check_axis("flatten", start_dim, self.shape, none_ok=False, tuple_ok=False)
        _ops._check_axis("flatten", end_dim, self.shape, none_ok=False, tuple_ok=False)
        s, e = int(start_dim) % self.ndim, int(end_dim) % self.ndim
        if s > e:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} "
                             f"for shape {self.shape}")
        merged = int(np.prod(self.shape[s:e + 1]))
        return _ops.Reshape.apply(self, shape=self.shape[:s] + (merged,) + self.shape[e + 1:])

    def permute(self, *axes):
        """Reorder the axes (PyTorch's name for ``transpose(axes)``)."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ops.Transpose.apply(self, axes=axes)

    def broadcast_to(self, shape):
        """Copy along axes to ``shape`` (a read-only view). VJP: sum_to(g, self.shape)."""
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        return _ops.BroadcastTo.apply(self, shape=shape)

    def expand(self, *sizes):
        """``broadcast_to`` with PyTorch's spelling: -1 keeps an existing axis's size."""
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        lead = len(sizes) - self.ndim
        if lead < 0:
            raise ShapeError(f"expand: {len(sizes)} sizes {sizes} are fewer than the "
                             f"{self.ndim} axes of shape {self.shape}")
        shape = []
        for k, n in enumerate(sizes):
            if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
                raise TypeError(f"expand: sizes must be ints, got {sizes!r}")
            if n == -1:
                if k < lead:
                    raise ShapeError(f"expand: -1 is not allowed for the new leading axis {k} "
                                     f"(sizes {sizes}, shape {self.shape})")
                n = self.shape[k - lead]
            shape.append(int(n))
        return _ops.BroadcastTo.apply(self, shape=tuple(shape))

    # ---------------------------------------------------------- comparisons
    # ``==``, ``<`` and the rest compare values and return a boolean NumPy array
    # (usable as a mask: ``x[x > 0]``, ``minigrad.where(x > 0, x, 0.0)``); the result
    # has no gradient. Identity is ``is``. Tensors stay hashable by identity, so
    # they still work as dict keys and set members.
    __hash__ = object.__hash__

    def _compare(self, other, f, symbol: str):
        if isinstance(other, Tensor):
            value = other.data
        elif isinstance(other, (bool, int, float, np.number, np.bool_, np.ndarray, list, tuple)):
            value = np.asarray(other)
            if value.dtype.kind not in "biuf":
                return NotImplemented
        else:
            return NotImplemented
        self._note_read()  # the values leave the graph (a recording trace notes it)
        if isinstance(other, Tensor):
            other._note_read()
        try:
            return f(self.data, value)
        except ValueError:
            raise ShapeError(f"{symbol}: shapes {self.shape} and {value.shape} cannot be "
                             f"broadcast together") from None

    def __eq__(self, other):
        return self._compare(other, np.equal, "==")

    def __ne__(self, other):
        return self._compare(other, np.not_equal, "!=")

    def __lt__(self, other):
        return self._compare(other, np.less, "<")

    def __le__(self, other):
        return self._compare(other, np.less_equal, "<=")

    def __gt__(self, other):
        return self._compare(other, np.greater, ">")

    def __ge__(self, other):
        return self._compare(other, np.greater_equal, ">=")


# ``grad`` is the slot ``_grad`` under its own name, so that ``del t.grad`` can leave None, as
# in PyTorch. Reading and writing go straight to the slot (its own C-level get and set), so
# the property costs no Python call; only ``del`` runs Python.
Tensor.grad = property(Tensor._grad.__get__, Tensor._grad.__set__,
                       lambda t: Tensor._grad.__set__(t, None),
                       doc="dL/d(this tensor): None until a backward pass reaches it")


def _check_inplace(t: Tensor, what: str, value: Tensor | None, attrs: dict, recording: bool) -> None:
    """Raise, before anything changes, if ``t`` cannot take this in-place change."""
    value = t if value is None else value  # a unary op: the operand is t itself
    if value.data.dtype.kind == "c":
        raise TypeError(f"{what}: cannot write complex values into a tensor of dtype {t.dtype}")
    _check_inplace_shape(t, what, value, attrs)
    if not t.data.flags.writeable:  # expand() and broadcast_to() give read-only views
        why = ("a broadcast view (expand or broadcast_to), several of its elements share one memory "
               "location" if t._view is not None else "its array is not writeable")
        raise RuntimeError(f"{what}: this tensor (shape {t.shape}) is read-only: {why}. Call clone() "
                           f"first to get a tensor of its own")
    if t._view is not None:
        _check_inplace_view(t, what)
    if recording and t.grad_fn is None and t.requires_grad:
        raise RuntimeError(
            f"{what}: a leaf that requires grad (shape {t.shape}) cannot be changed "
            f"in place while gradients are recorded; wrap the update in "
            f"`with minigrad.no_grad():` or use the out-of-place op")
    if recording and t._view is not None:
        raise RuntimeError(
            f"{what}: this tensor (shape {t.shape}) is a view made by '{t.op}' of another "
            f"tensor; minigrad does not record in-place changes through a view. Change the "
            f"base tensor out of place, or call clone() on the view first.")


def _check_inplace_view(t: Tensor, what: str) -> None:
    """A view of a leaf that requires grad cannot change in place while gradients are recorded."""
    base = t._view[1]
    if base.requires_grad and base.grad_fn is None and _state.grad_enabled:
        raise RuntimeError(
            f"{what}: this tensor (shape {t.shape}) is a view of a leaf that requires grad "
            f"(shape {base.shape}); changing it in place would change the leaf behind the "
            f"graph's back. Wrap the change in `with minigrad.no_grad():`, or clone() the view")


def _check_inplace_shape(t: Tensor, what: str, value: Tensor, attrs: dict) -> None:
    """An in-place op keeps the shape: the operand must broadcast to the part it writes."""
    target = t.data if "idx" not in attrs else _index_target(t, what, attrs["idx"])
    try:
        shape = np.broadcast_shapes(target.shape, value.shape)
    except ValueError:
        shape = None
    if shape == target.shape:
        return
    if "idx" in attrs:
        raise ShapeError(f"{what}: cannot set index {attrs['idx']!r} of a tensor of shape "
                         f"{t.shape} to a value of shape {value.shape}: the indexed part "
                         f"has shape {target.shape}")
    raise ShapeError(f"{what}: the operand of shape {value.shape} cannot be broadcast to "
                     f"the tensor's shape {target.shape} (an in-place op keeps the shape)")


def _is_real_number(p: Any) -> bool:
    return isinstance(p, (bool, int, float, np.integer, np.floating, np.bool_))


def _real_operand(op: str, what: str, v: Any) -> Any:
    """A Tensor, or a real number or numeric array to wrap as a constant; else TypeError."""
    if isinstance(v, Tensor) or _is_real_number(v):
        return v
    if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
        return v
    kind = (f"a complex number ({v!r}); minigrad's tensors are real"
            if isinstance(v, (complex, np.complexfloating)) or
            (isinstance(v, np.ndarray) and v.dtype.kind == "c")
            else f"{type(v).__name__} {v!r}")
    raise TypeError(f"{op}: the {what} must be a real number, a Tensor or a numeric array, got {kind}")


def _to_array(data: Any, where: str) -> np.ndarray:
    """``np.asarray(data)``, or a clear error for ragged lists and non-numbers."""
    try:
        arr = np.asarray(data)
    except ValueError as e:
        raise ValueError(f"{where}: the data is ragged (nested lists of different lengths, "
                         f"e.g. [[1, 2], [3]]) or otherwise not a rectangular array: {e}") from None
    _check_numeric(arr, where)
    return arr


def _index_target(t: Tensor, what: str, idx: Any) -> np.ndarray:
    try:
        return t.data[idx]
    except (IndexError, TypeError) as e:
        raise IndexError(f"{what}: cannot set index {idx!r} of a tensor of shape {t.shape}: {e}") from None


_FLOAT64 = np.dtype(np.float64)


def _constant_dtype(like: Tensor | None, dtype: np.dtype) -> np.dtype:
    """The dtype of a constant (a number or array of ``dtype``) used beside ``like``.

    ``like``'s float dtype; with no float beside it (no tensor, or a bool mask) a bool
    array stays a mask, as ``Tensor`` keeps it, and anything else is float64: as in
    PyTorch, ``mask * 0.5`` is a float. Ops and ``as_tensor`` both follow this rule.
    """
    if like is not None and like.data.dtype.kind == "f":
        return like.data.dtype
    return dtype if dtype.kind == "b" else _FLOAT64


def as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """Wrap a number or array as a constant leaf, in ``like``'s float dtype.

    Without a float ``like`` (none, or a bool mask), see :func:`_constant_dtype`.

    A NumPy array is copied: an op may save its operand for backward, and the
    caller refilling the array before ``backward()`` must not change the gradient.
    """
    if isinstance(x, Tensor):
        return x
    arr = _to_array(x, "as_tensor")
    dt = _constant_dtype(like, arr.dtype)
    if arr.dtype != dt:
        arr = arr.astype(dt)
    elif isinstance(x, np.ndarray):
        arr = arr.copy()
    return Tensor._make(arr)


# The core's import cycle, closed where a reader sees it: Tensor's methods call the ops and
# the engine, and both modules build on Tensor, which is complete by this line.
from . import engine as _engine  # noqa: E402
from . import ops as _ops  # noqa: E402
from .function import ShapeError, _dead, _state  # noqa: E402
from .function import register_hook as _register_hook  # noqa: E402
