"""BatchNorm: the op's VJP against central differences and PyTorch, nn.BatchNorm1d in both modes."""

import numpy as np
import pytest
from conftest import needs_torch, torch
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad import Tensor, batch_norm, gradcheck, nn, ops

sizes = st.tuples(st.integers(2, 6), st.integers(1, 4))
seeds = st.integers(0, 2**16)
eps_values = st.sampled_from([1e-5, 1e-3, 0.1, 1.0])


def T(shape, seed, scale=2.0, shift=0.0, grad=True):
    data = np.random.default_rng(seed).normal(shift, scale, size=shape)
    return Tensor(data, requires_grad=grad)


def composite(x, eps):
    """The same normalisation out of primitive ops (mean, sub, mul, pow) over axis 0."""
    xc = x - x.mean(axis=0, keepdims=True)
    return xc * ((xc * xc).mean(axis=0, keepdims=True) + eps) ** -0.5


# ------------------------------------------------------------------- the op

@given(shape=sizes, seed=seeds, eps=eps_values)
def test_vjp_matches_central_differences(shape, seed, eps):
    assert gradcheck(lambda x: batch_norm(x, eps=eps), T(shape, seed))


@given(shape=sizes, seed=seeds, eps=eps_values)
def test_op_agrees_with_its_composite_in_value_and_gradient(shape, seed, eps):
    a, b = T(shape, seed), T(shape, seed)
    r = np.random.default_rng(seed + 1).normal(size=shape)
    ya, yb = batch_norm(a, eps=eps), composite(b, eps)
    np.testing.assert_allclose(ya.data, yb.data, rtol=1e-10, atol=1e-12)
    (ya * r).sum().backward()
    (yb * r).sum().backward()
    np.testing.assert_allclose(a.grad, b.grad, rtol=1e-8, atol=1e-10)


@given(shape=sizes, seed=seeds)
def test_gradient_of_the_gradient(shape, seed):
    r = np.random.default_rng(seed + 2).normal(size=shape)

    def first_grad(x):
        with mg.enable_grad():  # gradcheck evaluates under no_grad; grad() needs a graph
            (g,) = mg.grad((batch_norm(x, eps=0.1) * r).sum(), x, create_graph=True)
        return g

    assert gradcheck(first_grad, T(shape, seed, scale=1.0))


def test_hessian_vector_product_matches_the_composite():
    """Second order through the op equals second order through primitive ops."""
    x0 = np.random.default_rng(5).normal(size=(5, 3))
    r = np.random.default_rng(6).normal(size=(5, 3))
    v = np.random.default_rng(7).normal(size=(5, 3))
    hv = []
    for f in (lambda x: batch_norm(x, eps=0.1), lambda x: composite(x, 0.1)):
        x = Tensor(x0, requires_grad=True)
        (plain,) = mg.grad((f(x) * r).sum(), x)
        (g,) = mg.grad((f(x) * r).sum(), x, create_graph=True)  # the Tensor path of the VJP
        np.testing.assert_allclose(g.data, plain.data, rtol=1e-10, atol=1e-12)
        (h,) = mg.grad((g * v).sum(), x)
        hv.append(h.data)
    np.testing.assert_allclose(hv[0], hv[1], rtol=1e-8, atol=1e-10)
    assert np.abs(hv[0]).max() > 1e-3  # not trivially zero


class _BatchNormWithoutTheVariancePath(ops.BatchNorm):
    """A wrong VJP: it forgets that sigma depends on x (the x_hat * mean(g x_hat) term)."""

    @staticmethod
    def backward(ctx, g):
        x, mu, inv_sigma = ctx.saved
        return (inv_sigma * (g - g.mean(axis=0)),)


def test_gradcheck_catches_a_vjp_that_forgets_the_variance_path():
    with pytest.raises(mg.GradcheckError, match="gradcheck failed for input 0"):
        gradcheck(lambda x: _BatchNormWithoutTheVariancePath.apply(x, eps=1e-5), T((4, 3), 0))


@given(n=st.integers(2, 6), d=st.integers(1, 5), seed=seeds,
       shift=st.floats(-100, 100), scale=st.floats(0.01, 100))
def test_forward_normalises_each_feature_over_the_batch(n, d, seed, shift, scale):
    x = np.random.default_rng(seed).normal(size=(n, d))
    y = batch_norm(Tensor(x * scale + shift), eps=1e-12).data
    np.testing.assert_allclose(y.mean(axis=0), 0.0, atol=1e-9)
    var = (x * scale).var(axis=0)
    np.testing.assert_allclose(y.var(axis=0), var / (var + 1e-12), rtol=1e-8)


@given(shape=sizes, seed=seeds, eps=eps_values)
def test_gradient_columns_sum_to_zero(shape, seed, eps):
    x, g = T(shape, seed), np.random.default_rng(seed + 3).normal(size=shape)
    batch_norm(x, eps=eps).backward(g)
    np.testing.assert_allclose(x.grad.sum(axis=0), 0.0, atol=1e-10)


def test_it_normalises_columns_not_rows():
    x = np.array([[1.0, 10.0], [3.0, 30.0], [5.0, 50.0]])
    y = batch_norm(Tensor(x), eps=1e-12).data
    expected = np.sqrt(1.5) * np.array([[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(y, expected, rtol=1e-10)


def test_float32_stays_float32_and_saves_input_mean_and_invstd():
    x = Tensor(np.arange(12.0).reshape(4, 3), requires_grad=True, dtype=np.float32)
    y = batch_norm(x)
    assert y.dtype == np.float32
    saved = y.grad_fn.saved
    assert [s.shape for s in saved] == [(4, 3), (3,), (3,)]  # input, mean, 1/sigma per feature
    assert saved[0] is x.data  # the input itself, not a copy
    assert y.grad_fn.saved_nbytes() == 4 * 3 * 4 + 2 * 3 * 4
    y.sum().backward()
    assert x.grad.dtype == np.float32 and y.grad_fn.released


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match=r"batch_norm: expected a 2-D \(N, D\) input .* got shape \(3,\)"):
        batch_norm(Tensor(np.ones(3), requires_grad=True))
    with pytest.raises(ValueError, match=r"batch_norm: Expected more than 1 value per channel when "
                                         r"training, got input of shape \(1, 4\)"):
        batch_norm(Tensor(np.ones((1, 4)), requires_grad=True))
    for eps in (0.0, -1e-5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="batch_norm: eps must be a positive number"):
            batch_norm(Tensor(np.ones((2, 3))), eps=eps)


# -------------------------------------------------------- nn.BatchNorm1d

def test_module_has_a_gain_a_bias_and_buffers_that_are_not_parameters():
    bn = nn.BatchNorm1d(4)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert bn.weight.data.tolist() == [1.0] * 4 and bn.bias.data.tolist() == [0.0] * 4
    assert bn.running_mean.data.tolist() == [0.0] * 4 and bn.running_var.data.tolist() == [1.0] * 4
    assert not bn.running_mean.requires_grad and not bn.running_var.requires_grad
    assert bn.num_batches_tracked == 0 and bn.training
    assert nn.BatchNorm1d(4, affine=False).parameters() == []
    assert repr(bn) == "BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True)"


def _with_params(bn):
    def f(x, w, b):
        bn.weight, bn.bias = w, b
        return bn(x)
    return f


def _random_params(bn, seed):
    rng = np.random.default_rng(seed)
    bn.weight.data[:] = rng.normal(size=bn.num_features)
    bn.bias.data[:] = rng.normal(size=bn.num_features)


def test_module_gradchecks_in_training_mode_for_x_weight_and_bias():
    bn = nn.BatchNorm1d(3)
    _random_params(bn, 1)
    assert gradcheck(_with_params(bn), T((5, 3), 2), bn.weight, bn.bias)


def test_module_gradchecks_in_eval_mode_for_x_weight_and_bias():
    bn = nn.BatchNorm1d(3)
    _random_params(bn, 1)
    bn.running_mean.data[:] = [0.5, -1.0, 2.0]
    bn.running_var.data[:] = [0.3, 2.0, 4.0]
    bn.eval()
    assert gradcheck(_with_params(bn), T((5, 3), 2), bn.weight, bn.bias)


def test_training_updates_the_running_statistics_outside_the_graph():
    bn = nn.BatchNorm1d(3, momentum=0.25)
    x = T((6, 3), 0, scale=3.0, shift=1.0)
    y = bn(x)
    mean, var = x.data.mean(axis=0), x.data.var(axis=0, ddof=1)  # unbiased
    np.testing.assert_allclose(bn.running_mean.data, 0.25 * mean, rtol=1e-14)
    np.testing.assert_allclose(bn.running_var.data, 0.75 + 0.25 * var, rtol=1e-14)
    assert bn.num_batches_tracked == 1
    assert bn.running_mean.grad_fn is None and bn.running_var.grad_fn is None
    assert not bn.running_mean.requires_grad
    y.sum().backward()
    assert bn.running_mean.grad is None and bn.running_var.grad is None
    with mg.no_grad():  # training mode under no_grad still updates them, as in PyTorch
        bn(x)
    assert bn.num_batches_tracked == 2


def test_momentum_none_averages_all_batches():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [np.random.default_rng(s).normal(s, 1.0 + s, size=(4, 2)) for s in range(3)]
    for x in xs:
        bn(Tensor(x))
    np.testing.assert_allclose(bn.running_mean.data, np.mean([x.mean(0) for x in xs], axis=0),
                               rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.data, np.mean([x.var(0, ddof=1) for x in xs], axis=0),
                               rtol=1e-12)


def test_train_and_eval_switch_every_batchnorm_in_a_model():
    model = nn.Sequential(nn.Linear(3, 4, rng=0), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2, rng=1))
    bn = model[1]
    assert model.eval() is model and not bn.training
    x = T((5, 3), 0, grad=False)
    model(x)
    assert bn.num_batches_tracked == 0  # eval mode reads the running statistics only
    model.train()
    assert bn.training
    model(x)
    assert bn.num_batches_tracked == 1


def test_eval_mode_treats_each_example_alone_and_training_mode_does_not():
    bn = nn.BatchNorm1d(3)
    _random_params(bn, 0)
    x = np.random.default_rng(1).normal(size=(4, 3))
    other = np.random.default_rng(2).normal(size=(4, 3))
    both = np.concatenate([x, other])
    train_alone, train_both = bn(Tensor(x)).data, bn(Tensor(both)).data[:4]
    assert np.abs(train_alone - train_both).max() > 1e-3
    bn.eval()
    np.testing.assert_allclose(bn(Tensor(x)).data, bn(Tensor(both)).data[:4], rtol=1e-14)
    one = bn(Tensor(x[:1])).data  # one example is fine in eval mode
    expected = ((x[:1] - bn.running_mean.data) / np.sqrt(bn.running_var.data + 1e-5)
                * bn.weight.data + bn.bias.data)
    np.testing.assert_allclose(one, expected, rtol=1e-12)


def test_eval_mode_is_built_from_ordinary_ops():
    bn = nn.BatchNorm1d(3).eval()
    graph = mg.trace(lambda x: bn(x), np.ones((2, 3)))
    assert "batch_norm" not in graph.op_counts()
    bn.train()
    with mg.count_ops() as ops:
        bn(Tensor(np.arange(6.0).reshape(2, 3)))
    assert ops.forward["batch_norm"] == 1
    # in training, a trace is refused: a replay would skip the update of the running statistics
    with pytest.raises(RuntimeError, match="not an input and not computed by the function in place"):
        mg.trace(lambda x: bn(x), np.arange(6.0).reshape(2, 3))


def test_module_errors_name_the_module_and_the_shapes():
    bn = nn.BatchNorm1d(4)
    with pytest.raises(ValueError, match=r"BatchNorm1d\(4, .*\): expected an input of shape "
                                         r"\(N, 4\), got shape \(2, 5\)"):
        bn(Tensor(np.ones((2, 5))))
    with pytest.raises(ValueError, match=r"got shape \(4,\)"):
        bn(Tensor(np.ones(4)))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        bn(Tensor(np.ones((1, 4))))
    assert bn.num_batches_tracked == 0 and bn.running_var.data.tolist() == [1.0] * 4  # unchanged
    for bad in (0, -2, 2.5):
        with pytest.raises(ValueError, match="BatchNorm1d: num_features must be a positive integer"):
            nn.BatchNorm1d(bad)
    with pytest.raises(ValueError, match="BatchNorm1d: momentum must be a number in"):
        nn.BatchNorm1d(4, momentum=1.5)
    with pytest.raises(ValueError, match="BatchNorm1d: eps must be a positive number"):
        nn.BatchNorm1d(4, eps=0.0)


def test_float32_module_keeps_float32():
    bn = nn.BatchNorm1d(3, dtype=np.float32)
    x = Tensor(np.random.default_rng(0).normal(size=(4, 3)), requires_grad=True, dtype=np.float32)
    y = bn(x)
    assert y.dtype == np.float32 and bn.running_var.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32 and bn.weight.grad.dtype == np.float32
    assert bn.eval()(x).dtype == np.float32


# ---------------------------------------------------------------- PyTorch

def _torch_pair(d, momentum, affine, seed):
    ours = nn.BatchNorm1d(d, momentum=momentum, affine=affine)
    theirs = torch.nn.BatchNorm1d(d, momentum=momentum, affine=affine)
    if affine:
        _random_params(ours, seed)
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(ours.weight.data))
            theirs.bias.copy_(torch.tensor(ours.bias.data))
    return ours, theirs


@needs_torch
@pytest.mark.parametrize("momentum, affine", [(0.1, True), (0.3, False), (None, True)])
def test_matches_pytorch_over_several_training_steps_then_in_eval(momentum, affine):
    rng = np.random.default_rng(0)
    ours, theirs = _torch_pair(5, momentum, affine, 1)
    for step, n in enumerate((8, 3, 16, 2)):
        xa = rng.normal(step - 1.0, 1.0 + step, size=(n, 5))
        g = rng.normal(size=(n, 5))
        x = Tensor(xa, requires_grad=True)
        y = ours(x)
        y.backward(g)
        xt = torch.tensor(xa, requires_grad=True)
        yt = theirs(xt)
        yt.backward(torch.tensor(g))
        np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(ours.running_mean.data, theirs.running_mean.numpy(), rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(ours.running_var.data, theirs.running_var.numpy(), rtol=1e-12)
        assert ours.num_batches_tracked == int(theirs.num_batches_tracked)
    if affine:  # the parameters' gradients, summed over the four steps
        np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(ours.bias.grad, theirs.bias.grad.numpy(), rtol=1e-9, atol=1e-11)
        ours.zero_grad()
        theirs.zero_grad()

    ours.eval()
    theirs.eval()
    xa, g = rng.normal(size=(7, 5)), rng.normal(size=(7, 5))
    x, xt = Tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    y, yt = ours(x), theirs(xt)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    y.backward(g)
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    if affine:
        np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ours.bias.grad, theirs.bias.grad.numpy(), rtol=1e-12)


@needs_torch
def test_second_derivative_matches_pytorch():
    rng = np.random.default_rng(3)
    xa, r, v = rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    x = Tensor(xa, requires_grad=True)
    (g,) = mg.grad((batch_norm(x) * r).sum(), x, create_graph=True)
    (h,) = mg.grad((g * v).sum(), x)
    xt = torch.tensor(xa, requires_grad=True)
    yt = torch.nn.functional.batch_norm(xt, None, None, training=True, eps=1e-5)
    (gt,) = torch.autograd.grad((yt * torch.tensor(r)).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad((gt * torch.tensor(v)).sum(), xt)
    np.testing.assert_allclose(g.data, gt.detach().numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(h.data, ht.numpy(), rtol=1e-8, atol=1e-10)


@needs_torch
def test_one_example_in_training_is_refused_as_pytorch_refuses_it():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training") as ours:
        nn.BatchNorm1d(4)(Tensor(np.ones((1, 4))))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training") as theirs:
        torch.nn.BatchNorm1d(4)(torch.ones(1, 4))
    assert "(1, 4)" in str(ours.value) and "[1, 4]" in str(theirs.value)
