"""minigrad.checks.nb02: the bytes-prediction check names the array a wrong prediction miscounts."""

import numpy as np
import pytest

from minigrad.checks import nb02


def reference(batch, sizes):
    return batch * (sum(8 * h for h in sizes[1:-1]) + 8 * sizes[-1] + 16)


def test_the_reference_passes():
    nb02.check_training_bytes(reference)


def test_an_alternative_by_itemsize_passes():
    def predicted(batch, sizes):
        f, i = np.dtype(np.float64).itemsize, np.dtype(np.int64).itemsize
        arrays = [(batch * w, f) for w in sizes[1:]] + [(batch, i), (batch, i)]
        return sum(n * size for n, size in arrays)
    nb02.check_training_bytes(predicted)


@pytest.mark.parametrize("predicted, phrase", [
    (lambda b, s: reference(b, s) + b * 8 * sum(s[1:-1]), "ReLU output is counted twice"),
    (lambda b, s: reference(b, s) - 16 * b, "two int64 arrays"),
    (lambda b, s: reference(b, s) - 8 * b, "two int64 arrays"),
    (lambda b, s: reference(b, s) + 8 * b * s[0], "the input batch is not an activation"),
    (lambda b, s: reference(b, s) + 8 * b * sum(s[1:]), "matmul outputs and the logits are not kept"),
    (lambda b, s: reference(b, s) // 2, "8 bytes per number"),
    (lambda b, s: reference(b, s) + 8 * b * s[-1], "count it once"),
    (lambda b, s: str(reference(b, s)), "return one number"),
])
def test_wrong_predictions_are_named(predicted, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb02.check_training_bytes(predicted)
