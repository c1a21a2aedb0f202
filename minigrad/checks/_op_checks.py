"""Helpers the exercise checks share: running a learner's code so that an error becomes a message.

Nothing here is an exercise check by itself; the ``nbNN`` modules build on it.
"""

from __future__ import annotations

import contextlib
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from ..engine import topological_order as _topological_order
from ..gradcheck import GradcheckError, gradcheck


def attempt(what: str, hint: str, f: Callable, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)``; an error other than a missing solution becomes an AssertionError.

    The message says what was tried (``what``), the error, and ``hint``: what to look at.
    ``AssertionError`` and ``NotImplementedError`` pass through unchanged.
    """
    try:
        return f(*args, **kwargs)
    except (AssertionError, NotImplementedError):
        raise
    except Exception as err:
        raise AssertionError(f"{what} raised {type(err).__name__}: {err}\n  hint: {hint}") from err


def agrees_with_central_differences(label: str, fn: Callable, *inputs: Any) -> None:
    """``gradcheck(fn, *inputs)``, its failure reported as an AssertionError that starts with ``label``."""
    try:
        gradcheck(fn, *inputs)
    except GradcheckError as err:
        raise AssertionError(f"{label}your VJP disagrees with central differences: {err}") from None


def backward_leaves_g_alone(what: str, backward: Callable, node: Any, g: np.ndarray,
                            hint: str = "backward(ctx, g) reads ctx.saved and returns one gradient per input") -> tuple:
    """Call ``backward(node, g)`` on a writable ``g``; fail if it changed ``g``'s values, shape or strides.

    Returns the gradients, which must be a tuple or list with one entry per input of ``node``.
    """
    before = g.copy()
    shape, strides = g.shape, g.strides
    grads = attempt(what, hint, backward, node, g)
    if g.shape != shape or g.strides != strides:
        raise AssertionError(
            f"{what}: your backward reshaped the caller's g in place (g.shape = ... or g.resize): it is now "
            f"{g.shape}, it was {shape}; the engine may hand the same g to other nodes, so use g.reshape(...), "
            f"which returns a new view and leaves g as it is")
    if not np.array_equal(g, before):
        raise AssertionError(
            f"{what}: your backward changed g in place (g[...] = 0, g *= ..., or out=g): the engine may hand the "
            f"same g to other nodes, or a read-only one; compute a new array")
    return grads


def peak_bytes(f: Callable, *args: Any) -> tuple[Any, int]:
    """``f(*args)`` and the most memory (bytes) NumPy and Python allocated at once while it ran."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    start, _ = tracemalloc.get_traced_memory()
    try:
        out = f(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return out, peak - start


@contextlib.contextmanager
def recursion_limit(limit: int):
    """Python's recursion limit set to ``limit`` inside the block (1000 is Python's default)."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


class Tripwire:
    """Stands in for ``minigrad.topological_order`` while a learner's walk runs, and notes a call.

    ``with tripwire.armed(): ...`` replaces ``minigrad.topological_order`` (and the
    engine module's) by the tripwire, which still answers; ``tripwire.called`` then
    says whether the code asked it. A call that does not go through those two names
    (a name imported before the check, ``minigrad.inspect.topological_order``, or a
    package function that walks the graph with it) is noted too: while armed, a
    profile function (``sys.setprofile``) watches for the engine's function itself.
    """

    def __init__(self):
        self.called = False

    def __call__(self, *args, **kwargs):
        self.called = True
        return _topological_order(*args, **kwargs)

    @contextlib.contextmanager
    def armed(self):
        import minigrad

        from .. import engine
        target = _topological_order.__code__
        previous = sys.getprofile()

        def watch(frame, event, arg):
            if event == "call" and frame.f_code is target:
                self.called = True
            if previous is not None:
                previous(frame, event, arg)

        saved = minigrad.topological_order, engine.topological_order
        minigrad.topological_order = engine.topological_order = self
        sys.setprofile(watch)
        try:
            yield self
        finally:
            sys.setprofile(previous)
            minigrad.topological_order, engine.topological_order = saved
