"""Activation checkpointing: keep few activations, recompute the rest during backward.

Three pieces:

* :func:`checkpoint` ``(fn, *inputs)`` runs ``fn`` under ``no_grad``, so none of
  its intermediate values is kept, and records its output as *one* node. That
  node saves only the inputs (and the random-number state). Its VJP recomputes
  ``fn`` with recording on, from the same inputs and the same random state, and
  backpropagates through the recomputed graph, which is freed right after.
  Parameters that ``fn`` uses (leaf tensors with ``requires_grad``) become
  inputs of the node, so their gradients arrive like any other.
* :func:`checkpoint_sequential` ``(layers, segments, x)`` cuts a chain of
  layers into segments and checkpoints each of them: one node keeps the
  segments' inputs and, during backward, recomputes and frees them one by one.
* A schedule planner: :func:`plan_segments` finds, for a memory budget, the
  segments (and which of them to recompute) that cost the least recomputation,
  by dynamic programming; :func:`sqrt_plan` is the sqrt(n) rule of Chen et al.
  (2016), "Training Deep Nets with Sublinear Memory Cost";
  :func:`revolve_forward_steps` is Griewank & Walther's optimal many-level
  schedule (binomial checkpointing, "revolve", ACM TOMS 2000), the reference
  for what recomputation can achieve at all.

Memory model of the planner (units are up to you: bytes, or "one activation").
For layer i, ``act[i]`` is what recording it keeps for backward and ``out[i]``
the size of its output. A segment that is *recomputed* keeps only its output
(the checkpoint) until its backward, then needs its whole ``sum(act)`` again; a
segment that is *stored* keeps ``sum(act)`` until its backward. Memory is
freed segment by segment as the backward pass moves to the front, so while
segment j runs backward the live memory is
``sum(kept by segments before j) + kept_j + (sum(act_j) if recomputed)``,
and the peak is the largest of these. Recomputation costs ``sum(cost)`` of
the recomputed segments' layers.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import random as _random
from .engine import grad as _grad
from .function import Function, _state, enable_grad, is_grad_enabled, no_grad
from .hooks import op_hook
from .tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "Plan", "uniform_plan", "sqrt_plan",
           "plan_segments", "simulate_plan", "min_peak", "revolve_forward_steps",
           "binomial_reach"]

_CHECKS = ("value", "shape", "none")


# ------------------------------------------------------------ the RNG

@contextlib.contextmanager
def _replay(states: Sequence[tuple[Any, dict]]):
    """Put the generators back in the given states; afterwards restore where they were."""
    now = [(gen, _random.get_state(gen)) for gen, _ in states]
    for gen, st in states:
        _random.set_state(st, gen)
    try:
        yield
    finally:
        for gen, st in now:
            _random.set_state(st, gen)


# ------------------------------------------------------------ the node

def _call(fn: Callable, template: list, tensors: Sequence[Tensor]):
    """Call fn with the tensors put back where they were among the other arguments."""
    it = iter(tensors)
    return fn(*(next(it) if a is _TENSOR else a for a in template))


_TENSOR = object()  # marks where a Tensor argument goes


class Checkpoint(Function):
    """One node for ``y = fn(x1, ..., params)`` whose inside is not recorded.

    Forward: ``fn`` already ran under ``no_grad`` (see :func:`checkpoint`); the
    node saves the inputs' and parameters' arrays (references, not copies) and
    the random state.
    VJP: recompute ``y' = fn(x')`` with recording on, on detached leaves ``x'``
    holding the same arrays, with the same random state; then
    ``(dx, dparams) = grad(y', (x', params), grad_output=g)``.
    """

    name = "checkpoint"

    @staticmethod
    def forward(ctx, *arrays, out, call, n_inputs, captured, rng, check):
        ctx.save_for_backward(*arrays)
        ctx.call, ctx.n_inputs, ctx.captured, ctx.rng, ctx.check = call, n_inputs, captured, rng, check
        ctx.out_meta = (out.shape, out.dtype)
        ctx.out_ref = weakref.ref(out)  # the forward's output, to compare with the recomputation
        return out

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            raise RuntimeError(
                "checkpoint: gradients of gradients (create_graph=True) cannot go through a "
                "checkpoint; differentiate without checkpointing for higher-order gradients")
        n = ctx.n_inputs
        need = ctx.needs_input_grad
        leaves = [Tensor._make(a, bool(r), (), "", None) for a, r in zip(ctx.saved[:n], need[:n])]
        with _replay(ctx.rng), enable_grad():
            y = ctx.call(leaves)
        _check_recomputed(ctx, y)
        wrt = [t for t, r in zip(leaves, need[:n]) if r] + \
              [t for t, r in zip(ctx.captured, need[n:]) if r]
        if not y.requires_grad or not wrt:
            return (None,) * len(need)
        grads = iter(_grad(y, wrt, grad_output=g, allow_unused=True))
        out = []
        for r in need:
            gi = next(grads) if r else None
            out.append(None if gi is None else gi.data)
        return tuple(out)


def _check_recomputed(ctx, y) -> None:
    shape, dtype = ctx.out_meta
    if not isinstance(y, Tensor):
        raise TypeError(f"checkpoint: when recomputed, fn returned a {type(y).__name__}, not a Tensor")
    if y.shape != shape or y.dtype != dtype:
        raise RuntimeError(
            f"checkpoint: recomputing fn gave an output of shape {y.shape} and dtype {y.dtype}, "
            f"but the forward pass gave shape {shape} and dtype {dtype}. fn must compute the same "
            f"thing both times: it may not depend on state that changed in between.")
    ref = ctx.out_ref()
    if ctx.check == "value" and ref is not None and not np.array_equal(ref, y.data, equal_nan=True):
        diff = float(np.nanmax(np.abs(ref.astype(np.float64) - y.data)))
        raise RuntimeError(
            f"checkpoint: recomputing fn gave different values from the forward pass (largest "
            f"difference {diff:.3g}, output shape {shape}). fn must be a pure function of its "
            f"inputs: random numbers must come from minigrad.random's default generator (kept "
            f"with preserve_rng_state=True) or from generators passed to checkpoint, and fn must "
            f"not read anything that changes between the forward and the backward pass. Pass "
            f"determinism_check='shape' to compare shapes only.")


def checkpoint(fn: Callable, *args, preserve_rng_state: bool = True,
               generators: Sequence[np.random.Generator] = (),
               determinism_check: str = "value") -> Tensor:
    """``fn(*args)``, computed without keeping its intermediate values; recomputed in backward.

    Args:
        fn: a function of the arguments that returns one Tensor. It must be
            pure: the same inputs (and random state) give the same output.
        *args: Tensors (they become the node's inputs) and other values (passed
            through unchanged).
        preserve_rng_state: save minigrad.random's default generator before the
            forward pass and replay it for the recomputation, so that Dropout
            draws the same mask twice (like torch.utils.checkpoint).
        generators: other numpy Generators that fn draws from, saved and
            replayed the same way.
        determinism_check: "value" (default) compares the recomputed output with
            the forward's, "shape" only its shape and dtype, "none" nothing.

    Memory: the node keeps the input arrays only. Compute: fn runs twice.
    Parameters used inside fn (leaf tensors with requires_grad) receive their
    gradients as usual; a non-leaf tensor that requires grad must be passed as
    an argument, not captured from outside.
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: fn must be callable, got {type(fn).__name__}")
    if determinism_check not in _CHECKS:
        raise ValueError(f"checkpoint: determinism_check must be one of {_CHECKS}, "
                         f"got {determinism_check!r}")
    gens = tuple(generators)
    for i, gen in enumerate(gens):
        if not isinstance(gen, np.random.Generator):
            raise TypeError(f"checkpoint: generators[{i}] is a {type(gen).__name__}, "
                            f"not a numpy.random.Generator")
    if any(getattr(h, "is_trace", False) for h in _state.hooks):
        raise RuntimeError("checkpoint: cannot be recorded by minigrad.trace (the recomputation "
                           "would be traced as constants); trace the function without checkpoint")
    tensors = [a for a in args if isinstance(a, Tensor)]
    rng = ([(None, _random.get_state())] if preserve_rng_state else []) + \
          [(gen, _random.get_state(gen)) for gen in gens]
    if not is_grad_enabled():
        return fn(*args)

    used: dict[int, Tensor] = {}

    def spot(event, f, inputs, output, attrs):  # which tensors that need grad does fn read?
        if event != "forward":
            return
        for t in inputs:
            if t.requires_grad:
                used.setdefault(id(t), t)

    with no_grad(), op_hook(spot):
        out = fn(*args)
    if not isinstance(out, Tensor):
        raise TypeError(f"checkpoint: fn must return one Tensor, got {type(out).__name__}")
    mine = {id(t) for t in tensors}
    captured = tuple(t for i, t in used.items() if i not in mine)
    for t in captured:
        if t.grad_fn is not None:
            raise ValueError(
                f"checkpoint: fn uses a tensor of shape {t.shape} made by '{t.op}' outside fn that "
                f"requires grad; pass it to checkpoint as an argument so that its gradient can flow")
    template = [_TENSOR if isinstance(a, Tensor) else a for a in args]
    call = _Call(fn, template)
    return Checkpoint.apply(*tensors, *captured, out=out.data, call=call, n_inputs=len(tensors),
                            captured=captured, rng=rng, check=determinism_check)


class _Call:
    """fn with its non-Tensor arguments bound (a small class so the node's repr stays short)."""

    def __init__(self, fn, template):
        self.fn, self.template = fn, template

    def __call__(self, tensors):
        return _call(self.fn, self.template, tensors)


# ------------------------------------------------------------ sequential

class _Chain:
    """Apply layers in order."""

    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _digest(a: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(a), digest_size=16).hexdigest()


class _Segment:
    """What the node keeps for one segment until its backward has run."""

    __slots__ = ("run", "recompute", "rng", "meta", "digest", "leaf", "root")

    def __init__(self, run, recompute, rng):
        self.run, self.recompute, self.rng = run, recompute, rng
        self.meta = self.digest = self.leaf = self.root = None


class SequentialCheckpoint(Function):
    """One node for a chain of segments; each is recomputed (or kept) and freed in turn.

    Forward: ran in :func:`checkpoint_sequential`. The node saves the input of
    every segment (the checkpoints; ``ctx.saved[j]`` for segment j), the
    parameters' arrays, and per segment its random state; a *stored* segment
    keeps its recorded graph instead of recomputing.
    VJP, from the last segment to the first: recompute segment j from its input
    (or take its stored graph), backpropagate ``g`` through it to get the
    gradient of its input (the ``g`` of segment j - 1) and of the parameters,
    then free the segment's input and graph. Memory is thus released as the
    backward pass moves to the front, as the planner's model assumes, and the
    node can be backpropagated only once.
    """

    name = "checkpoint_sequential"

    @staticmethod
    def forward(ctx, x, *params, out, inputs, segs, captured, check):
        ctx.save_for_backward(*inputs, *params)
        ctx.segs, ctx.captured, ctx.check = segs, captured, check
        return out

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            raise RuntimeError("checkpoint_sequential: gradients of gradients (create_graph=True) "
                               "cannot go through a checkpoint")
        segs, k = ctx.segs, len(ctx.segs)
        if any(s is None for s in segs):
            raise RuntimeError(
                "checkpoint_sequential: backward through these segments has already run; each "
                "segment is freed as soon as its backward is done, so a second backward pass "
                "(even with retain_graph=True) is not possible. Run the forward pass again.")
        need = ctx.needs_input_grad
        params = [t for t, r in zip(ctx.captured, need[1:]) if r]
        acc: list = [None] * len(params)
        for j in reversed(range(k)):
            seg = segs[j]
            need_in = j > 0 or need[0]
            if seg.recompute:
                leaf = Tensor._make(ctx.saved[j], need_in, (), "", None)
                with _replay(seg.rng), enable_grad():
                    y = seg.run(leaf)
                _check_segment(j, seg, y, ctx.check)
            else:
                leaf, y = seg.leaf, seg.root
            wrt = ([leaf] if need_in else []) + params
            if y.requires_grad and wrt:
                grads = list(_grad(y, wrt, grad_output=g, allow_unused=True))
            else:
                grads = [None] * len(wrt)
            if need_in:
                gin = grads.pop(0)
                g = np.zeros_like(leaf.data) if gin is None else gin.data
            for i, gp in enumerate(grads):
                if gp is not None:
                    acc[i] = gp.data if acc[i] is None else acc[i] + gp.data
            # This segment is done: drop its input and its graph.
            segs[j] = None
            ctx.saved = ctx.saved[:j] + (None,) + ctx.saved[j + 1:]
            del y, leaf, seg
        it = iter(acc)
        return (g if need[0] else None,) + tuple(next(it) if r else None for r in need[1:])


def _check_segment(j: int, seg: _Segment, y, check: str) -> None:
    shape, dtype = seg.meta
    if not isinstance(y, Tensor) or y.shape != shape or y.dtype != dtype:
        got = f"shape {y.shape} and dtype {y.dtype}" if isinstance(y, Tensor) else type(y).__name__
        raise RuntimeError(
            f"checkpoint_sequential: recomputing segment {j} gave {got}, but the forward pass "
            f"gave shape {shape} and dtype {dtype}. The layers must compute the same thing twice.")
    if check == "value" and _digest(y.data) != seg.digest:
        raise RuntimeError(
            f"checkpoint_sequential: recomputing segment {j} gave different values from the "
            f"forward pass. The layers must be pure functions of their input: random numbers "
            f"must come from minigrad.random's default generator (kept with "
            f"preserve_rng_state=True) or from an nn.Dropout's own generator, and no layer may "
            f"read anything that changes between the forward and the backward pass.")


def checkpoint_sequential(layers, segments, x: Tensor, *, keep_last: bool = False,
                          preserve_rng_state: bool = True, determinism_check: str = "value") -> Tensor:
    """Run a chain of layers in segments that keep only their inputs; recompute in backward.

    Args:
        layers: a ``minigrad.nn.Sequential`` or a list of callables, applied in order.
        segments: the number of segments k (of near-equal length, every one
            recomputed), or a :class:`Plan` from the planner (whose *stored*
            segments keep their graph instead, and are not recomputed).
        x: the input.
        keep_last: run the last segment outside the checkpoint, in the ordinary
            graph, as ``torch.utils.checkpoint.checkpoint_sequential`` does. That
            saves its recomputation, but its activations then live as long as the
            ordinary graph does (in minigrad, until the loss is dropped).
        preserve_rng_state, determinism_check: as for :func:`checkpoint`.

    The whole chain becomes one node (see :class:`SequentialCheckpoint`); every
    segment's memory is freed as soon as its backward has run. Random state:
    minigrad.random's default generator is saved at the start of every segment
    and replayed, and so are the generators of any ``nn.Dropout`` among the layers.
    """
    from .nn import Dropout, Module, Sequential

    seq = list(layers.layers) if isinstance(layers, Sequential) else list(layers)
    n = len(seq)
    if n == 0:
        raise ValueError("checkpoint_sequential: got no layers")
    for i, layer in enumerate(seq):
        if not callable(layer):
            raise TypeError(f"checkpoint_sequential: layer {i} is a {type(layer).__name__}, not callable")
    if not isinstance(x, Tensor):
        raise TypeError(f"checkpoint_sequential: x must be a Tensor, got {type(x).__name__}")
    if determinism_check not in _CHECKS:
        raise ValueError(f"checkpoint_sequential: determinism_check must be one of {_CHECKS}, "
                         f"got {determinism_check!r}")
    if not isinstance(segments, Plan) and (isinstance(segments, bool) or not isinstance(
            segments, (int, np.integer)) or not 1 <= segments <= n):
        raise ValueError(f"checkpoint_sequential: segments must be a Plan or an integer in "
                         f"[1, {n}] for {n} layers, got {segments!r}")
    plan = segments if isinstance(segments, Plan) else uniform_plan(n, int(segments))
    if plan.n != n:
        raise ValueError(f"checkpoint_sequential: the plan is for {plan.n} layers but there are {n}")
    if any(getattr(h, "is_trace", False) for h in _state.hooks):
        raise RuntimeError("checkpoint_sequential: cannot be recorded by minigrad.trace; trace the "
                           "layers without checkpointing")
    gens = []
    for layer in seq:
        for m in (layer.modules() if isinstance(layer, Module) else ()):
            if isinstance(m, Dropout) and m.generator is not None and \
                    all(m.generator is not g for g in gens):
                gens.append(m.generator)
    parts = plan.segments
    last = None
    if keep_last:
        last, parts = _Chain(seq[parts[-1][0]:]), parts[:-1]
    if not parts or not is_grad_enabled():
        h = _Chain(seq[:parts[-1][1]])(x) if parts else x
        return last(h) if last is not None else h

    used: dict[int, Tensor] = {}
    made: set[int] = set()

    def spot(event, f, inputs, output, attrs):  # parameters the layers read
        if event != "forward":
            return
        for t in inputs:
            if t.requires_grad and id(t) not in made:
                used.setdefault(id(t), t)
        made.add(id(output))

    segs, inputs, h = [], [], x
    with op_hook(spot):
        for j, (start, end, recompute) in enumerate(parts):
            rng = ([(None, _random.get_state())] if preserve_rng_state else []) + \
                  [(gen, _random.get_state(gen)) for gen in gens]
            seg = _Segment(_Chain(seq[start:end]), recompute, rng)
            inputs.append(h.data)
            if recompute:
                with no_grad():
                    out = seg.run(h)
                seg.meta = (out.shape, out.dtype)
                seg.digest = _digest(out.data) if determinism_check == "value" else None
            else:
                seg.leaf = Tensor._make(h.data, j > 0 or x.requires_grad, (), "", None)
                made.add(id(seg.leaf))
                out = seg.root = seg.run(seg.leaf)
            if not isinstance(out, Tensor):
                raise TypeError(f"checkpoint_sequential: segment {j} returned a "
                                f"{type(out).__name__}, not a Tensor")
            segs.append(seg)
            h = out
    captured = tuple(t for i, t in used.items() if t is not x)
    for t in captured:
        if t.grad_fn is not None:
            raise ValueError(f"checkpoint_sequential: a layer uses a tensor of shape {t.shape} "
                             f"made by '{t.op}' outside the chain; only parameters may be captured")
    y = SequentialCheckpoint.apply(x, *captured, out=h.data, inputs=inputs, segs=segs,
                                   captured=captured, check=determinism_check)
    return last(y) if last is not None else y


# -------------------------------------------------------------- planner

@dataclass(frozen=True)
class Plan:
    """Segments ``[boundaries[j], boundaries[j+1])`` of n layers; ``recompute[j]`` per segment."""

    boundaries: tuple[int, ...]
    recompute: tuple[bool, ...]

    def __post_init__(self):
        b = self.boundaries
        if len(b) < 2 or b[0] != 0 or any(x >= y for x, y in zip(b, b[1:])):
            raise ValueError(f"Plan: boundaries must rise strictly from 0 to n, got {b}")
        if len(self.recompute) != len(b) - 1:
            raise ValueError(f"Plan: {len(b) - 1} segments need {len(b) - 1} recompute flags, "
                             f"got {len(self.recompute)}")

    @property
    def n(self) -> int:
        return self.boundaries[-1]

    @property
    def k(self) -> int:
        return len(self.recompute)

    @property
    def segments(self) -> list[tuple[int, int, bool]]:
        return [(s, e, r) for s, e, r in zip(self.boundaries, self.boundaries[1:], self.recompute)]

    def __repr__(self) -> str:
        parts = " ".join(f"{'R' if r else 'S'}{e - s}" for s, e, r in self.segments)
        return f"Plan(n={self.n}, k={self.k}: {parts})"


def uniform_plan(n: int, k: int, recompute: bool = True) -> Plan:
    """k segments of near-equal length (the later ones are the longer), all recomputed."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"uniform_plan: n must be a positive integer, got {n!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ValueError(f"uniform_plan: the number of segments must be an integer in [1, {n}], got {k!r}")
    return Plan(tuple((i * int(n)) // int(k) for i in range(int(k) + 1)), (recompute,) * int(k))


def sqrt_plan(n: int) -> Plan:
    """The sqrt(n) rule (Chen et al. 2016): round(sqrt(n)) equal segments, all recomputed.

    With uniform layers the peak is about k * out + (n / k) * act, smallest near
    k = sqrt(n * act / out); recomputation is one extra forward pass.
    """
    return uniform_plan(n, max(1, round(math.sqrt(n))))


def _sizes(n: int, act, out, cost) -> tuple[list, list, list]:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"planner: n must be a positive integer, got {n!r}")
    res = []
    for name, v in (("act", act), ("out", out), ("cost", cost)):
        if v is None:
            v = [1] * n if name != "out" or act is None else list(act)
        v = list(v)
        if len(v) != n:
            raise ValueError(f"planner: {name} needs one value per layer ({n}), got {len(v)}")
        if any(not np.isfinite(x) or x < 0 for x in v):
            raise ValueError(f"planner: {name} must be finite and >= 0, got {v}")
        res.append(v)
    return res[0], res[1], res[2]


def simulate_plan(plan: Plan, act=None, out=None, cost=None) -> dict:
    """Run the memory model event by event: ``{"peak": ..., "recompute": ...}``.

    Forward: a recomputed segment keeps its output, a stored one its activations.
    Backward, last segment first: a recomputed segment needs its activations on
    top of what is live; then the segment's memory is freed.
    """
    a, b, c = _sizes(plan.n, act, out, cost)
    live = peak = 0
    kept = []
    for s, e, r in plan.segments:
        kept.append(b[e - 1] if r else sum(a[s:e]))
        live += kept[-1]
        peak = max(peak, live)
    recompute = 0
    for (s, e, r), k in zip(reversed(plan.segments), reversed(kept)):
        if r:
            peak = max(peak, live + sum(a[s:e]))
            recompute += sum(c[s:e])
        live -= k
    return {"peak": peak, "recompute": recompute}


def _dp(a, b, c, budget, objective: str):
    """Dynamic programming over segment boundaries.

    State at boundary i: P, the memory kept by the segments before i. From it a
    segment [i, e) is stored (keeps A = sum(a[i:e]); live while it runs backward:
    P + A) or recomputed (keeps b[e-1]; live: P + b[e-1] + A). Among states at
    the same boundary, one with no more P and a no-worse (cost, peak) -- or
    (peak, cost) -- dominates: every continuation of the other fits it too.
    """
    n = len(a)
    pa = np.concatenate([[0], np.cumsum(a)]).tolist()
    pc = np.concatenate([[0], np.cumsum(c)]).tolist()
    states: list[dict] = [dict() for _ in range(n + 1)]
    states[0][0] = ((0, 0), None)  # P -> (key, back-pointer)

    def key(cost, peak):
        return (cost, peak) if objective == "cost" else (peak, cost)

    for i in range(n):
        front, best = [], None
        for P in sorted(states[i]):
            k, back = states[i][P]
            if best is None or k < best:
                front.append((P, k))
                best = k
        for P, k in front:
            cost, peak = k if objective == "cost" else (k[1], k[0])
            for e in range(i + 1, n + 1):
                A = pa[e] - pa[i]
                if P + A > budget:
                    break
                for recompute in (False, True):
                    kept = b[e - 1] if recompute else A
                    live = P + kept + (A if recompute else 0)
                    if live > budget:
                        continue
                    nk = key(cost + (pc[e] - pc[i] if recompute else 0), max(peak, live))
                    old = states[e].get(P + kept)
                    if old is None or nk < old[0]:
                        states[e][P + kept] = (nk, (i, P, recompute))
    if not states[n]:
        return None
    P = min(states[n], key=lambda p: states[n][p][0])
    k = states[n][P][0]
    bounds, flags, e = [n], [], n
    while e > 0:
        i, P, r = states[e][P][1]
        bounds.append(i)
        flags.append(r)
        e = i
    plan = Plan(tuple(reversed(bounds)), tuple(reversed(flags)))
    return plan, k


def min_peak(n: int, act=None, out=None) -> float:
    """The smallest peak any segment schedule reaches under the planner's memory model."""
    a, b, c = _sizes(n, act, out, None)
    _, k = _dp(a, b, c, math.inf, "peak")
    return k[0]


def plan_segments(n: int, budget: float, act=None, out=None, cost=None) -> Plan:
    """The segment schedule with the least recomputation whose peak fits in ``budget``.

    Args:
        n: number of layers.
        budget: memory allowed (same units as act and out).
        act: per layer, the memory its recorded activations take (default 1 each).
        out: per layer, the size of its output, i.e. of a checkpoint after it
            (default: equal to act).
        cost: per layer, the cost of recomputing it (default 1 each).

    Exact under the model in the module docstring (dynamic programming with
    dominance pruning); among schedules of equal cost it prefers a lower peak.
    Raises ValueError, with the smallest feasible budget, if nothing fits.
    """
    a, b, c = _sizes(n, act, out, cost)
    if not budget >= 0:
        raise ValueError(f"plan_segments: budget must be >= 0, got {budget!r}")
    found = _dp(a, b, c, budget, "cost")
    if found is None:
        raise ValueError(f"plan_segments: no schedule of {n} layers fits in a budget of {budget:g}; "
                         f"the smallest peak any schedule reaches is {min_peak(n, a, b):g}")
    return found[0]


# ----------------------------------------------------- binomial (revolve)

def binomial_reach(slots: int, repeats: int) -> int:
    """beta(s, r) = C(s + r, s): the longest chain that s checkpoints reverse when no step
    is evaluated more than r times in the advancing sweeps (Griewank & Walther 2000)."""
    return math.comb(slots + repeats, slots)


def revolve_forward_steps(n: int, slots: int) -> int:
    """Least forward steps to reverse a chain of n steps with ``slots`` checkpoints.

    One checkpoint holds the chain's input. A step is reversed from its stored
    input (the forward step done together with the reverse step is not counted).
    Dynamic programming (Griewank 1992):
        t(1, s) = 0,  t(l, 1) = l (l - 1) / 2,
        t(l, s) = min over 0 < j < l of  j + t(l - j, s - 1) + t(j, s):
    advance j steps, store a checkpoint there, reverse the tail with one slot
    fewer, then reverse the head with all slots. Closed form:
    t = r l - C(s + r, s + 1), where r is the least with C(s + r, s) >= l.
    """
    if n < 1 or slots < 1:
        raise ValueError(f"revolve_forward_steps: need n >= 1 and slots >= 1, got n={n}, slots={slots}")
    inf = float("inf")
    t = [[0.0] * (slots + 1) for _ in range(n + 1)]
    for length in range(2, n + 1):
        t[length][0] = inf
        for s in range(1, slots + 1):
            t[length][s] = min(j + t[length - j][s - 1] + t[j][s] for j in range(1, length))
    return int(t[n][slots])
