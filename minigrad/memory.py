"""Where the bytes of a training step go, measured rather than estimated.

NumPy reports every data buffer it allocates to Python's ``tracemalloc``, in
a domain of its own (``np.lib.tracemalloc_domain``). :class:`MemoryProfiler`
turns tracing on around a block of code and takes a *sample* after every op
(through a ``minigrad.hooks`` hook, so nothing is paid when no profiler runs)
and at the end of every phase. Each sample holds:

* ``total``: the NumPy bytes live at that moment. Buffers allocated while
  tracing are measured by tracemalloc (a snapshot filtered by NumPy's domain);
  the model's own buffers that already existed when tracing began (parameters,
  gradients, optimizer state) are added by size, for as long as they live.
* ``peak``: the largest NumPy total since the previous sample, from
  tracemalloc's peak (reset at every sample). tracemalloc's peak also counts
  Python objects, so the Python bytes measured at the previous sample are taken
  off; what remains overstates the NumPy peak by the Python objects made in
  between (a few hundred bytes per op, plus whatever other threads allocate, as
  a Jupyter kernel's do). Automatic garbage collection is paused while the
  profiler runs, so that it cannot free Python objects at varying moments.
* ``by_category``: the live bytes split by what holds them, each buffer counted
  once, in this order of precedence:

  ==================  ====================================================
  parameters          ``p.data`` of the parameters
  gradients           ``p.grad`` of the parameters
  optimizer state     the arrays in ``optimizer.state`` (Adam's m and v)
  saved activations   what graph nodes keep for backward (``node.arrays()``:
                      saved values and array attributes), not yet released;
                      an input batch that a node saved counts here, as the
                      activation it has become
  graph outputs       the data of recorded tensors that Python still holds
                      but no node saved (as in PyTorch, the graph itself
                      keeps no output alive: a name in user code does)
  inputs              arrays made before the profiler started that an op of
                      the step read or a node kept (the input batch,
                      constants, the labels a loss keeps), not counted above
  temporaries         the rest: total minus everything above (intermediate
                      gradients, scratch arrays)
  ==================  ====================================================

  Views count toward the array that owns the memory. By construction the
  categories add up to ``total``.

Usage::

    with MemoryProfiler(model, optimizer) as prof:
        with prof.phase("forward"):
            loss = model(x).cross_entropy_with_logits(y)
        with prof.phase("backward"):
            loss.backward()
        with prof.phase("optimizer step"):
            optimizer.step()
    prof.timeline.peak("backward")
    minigrad.viz.plot_memory_timeline(prof.timeline)

Sampling after every op takes a snapshot each time, which costs time in
proportion to the number of live allocations; pass ``every_op=False`` to sample
only at phase ends (the per-phase peak is still measured).
"""

from __future__ import annotations

import contextlib
import gc
import tracemalloc
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .function import no_grad
from .hooks import op_hook
from .inspect import _owner as _buffer_owner
from .tensor import Tensor

__all__ = ["DOMAIN", "CATEGORIES", "MemoryProfiler", "Sample", "Timeline", "numpy_traced_bytes",
           "nbytes", "profile_step", "MiB"]

DOMAIN: int = np.lib.tracemalloc_domain
CATEGORIES = ("parameters", "gradients", "optimizer state", "saved activations", "graph outputs",
              "inputs", "temporaries")
MiB = 2 ** 20


def numpy_traced_bytes() -> int:
    """NumPy bytes currently traced by tracemalloc (a snapshot filtered by NumPy's domain)."""
    if not tracemalloc.is_tracing():
        raise RuntimeError("numpy_traced_bytes: tracemalloc is not tracing; use MemoryProfiler")
    raw = getattr(tracemalloc, "_get_traces", None)
    if raw is not None:  # what take_snapshot() reads: (domain, size, traceback, ...) tuples
        return sum(t[1] for t in raw() if t[0] == DOMAIN)
    snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, DOMAIN)])
    return sum(t.size for t in snap.traces)


def _owner(a) -> np.ndarray | None:
    """The array whose memory NumPy allocated and ``a`` uses (``a`` itself unless it is a view).

    None for anything else: not an array, or memory NumPy did not allocate (an
    array over a ``bytes`` object), which tracemalloc never sees. The walk over
    ``.base`` is the one ``saved_memory`` uses (``minigrad.inspect``).
    """
    if not isinstance(a, np.ndarray):
        return None
    o = _buffer_owner(a)
    return o if o.base is None else None


@dataclass
class Sample:
    """One measurement: after an op, or at the end of a phase."""

    phase: str
    event: str      # "forward", "backward", "start" or "end"
    label: str      # the op's name, or what happened
    total: int      # live NumPy bytes
    peak: int       # largest total since the previous sample
    by_category: dict[str, int] = field(default_factory=dict)


class Timeline:
    """Samples of a profiled block, and the phases they fall in."""

    def __init__(self, samples: list[Sample], phases: list[tuple[str, int, int]]):
        self.samples = samples
        self.phases = phases  # (name, index of the sample before it, index of its last sample)

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def totals(self) -> np.ndarray:
        return np.array([s.total for s in self.samples], dtype=np.int64)

    @property
    def peaks(self) -> np.ndarray:
        return np.array([s.peak for s in self.samples], dtype=np.int64)

    def category(self, name: str) -> np.ndarray:
        """Bytes in one category at every sample."""
        if name not in CATEGORIES:
            raise KeyError(f"Timeline.category: unknown category {name!r}; choose one of {CATEGORIES}")
        return np.array([s.by_category[name] for s in self.samples], dtype=np.int64)

    def _span(self, phase: str) -> tuple[int, int]:
        for name, start, end in self.phases:
            if name == phase:
                return start, end
        raise KeyError(f"Timeline: no phase named {phase!r}; the phases are "
                       f"{[p[0] for p in self.phases]}")

    def peak(self, phase: str | None = None) -> int:
        """The measured peak (bytes) over the whole block or over one phase."""
        if phase is None:
            return int(self.peaks.max())
        start, end = self._span(phase)
        return int(self.peaks[start + 1:end + 1].max())

    def at_end(self, phase: str) -> Sample:
        """The sample taken when ``phase`` ended."""
        return self.samples[self._span(phase)[1]]

    def __repr__(self) -> str:
        parts = ", ".join(f"{name} peak {self.peak(name) / MiB:.2f} MiB" for name, _, _ in self.phases)
        return f"Timeline({len(self.samples)} samples; {parts})"


class MemoryProfiler:
    """Measure NumPy memory over a block of code, by category (see the module docstring).

    Args:
        model: a Module (or an iterable of Tensors) whose parameters to watch.
        optimizer: an optimizer (or several, in a list) whose ``state`` to watch.
        every_op: sample after every op (a timeline) or only at phase ends (faster).

    tracemalloc must not already be tracing: buffers traced by someone else
    could not be told apart from the model's own.
    """

    def __init__(self, model=None, optimizer=None, every_op: bool = True):
        if model is None:
            self.params: list[Tensor] = []
        elif hasattr(model, "parameters"):
            self.params = list(model.parameters())
        else:
            self.params = list(model)
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor):
                raise TypeError(f"MemoryProfiler: parameter {i} is a {type(p).__name__}, not a Tensor")
        if optimizer is None:
            self.optimizers = []
        elif isinstance(optimizer, (list, tuple)):
            self.optimizers = list(optimizer)
        else:
            self.optimizers = [optimizer]
        for opt in self.optimizers:
            if not hasattr(opt, "state"):
                raise TypeError(f"MemoryProfiler: {type(opt).__name__} has no .state to watch")
        self.every_op = every_op
        self.samples: list[Sample] = []
        self.phases: list[tuple[str, int, int]] = []
        self._phase = "start"
        self._active = False
        # Tensors by id (a WeakSet would compare them with ==, which is elementwise).
        self._nodes: weakref.WeakSet = weakref.WeakSet()  # backward nodes (compared by identity)
        self._pre: dict[int, tuple[weakref.ref, int]] = {}
        self._inputs: set[int] = set()

    # ------------------------------------------------------------ set-up
    def _model_arrays(self) -> Iterator[tuple[str, np.ndarray]]:
        for p in self.params:
            yield "parameters", p.data
        for p in self.params:
            if p.grad is not None:
                yield "gradients", p.grad
        for opt in self.optimizers:
            for buffers in opt.state.values():
                for a in buffers.values():
                    if isinstance(a, np.ndarray):
                        yield "optimizer state", a

    def __enter__(self) -> MemoryProfiler:
        if tracemalloc.is_tracing():
            raise RuntimeError(
                "MemoryProfiler: tracemalloc is already tracing (another profiler, or "
                "python -X tracemalloc). Stop it first: its buffers could not be told apart "
                "from the model's.")
        gc.collect()
        # No automatic collection while measuring: it would free Python objects at
        # moments that vary from run to run, and blur the peaks (see _sample).
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        # The model's buffers exist before tracing starts: tracemalloc will never see
        # them, so they are counted by size for as long as they live.
        for _, a in self._model_arrays():
            o = _owner(a)
            if o is not None and id(o) not in self._pre:
                self._pre[id(o)] = (weakref.ref(o), o.nbytes)
        tracemalloc.start()
        self._active = True
        self._python_prev = tracemalloc.get_traced_memory()[0]
        self._traced_prev = 0
        self._pre_prev = self._pre_bytes()
        self._hook_cm = op_hook(self._on_op)
        self._hook_cm.__enter__()
        self._sample("start", "start")
        return self

    def __exit__(self, *exc) -> bool:
        self._hook_cm.__exit__(*exc)
        self._active = False
        tracemalloc.stop()
        if self._gc_was_enabled:
            gc.enable()
        return False

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[MemoryProfiler]:
        """Samples taken inside this block belong to phase ``name``; it ends with a sample."""
        if not self._active:
            raise RuntimeError("MemoryProfiler.phase: use it inside `with MemoryProfiler(...)`")
        if any(p[0] == name for p in self.phases):
            raise ValueError(f"MemoryProfiler.phase: there is already a phase named {name!r}")
        start = len(self.samples) - 1
        prev, self._phase = self._phase, name
        try:
            yield self
        finally:
            self._sample("end", f"end of {name}")
            self.phases.append((name, start, len(self.samples) - 1))
            self._phase = prev

    def sample(self, label: str) -> Sample:
        """Take a sample now (e.g. right after ``del loss``)."""
        if not self._active:
            raise RuntimeError("MemoryProfiler.sample: use it inside `with MemoryProfiler(...)`")
        return self._sample("mark", label)

    @property
    def timeline(self) -> Timeline:
        return Timeline(self.samples, self.phases)

    # ---------------------------------------------------------- sampling
    def _on_op(self, event, fn, inputs, output, attrs) -> None:
        if event == "read":
            return
        if event in ("forward", "reused"):
            node = output.grad_fn
            arrays = [t.data for t in inputs]
            if node is not None:
                self._nodes.add(node)
                arrays += node.arrays()  # also what the op was given outside its inputs (the labels)
            for a in arrays:  # an array from before tracing began (the batch): count it by size
                o = _owner(a)
                if o is not None and id(o) not in self._pre and \
                        tracemalloc.get_object_traceback(o) is None:
                    self._pre[id(o)] = (weakref.ref(o), o.nbytes)
                    self._inputs.add(id(o))
        if self.every_op and event != "accumulate":
            self._sample(event, fn.name)

    def _pre_bytes(self) -> int:
        return sum(n for ref, n in self._pre.values() if ref() is not None)

    def _measured(self, owner: np.ndarray) -> bool:
        """Is this buffer part of the measured total (traced, or a known older buffer)?"""
        if tracemalloc.get_object_traceback(owner) is not None:
            return True
        entry = self._pre.get(id(owner))
        return entry is not None and entry[0]() is owner

    def _attribute(self, total: int) -> dict[str, int]:
        out = dict.fromkeys(CATEGORIES, 0)
        seen: set[int] = set()

        def add(cat: str, a) -> None:
            o = _owner(a)
            if o is None or id(o) in seen:
                return
            seen.add(id(o))
            if self._measured(o):
                out[cat] += o.nbytes

        for cat, a in self._model_arrays():
            add(cat, a)
        nodes = list(self._nodes)
        for node in nodes:
            for v in node.arrays():
                add("saved activations", v)
        for node in nodes:
            t = node.output
            if t is not None:
                add("graph outputs", t.data)
        for key in self._inputs:
            ref, _ = self._pre[key]
            o = ref()
            if o is not None:
                add("inputs", o)
        out["temporaries"] = total - sum(out.values())
        return out

    def _sample(self, event: str, label: str) -> Sample:
        current, peak_all = tracemalloc.get_traced_memory()   # before the snapshot allocates
        traced = numpy_traced_bytes()
        python_now = current - traced
        pre = self._pre_bytes()
        total = traced + pre
        peak_traced = max(peak_all - self._python_prev, traced, self._traced_prev)
        peak = peak_traced + max(pre, self._pre_prev)
        s = Sample(self._phase, event, label, total, peak, self._attribute(total))
        self.samples.append(s)
        self._python_prev, self._traced_prev, self._pre_prev = python_now, traced, pre
        tracemalloc.reset_peak()
        return s


def profile_step(model, x, y, optimizer=None, forward: Callable | None = None, train: bool = True,
                 every_op: bool = True) -> Timeline:
    """Measure one step of ``model`` on the batch ``(x, y)`` and return its timeline.

    ``forward(model, x)`` gives the logits (default ``model(x)``); the loss is
    ``logits.cross_entropy_with_logits(y)``. With ``train=True`` the phases are
    "forward", "backward", "free graph" (the loss, and with it the graph, is
    dropped) and, given an optimizer, "optimizer step"; gradients are cleared
    before the profiler starts. With ``train=False`` there is one phase,
    "forward", run under ``no_grad`` (inference).
    """
    forward = forward or (lambda m, inp: m(inp))
    if train:
        for p in (model.parameters() if hasattr(model, "parameters") else model):
            p.grad = None
    with MemoryProfiler(model, optimizer, every_op=every_op) as prof:
        if not train:
            with prof.phase("forward"), no_grad():
                logits = forward(model, x)
            del logits
            return prof.timeline
        with prof.phase("forward"):
            loss = forward(model, x).cross_entropy_with_logits(y)
        with prof.phase("backward"):
            loss.backward()
        with prof.phase("free graph"):
            del loss
        if optimizer is not None:
            with prof.phase("optimizer step"):
                optimizer.step()
    return prof.timeline


def nbytes(arrays: Iterable) -> int:
    """Bytes of distinct buffers among ``arrays`` (Tensors or ndarrays; views count once)."""
    seen: dict[int, int] = {}
    for a in arrays:
        a = a.data if isinstance(a, Tensor) else a
        o = _owner(a)
        if o is not None:
            seen[id(o)] = o.nbytes
    return sum(seen.values())
