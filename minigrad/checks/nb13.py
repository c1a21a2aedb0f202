"""Checks of notebook 13's exercises: a hinge loss written with ops only, and the ring all-reduce.

``check_hinge(hinge_ops)`` traces ``hinge_ops(x, w)`` with ``minigrad.trace`` on an example whose margin is
positive, and requires that nothing was read into Python while tracing (no ``.item()``, ``.numpy()``);
that eagerly and replayed from the trace it gives ``max(0, 1 - sum(x @ w))`` for x filled with -1, 0,
0.1, 0.5 and 1 (the last two have negative margins, so a branch frozen at tracing time shows); and that
the gradient through the trace passes ``gradcheck``.

``check_ring_allreduce(ring_allreduce)`` runs it on K = 4, 3 and 5 workers, with vectors that do not
split evenly, and requires that the vectors are left unchanged, that every worker ends with the sum,
and that each worker sends exactly one chunk per step for 2(K - 1) steps (the byte counts of the
schedule in the text, in any order: a ring that starts at another chunk sends a permutation of them).
"""

from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad import Tensor

from ._op_checks import attempt

W_HINGE = np.array([[0.5], [1.0], [1.5]])
FILLS = [-1.0, 0.0, 0.1, 0.5, 1.0]


def check_hinge(hinge_ops) -> None:
    """Check ``hinge_ops(x, w)`` eagerly and through ``minigrad.trace`` (see the module's docstring)."""
    example = np.full((2, 3), 0.01)  # a small score: positive margin
    traced = attempt(
        "minigrad.trace(hinge_ops, x, w)",
        "compute with ops on Tensors (x @ w, .sum(), .relu(), ...)",
        mg.trace,
        hinge_ops,
        example,
        W_HINGE,
    )
    assert not traced.reads, (
        "hinge_ops read a value into Python while it was traced (.item(), .numpy(), .data or a truth "
        "value): the trace would freeze what was decided with it; compute the max with an op "
        "instead, so that the trace records it"
    )
    for fill in FILLS:
        xf = np.full((2, 3), fill)
        expected = max(0.0, 1.0 - (xf @ W_HINGE).sum())
        got = hinge_ops(Tensor(xf), Tensor(W_HINGE)).item()
        assert abs(got - expected) < 1e-12, (
            f"hinge_ops on x filled with {fill}: {got:.4g}, but max(0, 1 - score) is {expected:.4g}"
        )
        got = traced(xf, W_HINGE).item()
        assert abs(got - expected) < 1e-12, (
            f"the trace of hinge_ops, replayed on x filled with {fill}, gives {got:.4g} instead of "
            f"{expected:.4g}: "
            "something was decided while tracing (a value read from .data is frozen into the graph as a "
            "constant)"
        )
    assert mg.gradcheck(lambda v: traced(np.full((2, 3), 0.1), v), Tensor(W_HINGE, requires_grad=True)), (
        "the gradient through the trace of hinge_ops does not match central differences"
    )


def ring_problem(results, sent, vectors) -> str | None:
    """What is wrong with ``(results, sent)`` as the ring all-reduce of ``vectors``, or None."""
    k, total = len(vectors), np.sum(vectors, axis=0)
    if len(results) != k or any(np.shape(r) != total.shape for r in results):
        return f"K = {k}: return one array per worker, each of the vectors' shape {total.shape}"
    wrong = [i for i, r in enumerate(results) if not np.allclose(r, total, rtol=0, atol=1e-12)]
    if wrong:
        return (
            f"K = {k}: workers {wrong} do not hold the sum. Run both phases, K - 1 steps each: in the "
            f"reduce-scatter, add what arrives to the receiver's own copy of that chunk; in the all-gather, "
            f"overwrite the receiver's chunk with the completed sum it is sent"
        )
    chunk_bytes = [c.nbytes for c in np.array_split(vectors[0], k)]
    expected = [
        sum(chunk_bytes[(i - s) % k] for s in range(k - 1))
        + sum(chunk_bytes[(i + 1 - s) % k] for s in range(k - 1))
        for i in range(k)
    ]
    if len(sent) != k or sorted(sent) != sorted(expected):
        return (
            f"K = {k}: bytes sent per worker {list(sent)}, expected {expected} with the schedule of the "
            f"text (another starting chunk reorders them): each worker sends one chunk (1/K of the "
            f"vector, c.nbytes) per step, in 2(K - 1) steps, and nothing else"
        )
    return None


def check_ring_allreduce(ring_allreduce, vectors=None) -> None:
    """Check ``ring_allreduce`` on ``vectors`` (if given) and on K = 4, 3 and 5 random vectors."""
    rng = np.random.default_rng(11)
    cases = ([] if vectors is None else [list(vectors)]) + [
        [rng.standard_normal(n) for _ in range(k)] for k, n in ((4, 75), (3, 11), (5, 11))
    ]
    for vs in cases:
        given = [v.copy() for v in vs]
        results, sent = attempt(
            f"ring_allreduce on K = {len(vs)} vectors",
            "return (list of K arrays, list of K byte counts)",
            ring_allreduce,
            given,
        )
        assert all(np.array_equal(a, b) for a, b in zip(given, vs)), (
            f"K = {len(vs)}: ring_allreduce changed the vectors it was given: work on copies of the chunks"
        )
        problem = ring_problem(results, sent, vs)
        assert problem is None, problem


def _expected_scales(flags, init, growth_interval):
    """The scale before each step and whether the step is applied, by GradScaler's rule."""
    scale, good, out = init, 0, []
    for finite in flags:
        out.append((scale, finite))
        if not finite:
            scale, good = scale / 2, 0
        else:
            good += 1
            if good == growth_interval:
                scale, good = scale * 2, 0
    return out


def check_loss_scaler(LossScaler, grads_finite=None) -> None:
    """Check a dynamic loss scaler ``LossScaler(init, growth_interval)`` with ``.scale`` and
    ``.update(finite) -> bool`` (True: apply this step) against PyTorch's ``GradScaler`` rule: a step whose
    gradients hold inf or NaN is skipped and halves the scale, and ``growth_interval`` applied steps in a
    row double it. ``grads_finite(scale)``, if given, says whether a float16 backward at that scale stays
    finite; the scaler then drives it from 2^24 for 12 steps with a growth interval of 3."""
    flags = [
        True,
        True,
        False,
        True,
        True,
        True,
        True,
        False,
        False,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ]
    for init, interval in ((2.0**10, 3), (65536.0, 2), (8.0, 1)):
        scaler = attempt(
            "LossScaler(init, growth_interval)",
            "keep the scale in .scale and count the good steps",
            LossScaler,
            init,
            interval,
        )
        for k, ((want_scale, want_apply), finite) in enumerate(
            zip(_expected_scales(flags, init, interval), flags)
        ):
            got_scale = float(scaler.scale)
            assert got_scale == want_scale, (
                f"growth interval {interval}, from {init:g}: before step {k} the scale is {got_scale:g}, "
                "expected "
                f"{want_scale:g} (the flags so far: {flags[:k]}). Halve it after a step with inf or NaN, "
                "and double "
                f"it after {interval} applied steps in a row, counting again from 0 after every change and "
                "every "
                f"overflow"
            )
            applied = scaler.update(finite)
            assert bool(applied) == want_apply, (
                f"step {k}: update({finite}) returned {applied}: return False for a step whose gradients "
                "are not "
                f"finite (the optimizer must skip it, or inf reaches the weights) and True otherwise"
            )
    if grads_finite is not None:
        scaler, seen = LossScaler(2.0**24, 3), []
        for _ in range(12):
            seen.append(int(np.log2(scaler.scale)))
            scaler.update(grads_finite(scaler.scale))
        want = [
            int(np.log2(s)) for s, _ in _expected_scales([grads_finite(2.0**k) for k in seen], 2.0**24, 3)
        ]
        assert seen == want, f"on the float16 network the log2 scales were {seen}, expected {want}"
