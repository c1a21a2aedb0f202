"""Checks of notebook 10's exercise: ``clip_by_global_norm(grads, max_norm)``.

``check_clip_by_global_norm(clip_by_global_norm)`` requires, for a list of NumPy gradients:

* the arrays it is given are left as they are (new arrays are returned);
* the second result is the global norm *before* clipping, ``sqrt(sum of g**2 over every entry of every
  array)``, equal to what ``minigrad.nn.clip_grad_norm`` returns on the same gradients (here of norm
  above 1e10);
* every array is scaled by one and the same factor, ``max_norm / norm``, so the result equals the
  package's clipped gradients and has norm ``max_norm``;
* below ``max_norm`` nothing changes; and ``[3, 0]`` with ``[0, 4]`` has norm 5 (not 3 + 4) and is
  clipped to ``[0.6, 0]`` and ``[0, 0.8]``.
"""

from __future__ import annotations

import numpy as np

from minigrad import Tensor, nn

from ._op_checks import attempt


def check_clip_by_global_norm(clip_by_global_norm, *, seed: int = 10) -> None:
    """Check ``clip_by_global_norm`` against ``nn.clip_grad_norm`` and on small cases (see the module)."""
    rng = np.random.default_rng(seed)
    shapes = [(20, 16), (16,), (16, 10), (10,)]
    raw = [rng.standard_normal(s) * 10.0 ** (12 + k) for k, s in enumerate(shapes)]
    before = [r.copy() for r in raw]
    params = [Tensor(np.zeros(s), requires_grad=True) for s in shapes]
    for p, r in zip(params, raw):
        p.grad = r.copy()
    mine, norm = attempt(
        "clip_by_global_norm(grads, 1.0)",
        "return (list of clipped arrays, norm before clipping)",
        clip_by_global_norm,
        raw,
        1.0,
    )
    pkg_norm = nn.clip_grad_norm(params, 1.0)
    assert all(np.array_equal(r, b) for r, b in zip(raw, before)), (
        "clip_by_global_norm changed the arrays it was given (g *= scale?); return new ones"
    )
    assert len(mine) == len(raw), f"{len(mine)} arrays returned for {len(raw)} given: return one per gradient"
    assert norm > 1e10 and abs(norm / pkg_norm - 1) < 1e-12, (
        f"global norm {norm:.6e}, the package's {pkg_norm:.6e}: return the norm before clipping, the square "
        f"root of the sum of the squares of every entry of every array"
    )
    gap = max(float(np.max(np.abs(np.asarray(a) - p.grad))) for a, p in zip(mine, params))
    after = float(np.sqrt(sum(np.sum(np.asarray(a, dtype=float) ** 2) for a in mine)))
    assert abs(after - 1.0) < 1e-9 and gap < 1e-12, (
        f"your clipped gradients have norm {after:.6g} and differ from the package's by {gap:.1e}: every "
        "array "
        f"must be scaled by one and the same factor, max_norm / (global norm)"
    )
    small, small_norm = clip_by_global_norm([np.array([0.3, 0.4]), np.zeros(3)], 1.0)
    assert abs(small_norm - 0.5) < 1e-15 and np.allclose(small[0], [0.3, 0.4]), (
        f"a norm of 0.5 with max_norm 1 gave {np.asarray(small[0]).tolist()} (norm {small_norm}): below "
        "max_norm "
        f"nothing changes, so scale only when the norm exceeds max_norm"
    )
    pair, pair_norm = clip_by_global_norm([np.array([3.0, 0.0]), np.array([0.0, 4.0])], 1.0)
    assert abs(pair_norm - 5.0) < 1e-12, (
        f"norm of [3, 0] and [0, 4] together: {pair_norm}; the global norm is sqrt(3^2 + 4^2) = 5, not a "
        "sum of norms"
    )
    assert np.allclose(pair[0], [0.6, 0.0]) and np.allclose(pair[1], [0.0, 0.8]), (
        f"clipped to {[np.asarray(p).tolist() for p in pair]}: every array is scaled by the same max_norm / "
        "norm "
        f"(here 1/5); clipping each array by its own norm, or each element, turns the step"
    )


def _net(depth, seed=3, width=16, d_in=8, classes=4):
    rng = np.random.default_rng(seed)
    blocks = [
        nn.Sequential(nn.Linear(d_in if i == 0 else width, width, rng=rng), nn.Tanh())
        for i in range(depth - 1)
    ]
    return nn.Sequential(*blocks, nn.Linear(width, classes, rng=rng))


def check_record_flow(my_record_flow, *, seed: int = 10) -> None:
    """Check ``my_record_flow(model, x, loss_fn) -> (activations, activation_grads, weight_grads)`` against
    ``minigrad.flow.record_flow`` on a Sequential of [Linear, Tanh] blocks ending in a Linear: one entry per
    block, the block's output, dL/d(output) and dL/dW of the block's weight matrix, equal to the package's
    to 1e-12, with every ``.grad`` left as it was (the gradients come from ``minigrad.grad``), on 3 and on
    40 blocks."""
    from minigrad.flow import record_flow

    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((12, 8)), rng.integers(0, 4, size=12)

    def loss_fn(out):
        return out.cross_entropy_with_logits(y)

    for depth in (3, 40):
        model = _net(depth)
        sentinel = [np.full(p.shape, 7.0) for p in model.parameters()]
        for p, s in zip(model.parameters(), sentinel):
            p.grad = s.copy()
        got = attempt(
            "my_record_flow(model, x, loss_fn)",
            "return three lists: the blocks' outputs, their gradients, their weights' gradients",
            my_record_flow,
            model,
            x,
            loss_fn,
        )
        assert isinstance(got, (tuple, list)) and len(got) == 3, (
            "return three lists: (activations, activation_grads, weight_grads)"
        )
        acts, act_grads, w_grads = got
        assert all(np.array_equal(p.grad, s) for p, s in zip(model.parameters(), sentinel)), (
            "my_record_flow changed the parameters' .grad (backward() writes it): ask the engine with "
            "minigrad.grad(loss, outputs + weights), which returns the gradients and leaves .grad alone"
        )
        ref = record_flow(model, x, loss_fn)
        n = len(ref.activations)
        assert len(acts) == len(act_grads) == len(w_grads) == n, (
            f"{len(acts)}, {len(act_grads)} and {len(w_grads)} entries for {n} blocks (the last Linear "
            "counts as "
            f"one): record every block's output, run one after the other, including the last"
        )
        for i in range(n):
            a, da, dw = (np.asarray(getattr(v, "data", v)) for v in (acts[i], act_grads[i], w_grads[i]))
            assert a.shape == ref.activations[i].shape and np.allclose(
                a, ref.activations[i], rtol=0, atol=1e-12
            ), (
                f"block {i}: your activation differs from record_flow's: record the block's output (after "
                "its tanh)"
            )
            if not np.allclose(da, ref.activation_grads[i], rtol=1e-10, atol=1e-15):
                hint = (
                    " it is the gradient of the Linear's output (before the tanh): take the gradient with "
                    "respect to the block's output"
                    if i < n - 1
                    else ""
                )
                raise AssertionError(
                    f"block {i}: dL/d(output) differs from record_flow's.{hint} Ask minigrad.grad "
                    f"for the gradient of the loss with respect to each block's output tensor"
                )
            assert dw.size == ref.weight_grads[i].size and np.allclose(
                dw.ravel(), ref.weight_grads[i], rtol=1e-10, atol=1e-15
            ), (
                f"block {i}: dL/dW differs from record_flow's: the gradient of the loss with respect to the "
                f"block's weight matrix (its Linear's .weight), not the weight itself"
            )
