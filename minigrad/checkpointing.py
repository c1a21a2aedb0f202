"""Activation checkpointing: keep few activations, recompute the rest during backward.

* :func:`checkpoint` ``(fn, *inputs)`` runs ``fn`` under ``no_grad``, so none of
  its intermediate values is kept, and records its output as *one* node. That
  node saves only the inputs (and the random-number state). Its VJP recomputes
  ``fn`` with recording on, from the same inputs and the same random state, and
  backpropagates through the recomputed graph, which is freed right after.
  Parameters that ``fn`` uses (leaf tensors with ``requires_grad``) become
  inputs of the node, so their gradients arrive like any other. It is modelled
  on ``torch.utils.checkpoint.checkpoint(fn, *inputs, use_reentrant=False)``:
  the same gradients, and the same random numbers replayed. It differs in four
  ways. It records one node for ``fn``, where PyTorch records ``fn``'s own
  graph and drops its saved tensors. It always recomputes all of ``fn``, where
  PyTorch stops as soon as it has what backward needs. It refuses
  ``create_graph=True`` through a checkpoint. And it refuses a parameter
  changed in place since the first run, and by default recomputed values that
  differ from it (``determinism_check="value"``), where PyTorch checks only
  shapes and dtypes and goes on with the new values.
* :func:`checkpoint_sequential` ``(layers, segments, x)`` cuts a chain of
  layers into segments and checkpoints each of them: a chain of ordinary
  checkpoint nodes, each freed as soon as its backward has run.
* ``policy=`` selects what a recomputation may keep instead of recomputing
  (selective activation checkpointing): see :func:`save_ops`.

The schedule planner (which segments, and which of them to recompute) is pure
arithmetic and lives in :mod:`minigrad.planner`.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import random as _random
from .engine import grad as _grad
from .function import Function, _state, enable_grad, is_grad_enabled, no_grad
from .hooks import op_hook
from .planner import (  # noqa: F401
    Plan,
    binomial_reach,
    min_peak,
    plan_segments,
    revolve_forward_steps,
    simulate_plan,
    sqrt_plan,
    uniform_plan,
)
from .tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "save_ops"]

_CHECKS = ("value", "shape", "none")


def _validate(where: str, determinism_check: str, generators: Sequence) -> tuple:
    """The checks checkpoint and checkpoint_sequential share; returns the generators as a tuple."""
    if determinism_check not in _CHECKS:
        raise ValueError(f"{where}: determinism_check must be one of {_CHECKS}, "
                         f"got {determinism_check!r}")
    gens = tuple(generators)
    for i, gen in enumerate(gens):
        if not isinstance(gen, np.random.Generator):
            raise TypeError(f"{where}: generators[{i}] is a {type(gen).__name__}, "
                            f"not a numpy.random.Generator")
    if any(getattr(h, "is_trace", False) for h in _state.hooks):
        raise RuntimeError(f"{where}: cannot be recorded by minigrad.trace (the recomputation "
                           f"would be traced as constants); trace the function without checkpointing")
    return gens


def _digest(a: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(a), digest_size=16).hexdigest()


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
    view = "maybe"  # fn may return a view of an input, or the input itself

    @staticmethod
    def forward(ctx, *arrays, out, call, n_inputs, captured, rng, check, kept):
        ctx.save_for_backward(*arrays)
        ctx.call, ctx.n_inputs, ctx.captured, ctx.rng, ctx.check = call, n_inputs, captured, rng, check
        ctx.kept = kept  # selective: the op outputs the policy kept (None where recomputed)
        ctx.out_meta = (out.shape, out.dtype)
        ctx.digest = _digest(out) if check == "value" else None  # to compare with the recomputation
        return out

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            raise RuntimeError(
                "checkpoint: gradients of gradients (create_graph=True) cannot go through a "
                "checkpoint; differentiate without checkpointing for higher-order gradients")
        n = ctx.n_inputs
        need = ctx.needs_input_grad
        leaves = [Tensor._make(a, bool(r)) for a, r in zip(ctx.saved[:n], need[:n])]
        if ctx.kept is not None:
            with _replay(ctx.rng), enable_grad(), _reuse(ctx.kept):
                y = ctx.call(leaves)
            return _backprop(ctx, leaves, y, g)
        with _replay(ctx.rng), enable_grad():
            y = ctx.call(leaves)  # (a policy's kept outputs are not recomputed: see save_ops)
        return _backprop(ctx, leaves, y, g)


def _backprop(ctx, leaves, y, g) -> tuple:
    """Check the recomputed output, then backpropagate g through its graph to the node's inputs."""
    _check_recomputed(ctx, y)
    n, need = ctx.n_inputs, ctx.needs_input_grad
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
    if ctx.check == "value" and _digest(y.data) != ctx.digest:
        raise RuntimeError(
            f"checkpoint: recomputing fn gave different values from the forward pass (output "
            f"shape {shape}). fn must be a pure function of its "
            f"inputs: random numbers must come from minigrad.random's default generator (kept "
            f"with preserve_rng_state=True) or from generators passed to checkpoint, and fn must "
            f"not read anything that changes between the forward and the backward pass. Pass "
            f"determinism_check='shape' to compare shapes only.")


def checkpoint(fn: Callable, *args, preserve_rng_state: bool = True,
               generators: Sequence[np.random.Generator] = (),
               determinism_check: str = "value", policy: Callable | None = None) -> Tensor:
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
        policy: selective recomputation (see :func:`save_ops`): a function of an
            op's Function class that says whether the forward pass keeps that op's
            output for backward instead of recomputing it. None recomputes all.

    Memory: the node keeps the input arrays only. Compute: fn runs twice.
    Parameters used inside fn (leaf tensors with requires_grad) receive their
    gradients as usual; a non-leaf tensor that requires grad must be passed as
    an argument, not captured from outside.
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: fn must be callable, got {type(fn).__name__}")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be callable or None, got {type(policy).__name__}")
    gens = _validate("checkpoint", determinism_check, generators)
    tensors = [a for a in args if isinstance(a, Tensor)]
    rng = ([(None, _random.get_state())] if preserve_rng_state else []) + \
          [(gen, _random.get_state(gen)) for gen in gens]
    if not is_grad_enabled():
        return fn(*args)

    used: dict[int, Tensor] = {}
    kept: list | None = [] if policy is not None else None

    def spot(event, f, inputs, output, attrs):  # which tensors that need grad does fn read?
        if event != "forward":
            return
        for t in inputs:
            if t.requires_grad:
                used.setdefault(id(t), t)
        if kept is not None:  # selective: the outputs the policy keeps, in call order
            kept.append(output.data if policy(f) else None)

    with no_grad(), op_hook(spot):
        out = fn(*args)
    if not isinstance(out, Tensor):
        raise TypeError(f"checkpoint: fn must return one Tensor, got {type(out).__name__}")
    if not used and not out.requires_grad:  # no gradient can reach the output: as the plain call
        return out
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
                            captured=captured, rng=rng, check=determinism_check,
                            kept=None if kept is None else tuple(kept))


class _Call:
    """fn with its non-Tensor arguments bound (a small class so the node's repr stays short)."""

    def __init__(self, fn, template):
        self.fn, self.template = fn, template

    def __call__(self, tensors):
        return _call(self.fn, self.template, tensors)




# ------------------------------------------------------ selective recomputation

@contextlib.contextmanager
def _reuse(kept: tuple):
    """During a recomputation, ops whose output was kept take it instead of computing it again.

    Each op is still recorded, with what its VJP needs saved (``Function.forward_kept``),
    but a kept op does not compute its output again; ``count_ops`` sees it as a
    "reused" event rather than a "forward" one.
    """
    it = iter(kept)
    prev = _state.reuse
    _state.reuse = it
    try:
        yield
    finally:
        _state.reuse = prev


def save_ops(*names: str) -> Callable:
    """A checkpoint policy that keeps the outputs of the named ops, e.g. ``save_ops("matmul")``.

    Korthikanti et al. (2022), "Reducing Activation Recomputation in Large
    Transformer Models": keep what is expensive to compute (the matmuls) and
    recompute what is cheap (pointwise ops), which PyTorch offers as selective
    activation checkpointing (``torch.utils.checkpoint.create_selective_checkpoint_contexts``).
    """
    wanted = frozenset(names)
    return lambda fn: fn.name in wanted


# ------------------------------------------------------------ sequential

class _Chain:
    """Apply layers in order."""

    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
            if not isinstance(x, Tensor):
                raise TypeError(f"checkpoint_sequential: a layer returned a {type(x).__name__}, "
                                f"not a Tensor; every layer must map one Tensor to one Tensor")
        return x


def checkpoint_sequential(layers, segments, x: Tensor, *, keep_last: bool = False,
                          preserve_rng_state: bool = True, determinism_check: str = "value",
                          policy: Callable | None = None) -> Tensor:
    """Run a chain of layers in segments that keep only their inputs; recompute in backward.

    Args:
        layers: a ``minigrad.nn.Sequential`` or a list of callables, applied in order.
        segments: the number of segments k (of near-equal length, every one
            recomputed), or a :class:`~minigrad.planner.Plan` (whose *stored*
            segments are recorded as usual and not recomputed).
        x: the input.
        keep_last: run the last segment outside any checkpoint: it is not
            recomputed, and its activations are kept like any recorded op's.
            ``torch.utils.checkpoint.checkpoint_sequential`` always does this
            (it has no such option), and it cuts differently: k - 1 segments
            of n // k layers, and the rest in the last one. minigrad cuts at
            i * n // k, so with ``keep_last`` it recomputes (k - 1) * n // k
            layers where PyTorch recomputes (k - 1) * (n // k): up to k - 2 more.
        preserve_rng_state, determinism_check, policy: as for :func:`checkpoint`.

    Each recomputed segment is one ordinary :func:`checkpoint` node, so memory
    is freed segment by segment as the backward pass moves to the front, and a
    graph kept with ``retain_graph=True`` can be backpropagated again. Random
    state: minigrad.random's default generator is saved at the start of every
    segment and replayed, and so are the generators of any ``nn.Dropout`` among
    the layers.
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
    if not isinstance(segments, Plan) and (isinstance(segments, bool) or not isinstance(
            segments, (int, np.integer)) or not 1 <= segments <= n):
        raise ValueError(f"checkpoint_sequential: segments must be a Plan or an integer in "
                         f"[1, {n}] for {n} layers, got {segments!r}")
    plan = segments if isinstance(segments, Plan) else uniform_plan(n, int(segments))
    if plan.n != n:
        raise ValueError(f"checkpoint_sequential: the plan is for {plan.n} layers but there are {n}")
    gens: list = []
    for layer in seq:
        for m in (layer.modules() if isinstance(layer, Module) else ()):
            if isinstance(m, Dropout) and m.generator is not None and \
                    all(m.generator is not g for g in gens):
                gens.append(m.generator)
    _validate("checkpoint_sequential", determinism_check, gens)
    parts = plan.segments
    h = x
    for j, (start, end, recompute) in enumerate(parts):
        run = _Chain(seq[start:end])
        last = j == len(parts) - 1
        if recompute and not (keep_last and last) and is_grad_enabled():
            h = checkpoint(run, h, preserve_rng_state=preserve_rng_state, generators=gens,
                           determinism_check=determinism_check, policy=policy)
        else:
            h = run(h)
    return h
