"""minigrad.checks.nb01: the graph-prediction check rejects wrong counts and wrong names, saying why."""

import numpy as np
import pytest

from minigrad import Tensor
from minigrad.checks import nb01

rng = np.random.default_rng(0)
W = Tensor(rng.standard_normal((2, 3)) * 0.8, requires_grad=True, name="W")
U = Tensor(rng.standard_normal((3, 3)) * 0.8, requires_grad=True, name="U")


def rnn_score(tokens):
    h = Tensor(np.zeros((1, 3)), name="h0")
    for tok in tokens:
        h = (tok @ W + h @ U).tanh()
    s = h.sum()
    return s * s if s.item() > 0 else -s


def sentence(rows):
    return [Tensor([r], name=f"x{i + 1}") for i, r in enumerate(rows)]


def reference(n, positive):
    counts = {"accumulate_grad": 2, "matmul": 2 * n, "add": n, "tanh": n, "sum": 1}
    counts["mul" if positive else "neg"] = 1
    return counts


def test_the_reference_passes():
    nb01.check_predicted_ops(reference, rnn_score, sentence)


def test_an_alternative_with_zero_entries_passes():
    from collections import Counter

    def predicted(n, positive):
        c = Counter(matmul=n, add=n, tanh=n, sum=1, accumulate_grad=2,
                    mul=int(positive), neg=int(not positive))
        c["matmul"] += n
        return c
    nb01.check_predicted_ops(predicted, rnn_score, sentence)


def changed(**delta):
    def predicted(n, positive):
        c = reference(n, positive)
        for k, v in delta.items():
            c[k] = v(n, positive) if callable(v) else v
        return c
    return predicted


@pytest.mark.parametrize("predicted, phrase", [
    (changed(matmul=lambda n, p: 2 * n - 1), "the first step too: h0 is zeros"),
    (changed(accumulate_grad=lambda n, p: 2 * n), "one AccumulateGrad node, however often it is used"),
    (changed(accumulate_grad=0), "one AccumulateGrad node"),
    (lambda n, p: {**{k: v for k, v in reference(n, p).items() if k not in ("mul", "neg")},
                   ("neg" if p else "mul"): 1}, "run when s"),
    (lambda n, p: {**{k: v for k, v in reference(n, p).items() if k != "accumulate_grad"},
                   "AccumulateGrad": 2},
     "minigrad names a leaf's node 'accumulate_grad'"),
    (lambda n, p: {**{k: v for k, v in reference(n, p).items() if k != "matmul"}, "MmBackward0": 2 * n},
     "PyTorch's spelling"),
    (changed(tanh=lambda n, p: n + 1), "one tanh per step"),
    (lambda n, p: [("matmul", 2 * n)], "return a dict"),
])
def test_wrong_predictions_are_named(predicted, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb01.check_predicted_ops(predicted, rnn_score, sentence)
