"""The check of notebook 11's exercise (minigrad.checks.nb11) rejects plausible wrong memory predictions with
a message that names the slip, and accepts correct ones written differently."""

import numpy as np
import pytest

from minigrad.checks import nb11


def reference(batch, width, hidden, classes, itemsize):  # the notebook's solution
    return (hidden + 1) * batch * width * itemsize + batch * classes * itemsize + 2 * batch * 8


def a_loop(batch, width, hidden, classes, itemsize):
    arrays = [np.zeros((batch, width), dtype=f"f{itemsize}") for _ in range(hidden + 1)]
    arrays += [np.zeros((batch, classes), dtype=f"f{itemsize}")]
    arrays += [np.zeros(batch, dtype=np.int64), np.zeros(batch, dtype=np.int64)]
    return sum(a.nbytes for a in arrays)


@pytest.mark.parametrize("f", [reference, a_loop])
def test_correct_solutions_pass(f):
    nb11.check_predict_saved_bytes(f)


def wrong(delta):
    return lambda batch, width, hidden, classes, itemsize: (
        reference(batch, width, hidden, classes, itemsize) + delta(batch, width, hidden, classes, itemsize)
    )


@pytest.mark.parametrize(
    "delta, phrase",
    [
        (lambda b, w, h, c, i: -b * w * i, "did you count the input batch"),
        (lambda b, w, h, c, i: h * b * w * i, "count it once"),
        (lambda b, w, h, c, i: b * w * i, "hidden \\+ 1 of them"),
        (lambda b, w, h, c, i: 2 * b * (i - 8), "8 bytes per entry, not the float's itemsize"),
        (lambda b, w, h, c, i: -b * c * i, "log-probabilities, which the loss saves"),
        (lambda b, w, h, c, i: -b * 8, "the loss keeps two"),
        (lambda b, w, h, c, i: -2 * b * 8, "the loss's two int64 arrays"),
        (lambda b, w, h, c, i: (h * (w * w + w) + w * c + c) * i, "you counted the parameters"),
        (lambda b, w, h, c, i: b * c * i, "nothing saves the logits"),
        (lambda b, w, h, c, i: 100, "count one buffer per hidden layer"),
    ],
    ids=[
        "input forgotten",
        "ReLU output twice",
        "one layer too many",
        "int64 at float itemsize",
        "no log-probabilities",
        "one int64 array",
        "no int64 arrays",
        "parameters counted",
        "logits counted too",
        "off by a little",
    ],
)
def test_wrong_solutions_are_named(delta, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb11.check_predict_saved_bytes(wrong(delta))


def test_the_measurement_is_the_profilers():
    # The measured bytes are the graph's: the formula above, for a shape the check does not use.
    assert nb11.measured_saved_bytes(16, 8, 4, 3) == reference(16, 8, 4, 3, 8)


# ---------------------------------------------------------------- the account of a training step

STATE = {"SGD": 0, "SGD + momentum": 1, "Adam": 2}


def account(sizes, batch, itemsize, optimizer):  # the notebook's solution
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:])) * itemsize
    saved = reference(batch, sizes[0], len(sizes) - 2, sizes[-1], itemsize)
    return {
        "parameters": params,
        "gradients": params,
        "optimizer state": STATE[optimizer] * params,
        "saved activations": saved,
    }


def account_by_arrays(sizes, batch, itemsize, optimizer):  # counted from arrays of the right shapes
    dt = np.dtype(f"f{itemsize}")
    shapes = [s for a, b in zip(sizes[:-1], sizes[1:]) for s in ((a, b), (b,))]
    p = sum(np.zeros(s, dt).nbytes for s in shapes)
    return {
        "parameters": p,
        "gradients": p,
        "optimizer state": {"SGD": 0, "SGD + momentum": p, "Adam": 2 * p}[optimizer],
        "saved activations": a_loop(batch, sizes[0], len(sizes) - 2, sizes[-1], itemsize),
    }


@pytest.mark.parametrize("f", [account, account_by_arrays])
def test_step_account_correct_solutions_pass(f):
    nb11.check_step_memory(f)


def changed(**over):
    def f(sizes, batch, itemsize, optimizer):
        out = account(sizes, batch, itemsize, optimizer)
        for k, fn in over.items():
            out[k.replace("_", " ")] = fn(sizes, batch, itemsize, optimizer, out)
        return out

    return f


@pytest.mark.parametrize(
    "f, phrase",
    [
        (
            changed(parameters=lambda s, b, i, o, out: sum(x * y for x, y in zip(s[:-1], s[1:])) * i),
            "a bias of b",
        ),
        (changed(optimizer_state=lambda s, b, i, o, out: out["parameters"] * (o != "SGD")), "Adam two"),
        (
            changed(optimizer_state=lambda s, b, i, o, out: out["parameters"] * 2 * (o != "SGD")),
            "momentum one velocity",
        ),
        (changed(gradients=lambda s, b, i, o, out: 0), "has a .grad of its own size"),
        (
            changed(saved_activations=lambda s, b, i, o, out: out["saved activations"] - b * s[0] * i),
            "the input batch",
        ),
        (lambda s, b, i, o: {"parameters": 0}, "your account has no"),
    ],
    ids=[
        "no biases",
        "Adam keeps one",
        "momentum keeps two",
        "no gradients",
        "input forgotten",
        "keys missing",
    ],
)
def test_step_account_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb11.check_step_memory(f)
