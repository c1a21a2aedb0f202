"""Hand-derived NumPy versions of what the engine computes: the yardstick.

Nothing here uses the engine. Each gradient is written out by hand from the
formulas in ``ops.py``, so that notebooks, tests and benchmarks can compare the
engine with an independent computation.
"""

from __future__ import annotations

import numpy as np

__all__ = ["toy_problem", "two_layer_step", "train_two_layer", "mlp_problem", "mlp_step"]


def toy_problem(seed: int = 0):
    """The course's tiny problem (notebook 00): 3 examples, 3 features, 2 classes, and its init.

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

    ``fused=False`` follows notebook 00's two-step loss: softmax, then clipped cross-entropy on
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


def mlp_problem(batch: int, sizes, seed: int = 0, dtype=np.float64, bias: bool = True):
    """A random batch and He-initialised weights for ``relu(x @ w1 + b1) @ w2 + b2``.

    ``sizes = (d, h, c)``. Returns ``x (batch, d), y (batch,), [w1, b1, w2, b2]``
    with ``w1: (d, h)``, ``w2: (h, c)``, zero biases (``None`` when ``bias=False``),
    all in ``dtype``. The same seed gives the same numbers in any dtype.
    """
    d, h, c = sizes
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, d)).astype(dtype)
    y = rng.integers(0, c, size=batch)
    w1 = (rng.standard_normal((d, h)) * np.sqrt(2.0 / d)).astype(dtype)
    w2 = (rng.standard_normal((h, c)) * np.sqrt(2.0 / h)).astype(dtype)
    b1 = np.zeros(h, dtype=dtype) if bias else None
    b2 = np.zeros(c, dtype=dtype) if bias else None
    return x, y, [w1, b1, w2, b2]


def mlp_step(x, y, params, lr: float | None = None):
    """Loss and gradients of a one-hidden-layer MLP under fused softmax cross-entropy.

    Forward:  z = x @ w1 + b1,  h = relu(z),  s = h @ w2 + b2,
              L = mean_i [logsumexp(s_i) - s[i, y_i]].
    Backward: ds = (softmax(s) - onehot(y)) / N,  dw2 = h.T @ ds,  db2 = sum_i ds,
              dz = (ds @ w2.T) * (z > 0),  dw1 = x.T @ dz,  db1 = sum_i dz.

    ``params = [w1, b1, w2, b2]`` (a bias may be ``None``). Returns ``loss, grads``
    with ``None`` for a missing bias. With ``lr``, also takes the SGD step
    ``p -= lr * dp`` in place. This is the floor a NumPy engine is measured
    against: the same arithmetic, written as plain NumPy expressions, with no
    graph and no bookkeeping.
    """
    w1, b1, w2, b2 = params
    n = x.shape[0]
    rows = np.arange(n)
    z = x @ w1 if b1 is None else x @ w1 + b1
    h = np.maximum(z, 0)
    s = h @ w2 if b2 is None else h @ w2 + b2
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(axis=1, keepdims=True)
    loss = (np.log(total[:, 0]) + m[:, 0] - s[rows, y]).mean()
    ds = e / total
    ds[rows, y] -= 1.0
    ds /= n
    dw2 = h.T @ ds
    db2 = ds.sum(axis=0) if b2 is not None else None
    dz = (ds @ w2.T) * (z > 0)
    dw1 = x.T @ dz
    db1 = dz.sum(axis=0) if b1 is not None else None
    grads = [dw1, db1, dw2, db2]
    if lr is not None:
        for p, g in zip(params, grads):
            if p is not None:
                p -= lr * g
    return loss, grads
