"""minigrad.nn's gradient-flow pieces: clip_grad_norm and Residual (LayerNorm: test_layernorm.py)."""

import numpy as np
import pytest
from conftest import needs_torch, torch
from hypothesis import given
from hypothesis import strategies as st

from minigrad import Tensor, gradcheck, nn


def params_with_grads(seed, shapes=((3, 4), (4,), (4, 2)), scale=1.0):
    rng = np.random.default_rng(seed)
    ps = [Tensor(rng.normal(size=s), requires_grad=True) for s in shapes]
    for p in ps:
        p.grad = rng.normal(0.0, scale, size=p.shape)
    return ps


def global_norm(ps):
    return float(np.sqrt(sum(np.sum(p.grad ** 2) for p in ps if p.grad is not None)))


# ----------------------------------------------------------- clip_grad_norm

@given(seed=st.integers(0, 2**16), scale=st.floats(1e-3, 1e3), max_norm=st.floats(1e-2, 1e2))
def test_clipping_bounds_the_global_norm_and_keeps_the_direction(seed, scale, max_norm):
    ps = params_with_grads(seed, scale=scale)
    before = [p.grad.copy() for p in ps]
    norm = global_norm(ps)
    returned = nn.clip_grad_norm(ps, max_norm)
    assert returned == pytest.approx(norm, rel=1e-12)
    after = global_norm(ps)
    if norm > max_norm:
        assert after == pytest.approx(max_norm, rel=1e-12)
        for b, p in zip(before, ps):  # one common factor for every parameter
            np.testing.assert_allclose(p.grad, b * (max_norm / norm), rtol=1e-12)
    else:
        for b, p in zip(before, ps):
            assert np.array_equal(p.grad, b)


def test_scales_in_place_and_skips_missing_grads():
    ps = params_with_grads(0, scale=10.0)
    ps[1].grad = None
    arrays = [ps[0].grad, ps[2].grad]
    expected = np.sqrt(np.sum(arrays[0] ** 2) + np.sum(arrays[1] ** 2))
    assert nn.clip_grad_norm(iter(ps), 1.0) == pytest.approx(expected, rel=1e-12)
    assert ps[0].grad is arrays[0] and ps[2].grad is arrays[1]  # the same arrays, scaled
    assert ps[1].grad is None
    assert global_norm(ps) == pytest.approx(1.0, rel=1e-12)


def test_a_single_tensor_and_a_tensor_listed_twice():
    p = Tensor(np.zeros(2), requires_grad=True)
    p.grad = np.array([3.0, 4.0])
    assert nn.clip_grad_norm([p, p], 1.0) == pytest.approx(5.0)  # counted once
    np.testing.assert_allclose(p.grad, [0.6, 0.8])
    p.grad = np.array([3.0, 4.0])
    assert nn.clip_grad_norm(p, 10.0) == pytest.approx(5.0)
    np.testing.assert_allclose(p.grad, [3.0, 4.0])


def test_read_only_grads_are_replaced_not_written():
    p = Tensor(np.zeros(2), requires_grad=True)
    g = np.array([3.0, 4.0])
    g.flags.writeable = False
    p.grad = g
    nn.clip_grad_norm([p], 1.0)
    np.testing.assert_allclose(p.grad, [0.6, 0.8])
    assert g.tolist() == [3.0, 4.0]


def test_huge_finite_grads_do_not_overflow_the_norm():
    p = Tensor(np.zeros(2), requires_grad=True)
    p.grad = np.array([3e200, 4e200])
    assert nn.clip_grad_norm([p], 1.0) == pytest.approx(5e200, rel=1e-12)
    np.testing.assert_allclose(p.grad, [0.6, 0.8], rtol=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_grads_raise_and_change_nothing(bad):
    ps = params_with_grads(1)
    ps[2].grad[0, 1] = bad
    before = [p.grad.copy() for p in ps]
    with pytest.raises(RuntimeError, match=r"clip_grad_norm: the total gradient norm is .*"
                                           r"parameters \[2\] hold NaN or inf"):
        nn.clip_grad_norm(ps, 1.0)
    total = nn.clip_grad_norm(ps, 1.0, error_if_nonfinite=False)
    assert not np.isfinite(total)
    for b, p in zip(before, ps):
        np.testing.assert_array_equal(p.grad, b)


@pytest.mark.parametrize("max_norm", [0.0, -1.0, np.nan, np.inf])
def test_max_norm_must_be_positive_and_finite(max_norm):
    ps = params_with_grads(2)
    with pytest.raises(ValueError, match="clip_grad_norm: max_norm must be a positive finite"):
        nn.clip_grad_norm(ps, max_norm)


def test_non_tensors_are_refused_before_anything_changes():
    ps = params_with_grads(3, scale=10.0)
    before = ps[0].grad.copy()
    with pytest.raises(TypeError, match="clip_grad_norm: parameter 1 is a ndarray, not a Tensor"):
        nn.clip_grad_norm([ps[0], np.ones(3)], 1.0)
    np.testing.assert_array_equal(ps[0].grad, before)
    with pytest.raises(TypeError, match="max_norm must be a number"):
        nn.clip_grad_norm(ps, "1")


@needs_torch
@pytest.mark.parametrize("max_norm", [0.5, 5.0, 500.0])
def test_matches_pytorch_clip_grad_norm(max_norm):
    ours = params_with_grads(4, scale=3.0)
    theirs = [torch.tensor(p.data, requires_grad=True) for p in ours]
    for p, t in zip(ours, theirs):
        t.grad = torch.tensor(p.grad)
    n_ours = nn.clip_grad_norm(ours, max_norm)
    n_theirs = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
    assert n_ours == pytest.approx(float(n_theirs), rel=1e-12)
    for p, t in zip(ours, theirs):  # PyTorch divides by norm + 1e-6
        np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=1e-6)


# ------------------------------------------------------------------ Residual

def test_residual_adds_the_input_and_gradchecks():
    rng = np.random.default_rng(0)
    lin = nn.Linear(4, 4, init="xavier", rng=rng)
    block = nn.Residual(nn.Sequential(lin, nn.Tanh()))
    x = Tensor(rng.normal(size=(3, 4)), requires_grad=True)
    np.testing.assert_allclose(block(x).data, x.data + np.tanh(x.data @ lin.weight.data),
                               rtol=1e-12)
    assert block.parameters() == [lin.weight, lin.bias]

    def f(x, w, b):
        lin.weight, lin.bias = w, b
        return block(x)

    assert gradcheck(f, x, lin.weight, lin.bias)


def test_the_identity_path_passes_the_gradient_unchanged():
    """With a branch that contributes nothing (zero weights), dL/dx = dL/dy exactly."""
    lin = nn.Linear(5, 5, init=lambda i, o, rng=None: np.zeros((i, o)))
    x = Tensor(np.random.default_rng(1).normal(size=(2, 5)), requires_grad=True)
    g = np.random.default_rng(2).normal(size=(2, 5))
    nn.Residual(nn.Sequential(lin, nn.Sigmoid()))(x).backward(g)
    # the branch adds sigmoid(0) = 0.5 but its input gradient is g * 0.25 @ W.T = 0
    np.testing.assert_array_equal(x.grad, g)


def test_residual_needs_a_shape_preserving_module():
    block = nn.Residual(nn.Linear(4, 3))
    with pytest.raises(ValueError, match=r"Residual: .* maps \(2, 4\) to \(2, 3\)"):
        block(Tensor(np.ones((2, 4))))
    assert repr(block).startswith("Residual(\n  Linear(4, 3")
