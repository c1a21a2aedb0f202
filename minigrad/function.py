"""How an op records itself in the graph of backward nodes.

Every op is a subclass of :class:`Function` (see ``ops.py``) that carries, side
by side, everything the package knows about it, as one entry of PyTorch's
``derivatives.yaml`` does:

* ``forward(ctx, *arrays, **attrs) -> array`` computes the output from NumPy
  arrays and keeps on ``ctx`` (``ctx.save_for_backward``) what the backward
  pass will need, and only that: ``ctx.needs_input_grad`` says which inputs
  need a gradient;
* ``backward(ctx, g) -> tuple`` is the vector-Jacobian product (VJP): given
  ``g = dL/d(output)`` it returns ``dL/d(input)`` for each input (or ``None``).
  A ``forward`` that returns a tuple of arrays makes an op with several
  outputs, as in PyTorch: ``apply`` returns one Tensor per output, and
  ``backward(ctx, g0, g1, ...)`` gets one gradient per output (zeros for an
  output that was not used);
* ``jvp(dots, args, out, **attrs) -> array`` is the forward-mode rule: the
  output's tangent from the inputs' tangents (see ``minigrad.forward``);
* facts other code asks about: ``elementwise`` (out[i] depends on in[i] only,
  so graph passes may fuse it), ``view`` (the output shares memory with input 0:
  ``True``, or ``"maybe"`` when that depends on the arguments).

``Function.apply`` runs ``forward`` and, when some input requires grad and recording
is on, makes ``ctx`` a node of the graph: the output's ``grad_fn``. It takes four
steps: read the inputs' arrays, run ``forward``, wrap the output, and link the node
(one edge per input, and a record of each saved value that is an input's data or
the output's, with its version: a :class:`SavedValue`'s fields). Hooks, anomaly
mode and selective recomputation are off almost always; when one is on, ``apply``
takes their own path (``_apply_observed``), which adds them around the same four
steps. The node keeps what the op saved and its edges, never the input or output
tensors themselves, as PyTorch's nodes do. The engine sees nothing of an op but its
node, so it never knows an op by name. Grad mode, anomaly mode and hooks are kept per
thread.
"""

from __future__ import annotations

import contextlib
import functools
import inspect as _pyinspect
import itertools
import os
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = ["AnomalyError", "ShapeError", "AccumulateGrad", "Context", "Function", "Output", "SavedValue",
           "gradient_edge", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "detect_anomaly",
           "is_anomaly_enabled"]


class _State(threading.local):
    """Grad mode and the switches that send ops down the observed path, per thread.

    ``observed`` is true while any of hooks, anomaly mode or a selective
    recomputation is on: the one flag ``Function.apply`` reads for all three.
    Setting any of the three updates it.
    """

    def __init__(self) -> None:
        self.grad_enabled = True
        self._anomaly = False
        self._hooks: tuple = ()  # callables(event, fn, inputs, output, attrs): see minigrad.hooks
        self._reuse = None       # an iterator of kept outputs, during a selective recomputation
        self.observed = False

    def _switch(name: str):  # noqa: N805 (a property factory, run in the class body)
        def get(self):
            return getattr(self, name)

        def set_(self, value):
            setattr(self, name, value)
            self.observed = bool(self._anomaly or self._hooks or self._reuse is not None)
        return property(get, set_)

    anomaly = _switch("_anomaly")
    hooks = _switch("_hooks")
    reuse = _switch("_reuse")
    del _switch


_state = _State()


# ------------------------------------------------------------------ grad mode


def is_grad_enabled() -> bool:
    return _state.grad_enabled


class _GradMode(contextlib.ContextDecorator):
    """Context manager (and decorator) that switches recording on or off.

    As a decorator of a generator function it holds the mode inside the
    generator's body, between its ``yield``s too, as PyTorch's does.
    """

    def __init__(self, enabled: bool):
        self.enabled = bool(enabled)
        self._prev: list[bool] = []

    def __enter__(self):
        self._prev.append(_state.grad_enabled)
        _state.grad_enabled = self.enabled
        return self

    def __exit__(self, *exc):
        _state.grad_enabled = self._prev.pop()
        return False

    def __call__(self, fn):
        if not _pyinspect.isgeneratorfunction(fn):
            return super().__call__(fn)
        enabled = self.enabled

        @functools.wraps(fn)
        def generator(*args, **kwargs):
            gen = fn(*args, **kwargs)
            sent = None
            while True:  # the mode holds while the body runs, and is undone at each yield
                with _GradMode(enabled):
                    try:
                        value = gen.send(sent)
                    except StopIteration as stop:
                        return stop.value
                try:
                    sent = yield value
                except GeneratorExit:
                    gen.close()
                    raise
                except BaseException as e:  # thrown in: deliver it inside the mode
                    with _GradMode(enabled):
                        try:
                            value = gen.throw(e)
                        except StopIteration as stop:
                            return stop.value
                    sent = yield value
        return generator


def no_grad() -> _GradMode:
    """Record nothing inside this block: outputs are plain leaves with no parents.

    Use it for inference, for parameter updates, and anywhere a value must not
    become part of a graph. Works as ``with no_grad():`` and as ``@no_grad()``.
    """
    return _GradMode(False)


def enable_grad() -> _GradMode:
    """Turn recording back on inside a ``no_grad`` block."""
    return _GradMode(True)


def set_grad_enabled(mode: bool) -> _GradMode:
    """Recording on (``True``) or off (``False``), as ``torch.set_grad_enabled``.

    Called as a function it switches the mode at once (and returns a context
    manager that would switch it back on exit); ``with set_grad_enabled(m):``
    holds it for a block.
    """
    if not isinstance(mode, (bool, np.bool_)):
        raise TypeError(f"set_grad_enabled: mode must be a bool, got {type(mode).__name__} {mode!r}")
    ctx = _GradMode(bool(mode))
    ctx.__enter__()  # in effect at once, as in PyTorch; __exit__ restores the previous mode
    return _Entered(ctx)


class _Entered(contextlib.ContextDecorator):
    """A grad mode already entered: ``with`` only undoes it on exit."""

    def __init__(self, mode: _GradMode):
        self._mode = mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)


# ------------------------------------------------------------------ anomaly mode


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


class ShapeError(RuntimeError, ValueError):
    """Shapes that do not fit an op (broadcasting, matmul, reshape, cat, an in-place write):
    a RuntimeError, as PyTorch raises, and a ValueError, as NumPy raises."""


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


def _describe_nonfinite(a: np.ndarray) -> str:
    n_nan = int(np.isnan(a).sum())
    n_inf = int(np.isinf(a).sum())
    parts = [f"{n_nan} NaN" if n_nan else "", f"{n_inf} inf" if n_inf else ""]
    return " and ".join(p for p in parts if p)


def _check_forward(name: str, data: np.ndarray) -> None:
    if not np.all(np.isfinite(data)):
        frame = _user_frame_summary()
        raise AnomalyError(
            f"detect_anomaly: the forward pass of '{name}' produced "
            f"{_describe_nonfinite(data)} in its output of shape {data.shape}.\n"
            f"The op was called at {_format_frame(frame)}",
            op=name, phase="forward", frame=frame)


# ------------------------------------------------------------------ the graph


# A reference that leads nowhere (a value that no longer exists as a tensor): called like a
# dead weak reference, it returns None. NoneType() is None, and costs no Python frame.
_dead = type(None)


class SavedValue(NamedTuple):
    """One value a node keeps for backward, as PyTorch's ``SavedVariable``.

    ``value`` is what the op saved (usually an array); ``which`` says what it
    is: the index of the input it is, ``-1`` for the op's output, or ``None``
    for a value the op made itself. A value that is an input's or the output's
    data also keeps that tensor's version ``counter`` and the ``version`` it had
    when saved, so that an in-place change before backward is caught (a number or
    array given as an input has the counter ``(0,)``, which nothing moves).
    """

    value: Any
    which: int | None = None
    counter: list | None = None
    version: int = 0

    @property
    def stale(self) -> bool:
        """True when the tensor it came from was changed in place after it was saved."""
        return self.counter is not None and self.counter[0] != self.version


class Context:
    """One backward node of the graph (PyTorch's ``grad_fn``): what one op call keeps.

    A tensor made by an op keeps its node, and the node keeps only what the op's
    backward needs. It does *not* keep the op's input tensors or its output:
    a value that no node saved is freed as soon as user code drops it.

    Fields:
        fn: the Function subclass that made the output (``fn.name`` is the op's name).
        saved: the values kept by ``save_for_backward``, in order; ``None`` once released.
            ``saved_values`` describes each by one :class:`SavedValue`.
        needs_input_grad: one bool per input, so an op saves, and its VJP computes,
            only what some input needs.
        parents: the graph's edges, one per input in operand order: the input's own
            node (its ``grad_fn``, or the :class:`AccumulateGrad` of a leaf that
            requires grad), or ``None`` for an input that needs no gradient.
            PyTorch calls these ``next_functions``.
        out_shape: the output's shape (its gradient must have it).
    Ops may also put small attributes on the node (an axis, a shape, an index).
    """

    # The fixed fields live in slots (one node is made per op call); an op's own
    # attributes go to __dict__, so ``vars(ctx)`` holds exactly those, except the two that
    # most ops keep (their inputs' ``shapes`` and ``dtypes``), which have slots too, so that
    # an elementwise op's node needs no dict. ``_stamps`` holds the record of each saved
    # value that is an input's or the output's data: the fields of a SavedValue, as a plain
    # tuple (value, which, counter, version), which is five times cheaper to make.
    __slots__ = ("fn", "saved", "needs_input_grad", "parents", "out_shape", "_stamps", "_refs",
                 "_out", "shapes", "dtypes", "__dict__", "__weakref__")
    # Rarely set, so class-level defaults: an instance sets them (in __dict__) only when needed.
    _retain = False               # the output asked for retain_grad()
    _hooks: tuple = ()            # the output's register_hook callables
    _freed_by: str | None = None  # why the saved values were freed, if an error did it
    _kept_nothing = False         # released, but it had nothing to free: it may run again
    created_at: str | None = None  # 'file:line in fn' (anomaly mode only)
    created_frame = None

    def __init__(self, fn: type[Function], needs_input_grad: tuple[bool, ...]):
        self.fn = fn
        self.saved: tuple | None = ()
        self._stamps: tuple = ()
        self.needs_input_grad = needs_input_grad

    # -- what forward and backward use
    def save_for_backward(self, *values: Any) -> None:
        """Keep these values until backward has used them (``None`` entries keep nothing)."""
        self.saved = values

    @property
    def saved_values(self) -> tuple | None:
        """One :class:`SavedValue` per saved value, in order (None once released): what it
        is (an input, the output, or a value the op made) and the version it was saved at."""
        saved = self.saved
        if saved is None:
            return None
        stamps = {id(r[0]): SavedValue(*r) for r in self._stamps}
        return tuple([stamps.get(id(v)) or SavedValue(v) for v in saved])

    # -- what readers of the graph use
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
        refs = self._refs
        out = []
        for i, p in enumerate(self.parents):
            if p is not None:
                out.append(p.output)
            else:
                r = refs[i] if refs else None
                out.append(r() if r is not None else None)
        return tuple(out)

    @property
    def released(self) -> bool:
        return self.saved is None

    def arrays(self) -> list[np.ndarray]:
        """Every array this node keeps for backward: saved values and array attributes.

        The one list that ``saved_nbytes``, ``minigrad.inspect`` and the memory
        profiler all read.
        """
        out = []
        for v in self.saved or ():
            out += _arrays(v)
        for v in vars(self).values():
            out += _arrays(v)
        return out

    def saved_nbytes(self) -> int:
        """Bytes held by the arrays of this node (each array once)."""
        return sum({id(a): a.nbytes for a in self.arrays()}.values())

    # -- what the engine and in-place ops do to a node
    def check_saved(self) -> None:
        """Raise if the saved values were freed, or changed in place since they were saved."""
        if self.saved is None:
            if self._kept_nothing:
                return
            why = (f"an earlier backward pass that stopped with an error ({self._freed_by})"
                   if self._freed_by else "an earlier backward pass")
            raise RuntimeError(
                f"backward: trying to go through the graph a second time: the values "
                f"'{self.name}' saved for backward were already freed by {why}. Pass "
                f"retain_graph=True to the first backward() if you need to call it twice, or run "
                f"the forward pass again.")
        for value, which, counter, version in self._stamps:
            if counter[0] != version:
                what = "its output" if which == -1 else f"its input {which}"
                raise RuntimeError(
                    f"backward: a value that '{self.name}' saved for backward was modified in "
                    f"place: {what} (shape {value.shape}) is at version {counter[0]}, but "
                    f"version {version} was saved. Don't change it in place before backward, "
                    f"or operate on a copy (clone()).")

    def release(self, reason: str | None = None) -> None:
        """Drop everything kept for backward; a later backward then fails clearly.

        A node that kept nothing has nothing to lose: a later backward may run it
        again, as in PyTorch (``c = b + 1`` can be differentiated twice).
        """
        kept = self.saved
        self.saved = None
        self._stamps = ()
        attrs = self.__dict__
        if attrs:
            for k, v in attrs.items():
                t = type(v)
                if t is _ndarray or (t is tuple and _ndarray in map(type, v)):
                    attrs[k] = None  # a new value for an existing key: safe while iterating
                    kept = True
        if not kept:
            attrs["_kept_nothing"] = True
        elif reason is not None:
            attrs["_freed_by"] = reason

    def forget_input(self, i: int) -> None:
        """Input ``i``'s numbers are about to be overwritten in place: keep a copy of them
        if they were saved, and let no reference lead back to the old tensor."""
        if any(r[1] == i for r in self._stamps):  # r: (value, which, counter, version)
            copies = {id(r[0]): r[0].copy() for r in self._stamps if r[1] == i}
            self.saved = tuple([copies.get(id(v), v) for v in self.saved])
            self._stamps = tuple([r for r in self._stamps if r[1] != i])
        refs = list(self._refs or (None,) * len(self.parents))
        refs[i] = _dead
        self._refs = tuple(refs)

    def rebase(self, tensor, previous: Context | None) -> None:
        """Make this node the history of ``tensor``, which an in-place op changed;
        ``previous`` (its old node, if any) no longer has an output. A saved output
        is now ``tensor``'s own data, at its new version."""
        old = [r[0] for r in self._stamps if r[1] == -1]  # r: (value, which, counter, version)
        if old:
            data = tensor.data
            self.saved = tuple([data if v is old[0] else v for v in self.saved])
            self._stamps = tuple([(data, -1, tensor._vc, tensor._vc[0])
                                  if r[1] == -1 else r for r in self._stamps])
        if previous is not None:
            previous._out = _dead
            if previous._retain:
                self._retain = True
        self._out = weakref.ref(tensor)

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

    __slots__ = ("variable", "out_shape", "__weakref__")
    fn = _AccumulateGradFn
    name = _AccumulateGradFn.name
    parents: tuple = ()
    saved: tuple = ()
    saved_values: tuple = ()
    _stamps: tuple = ()
    needs_input_grad: tuple = ()
    released = False
    _retain = False
    _freed_by = None

    def __init__(self, variable):
        self.variable = variable
        self.out_shape = variable.data.shape  # the shape its gradient must have

    @property
    def next_functions(self) -> tuple:
        return ()

    @property
    def output(self):
        return self.variable

    @property
    def inputs(self) -> tuple:
        return ()

    def check_saved(self) -> None:
        pass

    def arrays(self) -> list:
        return []

    def saved_nbytes(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


_leaf_hooks: dict[int, tuple] = {}  # id(leaf) -> its hooks, dropped with the leaf


class HookHandle:
    """What ``register_hook`` returns: ``handle.remove()`` takes the hook off again."""

    def __init__(self, remove):
        self._remove = remove

    def remove(self) -> None:
        self._remove()


def register_hook(t, hook) -> HookHandle:
    """Call ``hook(grad)`` whenever a gradient for ``t`` has been computed; a hook may
    return a new gradient (of the same shape) to use instead (``torch.Tensor.register_hook``)."""
    if not callable(hook):
        raise TypeError(f"register_hook: the hook must be callable, got {type(hook).__name__}")
    if not t.requires_grad:
        raise RuntimeError(f"register_hook: cannot register a hook on a tensor (shape {t.shape}) "
                           f"that does not require grad")
    node = t.grad_fn
    if node is not None:
        node._hooks = node._hooks + (hook,)

        def remove():
            node._hooks = tuple(h for h in node._hooks if h is not hook)
        return HookHandle(remove)
    key = id(t)
    if key not in _leaf_hooks:
        weakref.finalize(t, _leaf_hooks.pop, key, None)
    _leaf_hooks[key] = _leaf_hooks.get(key, ()) + (hook,)

    def remove_leaf():
        left = tuple(h for h in _leaf_hooks.get(key, ()) if h is not hook)
        if left:
            _leaf_hooks[key] = left
        else:
            _leaf_hooks.pop(key, None)
    return HookHandle(remove_leaf)


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
        acc.out_shape = t.data.shape
        t._acc = weakref.ref(acc)
    return acc


_ndarray = np.ndarray


def _arrays(v: Any) -> list[np.ndarray]:
    """The arrays in a saved value or node attribute: the value itself, or inside a tuple (an index)."""
    if type(v) is _ndarray:
        return [v]
    if type(v) is tuple and _ndarray in map(type, v):
        return [a for a in v if type(a) is _ndarray]
    return []


# ------------------------------------------------------------------ Function


class Function:
    """Base class of every op: see the module docstring for what a subclass defines."""

    name = ""                  # how the node is shown; a subclass without one shows its class name
    view: bool | str = False   # True: the output shares input 0's memory; "maybe": sometimes
    elementwise = False        # out[i] depends on in[i] only (with broadcasting)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = cls.__name__

    @staticmethod
    def forward(ctx: Context, *arrays: np.ndarray, **attrs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        raise NotImplementedError

    # jvp(dots, args, out, **attrs) -> tangent: defined by ops that support forward mode.

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
        """Run the op on Tensors (or numbers and arrays, taken as constants); return a Tensor."""
        if _state.observed:  # hooks, anomaly mode or a selective recomputation is on
            return _apply_observed(cls, inputs, attrs)
        return _apply(cls, inputs, attrs, cls.forward)


_float16 = np.dtype(np.float16)
# Every needs_input_grad pattern of up to three inputs, such as (True, False), made once
# and shared by every node that has it.
_needs = {p: p for n in (1, 2, 3) for p in itertools.product((False, True), repeat=n)}


def _apply(cls: type[Function], inputs: tuple, attrs: dict, forward: Callable):
    """The four steps of recording an op; returns its output."""
    # 1. the inputs' arrays, and the edge a gradient would take back to each
    enabled, constants, views = _state.grad_enabled, 0, False
    arrays, needs, edges = [], [], []
    for t in inputs:
        if not isinstance(t, Tensor):
            constants += 1  # a number or an array: a constant, converted below
            t = _NO_TENSOR
        arrays.append(t.data)
        need = t.requires_grad & enabled  # (both are bools)
        needs.append(need)
        # its edge: the input's node, or its leaf's accumulator; None if it needs no gradient
        edges.append((t.grad_fn or gradient_edge(t)) if need else None)
        views |= t._view is not None  # a view: checked in step 4
    if constants:
        _constant_arrays(cls, inputs, arrays)

    # 2. forward, on arrays
    ctx = _new(Context)
    ctx.fn = cls
    ctx.saved = ctx._stamps = ()
    needs = tuple(needs)
    ctx.needs_input_grad = _needs.get(needs, needs)  # one shared tuple per pattern
    try:
        data = forward(ctx, *arrays, **attrs)
    except TypeError:  # NumPy refuses some arithmetic on masks (-mask): see _masks_as_floats
        data = _again_with_floats(ctx, forward, arrays, attrs)
    if type(data) is not _ndarray:  # NumPy reductions return scalars; a tuple: several outputs
        if type(data) is tuple:
            return _outputs(cls, ctx, inputs, arrays, edges, needs, views, data)
        data = _as_output(ctx, data)

    # 3. the output tensor (a view shares its base's version counter)
    record = True in needs
    out = _new(Tensor)  # Tensor._make(data, record), without a call
    out.data, out._grad, out.requires_grad, out.grad_fn = data, None, record, None
    out.name, out._vc, out._view, out._acc = None, [0], None, _dead
    if cls.view:
        _share_version(out, inputs, arrays, cls.view)

    # 4. the node: its edges, and a record of each saved input or output
    if record:
        out.grad_fn = ctx
        _link(ctx, inputs, arrays, edges, out, views, constants)
    elif data.dtype is _float16:  # no node: NumPy's exp(mask) is float16 (a mask needs no grad)
        out.data = _float16_of_masks(ctx, forward, arrays, attrs, data)
    return out


def _link(ctx: Context, inputs: tuple, arrays: list, edges: list, out, views: bool,
          constants: int) -> None:
    """Make ``ctx`` the output's node: its edges, and a SavedValue for each saved value
    that is an input's data or the output's (with its version, so that an in-place
    change before backward is caught). ``constants`` counts the inputs that were
    numbers or arrays: the other inputs without an edge are Tensors, kept weakly."""
    ctx.parents = tuple(edges)
    if None not in edges or edges.count(None) == constants:  # no Tensor input without an edge
        ctx._refs = None
    else:
        ctx._refs = _weak_refs(inputs, edges)
    ctx._out = _weakref(out)
    shape, first = out.data.shape, edges[0]
    # the shape of the first input, if the output has it (most ops): one tuple for both
    ctx.out_shape = first.out_shape if first is not None and first.out_shape == shape else shape
    stamps = []
    for v in ctx.saved:
        if v is out.data:
            stamps.append((v, -1, out._vc, out._vc[0]))
        elif v is not None:
            for i, a in enumerate(arrays):
                if v is a:  # (a number or array given as an input: a counter that never moves)
                    c = getattr(inputs[i], "_vc", _UNCHANGED)
                    stamps.append((v, i, c, c[0]))
                    break
    if stamps:
        ctx._stamps = tuple(stamps)
    if views:  # some input is a view: its base must not have changed since
        _check_view_inputs(ctx, inputs)


# ------------------------------------------------------------------ several outputs


def _outputs(cls: type[Function], ctx: Context, inputs: tuple, arrays: list, edges: list,
             needs: list, views: bool, results: tuple) -> tuple:
    """An op whose ``forward`` returned a tuple: one Tensor per output (``torch.autograd.Function``).

    Each output's ``grad_fn`` is a small :class:`Output` node whose one edge leads to
    the op's node; the engine collects the outputs' gradients there, and the op's
    ``backward(ctx, g0, g1, ...)`` runs once with one gradient per output (zeros for an
    output that was not used, as PyTorch's default). A saved output is stamped with
    its own version, as a single output is.
    """
    if cls.view:
        raise TypeError(f"{cls.name}: an op with several outputs cannot be a view (view = {cls.view!r})")
    if not results:
        raise TypeError(f"{cls.name}: forward returned an empty tuple; return an array, or a "
                        f"tuple of arrays (one per output)")
    datas = [r if type(r) is _ndarray else _as_output(ctx, r) for r in results]
    record = True in needs
    outs = tuple([Tensor._make(d, record) for d in datas])
    if record:
        _link(ctx, inputs, arrays, edges, outs[0], views, 0)  # the edges, and the saved inputs' stamps
        ctx._out = _dead
        ctx.out_shape = tuple([d.shape for d in datas])
        ctx.out_dtypes = tuple([d.dtype for d in datas])
        _output_nodes(ctx, outs)
    return outs


def _output_nodes(ctx: Context, outs: tuple) -> None:
    """Stamp the saved outputs after the first (``_link`` did the first), and give each
    output its :class:`Output` node, whose one edge leads to the op's node ``ctx``."""
    ctx._stamps += tuple([(v, -1, t._vc, t._vc[0]) for t in outs[1:]
                          for v in ctx.saved if v is t.data])
    for k, t in enumerate(outs):
        node = t.grad_fn = _new(Context)
        node.fn, node.saved, node._stamps, node.needs_input_grad = Output, (), (), (True,)
        node.parents, node._refs, node._out, node.out_shape = (ctx,), None, _weakref(t), t.data.shape
        node.index = k


class Output(Function):
    """The node of one output of an op with several outputs: it passes its gradient on,
    marked with the output's index, to the op's node."""

    name = "output"

    @staticmethod
    def forward(ctx, *arrays):
        raise TypeError("output: this node is made by an op with several outputs, not applied")

    @staticmethod
    def backward(ctx, g):
        return (Part(ctx.index, g),)


class Part:
    """The gradient of output ``index`` of an op with several outputs, on its way to the op's node."""

    __slots__ = ("index", "grad")

    def __init__(self, index: int, grad: Any):
        self.index, self.grad = index, grad


class _NoTensor:
    """What a constant input looks like in ``_apply``'s first step (its array comes later)."""

    __slots__ = ("data", "requires_grad", "_view")  # (slots: read as fast as a Tensor's)

    def __init__(self) -> None:
        self.data, self.requires_grad, self._view = None, False, None


_NO_TENSOR = _NoTensor()
_UNCHANGED = (0,)  # the version counter of a constant input, which nothing can change in place
_weakref = weakref.ref


def _weak_refs(inputs: tuple, edges: list) -> tuple | None:
    """Weak references to the inputs that have no edge but are Tensors (for ``node.inputs``);
    None when there is none (the other inputs are numbers and arrays)."""
    refs = tuple([_weakref(t) if e is None and isinstance(t, Tensor) else None
                  for t, e in zip(inputs, edges)])
    return refs if refs.count(None) != len(refs) else None


_new = object.__new__


def _apply_observed(cls: type[Function], inputs: tuple, attrs: dict):
    """``apply`` with hooks, anomaly mode or a selective recomputation around it."""
    state = _state
    if not all(isinstance(t, Tensor) for t in inputs):  # observers are shown Tensors only
        inputs = _constant_tensors(cls, inputs)
    kept = next(state.reuse, None) if state.reuse is not None else None
    forward = cls.forward if kept is None else functools.partial(_forward_kept, cls, kept)
    out = _apply(cls, inputs, attrs, forward)
    if type(out) is tuple:  # several outputs: only anomaly mode sees them
        return _observed_outputs(cls, out, state, kept)
    ctx = out.grad_fn
    for hook in state.hooks:  # observers: trace, jvp, the memory profiler, count_ops
        hook("forward" if kept is None else "reused", cls, inputs, out, attrs)
    if state.anomaly:
        _check_forward(cls.name, out.data)
        if ctx is not None:
            ctx.created_frame = _user_frame_summary()
            ctx.created_at = _format_frame(ctx.created_frame)
    return out


def _observed_outputs(cls: type[Function], outs: tuple, state, kept) -> tuple:
    if state.hooks or kept is not None:
        raise NotImplementedError(
            f"{cls.name}: an op with several outputs cannot be traced, compiled, run in forward "
            f"mode, profiled or recomputed selectively (only ops with one output can)")
    if state.anomaly:
        for t in outs:
            _check_forward(cls.name, t.data)
    return outs


def _masks_as_floats(ctx: Context, arrays: list) -> bool:
    """Turn the bool arrays (masks) among an op's inputs into float64, as ``mask * 1.0``
    would, for a second run of its forward; False if there is none. In arithmetic a
    mask counts as 0.0 and 1.0, as in PyTorch (``torch.exp(mask)`` is a float)."""
    found = False
    for i, a in enumerate(arrays):
        if a.dtype == np.bool_:
            arrays[i], found = a.astype(np.float64), True
    if found:
        ctx.saved = ctx._stamps = ()
    return found


def _again_with_floats(ctx: Context, forward: Callable, arrays: list, attrs: dict):
    """forward again, with masks as floats; re-raises the TypeError if there is no mask."""
    if not _masks_as_floats(ctx, arrays):
        raise  # the TypeError being handled by the caller
    return forward(ctx, *arrays, **attrs)


def _float16_of_masks(ctx: Context, forward: Callable, arrays: list, attrs: dict, data):
    """A float16 result: kept if an input is float16, else computed again with masks as floats."""
    if any(a.dtype == np.float16 for a in arrays) or not _masks_as_floats(ctx, arrays):
        return data
    return _as_output(ctx, forward(ctx, *arrays, **attrs))


def _forward_kept(cls: type[Function], kept: np.ndarray, ctx: Context, *arrays, **attrs):
    return cls.forward_kept(ctx, kept, *arrays, **attrs)


def _constant_tensors(cls: type[Function], inputs: tuple) -> tuple:
    """The inputs with numbers and arrays wrapped as constant Tensors (``as_tensor`` is looked
    up here, so that a recorder, such as ``minigrad.compile``'s, may see each one made)."""
    like = next((t for t in inputs if isinstance(t, Tensor)), None)
    for t in inputs:
        if not isinstance(t, Tensor):
            _constant(cls.name, t, like)  # a clear error, naming the op, for a non-number
    return tuple(t if isinstance(t, Tensor) else as_tensor(t, like=like) for t in inputs)


def _constant_arrays(cls: type[Function], inputs: tuple, arrays: list) -> None:
    """Numbers and arrays among the inputs become arrays in the float dtype of the first
    tensor beside them (``_constant_dtype``). No Tensor or node is made for them."""
    like = None
    for t in inputs:
        if isinstance(t, Tensor):
            like = t
            break
    numbers = _constant_dtype(like, _FLOAT64)  # the dtype of a Python number beside ``like``
    for i, v in enumerate(inputs):
        if type(v) is float or type(v) is int:  # y * 0.9: the array made for 0.9 before, if any
            arr = _numbers.get((v, numbers))
            arrays[i] = arr if arr is not None else _number(v, numbers)
        elif not isinstance(v, Tensor):
            arrays[i] = _constant(cls.name, v, like)


# Each number used as an operand becomes one read-only 0-d array per dtype, made once:
# ``y * 0.9`` in a loop saves the same small array in every node. (0 and -0.0 compare
# equal and NaN equals nothing, so they are made each time; at most 1024 are kept.)
_numbers: dict = {}


def _number(v: float | int, dtype: np.dtype) -> np.ndarray:
    arr = _numbers.get((v, dtype))
    if arr is None:
        arr = np.array(v, dtype=dtype)
        if v and v == v and len(_numbers) < 1024:  # kept for the next time
            arr.flags.writeable = False
            _numbers[v, dtype] = arr
    return arr


def _constant(op: str, v: Any, like) -> np.ndarray:
    if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool)):
        return _number(v, _constant_dtype(like, _FLOAT64))
    try:
        arr = np.asarray(v)
    except (ValueError, TypeError) as e:
        raise TypeError(f"{op}: an operand of type {type(v).__name__} cannot be used as a "
                        f"number: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{op}: unsupported operand of type {type(v).__name__} (an array of "
                        f"dtype {arr.dtype}, shape {arr.shape}); an operand must be a Tensor, "
                        f"a real number or a numeric array")
    dtype = _constant_dtype(like, arr.dtype)
    if arr.dtype != dtype:
        return arr.astype(dtype)
    return arr.copy() if arr is v else arr  # the caller may refill their array before backward


def _as_output(ctx: Context, raw: Any) -> np.ndarray:
    data = np.asarray(raw)
    saved = ctx.saved
    if saved:  # a saved output must stay the output itself
        ctx.saved = tuple(data if v is raw else v for v in saved)
    return data


def _share_version(out, inputs: tuple, arrays: list, view: bool | str) -> None:
    """An output that shares an input's memory shares its version counter too, wherever a
    view is made: an in-place change of either is seen by both. ``out._view`` keeps the
    version at the time and the tensor that owns the memory (PyTorch's ``._base``)."""
    for t, a in zip(inputs, arrays):
        if (view is True or np.may_share_memory(out.data, a)) and isinstance(t, Tensor):
            base = t if t._view is None else t._view[1]
            out._vc = t._vc
            out._view = (t._vc[0], base)
            return


def _check_view_inputs(ctx: Context, inputs: tuple) -> None:
    for t in inputs:
        if (isinstance(t, Tensor) and t._view is not None and t.grad_fn is not None
                and t._vc[0] != t._view[0]):
            raise RuntimeError(
                f"{ctx.name}: an input (shape {t.shape}) is a view made by '{t.op}' whose base "
                f"was changed in place after the view was made; its recorded history no longer "
                f"matches its values. Make the view again after the in-place change.")


# The core's one import cycle, closed here where a reader sees it: Function.apply makes
# Tensors, and tensor.py (which imports this module first) is complete by the time any op runs.
from .tensor import _FLOAT64, Tensor, _constant_dtype, as_tensor  # noqa: E402

