"""Watch every op as it runs: a hook called after each forward op and each backward step.

A hook is a callable ``hook(event, fn, inputs, output, attrs)``:

* ``event`` is ``"forward"`` after ``Function.apply`` has computed an output
  (recorded or not, so ops under ``no_grad`` are seen too); ``"reused"`` when
  a selective recomputation took an op's kept output instead of computing it
  (see ``minigrad.checkpoint``'s ``policy``); ``"backward"`` after the engine
  has run a node's VJP, before it frees the node and passes the gradients on;
  ``"accumulate"`` when a leaf's gradient is complete (it reaches ``.grad``
  once the whole pass has succeeded); and ``"read"`` when Python takes a value out of the graph (``item()``,
  ``numpy()``; then ``fn`` and ``output`` are None and ``inputs`` holds the tensor);
* ``fn`` is the op's Function class (``fn.name`` is its name);
* for ``"forward"`` and ``"reused"``, ``inputs`` are the op's input Tensors,
  ``output`` its output Tensor and ``attrs`` the op's keyword arguments (an
  axis, a shape, a target); for ``"backward"`` and ``"accumulate"``, ``inputs`` are the gradients
  the VJP returned (one per input, None where none), ``output`` is the node
  itself (``node.parents`` are the nodes they go to) and ``attrs`` is
  ``{"grad": g}``, the gradient the node received.

This is the one way to watch the engine. ``minigrad.trace`` records a static
graph through it, ``minigrad.jvp`` computes tangents beside the values with it,
the memory profiler (``minigrad.memory``) samples through it, and
:func:`count_ops` counts op evaluations with it, which is how the checkpointing
notebook measures recomputation without a clock. Hooks cost nothing when none
is registered: the op checks one empty tuple. A hook must not keep references
to the tensors it is shown unless it means to keep them alive.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator

from .function import _state

__all__ = ["op_hook", "count_ops", "OpCounter"]


@contextlib.contextmanager
def op_hook(hook: Callable) -> Iterator[Callable]:
    """Call ``hook(event, fn, inputs, output, attrs)`` after every op inside this block."""
    if not callable(hook):
        raise TypeError(f"op_hook: the hook must be callable, got {type(hook).__name__}")
    _state.hooks = _state.hooks + (hook,)
    try:
        yield hook
    finally:
        _state.hooks = tuple(h for h in _state.hooks if h is not hook)


class OpCounter:
    """Op evaluations seen inside :func:`count_ops`, by op name.

    ``forward`` counts evaluations of an op's forward (including recomputation;
    an output reused by a selective recomputation is not counted); ``backward``
    counts VJPs run by the engine.
    """

    def __init__(self) -> None:
        self.forward: Counter[str] = Counter()
        self.backward: Counter[str] = Counter()

    def __call__(self, event: str, fn, inputs, output, attrs=None) -> None:
        if event == "forward":
            self.forward[fn.name] += 1
        elif event == "backward":
            self.backward[fn.name] += 1

    @property
    def total_forward(self) -> int:
        return sum(self.forward.values())

    @property
    def total_backward(self) -> int:
        return sum(self.backward.values())

    def __repr__(self) -> str:
        fwd = ", ".join(f"{k} {v}" for k, v in sorted(self.forward.items()))
        return f"OpCounter(forward: {self.total_forward} [{fwd}]; backward: {self.total_backward})"


@contextlib.contextmanager
def count_ops() -> Iterator[OpCounter]:
    """Count op evaluations in this block: ``with count_ops() as ops: ...; ops.forward['matmul']``."""
    counter = OpCounter()
    with op_hook(counter):
        yield counter
