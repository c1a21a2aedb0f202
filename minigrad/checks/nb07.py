"""Checks of notebook 07's two exercises: softmax and log-softmax as ops of the engine.

``check_softmax(MySoftmax)``, along axis 1 and axis 0 of a (3, 4) batch: the
forward leaves its input alone and equals the package's softmax; ``backward``
called directly returns ``(dz,)`` and leaves ``g`` as it was; the gradient equals
the package's, one sum per row along ``ctx.axis``; ``gradcheck`` agrees. Then:
rows of logits far apart (``[[1000, 999], [-1000, -999]]``) stay finite (each
row shifted by its own max); the node keeps no more bytes than the package's
(``s`` alone); and the VJP is O(C): for a (2, 2048) batch, backward may
allocate a few arrays of the batch's size, far less than one C x C Jacobian
(32 MB), which the check measures with ``tracemalloc``.

``check_log_softmax(MyLogSoftmax)``: the forward leaves its input alone and
equals log(softmax) where both are finite; ``(dz,)`` returned, ``g`` left alone;
the node keeps its output and nothing else; the VJP along axis 1 equals
``g @ J`` for J = I - 1 s^T per row (central differences of the formula); the
forward along axis 0, then the VJP along axis 0, equal the package's;
``gradcheck``; finite and exact results at logits of +-1000 and for rows far
apart; and no C x C Jacobian in backward.
"""

from __future__ import annotations

import numpy as np

from ..engine import grad
from ..jacobians import numerical_jacobian, vjp
from ..tensor import Tensor
from ._op_checks import agrees_with_central_differences, attempt, backward_leaves_g_alone, peak_bytes

__all__ = ["check_softmax", "check_log_softmax"]

IN_PLACE = ("your forward changed its input in place (a -= a.max(...)): the engine and the other ops that read "
            "the input see the change; compute a new array, a - a.max(axis=axis, keepdims=True)")
BACKWARD_HINT = "backward(ctx, g) reads ctx.saved and ctx.axis; a sum along axis needs keepdims=True to broadcast back"
WIDE = 2048                          # classes in the O(C) check: one C x C float64 Jacobian is 32 MB


def _no_jacobian(Op, what: str) -> None:
    """Fail if Op's backward, for a (2, WIDE) batch, allocates anything like a WIDE x WIDE matrix."""
    r = np.random.default_rng(73)
    z = Tensor(r.normal(size=(2, WIDE)), requires_grad=True)
    node = Op.apply(z, axis=1).grad_fn
    g = r.normal(size=(2, WIDE))
    _, peak = peak_bytes(lambda: Op.backward(node, g))
    row = g.nbytes
    assert peak < 16 * row, (
        f"{what}: for g of shape (2, {WIDE}) your backward allocated {peak / 1e6:.1f} MB at once, "
        f"{peak / row:.0f} times g's {row / 1e3:.0f} kB: it builds a C x C matrix (a Jacobian, an outer product "
        f"or eye(C)). The VJP needs only elementwise products and one sum per row, O(C) work and memory")


def check_softmax(MySoftmax, *, seed: int = 71) -> None:
    """Raise AssertionError, saying what to change, unless MySoftmax meets the exercise's four requirements."""
    r = np.random.default_rng(seed)
    z_np, g_np = r.normal(size=(3, 4)) * 2, r.normal(size=(3, 4))
    for axis in (1, 0):
        z_mine, z_pkg = Tensor(z_np, requires_grad=True), Tensor(z_np, requires_grad=True)
        s_mine = attempt(f"MySoftmax.apply(z, axis={axis})", "forward(ctx, a, axis=-1) returns an array shaped like a",
                         MySoftmax.apply, z_mine, axis=axis)
        assert np.array_equal(z_mine.data, z_np), IN_PLACE
        s_pkg = z_pkg.softmax(axis=axis)
        assert s_mine.shape == z_np.shape and np.allclose(s_mine.data, s_pkg.data), \
            f"axis={axis}: your softmax differs from the package's; normalise along axis, with keepdims=True"
        if axis == 1:
            grads = backward_leaves_g_alone("your backward, called directly", MySoftmax.backward, s_mine.grad_fn,
                                            g_np.copy(), BACKWARD_HINT)
            assert isinstance(grads, (tuple, list)) and len(grads) == 1, \
                "backward must return a tuple with one gradient per input: (dz,), with the comma"
        (d_mine,) = attempt(f"the backward pass through MySoftmax(axis={axis})", BACKWARD_HINT,
                            grad, s_mine, z_mine, grad_output=g_np)
        (d_pkg,) = grad(s_pkg, z_pkg, grad_output=g_np)
        assert np.allclose(d_mine.data, d_pkg.data), \
            f"axis={axis}: dz differs from the package's: dz = s * (g - sum(g * s)), the sum along axis (ctx.axis) " \
            f"with keepdims=True, one sum per row, not one for the whole batch"
        agrees_with_central_differences(f"axis={axis}: ", lambda t, axis=axis: MySoftmax.apply(t, axis=axis),
                                        Tensor(z_np, requires_grad=True))
    rows_apart = np.array([[1000.0, 999.0], [-1000.0, -999.0]])
    with np.errstate(all="ignore"):
        s_apart = MySoftmax.apply(Tensor(rows_apart), axis=1).data
    assert np.isfinite(s_apart).all() and np.allclose(s_apart, Tensor(rows_apart).softmax(axis=1).data), \
        f"softmax({rows_apart.tolist()}, axis=1) = {s_apart.tolist()}: shift each row by its own max " \
        f"(a.max(axis=axis, keepdims=True)) before exp; without a shift exp overflows, and with one max for " \
        f"the whole batch exp of the other rows underflows to 0"
    node = MySoftmax.apply(Tensor(z_np, requires_grad=True), axis=1).grad_fn
    kept_pkg = Tensor(z_np, requires_grad=True).softmax(axis=1).grad_fn.saved_nbytes()
    assert node.saved_nbytes() <= kept_pkg, \
        f"your node keeps {node.saved_nbytes()} bytes, the package's {kept_pkg}: s alone is enough for the VJP"
    _no_jacobian(MySoftmax, "MySoftmax")


def _log_softmax_rows(v):
    shifted = v - v.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def check_log_softmax(MyLogSoftmax, *, seed: int = 72) -> None:
    """Raise AssertionError, saying what to change, unless MyLogSoftmax is right, stable and keeps only y."""
    r = np.random.default_rng(seed)
    Ze, Ge = r.normal(size=(2, 4)), r.normal(size=(2, 4))
    ze_in = Tensor(Ze, requires_grad=True)
    ls = attempt("MyLogSoftmax.apply(z, axis=1)", "forward(ctx, a, axis=-1) returns an array shaped like a",
                 MyLogSoftmax.apply, ze_in, axis=1)
    assert np.array_equal(ze_in.data, Ze), IN_PLACE
    assert np.allclose(ls.data, _log_softmax_rows(Ze)), \
        "log_softmax must equal log(softmax) where both are finite: (z - m) - log(sum(exp(z - m))) along the row"
    grads = backward_leaves_g_alone("your backward, called directly", MyLogSoftmax.backward, ls.grad_fn, Ge.copy(),
                                    BACKWARD_HINT)
    assert isinstance(grads, (tuple, list)) and len(grads) == 1, "backward must return a tuple (dz,), with the comma"
    assert ls.grad_fn.saved_nbytes() <= Ze.nbytes, \
        f"your node keeps {ls.grad_fn.saved_nbytes()} bytes; the output alone ({Ze.nbytes} bytes) is enough"
    assert all(np.shares_memory(arr, ls.data) for arr in ls.grad_fn.arrays()), \
        "your node keeps an array other than its output: keep the output y itself (s = exp(y) rebuilds the " \
        "softmax), not the input"
    # The formula first, along axis 1: g @ J with J = I - 1 s^T per row.
    J = numerical_jacobian(_log_softmax_rows, Ze)
    z_m = Tensor(Ze, requires_grad=True)
    (mine,) = attempt("the backward pass through MyLogSoftmax", BACKWARD_HINT,
                      grad, MyLogSoftmax.apply(z_m, axis=1), z_m, grad_output=Ge)
    assert np.allclose(mine.data, (Ge.reshape(-1) @ J).reshape(2, 4), atol=1e-8), \
        "your VJP differs from g @ J: with J = I - 1 s^T per row it is g - s * sum(g), the sum along the row " \
        "(s = exp(y)); g - s * g, g - s, or g - sum(g * s) are other products"
    # Then the axis, forward and backward separately.
    Z0, G0 = np.random.default_rng(71).normal(size=(3, 4)), np.random.default_rng(74).normal(size=(3, 4))
    z0 = Tensor(Z0, requires_grad=True)
    ls0 = attempt("MyLogSoftmax.apply(z, axis=0)", "use the axis argument in forward and ctx.axis in backward",
                  MyLogSoftmax.apply, z0, axis=0)
    assert np.allclose(ls0.data, Tensor(Z0).log_softmax(axis=0).data), \
        "with axis=0 your forward differs from the package's log_softmax(axis=0): take the max and the sum along " \
        "the axis argument, with keepdims=True"
    (d0,) = attempt("the backward pass through MyLogSoftmax(axis=0)", BACKWARD_HINT, grad, ls0, z0, grad_output=G0)
    assert np.allclose(d0.data, vjp(lambda t: t.log_softmax(axis=0), Z0, G0)), \
        "with axis=0 your VJP differs from the package's, though along axis 1 it is right: take the sum in " \
        "backward along ctx.axis (set ctx.axis = axis in forward), with keepdims=True"
    agrees_with_central_differences("", lambda t: MyLogSoftmax.apply(t, axis=1), Tensor(Ze, requires_grad=True))
    extreme = np.array([[1000.0, 0.0, -1000.0, 999.0]])
    x_ext = Tensor(extreme, requires_grad=True)
    with np.errstate(all="ignore"):
        ls_ext = MyLogSoftmax.apply(x_ext, axis=1)
        (d_ext,) = grad(ls_ext, x_ext, grad_output=np.ones((1, 4)))
    assert np.isfinite(ls_ext.data).all() and np.isfinite(d_ext.data).all(), \
        f"at logits {extreme.tolist()} your log_softmax is {ls_ext.data.tolist()}: subtract the row's max m " \
        f"first and compute (z - m) - log(sum(exp(z - m))); without the shift exp(1000) overflows, and " \
        f"log(softmax(z)) takes the log of a probability that underflows to 0"
    assert np.allclose(ls_ext.data, extreme - (1000 + np.log1p(np.exp(-1.0)))), \
        "log_softmax(z) = z - logsumexp(z); here logsumexp = 1000 + log(1 + e^-1)"
    rows_apart = np.array([[1000.0, 999.0], [-1000.0, -999.0]])
    with np.errstate(all="ignore"):
        ls_apart = MyLogSoftmax.apply(Tensor(rows_apart), axis=1).data
    assert np.isfinite(ls_apart).all(), (
        f"log_softmax({rows_apart.tolist()}) = {ls_apart.tolist()}: shift each row by its own max "
        "(a.max(axis=axis, keepdims=True)); one max for the whole batch sends exp of the other rows to 0")
    lse = np.log1p(np.exp(-1.0))
    assert np.allclose(ls_apart, [[-lse, -1 - lse], [-1 - lse, -lse]]), "each row: z - max - log(1 + e^-1)"
    _no_jacobian(MyLogSoftmax, "MyLogSoftmax")
