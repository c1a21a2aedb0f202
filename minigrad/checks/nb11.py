"""Checks of notebook 11's exercise: ``predict_saved_bytes(batch, width, hidden, classes, itemsize)``.

``check_predict_saved_bytes(predict_saved_bytes)`` compares the prediction with the bytes the graph of
``nn.MLP([width] * (hidden + 1) + [classes])`` has saved at the end of the forward pass of one training
step, as ``minigrad.memory.profile_step`` measures them ("saved activations"), for three shapes and for
float64, float32 and float16. They must agree to within 64 bytes. When they do not, the check probes
your function at ``hidden`` and ``hidden + 1`` to tell a per-layer slip (a ReLU output counted twice)
from a fixed one (one layer too many, the input forgotten, the log-probabilities, the labels and the row
index of the loss, the parameters counted in) and says which.
"""

from __future__ import annotations

import functools

import numpy as np

import minigrad
from minigrad import Tensor, nn
from minigrad.memory import profile_step

from ._op_checks import attempt

SHAPES = [
    dict(batch=200, width=96, hidden=5, classes=7),
    dict(batch=64, width=32, hidden=2, classes=10),
    dict(batch=33, width=48, hidden=3, classes=5),
]


@functools.cache
def measured_saved_bytes(batch, width, hidden, classes, dtype=np.float64) -> int:
    """Saved activations at the end of the forward pass of one step, in bytes, as the profiler measures
    them."""
    minigrad.random.manual_seed(0)
    net = nn.MLP([width] * (hidden + 1) + [classes], dtype=dtype)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(batch, width)), rng.integers(0, classes, size=batch)
    timeline = profile_step(net, Tensor(x, dtype=dtype), y, every_op=False)
    return timeline.at_end("forward").by_category["saved activations"]


def diagnose(predict, batch, width, hidden, classes, itemsize, measured) -> str | None:
    """What a prediction that misses ``measured`` most likely forgot or counted twice, or None if it is
    right."""
    predicted = predict(batch=batch, width=width, hidden=hidden, classes=classes, itemsize=itemsize)
    diff = measured - predicted
    if abs(diff) <= 64:
        return None
    one = batch * width * itemsize
    head = (
        f"for batch {batch}, width {width}, hidden {hidden}, classes {classes}, {itemsize}-byte floats you "
        f"predict {predicted:,} bytes, the profiler measures {measured:,} (off by {diff:,})"
    )
    params = (hidden * (width * width + width) + width * classes + classes) * itemsize
    if abs(diff + params) <= 64:
        return (
            f"{head}: you counted the parameters; they are leaves the model holds, not values the graph saves"
        )
    per_layer = (
        predict(batch=batch, width=width, hidden=hidden + 1, classes=classes, itemsize=itemsize) - predicted
    )
    if abs(per_layer - 2 * one) <= 64:
        return (
            f"{head}: each hidden layer adds two (batch, width) arrays to your count, one to the graph's. A "
            f"ReLU output is saved by the ReLU and by the next matmul, but it is one buffer: count it once"
        )
    if abs(per_layer - one) > 64:
        return (
            f"{head}: one more hidden layer adds {per_layer:,} bytes to your count, the graph {one:,}: one "
            f"(batch, width) array of {itemsize}-byte floats per hidden layer"
        )
    hints = [
        (one, "one (batch, width) array short: did you count the input batch? The first matmul saves it"),
        (
            -one,
            "one (batch, width) array too many: an MLP with `hidden` hidden layers saves hidden + 1 of "
            "them, the input batch and one ReLU output per hidden layer (the last layer has no ReLU)",
        ),
        (batch * classes * itemsize, "short by the log-probabilities, which the loss saves"),
        (
            -batch * classes * itemsize,
            "one (batch, classes) array too many: the loss keeps its "
            "log-probabilities, and nothing saves the logits",
        ),
        (batch * 8, "short by one int64 array: the loss keeps two, the labels and its row index"),
        (batch * 16, "short by the loss's two int64 arrays, the labels and its row index"),
        (
            batch * 2 * (8 - itemsize),
            "the labels and the row index are int64 whatever the float type: 8 "
            "bytes per entry, not the float's itemsize",
        ),
    ]
    found = [hint for size, hint in hints if size and abs(diff - size) <= 64]
    if found:
        return f"{head}: " + "; or ".join(found)
    return (
        f"{head} ({diff / one:+.2f} arrays of one layer): count one buffer per hidden layer, the input, the "
        f"log-probabilities, the labels and the row index, each once"
    )


def check_predict_saved_bytes(predict_saved_bytes, shapes=SHAPES) -> None:
    """Check the prediction on ``shapes`` (SHAPES) and three float types against the profiler (see the module)."""
    for shape in shapes:
        for dtype in (np.float64, np.float32, np.float16):
            itemsize = np.dtype(dtype).itemsize
            measured = measured_saved_bytes(**shape, dtype=dtype)
            problem = attempt(
                "predict_saved_bytes",
                "it takes batch, width, hidden, classes, itemsize and returns an int",
                diagnose,
                predict_saved_bytes,
                **shape,
                itemsize=itemsize,
                measured=measured,
            )
            assert problem is None, problem


OPTIMIZERS = {
    "SGD": lambda ps: minigrad.optim.SGD(ps, lr=0.1),
    "SGD + momentum": lambda ps: minigrad.optim.SGD(ps, lr=0.1, momentum=0.9),
    "Adam": lambda ps: minigrad.optim.Adam(ps, lr=1e-3),
}
STEP_CASES = [((96, 96, 96, 7), 200), ((48, 48, 10), 64)]  # every hidden layer as wide as the input
ACCOUNT_KEYS = ("parameters", "gradients", "optimizer state", "saved activations")


@functools.cache
def measured_step_memory(sizes, batch, itemsize, optimizer) -> dict:
    """The profiler's account of one training step of ``nn.MLP(sizes)``: the saved activations at the end
    of the forward pass, and the parameters, gradients and optimizer state at the end of the optimizer
    step."""
    dtype = {2: np.float16, 4: np.float32, 8: np.float64}[itemsize]
    minigrad.random.manual_seed(0)
    net = nn.MLP(list(sizes), dtype=dtype)
    opt = OPTIMIZERS[optimizer](net.parameters())
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(batch, sizes[0])), rng.integers(0, sizes[-1], size=batch)
    tl = profile_step(net, Tensor(x, dtype=dtype), y, optimizer=opt, every_op=False)
    end = tl.at_end("optimizer step").by_category
    return {
        "parameters": end["parameters"],
        "gradients": end["gradients"],
        "optimizer state": end["optimizer state"],
        "saved activations": tl.at_end("forward").by_category["saved activations"],
    }


def check_step_memory(predict_step_memory, cases=STEP_CASES) -> None:
    """Check ``predict_step_memory(sizes, batch, itemsize, optimizer)``, a dict with the keys ``parameters``,
    ``gradients``, ``optimizer state`` and ``saved activations``, against the profiler's account of one
    training step of ``nn.MLP(sizes)`` (``measured_step_memory``), for two networks, float64 and float32,
    and the optimizers SGD, SGD with momentum and Adam; each category must agree to within 64 bytes."""
    hints = {
        "parameters": "every Linear(a, b) holds a weight of a * b numbers and a bias of b",
        "gradients": "after backward every parameter has a .grad of its own size",
        "optimizer state": "SGD keeps nothing, SGD with momentum one velocity per parameter, Adam two "
        "arrays per parameter (m and v)",
        "saved activations": "the bytes predict_saved_bytes counts: the input batch, one ReLU output per "
        "hidden layer, the log-probabilities and the loss's two int64 arrays",
    }
    for sizes, batch in cases:
        for itemsize in (8, 4):
            for optimizer in OPTIMIZERS:
                got = attempt(
                    "predict_step_memory(sizes, batch, itemsize, optimizer)",
                    "return a dict with the keys " + ", ".join(ACCOUNT_KEYS),
                    predict_step_memory,
                    list(sizes),
                    batch,
                    itemsize,
                    optimizer,
                )
                missing = [k for k in ACCOUNT_KEYS if k not in got]
                assert not missing, f"your account has no {missing}: give all of {list(ACCOUNT_KEYS)}"
                want = measured_step_memory(tuple(sizes), batch, itemsize, optimizer)
                for key in ACCOUNT_KEYS:
                    assert abs(got[key] - want[key]) <= 64, (
                        f"MLP {list(sizes)}, batch {batch}, {itemsize}-byte floats, {optimizer}: you predict "
                        f"{got[key]:,} bytes of {key}, the profiler measures {want[key]:,}: {hints[key]}"
                    )
