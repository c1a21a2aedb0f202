"""Checks of notebook 02's two exercises: predict the bytes a training step keeps, and count them by a walk.

``check_training_bytes(predicted_training_bytes)`` builds ``minigrad.nn.MLP(sizes)``
followed by ``softmax`` and ``cross_entropy`` on a float64 batch with int64
labels, for three shapes and three batch sizes, and compares your prediction
with ``saved_memory(loss)["activation"] + saved_memory(loss)["extra"]``.
``measured_training_bytes`` is that measurement, for you to call.

When the numbers differ, the check looks at how much they differ by, per
example, and names the array that accounts for it: a ReLU output counted
twice or not at all, the probabilities, the int64 row indices and labels,
the input batch, the freed matmul outputs, or 4 bytes per number instead of 8.

``check_kept_for_backward(kept_for_backward)`` compares your walk with
``saved_memory(root)["total"]`` on five graphs: the MLP with softmax and
cross_entropy (a ReLU output kept by two nodes; the loss's int64 arrays in its
attributes), a graph where one op keeps a reshaped view of an array another op
keeps, a graph that keeps a slice (a view of part of a buffer), the MLP after
backward (nothing is kept), and one built under ``no_grad()`` (no graph). A
wrong total is compared with what the usual slips give (each node's arrays
summed, views counted apart from their buffer, a view's own ``nbytes``, only
``node.saved``, the leaves' data counted too) and the message names the one it matches.
"""

from __future__ import annotations

import numpy as np

from .. import nn
from ..engine import topological_order
from ..function import AccumulateGrad, no_grad
from ..inspect import saved_memory
from ..tensor import Tensor

__all__ = ["check_training_bytes", "measured_training_bytes", "CASES", "check_kept_for_backward"]

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


def _owner(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _kept_graphs(seed: int = 2) -> dict:
    """The graphs check_kept_for_backward walks, by name (built afresh on each call)."""
    rng = np.random.default_rng(seed)
    net = nn.MLP([20, 5, 3])
    x = Tensor(rng.standard_normal((7, 20)))
    labels = rng.integers(0, 3, 7)
    mlp = net(x).softmax(axis=1).cross_entropy(labels)
    a = Tensor(rng.standard_normal((4, 6)), requires_grad=True, name="a")
    c = Tensor(rng.standard_normal((4, 6)), requires_grad=True, name="c")
    W = Tensor(rng.standard_normal((4, 3)), requires_grad=True, name="W")
    reshaped = (a.reshape(6, 4) @ W).sum() + (a * c).sum()        # matmul keeps a view of a; mul keeps a itself
    big = Tensor(rng.standard_normal((4, 6)), requires_grad=True, name="big")
    w = Tensor(rng.standard_normal((4, 2)), requires_grad=True, name="w")
    sliced = (big[:, :2] * w).sum()                               # mul keeps a (4, 2) view of big's buffer
    after = nn.MLP([20, 5, 3])(x).softmax(axis=1).cross_entropy(labels)
    after.backward()
    with no_grad():
        inference = net(x).softmax(axis=1).cross_entropy(labels)
    return {"MLP 20-5-3, softmax, cross_entropy, batch 7": mlp, "a reshaped view and its array": reshaped,
            "a slice of a leaf": sliced, "the MLP after backward()": after, "under no_grad()": inference}


def _slips(root) -> list[tuple[int, str]]:
    """(total, what it means) for the usual wrong ways to count, on root's graph."""
    order = topological_order(root)
    arrays = [a for n in order for a in n.arrays()]
    by_id = {id(a): a for a in arrays}
    owners = {id(_owner(a)): _owner(a) for a in arrays}
    view_sizes: dict[int, int] = {}
    for a in arrays:
        view_sizes.setdefault(id(_owner(a)), a.nbytes)
    only_saved = {id(_owner(v)): _owner(v) for n in order for v in (n.saved or ()) if isinstance(v, np.ndarray)}
    with_leaves = dict(owners)
    for n in order:
        if isinstance(n, AccumulateGrad):
            with_leaves.setdefault(id(_owner(n.variable.data)), _owner(n.variable.data))
    return [                       # most specific first: on the slice graph the first two agree
        (sum(view_sizes.values()),
         "you counted a view's own nbytes: a view keeps its whole buffer alive, so count the owner's nbytes"),
        (sum(a.nbytes for a in by_id.values()),
         "you counted a view apart from the array it was made from: a view (v.base is not None) shares its "
         "owner's memory; follow .base to the owner and count each owner once"),
        (sum(a.nbytes for a in arrays),
         "you added up every node's arrays: an array kept by two nodes (a ReLU output, and the next matmul's "
         "input) is one buffer, so count each buffer once"),
        (sum(a.nbytes for a in only_saved.values()),
         "node.saved holds only what save_for_backward kept; node.arrays() also lists the arrays in the node's "
         "own attributes (the loss keeps its row indices and labels there)"),
        (sum(a.nbytes for a in with_leaves.values()),
         "an AccumulateGrad node keeps no array: a leaf's data counts only where an op's node keeps it"),
    ]


def check_kept_for_backward(kept_for_backward, *, seed: int = 2) -> None:
    """Raise AssertionError unless kept_for_backward(root) equals saved_memory(root)["total"] on every graph."""
    for name, root in _kept_graphs(seed).items():
        want = saved_memory(root)["total"]
        try:
            mine = kept_for_backward(root)
        except NotImplementedError:
            raise
        except Exception as err:
            hint = ""
            if isinstance(err, TypeError) and "NoneType" in str(err):
                hint = (" After backward() a node's saved values are released (node.saved is None): "
                        "node.arrays() is then empty")
            raise AssertionError(f"{name}: kept_for_backward raised {type(err).__name__}: {err}.{hint}") from err
        if not isinstance(mine, (int, np.integer)):
            raise AssertionError(f"{name}: kept_for_backward returned {type(mine).__name__}; return a whole number of bytes")
        if mine == want:
            continue
        why = next((text for total, text in _slips(root) if total == mine and total != want),
                   "walk every node of topological_order(root), take node.arrays(), follow each array's .base to "
                   "the array that owns the memory, and add up each owner's nbytes once")
        raise AssertionError(f"{name}: you count {mine:,} bytes, saved_memory {want:,}: {why}")
