"""Hand-derived NumPy versions of what the engine computes: the yardstick.

Nothing here uses the engine. Each gradient is written out by hand from the
formulas in ``ops.py``, so that notebooks, tests and benchmarks can compare the
engine with an independent computation.
"""

from __future__ import annotations

import numpy as np

__all__ = ["toy_problem", "two_layer_step", "train_two_layer"]


def toy_problem(seed: int = 0):
    """The reading's tiny problem: 3 examples, 3 features, 2 classes, and its init.

    Returns ``x (3, 3), y (3,), w1 (3, 4), w2 (4, 2)``. The weights are drawn as
    ``np.random.seed(seed); np.random.randn(...) * 0.1`` would draw them.
    """
    rng = np.random.RandomState(seed)
    x = np.array([[1.0, 2.0, 1.0], [2.0, 0.0, 1.0], [0.0, 1.0, 2.0]])
    y = np.array([0, 1, 1])
    w1 = rng.randn(3, 4) * 0.1
    w2 = rng.randn(4, 2) * 0.1
    return x, y, w1, w2


def two_layer_step(x, y, w1, w2, fused: bool = False):
    """Loss and (dw1, dw2) of ``relu(x @ w1) @ w2`` under cross-entropy.

    ``fused=False`` follows the reading: softmax, then clipped cross-entropy on
    probabilities. ``fused=True`` uses the stable logits form.
    """
    n = x.shape[0]
    rows = np.arange(n)
    z = x @ w1
    h = np.maximum(z, 0)
    logits = h @ w2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    if fused:
        loss = -np.log(p[rows, y]).mean()
        dlogits = p.copy()
        dlogits[rows, y] -= 1
        dlogits /= n
    else:
        py = np.clip(p[rows, y], 1e-12, 1.0)
        loss = -np.log(py).mean()
        dp = np.zeros_like(p)
        dp[rows, y] = -1.0 / py / n
        dlogits = p * (dp - (dp * p).sum(axis=1, keepdims=True))
    dw2 = h.T @ dlogits
    dz = (dlogits @ w2.T) * (z > 0)
    dw1 = x.T @ dz
    return loss, (dw1, dw2)


def train_two_layer(steps: int = 50, lr: float = 0.5, seed: int = 0, fused: bool = False):
    """Plain gradient descent on the toy problem; returns the loss of every step."""
    x, y, w1, w2 = toy_problem(seed)
    losses = []
    for _ in range(steps):
        loss, (dw1, dw2) = two_layer_step(x, y, w1, w2, fused)
        losses.append(float(loss))
        w1 -= lr * dw1
        w2 -= lr * dw2
    return losses
