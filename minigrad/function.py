"""How an op records itself in the graph of backward nodes.

Every op is a subclass of :class:`Function` with two static methods that sit
side by side in ``ops.py``:

* ``forward(ctx, *arrays, **attrs) -> array`` computes the output from raw
  NumPy arrays and keeps on ``ctx`` (``ctx.save_for_backward``) what the
  backward pass will need, and only that: ``ctx.needs_input_grad`` says which
  inputs need a gradient;
* ``backward(ctx, g) -> tuple`` is the vector-Jacobian product (VJP): given
  ``g = dL/d(output)`` it returns ``dL/d(input)`` for each input (or ``None``).

``Function.apply`` runs ``forward`` and, when some input requires grad and
recording is on, makes ``ctx`` a node of the graph: the output's ``grad_fn``.
The node keeps what the op saved and one edge per input (``ctx.parents``): the
input's own node, the :class:`AccumulateGrad` of a leaf that requires grad, or
``None``. It does not keep the input or output tensors themselves, as PyTorch's
nodes do not. The node is all the engine ever sees of an op, so the engine
never needs to know an op by name. Grad mode, anomaly mode and hooks are kept
per thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
import traceback
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["AnomalyError", "AccumulateGrad", "Context", "Function", "gradient_edge", "no_grad", "enable_grad",
           "is_grad_enabled", "detect_anomaly", "is_anomaly_enabled"]


class _State(threading.local):
    """Grad mode, anomaly mode and hooks: one set per thread, as PyTorch's grad mode is."""

    def __init__(self) -> None:
        self.grad_enabled = True
        self.anomaly = False
        self.hooks: tuple = ()  # callables(event, fn, inputs, output, attrs): see minigrad.hooks
        self.reuse = None       # an iterator of kept outputs, during a selective recomputation


_state = _State()

# Function.apply makes Tensors and tensor.py is loaded after this module: minigrad/__init__.py,
# the one place where the core's import cycle is broken, sets these three.
Tensor: Any = None
as_tensor: Any = None
_make_tensor: Any = None  # Tensor._make


def is_grad_enabled() -> bool:
    return _state.grad_enabled


class _GradMode(contextlib.ContextDecorator):
    """Context manager (and decorator) that switches recording on or off."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._prev: list[bool] = []

    def __enter__(self):
        self._prev.append(_state.grad_enabled)
        _state.grad_enabled = self.enabled
        return self

    def __exit__(self, *exc):
        _state.grad_enabled = self._prev.pop()
        return False


def no_grad() -> _GradMode:
    """Record nothing inside this block: outputs are plain leaves with no parents.

    Use it for inference, for parameter updates, and anywhere a value must not
    become part of a graph. Works as ``with no_grad():`` and as ``@no_grad()``.
    """
    return _GradMode(False)


def enable_grad() -> _GradMode:
    """Turn recording back on inside a ``no_grad`` block."""
    return _GradMode(True)


def is_anomaly_enabled() -> bool:
    return _state.anomaly


@contextlib.contextmanager
def detect_anomaly():
    """Check every forward output and every backward gradient for NaN/inf.

    Inside this block each op also remembers where in the user's code it was
    created, so that the error can point at that line. It is slow; use it only
    while hunting a NaN.
    """
    prev = _state.anomaly
    _state.anomaly = True
    try:
        yield
    finally:
        _state.anomaly = prev


def _user_frame_summary() -> traceback.FrameSummary | None:
    """The innermost stack frame outside the minigrad package (the user's line)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not os.path.abspath(frame.filename).startswith(here + os.sep):
            return frame
    return None


def _format_frame(frame: traceback.FrameSummary | None) -> str:
    if frame is None:
        return "<unknown>"
    return f"{frame.filename}:{frame.lineno} in {frame.name}\n    {frame.line or ''}".rstrip()


def _user_frame() -> str:
    """The innermost stack frame outside the minigrad package, as 'file:line in fn'."""
    return _format_frame(_user_frame_summary())


def _dead() -> None:
    """A reference that leads nowhere: a value that no longer exists as a tensor."""
    return None


class Context:
    """One backward node of the graph (PyTorch's ``grad_fn``): what one op call keeps.

    A tensor made by an op keeps its node, and the node keeps only what the op's
    backward needs. It does *not* keep the op's input tensors or its output:
    a value that no node saved is freed as soon as user code drops it.

    Fields:
        fn: the Function subclass that made the output (``fn.name`` is the op's name).
        saved: the arrays kept by ``save_for_backward``; ``None`` once released.
        needs_input_grad: one bool per input, so an op saves, and its VJP computes,
            only what some input needs.
        parents: the graph's edges, one per input in operand order: the input's own
            node (its ``grad_fn``, or the :class:`AccumulateGrad` of a leaf that
            requires grad), or ``None`` for an input that needs no gradient.
            PyTorch calls these ``next_functions``.
        versions: for each saved array that is an input's (or the output's) data,
            ``(version counter, version at save time, which)``, to catch an in-place
            change before backward reads it.
        roles: for each saved value, the index of the input it is, -1 for the
            output, or None for an array the op made.
    Ops may also put small attributes on the node (an axis, a shape, an index).
    """

    # The fixed fields live in slots (one node is made per op call); an op's own
    # attributes go to __dict__, so ``vars(ctx)`` holds exactly those.
    # ``roles``: per saved value, the input index, -1 (the output) or None (an array the op made).
    __slots__ = ("fn", "saved", "needs_input_grad", "parents", "_inputs", "out_shape", "_out",
                 "roles", "versions", "__dict__", "__weakref__")
    # Rarely set, so class-level defaults: an instance sets them (in __dict__) only when needed.
    _retain = False               # the output asked for retain_grad()
    _freed_by: str | None = None  # why the saved values were freed, if an error did it
    created_at: str | None = None  # 'file:line in fn' (anomaly mode only)
    created_frame = None

    def __init__(self, fn: type[Function], needs_input_grad: tuple[bool, ...]):
        # Only what forward reads (and empty roles and versions) is set here; a recorded
        # node gets the rest in _link (an op call that records nothing never needs it).
        self.fn = fn
        self.saved: tuple | None = ()
        self.needs_input_grad = needs_input_grad
        self.roles = self.versions = ()

    @property
    def name(self) -> str:
        return self.fn.name

    @property
    def next_functions(self) -> tuple:
        """PyTorch's spelling of :attr:`parents`: ``((node, 0), ...)``."""
        return tuple((p, 0) for p in self.parents)

    @property
    def output(self):
        """The tensor this node made, if Python still holds it (else None)."""
        return self._out()

    @property
    def inputs(self) -> tuple:
        """The input tensors, each if Python still holds it (else None), in operand order.

        An input with an edge is found through it (a leaf's accumulator holds the
        leaf; an op's node knows its output weakly); a constant, by a weak reference.
        """
        out = []
        for p, r in zip(self.parents, self._inputs):
            out.append(r() if p is None else p.output)
        return tuple(out)

    def save_for_backward(self, *values: Any) -> None:
        """Keep these arrays until backward has used them (``None`` entries keep nothing)."""
        self.saved = values

    @property
    def released(self) -> bool:
        return self.saved is None

    def arrays(self) -> list[np.ndarray]:
        """Every array this node keeps for backward: saved values and array attributes.

        The one list that release, ``saved_nbytes``, ``minigrad.inspect`` and the
        memory profiler all read.
        """
        out = [v for v in (self.saved or ()) if isinstance(v, np.ndarray)]
        for v in vars(self).values():
            out += _arrays(v)
        return out

    def saved_nbytes(self) -> int:
        """Bytes held by the arrays of this node (each array once)."""
        seen: dict[int, int] = {}
        for a in self.arrays():
            seen[id(a)] = a.nbytes
        return sum(seen.values())

    def release(self, reason: str | None = None) -> None:
        """Drop everything kept for backward; a later backward then fails clearly."""
        self.saved = None
        attrs = self.__dict__
        if reason is not None:
            attrs["_freed_by"] = reason
        for k, v in attrs.items():
            if (type(v) is np.ndarray or type(v) is tuple) and _arrays(v):
                attrs[k] = None  # a new value for an existing key: safe while iterating

    def __repr__(self) -> str:
        return f"<{self.fn.__name__}Backward>"


class _AccumulateGradFn:
    """What an :class:`AccumulateGrad` node stands for (it runs no VJP)."""

    __name__ = "AccumulateGrad"
    name = "accumulate_grad"


class AccumulateGrad:
    """The node through which the graph reaches a leaf that requires grad.

    It holds the leaf (``variable``); the gradient that arrives here is added into
    ``variable.grad`` once the whole backward pass has succeeded. The leaf refers to
    it only weakly, so a graph that is dropped takes its accumulator with it.
    """

    __slots__ = ("variable", "__weakref__")
    fn = _AccumulateGradFn
    name = _AccumulateGradFn.name
    parents: tuple = ()
    saved: tuple = ()
    versions: tuple = ()
    needs_input_grad: tuple = ()
    released = False
    _retain = False
    _freed_by = None

    def __init__(self, variable):
        self.variable = variable

    @property
    def next_functions(self) -> tuple:
        return ()

    @property
    def output(self):
        return self.variable

    @property
    def out_shape(self) -> tuple:
        return self.variable.data.shape

    @property
    def inputs(self) -> tuple:
        return ()

    def arrays(self) -> list:
        return []

    def saved_nbytes(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


def gradient_edge(t) -> Context | AccumulateGrad | None:
    """The node a gradient for ``t`` flows into: its ``grad_fn``, its leaf accumulator, or None."""
    f = t.grad_fn
    if f is not None:
        return f
    if not t.requires_grad:
        return None
    acc = t._acc()
    if acc is None:
        acc = _new(AccumulateGrad)  # AccumulateGrad(t), without the call's overhead
        acc.variable = t
        t._acc = weakref.ref(acc)
    return acc


def _arrays(v: Any) -> list[np.ndarray]:
    """The arrays in a node attribute: the attribute itself, or inside a tuple (an index).

    Every array an op keeps is a plain ``np.ndarray``, so the type is compared
    exactly; a tuple of shapes or axes is passed over without a Python loop.
    """
    if type(v) is _ndarray:
        return [v]
    if type(v) is tuple and _ndarray in map(type, v):
        return [a for a in v if type(a) is _ndarray]
    return []


_ndarray = np.ndarray


class Function:
    """Base class of every op. Subclasses set ``name`` and define forward/backward."""

    name = ""
    is_view = False       # True when the output always shares memory with input 0
    may_be_view = False   # True when it sometimes does (basic vs advanced indexing)

    @staticmethod
    def forward(ctx: Context, *arrays: np.ndarray, **attrs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        raise NotImplementedError

    @classmethod
    def forward_kept(cls, ctx: Context, out: np.ndarray, *arrays: np.ndarray, **attrs: Any) -> np.ndarray:
        """Record this op when its output ``out`` is already known (selective recomputation).

        It must save what ``forward`` would save. By default it simply runs ``forward``;
        an op whose output is expensive (matmul) saves without computing.
        """
        cls.forward(ctx, *arrays, **attrs)
        return out

    @classmethod
    def apply(cls, *inputs: Any, **attrs: Any):
        # Every op call passes through here, so it is written for speed: plain
        # loops, locals, no generator expressions, the common case first.
        arrays, needs = [], []
        for t in inputs:
            if type(t) is not Tensor and not isinstance(t, Tensor):
                # numbers and arrays become constant leaves
                return cls.apply(*_wrap_constants(inputs), **attrs)
            arrays.append(t.data)
            needs.append(t.requires_grad)
        state = _state
        record = True in needs and state.grad_enabled
        ctx = _new(Context)  # Context(cls, needs), without the call's overhead
        ctx.fn = cls
        ctx.saved = ()
        ctx.needs_input_grad = tuple(needs) if record else (False,) * len(needs)
        if state.reuse is None:
            data = cls.forward(ctx, *arrays, **attrs) if attrs else cls.forward(ctx, *arrays)
            event = "forward"
        else:
            kept = next(state.reuse, None)
            if kept is None:
                data, event = cls.forward(ctx, *arrays, **attrs), "forward"
            else:
                data, event = cls.forward_kept(ctx, kept, *arrays, **attrs), "reused"
        if type(data) is not np.ndarray:  # NumPy reductions return scalars
            raw, data = data, np.asarray(data)
            if ctx.saved:  # a saved output must stay the output itself
                ctx.saved = tuple(data if v is raw else v for v in ctx.saved)
        out = _make_tensor(data, record, ctx if record else None)
        if cls.is_view or (cls.may_be_view and np.may_share_memory(data, arrays[0])):
            out._vc = inputs[0]._vc  # an in-place change of either is seen by both
            out._view = out._vc[0]
        if record:
            _link(ctx, inputs, arrays, out)
        if state.hooks:  # observers: trace, jvp, the memory profiler, count_ops
            for hook in state.hooks:
                hook(event, cls, inputs, out, attrs)
        if state.anomaly:
            _check_forward(cls.name, data)
            if record:
                ctx.created_frame = _user_frame_summary()
                ctx.created_at = _format_frame(ctx.created_frame)
        return out


_new = object.__new__


def _link(ctx: Context, tensors: Sequence, arrays: list, out) -> None:
    """Give a recorded node its edges, its weak references, and its version stamps."""
    edges, inputs = [], []
    for t in tensors:
        if t._view is not None and t.grad_fn is not None and t._vc[0] != t._view:
            raise RuntimeError(
                f"{ctx.name}: an input (shape {t.shape}) is a view made by '{t.op}' whose base "
                f"was changed in place after the view was made; its recorded history no longer "
                f"matches its values. Make the view again after the in-place change.")
        # An input with an edge is reached through it (node.inputs); a constant only weakly.
        if not t.requires_grad:
            edges.append(None)
            inputs.append(_weakref(t))
        elif t.grad_fn is not None:
            edges.append(t.grad_fn)
            inputs.append(None)
        else:
            acc = t._acc()
            edges.append(acc if acc is not None else gradient_edge(t))
            inputs.append(None)
    ctx.parents = tuple(edges)
    ctx._inputs = tuple(inputs)
    ctx._out = _weakref(out)
    ctx.out_shape = out.data.shape  # known after the output is freed too
    saved = ctx.saved
    if saved:
        roles, versions = [], []
        out_data = out.data
        for v in saved:
            if v is None:
                roles.append(None)
            elif v is out_data:
                roles.append(-1)
                versions.append((out._vc, out._vc[0], -1))
            else:
                i = 0
                for a in arrays:
                    if v is a:
                        vc = tensors[i]._vc
                        versions.append((vc, vc[0], i))
                        break
                    i += 1
                else:
                    i = None
                roles.append(i)
        ctx.roles = tuple(roles)
        ctx.versions = tuple(versions)
    else:
        ctx.roles = ctx.versions = ()


_weakref = weakref.ref


def _wrap_constants(inputs: tuple) -> tuple:
    """Wrap every input that is not a Tensor as a constant, in the first Tensor's dtype."""
    first = next((t for t in inputs if isinstance(t, Tensor)), None)
    return tuple(t if isinstance(t, Tensor) else as_tensor(t, like=first) for t in inputs)


class AnomalyError(RuntimeError):
    """Raised inside ``detect_anomaly()`` at the first NaN or inf.

    Besides the message it carries ``op`` (the op's name), ``phase``
    ("forward" or "backward") and ``frame`` (a ``traceback.FrameSummary`` of the
    user's line that called the op, or None), for programs that report it.
    """

    def __init__(self, message: str, op: str = "", phase: str = "",
                 frame: traceback.FrameSummary | None = None):
        super().__init__(message)
        self.op, self.phase, self.frame = op, phase, frame


def _check_forward(name: str, data: np.ndarray) -> None:
    if not np.all(np.isfinite(data)):
        frame = _user_frame_summary()
        raise AnomalyError(
            f"detect_anomaly: the forward pass of '{name}' produced "
            f"{_describe_nonfinite(data)} in its output of shape {data.shape}.\n"
            f"The op was called at {_format_frame(frame)}",
            op=name, phase="forward", frame=frame)


def _describe_nonfinite(a: np.ndarray) -> str:
    n_nan = int(np.isnan(a).sum())
    n_inf = int(np.isinf(a).sum())
    parts = [f"{n_nan} NaN" if n_nan else "", f"{n_inf} inf" if n_inf else ""]
    return " and ".join(p for p in parts if p)


