"""The check of notebook 12's exercise (minigrad.checks.nb12) rejects plausible wrong hand-made checkpoints
with a message that names the slip, and accepts correct ones written differently."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor, nn
from minigrad.checks import nb12


@pytest.fixture(scope="module")
def halves():
    mg.random.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(32, 32), nn.ReLU()) for _ in range(32)]  # deep enough to save memory
    x = Tensor(np.random.default_rng(0).normal(size=(256, 32)), requires_grad=True)
    return nn.Sequential(*blocks[:16]), nn.Sequential(*blocks[16:]), x


def reference(first, second, x):  # the notebook's solution
    with mg.no_grad():
        h = first(x)
    h_leaf = Tensor(h.data, requires_grad=True)
    p2 = second.parameters()
    g2 = mg.grad(second(h_leaf).sum(), [h_leaf] + p2)
    x_leaf = Tensor(x.data, requires_grad=True)
    p1 = first.parameters()
    g1 = mg.grad(first(x_leaf), [x_leaf] + p1, grad_output=g2[0])
    return [g.data for g in g1] + [g.data for g in g2[1:]]


def with_backward(first, second, x):  # backward() and .grad instead of minigrad.grad
    with mg.no_grad():
        h = first(x)
    h_leaf = Tensor(h.data, requires_grad=True)
    second(h_leaf).sum().backward()
    x_leaf = Tensor(x.data, requires_grad=True)
    first(x_leaf).backward(h_leaf.grad)
    return [x_leaf.grad] + [p.grad for p in first.parameters()] + [p.grad for p in second.parameters()]


@pytest.mark.parametrize("f", [reference, with_backward])
def test_correct_solutions_pass(halves, f):
    nb12.check_two_segment_grads(f, *halves)


def no_recompute(first, second, x):
    return [g.data for g in nb12.plain_grads(first, second, x)]


def first_pass_recorded(first, second, x):
    h = first(x)  # no no_grad: the graph and its values are kept
    h_leaf = Tensor(h.data, requires_grad=True)
    g2 = mg.grad(second(h_leaf).sum(), [h_leaf] + second.parameters())
    x_leaf = Tensor(x.data, requires_grad=True)
    g1 = mg.grad(first(x_leaf), [x_leaf] + first.parameters(), grad_output=g2[0])
    return [g.data for g in g1] + [g.data for g in g2[1:]]


def extra_pass(first, second, x):
    with mg.no_grad():
        first(x)
    return reference(first, second, x)


def wrong_order(first, second, x):
    g = reference(first, second, x)
    n1 = len(first.parameters())
    return [g[0]] + g[1 + n1 :] + g[1 : 1 + n1]


def ones_grad_output(first, second, x):
    with mg.no_grad():
        h = first(x)
    h_leaf = Tensor(h.data, requires_grad=True)
    g2 = mg.grad(second(h_leaf).sum(), [h_leaf] + second.parameters())
    x_leaf = Tensor(x.data, requires_grad=True)
    g1 = mg.grad(first(x_leaf), [x_leaf] + first.parameters(), grad_output=np.ones_like(h.data))
    return [g.data for g in g1] + [g.data for g in g2[1:]]


def package_checkpoint(first, second, x):
    out = second(mg.checkpoint(first, x)).sum()
    return [g.data for g in mg.grad(out, [x] + first.parameters() + second.parameters())]


def x_missing(first, second, x):
    return reference(first, second, x)[1:]


@pytest.mark.parametrize(
    "f, phrase",
    [
        (no_recompute, "nothing was recomputed"),
        (first_pass_recorded, "Run that pass under mg.no_grad"),
        (extra_pass, "matmuls ran, 48 expected"),
        (wrong_order, "in the wrong place"),
        (ones_grad_output, "not ones"),
        (package_checkpoint, "minigrad.checkpoint does the work for you"),
        (x_missing, "gradients returned"),
    ],
    ids=[
        "no recomputation",
        "first pass recorded",
        "an extra pass",
        "wrong order",
        "grad_output of ones",
        "mg.checkpoint",
        "x's gradient missing",
    ],
)
def test_wrong_solutions_are_named(halves, f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb12.check_two_segment_grads(f, *halves)
