"""Checks of notebook 04's two exercises: a backward pass by hand, and Newton's method with dual numbers.

``check_by_hand(grads, x, y, W1, b1, W2, b2)`` runs the network
``relu(x @ W1 + b1) @ W2 + b2`` under the mean cross-entropy in minigrad, keeps
the intermediate gradients (``retain_grad``), and compares each of your seven
arrays (``grads["dlogits"]``, ``grads["dW2"]``, ... ``grads["db1"]``) with the
engine's: first the shape, then the values. A wrong array is checked against
the usual slips (a missing or extra 1/N, a softmax along the wrong axis or a
forgotten one-hot, a missing ReLU mask or one taken from dh or from h) and the
message names the one it finds.

``check_newton(newton)`` solves x^2 = 2 from 1, tanh x = 0.5 from 0, and
f(x) = 0.3 from 0.2 for the notebook's f(x) = tanh(x) exp(-x^2/2) with your
``newton(g, x0)`` (20 steps), and checks the returned root to 1e-12. ``g`` is
called on your dual numbers, so it exercises ``Dual(x, 1.0)`` and ``y.val``, ``y.dot``.
"""

from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor

__all__ = ["check_by_hand", "check_newton", "NAMES"]

NAMES = ("dlogits", "dW2", "db2", "dh", "dz", "dW1", "db1")


def _engine_grads(x, y, W1, b1, W2, b2) -> dict:
    W1_t, b1_t, W2_t, b2_t = (Tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in (W1, b1, W2, b2))
    z_t = Tensor(x) @ W1_t + b1_t
    h_t = z_t.relu()
    logits_t = h_t @ W2_t + b2_t
    loss = logits_t.cross_entropy_with_logits(np.asarray(y))
    for t in (z_t, h_t, logits_t):
        t.retain_grad()
    loss.backward()
    return {"dlogits": logits_t.grad, "dW2": W2_t.grad, "db2": b2_t.grad, "dh": h_t.grad, "dz": z_t.grad,
            "dW1": W1_t.grad, "db1": b1_t.grad, "z": z_t.data, "h": h_t.data}


def check_by_hand(grads: dict, x, y, W1, b1, W2, b2) -> None:
    """Raise AssertionError unless grads holds the seven gradients of the notebook's network, each right."""
    real = _engine_grads(x, y, W1, b1, W2, b2)
    N, C = np.shape(x)[0], np.shape(W2)[1]
    onehot = np.eye(C)[np.asarray(y)]
    z, h, dh = real["z"], real["h"], real["dh"]
    close = np.allclose
    hints = {
        "dlogits": [(lambda m: close(m, real["dlogits"] * N), "it is N times too large: the loss is a mean over "
                                                               "the N examples, so divide by N"),
                    (lambda m: close(m * N, real["dlogits"] * N + onehot),
                     "it is softmax(logits) / N: subtract onehot(y), so dlogits = (softmax(logits) - onehot(y)) / N"),
                    (lambda m: not close((m * N + onehot).sum(axis=1), 1.0),
                     "N * dlogits + onehot(y) should be the softmax of each row, whose entries sum to 1: take the "
                     "softmax along axis 1, then subtract onehot(y)")],
        "dW2": [("shape", "dW2 = h.T @ dlogits has the shape of W2")],
        "db2": [("shape", "b2 was added to every row: sum dlogits over the rows, axis 0"),
                (lambda m: close(m, real["db2"] * N), "it is N times too large: start from dlogits divided by N"),
                (lambda m: close(m * N, real["db2"]), "it is N times too small: sum over the rows, do not average")],
        "dh": [("shape", "dh = dlogits @ W2.T has the shape of h")],
        "dz": [(lambda m: close(m, dh), "it equals dh: ReLU passes the gradient only where z > 0, so multiply by "
                                        "the mask (z > 0)"),
               (lambda m: close(m, dh * (dh > 0)), "the mask comes from the forward pass, where z > 0, not from "
                                                   "the sign of dh"),
               (lambda m: close(m, dh * h), "you multiplied dh by h itself: the mask is the 0/1 array (z > 0), "
                                            "the derivative of relu, not relu's value"),
               (lambda m: close(m, dh * (z >= 0)) or close(m, dh * (z < 0)),
                "the mask is where z > 0, strictly")],
        "dW1": [("shape", "dW1 = x.T @ dz has the shape of W1"),
                (lambda m: close(m, np.asarray(x).T @ dh), "dW1 = x.T @ dz, with dz the masked dh")],
        "db1": [("shape", "b1 was added to every row: sum dz over the rows, axis 0"),
                (lambda m: close(m * N, real["db1"]), "it is N times too small: sum over the rows, do not average"),
                (lambda m: close(m, dh.sum(axis=0)), "sum dz, the masked gradient, not dh")],
    }
    missing = [n for n in NAMES if n not in grads or grads[n] is None]
    if missing:
        raise AssertionError(f"set every gradient: {missing} missing")
    for name in NAMES:
        mine, want = np.asarray(grads[name], dtype=np.float64), real[name]
        tensor = name[1:]
        shape_hint = next((h for t, h in hints[name] if t == "shape"), "")
        if mine.shape != want.shape:
            raise AssertionError(f"{name} has shape {mine.shape}, but {tensor} has shape {want.shape}. {shape_hint}")
        if np.allclose(mine, want, rtol=1e-10, atol=1e-12):
            continue
        for test, hint in hints[name]:
            if test != "shape" and test(mine):
                raise AssertionError(f"{name} is wrong: {hint}")
        raise AssertionError(f"{name} differs from the engine's gradient by up to {np.abs(mine - want).max():.3g}: "
                             f"check the rule you used (the table above), and that the gradient it starts from is "
                             f"right")


def _f(x):
    return x.tanh() * (-(x ** 2) * 0.5).exp()


def _f_np(x):
    return math.tanh(x) * math.exp(-x * x / 2)


CASES = [("x^2 = 2", lambda x: x * x - 2.0, 1.0, lambda r: r * r - 2.0),
         ("tanh x = 0.5", lambda x: x.tanh() - 0.5, 0.0, lambda r: math.tanh(r) - 0.5),
         ("f(x) = 0.3", lambda x: _f(x) - 0.3, 0.2, lambda r: _f_np(r) - 0.3)]


def check_newton(newton, cases=CASES) -> None:
    """Raise AssertionError unless newton(g, x0) finds each root of ``cases`` (CASES) to 1e-12."""
    for what, g, start, residual in cases:
        try:
            root = newton(g, start)
        except NotImplementedError:
            raise
        except ZeroDivisionError:
            root = float("nan")
        except (AttributeError, TypeError) as err:
            raise AssertionError(f"{what}: newton raised {type(err).__name__}: {err}. Call g on a dual number, "
                                 f"g(Dual(x, 1.0)), and read y.val and y.dot from what it returns") from err
        try:
            root = float(root)
        except (TypeError, ValueError):
            raise AssertionError(f"{what}: newton returned {type(root).__name__}; return x, a float "
                                 f"(y.val if you kept a Dual)") from None
        assert np.isfinite(root), (f"{what}: newton failed (nan: a division by zero or a blow-up). Evaluate g on "
                                   f"Dual(x, 1.0), so that y.dot is g'(x), and step against g / g': x - y.val / y.dot")
        assert root != start, f"{what}: newton returned its starting point {start}: update x at every step"
        off = residual(root)
        assert abs(off) < 1e-12, (f"{what}: newton returned x = {root:.6g}, where the equation is off by "
                                  f"{off:.3g}: the step is x - g(x) / g'(x), that is x - y.val / y.dot, "
                                  f"repeated `steps` times")
