"""Checks of notebook 08's exercises: cross-entropy as an op of the engine.

``check_cross_entropy(MyCrossEntropy)`` checks the fused cross-entropy with class ids:

* the loss is one number, the mean over the N rows of ``logsumexp(z_i) - z[i, y_i]``, equal to the
  package's ``cross_entropy_with_logits``;
* the node keeps no more bytes than the package's (one N x C array and the targets);
* ``backward`` returns a tuple ``(dz,)``, leaves ``g`` and ``z`` unchanged, and gives
  ``g * (softmax(z) - onehot(y)) / N`` for an upstream ``g`` of 0.37, which also passes ``gradcheck``;
* it is exact at a margin of 1,000 and shifts each row by its own max (rows near +1000 and -1000
  in one batch).

``check_soft_cross_entropy(MySoftCrossEntropy)`` checks the loss with target distributions q:
it equals the fused op for one-hot q, its gradient is ``g * (softmax(z) - q) / N`` for any q (central
differences and ``gradcheck``), and it is stable, row by row, for logits of 1,000.
"""

from __future__ import annotations

import numpy as np

import minigrad
from minigrad import GradcheckError, Tensor, gradcheck, numerical_jacobian

from ._op_checks import attempt


def _log_softmax(z):
    shifted = z - z.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def check_cross_entropy(op, *, seed: int = 81) -> None:
    """Check ``op``, a ``Function`` with ``forward(ctx, z, target)``, against the package's fused op."""
    r = np.random.default_rng(seed)
    z_np, y_np, g_up = r.normal(size=(5, 4)) * 2, np.array([0, 3, 1, 1, 2]), np.array(0.37)
    z_mine, z_pkg = Tensor(z_np.copy(), requires_grad=True), Tensor(z_np.copy(), requires_grad=True)
    loss = attempt(
        "MyCrossEntropy.apply(z, target=y)",
        "forward(ctx, z, target) returns one number, the mean loss",
        op.apply,
        z_mine,
        target=y_np,
    )
    ref = z_pkg.cross_entropy_with_logits(y_np)
    assert loss.size == 1, f"the loss must be one number, got shape {loss.shape}"
    assert np.array_equal(z_mine.data, z_np), (
        "your op changed the logits z in place (z -= z.max(...)?): shift into a new array, z - z.max(...)"
    )
    assert np.isclose(loss.item(), ref.item()), (
        f"loss {loss.item():.6f}, the package's {ref.item():.6f}: the mean over the N rows (divide by N) of "
        f"logsumexp(z_i) - z[i, y_i]"
    )
    node, kept = loss.grad_fn, ref.grad_fn.saved_nbytes()
    assert node.saved_nbytes() <= kept, (
        f"your node keeps {node.saved_nbytes()} bytes, the package's {kept}: one N x C array (the logits, "
        "the "
        f"probabilities or the log-probabilities) and the targets are enough; a one-hot matrix or a second "
        f"N x C array is not needed"
    )
    grads = attempt(
        "your backward, called directly",
        "backward(ctx, g) reads ctx.saved (and ctx.target)",
        op.backward,
        node,
        g_up,
    )
    assert isinstance(grads, (tuple, list)) and len(grads) == 1, (
        "backward must return a tuple with one gradient per input: (dz,), with the comma"
    )
    assert g_up == 0.37, "your backward changed g in place; compute a new array"
    (d_mine,) = attempt(
        "the backward pass through MyCrossEntropy",
        "backward returns (dz,), dz shaped like z",
        minigrad.grad,
        loss,
        z_mine,
        grad_output=g_up,
    )
    (d_pkg,) = minigrad.grad(ref, z_pkg, grad_output=g_up)
    if not np.allclose(d_mine.data, d_pkg.data):
        ratio = float(np.sum(d_mine.data * d_pkg.data) / np.sum(d_pkg.data * d_pkg.data))
        slip = {
            len(y_np): "N times too large: divide by N",
            1 / 0.37: "multiply by the upstream g",
            len(y_np) / 0.37: "multiply by g and divide by N",
        }
        near = [msg for k, msg in slip.items() if abs(ratio / k - 1) < 1e-6]
        raise AssertionError(
            "dz differs from the package's for an upstream g of 0.37 "
            f"({near[0] if near else 'not a multiple of it'}): "
            f"dz = g * (softmax(z) - onehot(y)) / N"
        )
    try:
        gradcheck(lambda t: op.apply(t, target=y_np), Tensor(z_np.copy(), requires_grad=True))
    except GradcheckError as err:
        raise AssertionError(f"your VJP disagrees with central differences: {err}") from None
    with np.errstate(all="ignore"):
        far = Tensor(np.array([[0.0, 0.0, -1000.0]]), requires_grad=True)
        far_loss = op.apply(far, target=np.array([2]))
        far_loss.backward()
        apart = Tensor(np.array([[1000.0, 999.0, 998.0], [-1000.0, -999.0, -998.0]]))
        apart_loss = op.apply(apart, target=np.array([0, 2])).item()
    assert np.isclose(far_loss.item(), 1000 + np.log(2)) and np.allclose(far.grad, [[0.5, 0.5, -1.0]]), (
        f"margin 1000: loss {far_loss.item()}, gradient {far.grad}; it should be 1000 + log 2 and [0.5, "
        "0.5, -1]: "
        f"never take the log of a probability, compute logsumexp(z) - z_y with the max-shift"
    )
    why = (
        "exp(1000) overflows: shift each row by its own max before exp"
        if not np.isfinite(apart_loss)
        else "one max for the whole batch sends exp of the other rows to 0: shift each row by its own max"
    )
    assert np.isclose(apart_loss, apart.cross_entropy_with_logits(np.array([0, 2])).item()), (
        f"rows [1000, 999, 998] and [-1000, -999, -998] give the loss {apart_loss}: {why} "
        f"(z.max(axis=1, keepdims=True))"
    )


def check_soft_cross_entropy(op, *, seed: int = 82) -> None:
    """Check ``op``, a ``Function`` with ``forward(ctx, z, q)``, on one-hot, smoothed and extreme targets."""
    r = np.random.default_rng(seed)
    n, c = 6, 5
    z = r.normal(size=(n, c)) * 2
    y = np.array([0, 4, 1, 1, 3, 2])
    q_hard = np.eye(c)[y]
    q_smooth = 0.9 * q_hard + 0.1 / c
    zh, zf = Tensor(z.copy(), requires_grad=True), Tensor(z.copy(), requires_grad=True)
    hard = attempt(
        "MySoftCrossEntropy.apply(z, q=q)",
        "forward(ctx, z, q) returns one number, the mean loss",
        op.apply,
        zh,
        q=q_hard,
    )
    fused = zf.cross_entropy_with_logits(y)
    assert np.array_equal(zh.data, z), "your op changed the logits z in place: shift into a new array"
    assert np.size(hard.data) == 1, f"the loss must be one number, got shape {hard.shape}"
    assert np.isclose(hard.item(), fused.item()), (
        f"with one-hot q your loss is {hard.item():.6f}, the fused op's {fused.item():.6f}: it should be "
        "ordinary "
        f"cross-entropy, the mean over the N rows (divide by N) of -sum_j q_ij log softmax(z_i)_j"
    )
    (dz_hard,) = attempt(
        "the backward pass through MySoftCrossEntropy",
        "backward returns (dz,), dz shaped like z",
        minigrad.grad,
        hard,
        zh,
    )
    (dz_fused,) = minigrad.grad(fused, zf)
    assert np.allclose(dz_hard.data, dz_fused.data), (
        "with one-hot q the gradient is the fused op's, (s - onehot) / N"
    )
    zs = Tensor(z.copy(), requires_grad=True)
    (dz,) = minigrad.grad(op.apply(zs, q=q_smooth), zs)
    s = np.exp(_log_softmax(z))
    if not np.allclose(dz.data, (s - q_smooth) / n):
        hard_q = np.eye(c)[q_smooth.argmax(axis=1)]
        if np.allclose(dz.data, (s - hard_q) / n):
            raise AssertionError(
                "your gradient uses the one-hot of q's largest entry: dz = (softmax(z) - q) / N "
                "for any q, with q as given"
            )
        if np.allclose(dz.data, (s - q_smooth) / (n * c)):
            raise AssertionError(
                "your gradient is C times too small: divide by N, the number of rows, not N * C"
            )
        raise AssertionError("dz = (softmax(z) - q) / N, for any q, not only one-hot")
    num = numerical_jacobian(lambda v: -(q_smooth * _log_softmax(v)).sum() / len(v), z).reshape(n, c)
    assert np.allclose(dz.data, num, atol=1e-8), "your gradient disagrees with central differences"
    zu = Tensor(z.copy(), requires_grad=True)
    (d_up,) = minigrad.grad(op.apply(zu, q=q_smooth), zu, grad_output=np.array(0.37))
    assert np.allclose(d_up.data, 0.37 * dz.data), "multiply the gradient by the upstream g (here 0.37)"
    try:
        gradcheck(lambda t: op.apply(t, q=q_smooth), Tensor(z.copy(), requires_grad=True))
    except GradcheckError as err:
        raise AssertionError(f"your VJP disagrees with central differences: {err}") from None
    # Logits of 1,000 in one row, and a row of large negative logits close together: one max for the
    # whole batch would send the second row's exponentials to 0.
    big = np.array([[0.0, 0.0, -1000.0, 1000.0], [-1000.0, -999.0, -1001.0, -998.0]])
    q_big = np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    log_s = _log_softmax(big)
    zb = Tensor(big, requires_grad=True)
    with np.errstate(all="ignore"):
        big_loss = op.apply(zb, q=q_big)
        (d_big,) = minigrad.grad(big_loss, zb)
    assert np.isclose(big_loss.item(), -(q_big * log_s).sum() / 2) and np.allclose(
        d_big.data, (np.exp(log_s) - q_big) / 2
    ), (
        f"logits of 1000 give the loss {big_loss.item()} (expected {-(q_big * log_s).sum() / 2:.4f}): shift "
        "each "
        f"row by its own max, m = z.max(axis=1, keepdims=True), and compute log softmax as "
        f"(z - m) - log(sum(exp(z - m))); never log(softmax(z))"
    )
