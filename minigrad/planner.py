"""Segment schedules for activation checkpointing: pure arithmetic, no tensors.

A schedule cuts a chain of n layers into segments; each segment either keeps
its recorded activations (*stored*) or keeps only its input and is recomputed
during backward. :func:`uniform_plan` and :func:`sqrt_plan` make the simple
schedules; :func:`plan_segments` finds, for a memory budget, the schedule with
the least recomputation by an exact dynamic program over segment boundaries
(this course's own formulation of the problem Chen et al. 2016, "Training Deep
Nets with Sublinear Memory Cost", solve with a greedy threshold search);
:func:`revolve_forward_steps` is Griewank & Walther's optimal many-level
schedule (binomial checkpointing, "revolve", ACM TOMS 2000), the reference for
what recomputation can achieve at all.

Memory model (units are up to you: bytes, or "one activation"). For layer i,
``act[i]`` is what recording it keeps for backward and ``out[i]`` the size of
its output. A segment that is *recomputed* keeps only its output (the next
segment's checkpoint) until its backward, then needs its whole ``sum(act)``
again; a segment that is *stored* keeps ``sum(act)`` until its backward.
Memory is freed segment by segment as the backward pass moves to the front,
so while segment j runs backward the live memory is
``sum(kept by segments before j) + kept_j + (sum(act_j) if recomputed)``,
and the peak is the largest of these. Recomputation costs ``sum(cost)`` of the
recomputed segments' layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Plan", "uniform_plan", "sqrt_plan", "plan_segments", "simulate_plan", "min_peak",
           "revolve_forward_steps", "binomial_reach"]


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
