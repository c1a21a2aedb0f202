"""minigrad.checks.nb04: the by-hand backward pass and Newton's method; wrong answers get the slip named."""

import math

import numpy as np
import pytest

from minigrad.checks import nb04

rng = np.random.default_rng(9)
N, D, H, C = 32, 10, 16, 5
x = rng.standard_normal((N, D))
y = rng.integers(0, C, N)
W1 = rng.standard_normal((D, H)) / math.sqrt(D)
b1 = rng.standard_normal(H) * 0.1
W2 = rng.standard_normal((H, C)) / math.sqrt(H)
b2 = rng.standard_normal(C) * 0.1
ARGS = (x, y, W1, b1, W2, b2)


def by_hand(softmax_axis=1, divide=True, onehot=True, db2_mean=False, mask="z", dW2_order="h.T", db1_axis=0,
            dW1_from="x", shift=True):
    z = x @ W1 + b1
    h = np.maximum(z, 0)
    logits = h @ W2 + b2
    e = np.exp(logits - logits.max(axis=softmax_axis, keepdims=True)) if shift else np.exp(logits)
    p = e / e.sum(axis=softmax_axis, keepdims=True)
    dlogits = p.copy()
    if onehot:
        dlogits[np.arange(N), y] -= 1.0
    if divide:
        dlogits /= N
    dW2 = h.T @ dlogits if dW2_order == "h.T" else dlogits.T @ h
    db2 = dlogits.mean(axis=0) if db2_mean else dlogits.sum(axis=0)
    dh = dlogits @ W2.T
    dz = {"z": dh * (z > 0), "none": dh, "dh": dh * (dh > 0), "h": dh * h}[mask]
    dW1 = (x if dW1_from == "x" else h).T @ dz
    db1 = dz.sum(axis=db1_axis)
    return dict(dlogits=dlogits, dW2=dW2, db2=db2, dh=dh, dz=dz, dW1=dW1, db1=db1)


def test_the_reference_passes():
    nb04.check_by_hand(by_hand(), *ARGS)


def test_an_alternative_passes():
    """No max-shift, one-hot by comparison, einsum, z >= 0 (no exact zeros here)."""
    z = x @ W1 + b1
    h = np.where(z >= 0, z, 0.0)
    logits = np.einsum("nh,hc->nc", h, W2) + b2
    p = np.exp(logits) / np.exp(logits).sum(axis=1)[:, None]
    dlogits = (p - (np.arange(C) == y[:, None])) / N
    dh = np.einsum("nc,hc->nh", dlogits, W2)
    dz = dh * (z >= 0)
    grads = dict(dlogits=dlogits, dW2=np.einsum("nh,nc->hc", h, dlogits), db2=dlogits.sum(0), dh=dh, dz=dz,
                 dW1=np.einsum("nd,nh->dh", x, dz), db1=np.einsum("nh->h", dz))
    nb04.check_by_hand(grads, *ARGS)


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(divide=False), "dlogits is wrong: it is N times too large"),
    (dict(db2_mean=True), "db2 is wrong: it is N times too small"),
    (dict(mask="none"), "dz is wrong: it equals dh"),
    (dict(mask="dh"), "not from the sign of dh"),
    (dict(mask="h"), "multiplied dh by h itself"),
    (dict(dW2_order="dlogits.T"), r"dW2 has shape \(5, 16\).*h.T @ dlogits"),
    (dict(softmax_axis=0), "take the softmax along axis 1"),
    (dict(db1_axis=1), "db1 has shape.*sum dz over the rows, axis 0"),
    (dict(dW1_from="h"), r"dW1 has shape .*x.T @ dz"),
    (dict(onehot=False), "subtract onehot"),
])
def test_wrong_gradients_are_named(kwargs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb04.check_by_hand(by_hand(**kwargs), *ARGS)


def test_a_missing_gradient_is_named():
    grads = by_hand()
    del grads["db1"]
    with pytest.raises(AssertionError, match=r"\['db1'\] missing"):
        nb04.check_by_hand(grads, *ARGS)


# -------------------------------------------------------------------- newton

class Dual:
    """The notebook's dual numbers, enough for the three equations."""

    def __init__(self, val, dot=0.0):
        self.val, self.dot = float(val), float(dot)

    def __add__(self, o):
        o = o if isinstance(o, Dual) else Dual(o)
        return Dual(self.val + o.val, self.dot + o.dot)

    def __mul__(self, o):
        o = o if isinstance(o, Dual) else Dual(o)
        return Dual(self.val * o.val, self.dot * o.val + self.val * o.dot)

    def __pow__(self, p):
        return Dual(self.val ** p, p * self.val ** (p - 1) * self.dot)

    def exp(self):
        e = math.exp(self.val)
        return Dual(e, e * self.dot)

    def tanh(self):
        t = math.tanh(self.val)
        return Dual(t, (1 - t * t) * self.dot)

    __radd__, __rmul__ = __add__, __mul__

    def __neg__(self):
        return self * -1

    def __sub__(self, o):
        return self + (-(o if isinstance(o, Dual) else Dual(o)))


def newton_with(tangent=1.0, sign=-1, steps=20, invert=False, plain=False, early_exit=False):
    def newton(g, x0, steps_=steps):
        x = float(x0)
        for _ in range(steps_):
            if plain:
                val = g(x)
                x = x - val.val / val.dot
                continue
            v = g(Dual(x, tangent))
            if early_exit and v.val == 0:
                break
            x = x + sign * (v.dot / v.val if invert else v.val / v.dot)
        return x
    return newton


def test_the_reference_newton_passes():
    nb04.check_newton(newton_with())


def test_an_alternative_newton_with_an_early_exit_passes():
    nb04.check_newton(newton_with(early_exit=True, steps=60))


@pytest.mark.parametrize("newton, phrase", [
    (newton_with(tangent=0.0), "nan: a division by zero.*Dual\\(x, 1.0\\)"),
    (newton_with(sign=+1), r"off by .*the step is x - g\(x\) / g.\(x\)"),
    (newton_with(steps=1), r"off by .*repeated `steps` times"),
    (newton_with(steps=0), "returned its starting point"),
    (newton_with(invert=True), "x - y.val / y.dot"),
    (newton_with(plain=True), r"Call g on a dual number, g\(Dual\(x, 1.0\)\)"),
])
def test_wrong_newtons_are_named(newton, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb04.check_newton(newton)
