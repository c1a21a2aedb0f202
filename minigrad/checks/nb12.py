"""Checks of notebook 12's exercise: ``two_segment_grads(first, second, x)``, checkpointing by hand.

``check_two_segment_grads(two_segment_grads, first, second, x)`` runs your function and plain
backpropagation through ``second(first(x)).sum()`` and requires:

* it is built by hand: no ``minigrad.checkpoint`` or ``checkpoint_sequential`` node is recorded, and
  minigrad's ``backward()``/``minigrad.grad`` may be used, as the exercise says;
* the first half ran twice (once for the checkpoint, once recomputed) and the second once, counted with
  ``minigrad.count_ops``, and the first half's first pass recorded nothing (it ran under ``no_grad``);
* its peak memory, measured with ``minigrad.memory.MemoryProfiler``, is below 95 % of plain
  backpropagation's;
* it returns the gradients of ``x``, of ``first``'s parameters and of ``second``'s, in that order, equal
  to plain backpropagation's to 1e-10. A wrong order, or a recomputed first half backpropagated from
  ones instead of the checkpoint's gradient, is named as such.
"""

from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad.memory import MemoryProfiler

from ._op_checks import attempt

CHECKPOINT_OPS = ("checkpoint",)


def run_measured(fn, first, second, x):
    """``fn(first, second, x)`` with its matmuls counted (run, and recorded in a graph), the names of the
    ops it recorded, and its peak NumPy memory above what was live before. Returns
    ``(grads as arrays, counted, peak, recorded matmuls, recorded op names)``."""
    params = first.parameters() + second.parameters()
    x.grad = None
    for p in params:
        p.grad = None
    recorded, names = [], set()

    def watch_recording(event, fn_, inputs, out, attrs):
        if event == "forward":
            names.add(fn_.name)
            if fn_.name == "matmul" and getattr(out, "grad_fn", None) is not None:
                recorded.append(fn_.name)

    with mg.count_ops() as counted, mg.op_hook(watch_recording):
        with MemoryProfiler(params + [x], every_op=False) as prof:
            with prof.phase("run"):
                grads = fn(first, second, x)
    tl = prof.timeline
    return (
        [np.asarray(getattr(g, "data", g)) for g in grads],
        counted,
        tl.peak() - tl.samples[0].total,
        len(recorded),
        names,
    )


def plain_grads(first, second, x):
    """Plain backpropagation through both halves: the reference."""
    out = second(first(x)).sum()
    return mg.grad(out, [x] + first.parameters() + second.parameters())


def two_segment_problem(fn, first, second, x) -> str | None:
    """None if ``fn`` checkpoints correctly, else what is wrong with it."""
    truth, truth_ops, truth_peak, _, _ = run_measured(plain_grads, first, second, x)
    grads, counted, peak, recorded, names = attempt(
        "two_segment_grads(first, second, x)",
        "return a list of arrays: x's gradient, first's, then second's",
        run_measured,
        fn,
        first,
        second,
        x,
    )
    used = sorted(set(CHECKPOINT_OPS) & names)
    if used:
        return (
            f"your function recorded a {used[0]} node: minigrad.checkpoint does the work for you. Build it "
            f"by hand from no_grad(), leaf tensors and minigrad.grad (or backward)"
        )
    n1, n2 = len(first.layers), len(second.layers)
    expected = 2 * n1 + n2  # one matmul per block
    ran = counted.forward["matmul"]
    if ran != expected:
        if ran == truth_ops.forward["matmul"]:
            return (
                f"every matmul ran once ({ran}): nothing was recomputed. The first half must run twice: once "
                f"under no_grad for the checkpoint, and again from a fresh leaf during the backward pass"
            )
        return (f"{ran} matmuls ran, {expected} expected: the first half twice (checkpoint, recomputation), "
                f"the second once")
    if recorded > n1 + n2:
        return (
            f"{recorded} matmuls were recorded in a graph, {n1 + n2} expected: the first pass of the first "
            f"half recorded its ops, and with them kept its intermediate values. Run that pass under "
            f"mg.no_grad(); only the recomputation should build the first half's graph"
        )
    if peak > 0.95 * truth_peak:
        return (
            f"the peak was {peak / truth_peak:.0%} of plain backpropagation's: the first half's intermediate "
            f"values were kept. Run its first pass under mg.no_grad(), keep only its output, and let the "
            f"recomputation build the graph"
        )
    if len(grads) != len(truth):
        return f"{len(grads)} gradients returned, {len(truth)} expected: x, first's, then second's parameters"
    truth = [np.asarray(t.data) for t in truth]
    close = [u.shape == v.shape and np.allclose(u, v, rtol=1e-10, atol=1e-10) for u, v in zip(grads, truth)]
    if all(close):
        return None
    n_p1 = len(first.parameters())
    second_ok, first_ok = all(close[1 + n_p1 :]), all(close[: 1 + n_p1])
    found_elsewhere = sum(any(u.shape == v.shape and np.allclose(u, v) for v in truth) for u in grads)
    if found_elsewhere == len(grads) and not all(close):
        return (
            "every gradient is right but some are in the wrong place: return x's gradient first, then "
            "first's parameters' gradients, then second's (in the order of .parameters())"
        )
    if second_ok and not first_ok:
        return (
            "second's gradients are right, x's and first's are not: backpropagate the recomputed first half "
            "with grad_output= the gradient of the checkpoint leaf from step 2 (not ones, not a sum)"
        )
    diff = max(float(np.abs(u - v).max()) if u.shape == v.shape else np.inf for u, v in zip(grads, truth))
    return f"the gradients differ from plain backpropagation by up to {diff:.3g}"


def check_two_segment_grads(two_segment_grads, first, second, x) -> None:
    """Check ``two_segment_grads`` on the two halves ``first`` and ``second`` and the input ``x``."""
    problem = two_segment_problem(two_segment_grads, first, second, x)
    assert problem is None, problem
