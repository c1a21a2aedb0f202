"""What ``trace`` and ``compile`` must see besides the ops: the rest of a step's effects.

The op hooks (:mod:`minigrad.hooks`) show every op, every VJP and every
gradient the engine hands a leaf. A training step does more than that, and a
recorder that missed it would replay something other than what eager does:

* an optimizer changes parameters and its own state with NumPy, outside the
  ops, and a dropout layer draws random numbers: both announce themselves to
  the *observers* here (:func:`notify`), which cost one empty-list check when
  nobody records;
* Python may read a tensor's ``.data`` or ``.grad``, or its truth value, and
  so take a value out of the graph; writes to ``.grad`` (``zero_grad``, the
  engine's accumulation) are part of the step; an in-place op on a tensor that
  records no graph changes numbers no hook sees. :func:`watch` makes these
  visible while a recording runs, by putting reporting versions of those
  attributes on :class:`~minigrad.tensor.Tensor` for the duration (as a
  debugger's watchpoint does), and puts the plain ones back afterwards.

Only the thread that records is reported; the package's own reads (an op
reading its inputs, the engine reading ``.grad``) are not reads out of the graph.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .tensor import Tensor

__all__ = ["observers", "notify", "watch"]

#: Callables ``observer(kind, *args)``; see :func:`notify`.
observers: list[Callable] = []


def notify(kind: str, *args: Any) -> None:
    """Tell every observer about an effect outside the ops.

    ``("step", optimizer, live)``: ``optimizer.step()`` is about to update the
    parameters ``live`` (a list of ``(index, parameter)``), after its checks passed.
    ``("random", tensor, redraw)``: ``tensor`` holds freshly drawn random numbers,
    and ``redraw()`` draws the next ones in the same way (dropout's mask).
    """
    for obs in list(observers):
        obs(kind, *args)


# The package's modules whose reads of .data are not reads out of the graph, and those
# that read or write .grad as part of a step (the engine accumulates, optimizers read).
# The layers (minigrad.nn) are user-level code: BatchNorm computing running statistics from
# x.data, or clip_grad_norm reading .grad, take values out of the graph as user code would.
_DATA_OK = "minigrad."
_GRAD_OK = frozenset({"minigrad.engine", "minigrad.optim", "minigrad.tensor", "minigrad.nn",
                      "minigrad.compiling", "minigrad.tracing", "minigrad.capture"})
_GRAD_READ_OK = frozenset({"minigrad.engine", "minigrad.optim", "minigrad.compiling",
                           "minigrad.tracing", "minigrad.capture"})


def _internal(module: str) -> bool:
    """A read by this module is the package's own bookkeeping, not a value leaving the graph."""
    return module.startswith(_DATA_OK) and module != "minigrad.nn"
_SHAPE_ATTRS = ("shape", "size", "ndim")


_UNSET = object()


def _caller(depth: int = 2) -> str:
    return sys._getframe(depth).f_globals.get("__name__", "")


@contextlib.contextmanager
def watch(report: Callable[..., Any]) -> Iterator[None]:
    """Call ``report(kind, tensor, *details)`` for what the op hooks cannot see.

    ``kind`` is ``"read"`` (Python read ``.data``, ``.grad`` or the truth value;
    detail: what was read), ``"shape"`` (Python read a shape, size or length),
    ``"grad"`` (``.grad`` is being set; details: the new value, the writing module, the old value),
    ``"data"`` (``.data`` was replaced from outside the package) or ``"inplace"``
    (an in-place op; details: its name, op class, operand and attributes, called
    *before* the change; ``report`` may raise to refuse it).
    """
    me = threading.get_ident()
    saved = {k: Tensor.__dict__[k] for k in ("data", "grad", "dtype", "__bool__", "__len__",
                                             "_inplace") + _SHAPE_ATTRS}
    slot_data, slot_grad = saved["data"], saved["grad"]

    def get_data(self):
        if threading.get_ident() == me and not _internal(_caller()):
            report("read", self, ".data")
        return slot_data.__get__(self, Tensor)

    def set_data(self, value):
        if threading.get_ident() == me and not _internal(_caller()):
            report("data", self, value)
        slot_data.__set__(self, value)

    def get_grad(self):
        if threading.get_ident() == me and _caller() not in _GRAD_READ_OK:
            report("read", self, ".grad")
        return slot_grad.__get__(self, Tensor)

    def set_grad(self, value):
        if threading.get_ident() == me:
            try:
                old = slot_grad.__get__(self, Tensor)
            except AttributeError:  # a tensor being made: not a write into an existing .grad
                old = _UNSET
            if old is not _UNSET:
                report("grad", self, value, _caller(), old)
        slot_grad.__set__(self, value)

    def del_grad(self):
        set_grad(self, None)

    def shape_prop(name):
        def get(self):
            if threading.get_ident() == me and not _caller().startswith(_DATA_OK):
                report("shape", self, name)
            return getattr(slot_data.__get__(self, Tensor), name)  # not a read of .data
        return property(get)

    def as_bool(self):
        if threading.get_ident() == me:
            report("read", self, "bool()")
        return saved["__bool__"](self)

    def length(self):
        if threading.get_ident() == me and not _caller().startswith(_DATA_OK):
            report("shape", self, "len()")
        return saved["__len__"](self)

    def inplace(self, what, op, value, **attrs):
        if threading.get_ident() == me:
            report("inplace", self, what, op, value, attrs)
        return saved["_inplace"](self, what, op, value, **attrs)

    Tensor.data = property(get_data, set_data)
    Tensor.dtype = property(lambda self: slot_data.__get__(self, Tensor).dtype)  # not a read
    Tensor.grad = property(get_grad, set_grad, del_grad)
    Tensor.__bool__ = as_bool
    Tensor.__len__ = length
    Tensor._inplace = inplace
    for name in _SHAPE_ATTRS:
        setattr(Tensor, name, shape_prop(name))
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(Tensor, k, v)


def _user_line() -> str:
    """The innermost line outside the package, as 'file:line in fn' (for error messages)."""
    from .function import _user_frame
    return _user_frame()
