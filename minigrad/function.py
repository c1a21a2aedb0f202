"""How an op records itself in the graph.

Every op is a subclass of :class:`Function` with two static methods that sit
side by side in ``ops.py``:

* ``forward(ctx, *arrays, **attrs) -> array`` computes the output from raw
  NumPy arrays and stores on ``ctx`` whatever the backward pass will need;
* ``backward(ctx, g) -> tuple`` is the vector-Jacobian product (VJP): given
  ``g = dL/d(output)`` it returns ``dL/d(input)`` for each input (or ``None``).

``Function.apply`` runs ``forward`` and, when some input requires grad and
recording is on, links the output to its parents through the ``ctx``. The ``ctx``
is the node PyTorch calls ``grad_fn``: it is all the engine ever sees of an op,
so the engine never needs to know an op by name.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from typing import Any

import numpy as np

__all__ = ["AnomalyError", "Context", "Function", "no_grad", "enable_grad",
           "is_grad_enabled", "detect_anomaly", "is_anomaly_enabled"]


class _State:
    grad_enabled = True
    anomaly = False
    hooks: tuple = ()  # callables(event, fn, inputs, output, attrs): see minigrad.hooks


_state = _State()


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


class Context:
    """What one op call keeps for its backward pass (PyTorch's ``grad_fn``).

    Fields:
        fn: the Function subclass that made the output.
        saved: the arrays kept by ``save_for_backward``; ``None`` once released.
        needs_input_grad: one bool per input, so a VJP can skip work nobody needs.
        versions: the inputs' version counters at save time (in-place detection).
    Ops may also put small attributes on the ctx (an axis, a mask, a target).
    """

    # The fixed fields live in slots (one ctx is made per op call); an op's own
    # attributes go to __dict__, so ``vars(ctx)`` holds exactly those.
    __slots__ = ("fn", "saved", "needs_input_grad", "versions", "created_at", "created_frame", "__dict__",
                 "__weakref__")

    def __init__(self, fn: type[Function], needs_input_grad: tuple[bool, ...]):
        self.fn = fn
        self.saved: tuple | None = ()
        self.needs_input_grad = needs_input_grad
        self.versions: tuple[int, ...] = ()
        self.created_at: str | None = None        # 'file:line in fn' (anomaly mode only)
        self.created_frame: traceback.FrameSummary | None = None

    @property
    def name(self) -> str:
        return self.fn.name

    def save_for_backward(self, *values: Any) -> None:
        """Keep these arrays until backward has used them."""
        self.saved = values

    @property
    def released(self) -> bool:
        return self.saved is None

    def saved_nbytes(self) -> int:
        """Bytes held by the saved arrays (and array attributes) of this node."""
        total = 0
        for v in (self.saved or ()):
            if isinstance(v, np.ndarray):
                total += v.nbytes
        for k, v in vars(self).items():
            if k != "saved":
                total += sum(a.nbytes for a in _arrays(v))
        return total

    def release(self) -> None:
        """Drop everything kept for backward; a second backward then fails clearly."""
        self.saved = None
        attrs = vars(self)
        for k, v in attrs.items():
            if _arrays(v):
                attrs[k] = None  # a new value for an existing key: safe while iterating

    def __repr__(self) -> str:
        return f"<{self.fn.__name__}Backward>"


def _arrays(v: Any) -> list[np.ndarray]:
    """The arrays in a ctx attribute: the attribute itself, or inside a tuple (an index)."""
    if isinstance(v, np.ndarray):
        return [v]
    if isinstance(v, tuple):
        return [a for a in v if isinstance(a, np.ndarray)]
    return []


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
    def apply(cls, *inputs: Any, **attrs: Any):
        # Every op call passes through here, so it is written for speed: one
        # plain loop, locals, no generator expressions, the common case first.
        tensors = inputs
        for t in inputs:
            if not isinstance(t, Tensor):  # numbers and arrays become constant leaves
                tensors = _wrap_constants(inputs)
                break
        needs, arrays, versions = [], [], []
        for t in tensors:
            needs.append(t.requires_grad)
            arrays.append(t.data)
            versions.append(t._vc[0])
        state = _state
        record = state.grad_enabled and True in needs
        ctx = Context(cls, tuple(needs) if record else ())
        data = cls.forward(ctx, *arrays, **attrs)
        if type(data) is not np.ndarray:  # NumPy reductions return scalars
            raw, data = data, np.asarray(data)
            if ctx.saved:  # a saved output must stay the output itself (create_graph needs it)
                ctx.saved = tuple(data if v is raw else v for v in ctx.saved)
        if not record:
            out = Tensor._make(data, False, (), "", None)
        else:
            out = Tensor._make(data, True, tensors, cls.name, ctx)
        if cls.is_view or (cls.may_be_view and np.may_share_memory(data, tensors[0].data)):
            out._vc = tensors[0]._vc  # an in-place change of either is seen by both
        if record and ctx.saved:  # version stamps, to catch a later in-place change
            versions.append(out._vc[0])
            ctx.versions = tuple(versions)
        if state.hooks:  # observers: trace, jvp, the memory profiler, count_ops
            for hook in state.hooks:
                hook("forward", cls, tensors, out, attrs)
        if state.anomaly:
            _check_forward(cls.name, data)
            if record:
                ctx.created_frame = _user_frame_summary()
                ctx.created_at = _format_frame(ctx.created_frame)
        return out


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



from .tensor import Tensor, as_tensor  # noqa: E402  (tensor.py imports this module first)
