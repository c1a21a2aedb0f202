"""Every op's VJP against central differences (float64), on generated shapes.

Where PyTorch is installed, the same gradients are also compared with it.
"""

import numpy as np
import pytest
from conftest import needs_torch, torch
from hypothesis import given
from hypothesis import strategies as st

from minigrad import Tensor, gradcheck

dims = st.integers(1, 4)
shapes = st.lists(dims, min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2**16)


def T(shape, seed, low=-2.0, high=2.0, grad=True):
    data = np.random.default_rng(seed).uniform(low, high, size=shape)
    return Tensor(data, requires_grad=grad)


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: one may drop leading axes or set axes to 1."""
    full = draw(shapes)
    other = list(full[draw(st.integers(0, len(full) - 1)):])
    for i in range(len(other)):
        if draw(st.booleans()):
            other[i] = 1
    pair = (full, tuple(other))
    return pair if draw(st.booleans()) else pair[::-1]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@given(shapes=broadcast_pair(), seed=seeds)
def test_binary_ops_with_broadcasting(op, shapes, seed):
    a = T(shapes[0], seed)
    b = T(shapes[1], seed + 1, low=0.5, high=2.0)  # away from 0 for div
    f = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
         "mul": lambda a, b: a * b, "div": lambda a, b: a / b}[op]
    assert gradcheck(f, a, b)


@given(shape=shapes, seed=seeds)
def test_scalar_operands_on_either_side(shape, seed):
    a = T(shape, seed, low=0.5)
    assert gradcheck(lambda a: 2.0 - a * 3.0 + 1.5 / a + (-a), a)


@pytest.mark.parametrize("p", [2, 3, 0.5, -1.0])
@given(shape=shapes, seed=seeds)
def test_pow(p, shape, seed):
    assert gradcheck(lambda a: a ** p, T(shape, seed, low=0.5))


@given(n=dims, d=dims, m=dims, seed=seeds)
def test_matmul(n, d, m, seed):
    assert gradcheck(lambda a, b: a @ b, T((n, d), seed), T((d, m), seed + 1))


@pytest.mark.parametrize("name", ["exp", "log", "relu", "sigmoid", "tanh"])
@given(shape=shapes, seed=seeds)
def test_elementwise(name, shape, seed):
    low = 0.2 if name == "log" else -3.0
    a = T(shape, seed, low=low, high=3.0)
    if name == "relu":  # keep away from the kink, where differences are meaningless
        a.data[np.abs(a.data) < 1e-3] = 0.5
    assert gradcheck(lambda a: getattr(a, name)(), a)


@pytest.mark.parametrize("red", ["sum", "mean"])
@given(shape=shapes, seed=seeds, keepdims=st.booleans(), data=st.data())
def test_reductions(red, shape, seed, keepdims, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                               st.just(tuple(range(len(shape))))))
    a = T(shape, seed)
    assert gradcheck(lambda a: getattr(a, red)(axis=axis, keepdims=keepdims), a)


@given(shape=shapes, seed=seeds)
def test_reshape_and_transpose(shape, seed):
    a = T(shape, seed)
    assert gradcheck(lambda a: a.reshape(-1) * 2, a)
    assert gradcheck(lambda a: a.T * np.arange(a.size).reshape(a.T.shape), a)
    if len(shape) == 3:
        assert gradcheck(lambda a: a.transpose(1, 2, 0) ** 2, a)


@given(n=dims, m=dims, seed=seeds)
def test_indexing_scatters_back(n, m, seed):
    a = T((n + 1, m), seed)
    assert gradcheck(lambda a: a[1:] * 3, a)
    assert gradcheck(lambda a: a[np.array([0, 0, n])] ** 2, a)  # repeated rows add up


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@given(n=dims, c=st.integers(2, 5), seed=seeds, axis=st.sampled_from([0, 1, -1]))
def test_softmax_family(name, n, c, seed, axis):
    a = T((n, c), seed, low=-4, high=4)
    assert gradcheck(lambda a: getattr(a, name)(axis=axis), a)


@given(n=dims, c=st.integers(2, 5), seed=seeds)
def test_cross_entropy_on_probabilities(n, c, seed):
    y = np.random.default_rng(seed).integers(0, c, size=n)
    logits = T((n, c), seed)
    assert gradcheck(lambda z: z.softmax(axis=1).cross_entropy(y), logits)


@given(n=dims, c=st.integers(2, 5), seed=seeds)
def test_cross_entropy_with_logits(n, c, seed):
    y = np.random.default_rng(seed).integers(0, c, size=n)
    assert gradcheck(lambda z: z.cross_entropy_with_logits(y), T((n, c), seed, -5, 5))


def test_fused_loss_matches_unfused_and_survives_huge_logits():
    z = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]])
    y = np.array([1, 2])
    a, b = Tensor(z, requires_grad=True), Tensor(z, requires_grad=True)
    la = a.cross_entropy_with_logits(y)
    lb = b.softmax(axis=1).cross_entropy(y)
    la.backward()
    lb.backward()
    assert abs(la.item() - lb.item()) < 1e-12
    assert np.allclose(a.grad, b.grad, atol=1e-12)
    big = Tensor([[1e4, 0.0, -1e4], [0.0, 1e4, 2e4]], requires_grad=True)
    loss = big.cross_entropy_with_logits(np.array([0, 0]))
    loss.backward()
    assert np.isfinite(loss.item()) and np.all(np.isfinite(big.grad))
    assert abs(loss.item() - (0 + 2e4) / 2) < 1e-9


def test_sigmoid_does_not_overflow():
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        s = Tensor([-1000.0, 0.0, 1000.0]).sigmoid().data
    assert np.allclose(s, [0.0, 0.5, 1.0])


def test_relu_picks_subgradient_zero_at_zero():
    x = Tensor([-1.0, 0.0, 2.0], requires_grad=True)
    x.relu().sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]


# ------------------------------------------------------------ PyTorch, if any

@needs_torch
@pytest.mark.parametrize("seed", range(5))
def test_every_op_matches_pytorch(seed):
    rng = np.random.default_rng(seed)
    xa, wa, ba = rng.normal(size=(5, 4)), rng.normal(size=(4, 3)), rng.normal(size=(3,))
    y = rng.integers(0, 3, size=5)

    def program(x, w, b, cross_entropy):
        h = x @ w + b
        parts = [h.tanh(), h.sigmoid(), h.relu(), h.exp() / 10, (h * h + 1).log(),
                 h.softmax(-1), h.log_softmax(-1), (h - 2) ** 2 / 3, h.T.reshape(5, 3)[1:4]]
        total = cross_entropy(h)
        for i, p in enumerate(parts):
            total = total + p.mean() * (i + 1) + p.sum(0).sum() * 0.01
        return total

    ours = [Tensor(v, requires_grad=True) for v in (xa, wa, ba)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (xa, wa, ba)]
    lo = program(*ours, lambda h: h.cross_entropy_with_logits(y))
    lt = program(*theirs, lambda h: torch.nn.functional.cross_entropy(h, torch.as_tensor(y)))
    lo.backward()
    lt.backward()
    assert abs(lo.item() - lt.item()) < 1e-10
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad, t.grad.numpy(), atol=1e-10, rtol=1e-10)
