"""Checks of notebook 06's two exercises: ReLU and leaky ReLU as ops of the engine.

``check_relu(MyReLU)``: the forward leaves its input alone and returns max(x, 0);
``backward`` called directly returns ``(dx,)`` and leaves ``g`` as it was; the
gradient through ``minigrad.grad`` equals the package's relu; ``gradcheck``
(away from the kink) agrees; the derivative at -1, 0, 1 is [0, 0, 1] (0 at
exactly 0, the engine's and PyTorch's choice); and in ``relu(x @ W1) @ W2`` the
graph keeps no more bytes than with the package's relu (save the output, which
the next matmul keeps anyway).

``check_leaky_relu(MyLeakyReLU)``: the values for alpha = 0.1 and for the
default alpha = 0.01; the input left alone; in ``leaky(x @ W1) @ W2`` no more
bytes kept than with relu; ``(dx,)`` returned and ``g`` left alone; the
derivative 1 where x > 0 and alpha elsewhere, read from ``ctx.alpha`` (checked
with alpha = 0.1 and 0.3); the VJP equal to ``g @ J`` for J by central
differences; and ``gradcheck``.
"""

from __future__ import annotations

import numpy as np

from ..engine import grad
from ..inspect import saved_memory
from ..jacobians import numerical_jacobian
from ..tensor import Tensor
from ._op_checks import agrees_with_central_differences, attempt, backward_leaves_g_alone

__all__ = ["check_relu", "check_leaky_relu"]

IN_PLACE = ("your forward changed its input in place ({example}): the engine and the other ops that read the "
            "input see the change; compute a new array, {fix}")


def _net_bytes(activation) -> int:
    """saved_memory(...)['total'] of activation(x @ W1) @ W2, the same arrays each time."""
    r = np.random.default_rng(63)
    x, W1, W2 = r.normal(size=(4, 3)), r.normal(size=(3, 5)), r.normal(size=(5, 2))
    out = activation(Tensor(x) @ Tensor(W1, requires_grad=True)) @ Tensor(W2, requires_grad=True)
    return saved_memory(out)["total"]


def check_relu(MyReLU, *, seed: int = 62) -> None:
    """Raise AssertionError, saying what to change, unless MyReLU meets the exercise's three requirements."""
    r = np.random.default_rng(seed)
    a_np = r.normal(size=(4, 5))
    a_np[np.abs(a_np) < 0.1] = 0.5                            # away from the kink
    g_np = r.normal(size=(4, 5))
    a_mine, a_pkg = Tensor(a_np, requires_grad=True), Tensor(a_np, requires_grad=True)
    y = attempt("MyReLU.apply", "forward(ctx, a) receives one array and returns max(a, 0)", MyReLU.apply, a_mine)
    assert np.array_equal(a_mine.data, a_np), IN_PLACE.format(example="np.maximum(a, 0, out=a), a[a < 0] = 0",
                                                              fix="np.maximum(a, 0)")
    assert np.array_equal(y.data, np.maximum(a_np, 0)), "forward must return max(a, 0), element by element"
    grads = backward_leaves_g_alone("your backward, called directly", MyReLU.backward, y.grad_fn, g_np.copy())
    assert isinstance(grads, (tuple, list)) and len(grads) == 1, \
        "backward must return a tuple with one gradient per input: (dx,), with the comma"
    (dx_mine,) = attempt("the backward pass through MyReLU", "backward(ctx, g) returns a tuple (dx,), dx shaped like x",
                         grad, y, a_mine, grad_output=g_np)
    (dx_pkg,) = grad(a_pkg.relu(), a_pkg, grad_output=g_np)
    assert not np.allclose(dx_mine.data, g_np), \
        "your dx is g itself, at every entry: the mask lets everything through. If you saved the output y, " \
        "y >= 0 holds everywhere (y = max(x, 0)); the mask is y > 0, which is x > 0"
    assert np.allclose(dx_mine.data, dx_pkg.data), \
        "dx differs from the package's relu: dx = g * (x > 0), the upstream g times the mask"
    agrees_with_central_differences("", MyReLU.apply, Tensor(a_np, requires_grad=True))
    at_zero = Tensor([-1.0, 0.0, 1.0], requires_grad=True)
    (d0,) = grad(MyReLU.apply(at_zero).sum(), at_zero)
    assert d0.data.tolist() == [0.0, 0.0, 1.0], \
        f"derivative at -1, 0, 1: {d0.data.tolist()}; the engine (and PyTorch) use 0 at exactly 0: the mask is " \
        f"x > 0, not x >= 0"
    kept_pkg, kept_mine = _net_bytes(lambda t: t.relu()), _net_bytes(MyReLU.apply)
    assert kept_mine <= kept_pkg, \
        f"the graph with your relu keeps {kept_mine} bytes, the package's {kept_pkg}: save the output y itself " \
        f"(the next matmul saves that same array), not the input, a mask or a copy"


def check_leaky_relu(MyLeakyReLU, *, seed: int = 64) -> None:
    """Raise AssertionError, saying what to change, unless MyLeakyReLU is right and keeps only its output."""
    xt = np.array([-2.0, -0.5, 0.5, 3.0])
    xt_in = Tensor(xt)
    out = attempt("MyLeakyReLU.apply(x, alpha=0.1)", "forward(ctx, a, alpha=0.01) returns an array shaped like a",
                  MyLeakyReLU.apply, xt_in, alpha=0.1)
    assert np.array_equal(xt_in.data, xt), IN_PLACE.format(example="a[a < 0] *= alpha",
                                                           fix="np.where(a > 0, a, alpha * a)")
    assert np.allclose(out.data, [-0.2, -0.05, 0.5, 3.0]), \
        f"leaky(x) at {xt.tolist()} with alpha 0.1 is {out.data.tolist()}: x where x > 0, alpha * x elsewhere"
    assert np.allclose(MyLeakyReLU.apply(Tensor(xt)).data, np.where(xt > 0, xt, 0.01 * xt)), \
        "the default slope is 0.01: forward(ctx, a, alpha=0.01)"
    kept_relu = _net_bytes(lambda t: t.relu())
    kept_leaky = _net_bytes(lambda t: MyLeakyReLU.apply(t, alpha=0.1))
    assert kept_leaky <= kept_relu, \
        f"in h = leaky(x @ W1) followed by h @ W2 the graph with your op keeps {kept_leaky} bytes, with relu " \
        f"{kept_relu}: save the output itself (the next matmul saves that same array), not the input, a mask or a copy"
    node = MyLeakyReLU.apply(Tensor(xt, requires_grad=True), alpha=0.1).grad_fn
    grads = backward_leaves_g_alone("your backward, called directly", MyLeakyReLU.backward, node, np.ones(4))
    assert isinstance(grads, (tuple, list)) and len(grads) == 1, "backward must return a tuple (dx,), with the comma"
    for alpha in (0.1, 0.3):
        x_l = Tensor(xt, requires_grad=True)
        (d,) = attempt(f"the backward pass through MyLeakyReLU (alpha {alpha})", "backward returns (dx,), dx shaped like x",
                       grad, MyLeakyReLU.apply(x_l, alpha=alpha).sum(), x_l)
        assert np.allclose(d.data, [alpha, alpha, 1.0, 1.0]), \
            f"derivative with alpha {alpha}: {d.data.tolist()}; it is 1 where x > 0 and alpha elsewhere: read " \
            f"the slope from ctx.alpha (set in forward), not a fixed number"
    r = np.random.default_rng(seed)
    xl = r.normal(size=(2, 3))
    xl[np.abs(xl) < 0.1] = 0.5                                # away from the kink
    gl = r.normal(size=(2, 3))
    J = numerical_jacobian(lambda v: np.where(v > 0, v, 0.1 * v), xl)
    x_m = Tensor(xl, requires_grad=True)
    (mine,) = grad(MyLeakyReLU.apply(x_m, alpha=0.1), x_m, grad_output=gl)
    assert np.allclose(mine.data, (gl.reshape(-1) @ J).reshape(xl.shape)), \
        "your VJP differs from g @ J: multiply g by the slope, entry by entry (and use ctx.alpha, not a fixed 0.01)"
    agrees_with_central_differences("", lambda t: MyLeakyReLU.apply(t, alpha=0.1), Tensor(xl, requires_grad=True))
