"""Checks of notebook 02's exercise (predict the bytes a training step keeps, from the shapes).

``check_training_bytes(predicted_training_bytes)`` builds ``minigrad.nn.MLP(sizes)``
followed by ``softmax`` and ``cross_entropy`` on a float64 batch with int64
labels, for three shapes and three batch sizes, and compares your prediction
with ``saved_memory(loss)["activation"] + saved_memory(loss)["extra"]``.
``measured_training_bytes`` is that measurement, for you to call.

When the numbers differ, the check looks at how much they differ by, per
example, and names the array that accounts for it: a ReLU output counted
twice or not at all, the probabilities, the int64 row indices and labels,
the input batch, the freed matmul outputs, or 4 bytes per number instead of 8.
"""

from __future__ import annotations

import numpy as np

from .. import nn
from ..inspect import saved_memory
from ..tensor import Tensor

__all__ = ["check_training_bytes", "measured_training_bytes", "CASES"]

CASES = [(batch, sizes) for sizes in ([784, 256, 128, 10], [20, 5, 3], [10, 10]) for batch in (1, 7, 64)]


def measured_training_bytes(batch: int, sizes, seed: int = 0) -> int:
    """What saved_memory reports as activation + extra for MLP(sizes), softmax and cross_entropy."""
    rng = np.random.default_rng(seed)
    net = nn.MLP(list(sizes))
    out = net(Tensor(rng.standard_normal((batch, sizes[0])))).softmax(axis=1).cross_entropy(
        rng.integers(0, sizes[-1], batch))
    kept = saved_memory(out)
    return kept["activation"] + kept["extra"]


def _advice(batch: int, sizes, off: int, real: int) -> str:
    per = off / batch                      # what the prediction has too much (+) or too little (-), per example
    hidden, classes = 8 * sum(sizes[1:-1]), 8 * sizes[-1]
    if hidden and per == hidden:
        return ("each hidden layer's ReLU output is counted twice: relu keeps it and the next matmul keeps "
                "the same array as its input 0, and saved_memory counts each buffer once")
    if hidden and per == -hidden:
        return "each hidden layer leaves one array behind, its ReLU output (batch x width float64 numbers)"
    if per == classes:
        return "the probabilities are one array, kept by softmax (output) and by cross_entropy (input 0): count it once"
    if per == -classes:
        return "softmax keeps its output, the probabilities: batch x classes float64 numbers"
    if per in (-16, -8):
        return "cross_entropy also keeps two int64 arrays with one entry per example: the row indices and the labels"
    if per in (16, 8, 8 * sizes[0] + 16, 8 * sizes[0] + 8):
        return "the row indices and labels are int64 arrays, 8 bytes per entry, one entry per example each"
    if per == 8 * sizes[0]:
        return "the input batch is not an activation: saved_memory counts it under 'input', which is left out here"
    if per == hidden + classes:
        return "the matmul outputs and the logits are not kept by any node: they are freed once read"
    if real and off == -real // 2:
        return "float64 takes 8 bytes per number (and int64 8 per entry), not 4"
    return "list which arrays each node keeps (the table of section 7) and count each buffer once"


def check_training_bytes(predicted_training_bytes, cases=CASES) -> None:
    """Raise AssertionError unless predicted_training_bytes(batch, sizes) is the measured count for every case."""
    for batch, sizes in cases:
        mine, real = predicted_training_bytes(batch, list(sizes)), measured_training_bytes(batch, sizes)
        if not isinstance(mine, (int, np.integer, float, np.floating)):
            raise AssertionError(f"predicted_training_bytes returned {type(mine).__name__}; return one number of bytes")
        assert mine == real, (f"batch {batch}, sizes {sizes}: you predict {mine:,} bytes, saved_memory measures "
                              f"{real:,} as activation + extra. {_advice(batch, sizes, mine - real, real)}")
