"""LayerNorm: the op's VJP against central differences and PyTorch, its algebra, nn.LayerNorm."""

import numpy as np
import pytest
from conftest import needs_torch, torch
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad import Tensor, gradcheck, layer_norm, nn

shapes = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2**16)
eps_values = st.sampled_from([1e-5, 1e-3, 0.1, 1.0])


def T(shape, seed, scale=2.0, grad=True):
    data = np.random.default_rng(seed).normal(0.0, scale, size=shape)
    return Tensor(data, requires_grad=grad)


def composite(x, eps):
    """The same normalisation out of primitive ops (mean, sub, mul, pow)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    return xc * ((xc * xc).mean(axis=-1, keepdims=True) + eps) ** -0.5


@given(shape=shapes, seed=seeds, eps=eps_values)
def test_vjp_matches_central_differences(shape, seed, eps):
    assert gradcheck(lambda x: layer_norm(x, eps=eps), T(shape, seed))


@given(shape=shapes, seed=seeds, eps=eps_values)
def test_op_agrees_with_its_composite_in_value_and_gradient(shape, seed, eps):
    a, b = T(shape, seed), T(shape, seed)
    r = np.random.default_rng(seed + 1).normal(size=shape)
    ya, yb = layer_norm(a, eps=eps), composite(b, eps)
    np.testing.assert_allclose(ya.data, yb.data, rtol=1e-10, atol=1e-12)
    (ya * r).sum().backward()
    (yb * r).sum().backward()
    np.testing.assert_allclose(a.grad, b.grad, rtol=1e-8, atol=1e-10)


@given(shape=shapes, seed=seeds)
def test_gradient_of_the_gradient(shape, seed):
    r = np.random.default_rng(seed + 2).normal(size=shape)

    def first_grad(x):
        with mg.enable_grad():  # gradcheck evaluates under no_grad; grad() needs a graph
            (g,) = mg.grad((layer_norm(x, eps=0.1) * r).sum(), x, create_graph=True)
        return g

    assert gradcheck(first_grad, T(shape, seed, scale=1.0))


@given(n=st.integers(1, 4), d=st.integers(2, 8), seed=seeds,
       shift=st.floats(-100, 100), scale=st.floats(0.01, 100))
def test_forward_normalises_each_row(n, d, seed, shift, scale):
    x = np.random.default_rng(seed).normal(size=(n, d))
    y = layer_norm(Tensor(x * scale + shift), eps=1e-12).data
    np.testing.assert_allclose(y.mean(axis=-1), 0.0, atol=1e-9)
    var = (x * scale).var(axis=-1)
    np.testing.assert_allclose(y.var(axis=-1), var / (var + 1e-12), rtol=1e-9)


@given(n=st.integers(1, 4), d=st.integers(2, 8), seed=seeds, eps=eps_values)
def test_gradient_rows_sum_to_zero_and_the_xhat_part_is_eps_small(n, d, seed, eps):
    """dx = (1/s)(g - mean g - x_hat mean(g x_hat)) gives sum(dx) = 0 and
    dx . x_hat = (1/s) sum(g x_hat) * eps / (var + eps), one row at a time."""
    x, g = T((n, d), seed), np.random.default_rng(seed + 3).normal(size=(n, d))
    y = layer_norm(x, eps=eps)
    x_hat = y.data.copy()
    y.backward(g)
    np.testing.assert_allclose(x.grad.sum(axis=-1), 0.0, atol=1e-10)
    var = x.data.var(axis=-1)
    expected = (g * x_hat).sum(-1) / np.sqrt(var + eps) * eps / (var + eps)
    np.testing.assert_allclose((x.grad * x_hat).sum(-1), expected, rtol=1e-7, atol=1e-10)


def test_shift_and_scale_of_a_row_do_not_change_the_output():
    x = np.random.default_rng(0).normal(size=(3, 6))
    base = layer_norm(Tensor(x), eps=1e-12).data
    moved = layer_norm(Tensor(7.0 * x - 3.0), eps=1e-12).data
    np.testing.assert_allclose(moved, base, atol=1e-9)


def test_float32_stays_float32_and_saves_two_arrays():
    x = Tensor(np.arange(12.0).reshape(3, 4), requires_grad=True, dtype=np.float32)
    y = layer_norm(x)
    assert y.dtype == np.float32
    assert y.grad_fn.saved_nbytes() == 3 * 4 * 4 + 2 * 3 * 1 * 4  # x, and mean and 1/sigma per row
    y.sum().backward()
    assert x.grad.dtype == np.float32 and y.grad_fn.released


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="layer_norm: needs at least one axis"):
        layer_norm(Tensor(1.0, requires_grad=True))
    for eps in (0.0, -1e-5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="layer_norm: eps must be a positive number"):
            layer_norm(Tensor(np.ones((2, 3))), eps=eps)


# ------------------------------------------------------------- nn.LayerNorm

def test_module_has_a_gain_and_a_bias_and_gradchecks():
    ln = nn.LayerNorm(4)
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    assert ln.weight.data.tolist() == [1.0] * 4 and ln.bias.data.tolist() == [0.0] * 4
    rng = np.random.default_rng(1)
    ln.weight.data[:] = rng.normal(size=4)
    ln.bias.data[:] = rng.normal(size=4)
    x = T((3, 4), 2)

    def f(x, w, b):
        ln.weight, ln.bias = w, b
        return ln(x)

    assert gradcheck(f, x, ln.weight, ln.bias)


def test_module_checks_the_feature_count():
    with pytest.raises(ValueError, match=r"LayerNorm\(4\): the input's last axis must have 4 "
                                         r"features, got shape \(2, 5\)"):
        nn.LayerNorm(4)(Tensor(np.ones((2, 5))))
    with pytest.raises(ValueError, match="positive integer"):
        nn.LayerNorm(0)


def test_scaling_the_weights_before_layernorm_changes_nothing_but_the_gradient_size():
    """LN(h (a W)) = LN(h W), so L(a W) = L(W) and dL/d(aW) = dL/dW / a (up to eps)."""
    rng = np.random.default_rng(0)
    x, r = rng.normal(size=(5, 6)), rng.normal(size=(5, 4))
    w = rng.normal(size=(6, 4))
    losses, grads = [], []
    for a in (1.0, 10.0):
        W = Tensor(a * w, requires_grad=True)
        loss = (layer_norm(Tensor(x) @ W, eps=1e-12) * r).sum()
        loss.backward()
        losses.append(loss.item())
        grads.append(W.grad)
    assert abs(losses[0] - losses[1]) < 1e-9
    np.testing.assert_allclose(grads[1], grads[0] / 10.0, rtol=1e-7, atol=1e-12)


# ---------------------------------------------------------------- PyTorch

@needs_torch
@pytest.mark.parametrize("seed", range(4))
def test_matches_pytorch_layer_norm(seed):
    rng = np.random.default_rng(seed)
    shape = (3, 2, 7) if seed % 2 else (5, 7)
    xa, wa, ba, g = (rng.normal(size=shape), rng.normal(size=7), rng.normal(size=7),
                     rng.normal(size=shape))
    ln = nn.LayerNorm(7, eps=1e-5)
    ln.weight.data[:], ln.bias.data[:] = wa, ba
    x = Tensor(xa, requires_grad=True)
    y = ln(x)
    y.backward(g)
    xt, wt, bt = (torch.tensor(v, requires_grad=True) for v in (xa, wa, ba))
    yt = torch.nn.functional.layer_norm(xt, (7,), wt, bt, eps=1e-5)
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ours, theirs in ((x, xt), (ln.weight, wt), (ln.bias, bt)):
        np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-9, atol=1e-11)
