"""The hand-derived NumPy yardsticks agree with central differences, the engine and PyTorch."""

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad as mg
from minigrad.gradcheck import numerical_grad
from minigrad.reference import mlp_problem, mlp_step, toy_problem, two_layer_step


def small_problem(bias=True, seed=3):
    return mlp_problem(5, (4, 6, 3), seed=seed, bias=bias)


@pytest.mark.parametrize("bias", [True, False])
def test_mlp_step_gradients_match_central_differences(bias):
    x, y, params = small_problem(bias)
    _, grads = mlp_step(x, y, params)
    for p, g in zip(params, grads):
        if p is None:
            assert g is None
            continue
        num = numerical_grad(lambda: float(mlp_step(x, y, params)[0]), p)
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


def test_mlp_step_without_biases_is_the_readings_two_layer_step():
    x, y, w1, w2 = toy_problem(0)
    loss, (dw1, _, dw2, _) = mlp_step(x, y, [w1, None, w2, None])
    ref_loss, (rw1, rw2) = two_layer_step(x, y, w1, w2, fused=True)
    assert abs(loss - ref_loss) < 1e-14
    np.testing.assert_allclose(dw1, rw1, atol=1e-15)
    np.testing.assert_allclose(dw2, rw2, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mlp_step_matches_the_engine(dtype):
    x, y, (w1, b1, w2, b2) = small_problem()
    x, w1, b1, w2, b2 = (a.astype(dtype) for a in (x, w1, b1, w2, b2))
    ours = [mg.Tensor(a, requires_grad=True, dtype=dtype) for a in (w1, b1, w2, b2)]
    loss = ((mg.Tensor(x, dtype=dtype) @ ours[0] + ours[1]).relu() @ ours[2]
            + ours[3]).cross_entropy_with_logits(y)
    loss.backward()
    ref_loss, grads = mlp_step(x, y, [w1, b1, w2, b2])
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert loss.dtype == dtype and abs(loss.item() - ref_loss) < tol
    for t, g in zip(ours, grads):
        assert t.grad.dtype == dtype
        np.testing.assert_allclose(t.grad, g, rtol=tol, atol=tol)


def test_mlp_step_with_lr_takes_one_sgd_step_in_place():
    x, y, params = small_problem()
    before = [p.copy() for p in params]
    _, grads = mlp_step(x, y, params, lr=0.1)
    for p, b, g in zip(params, before, grads):
        np.testing.assert_allclose(p, b - 0.1 * g, rtol=0, atol=1e-15)
    assert mlp_step(x, y, params)[0] < mlp_step(x, y, before)[0]  # the step helped


def test_mlp_problem_is_seeded_and_dtype_independent():
    a = mlp_problem(4, (3, 5, 2), seed=7)
    b = mlp_problem(4, (3, 5, 2), seed=7, dtype=np.float32)
    np.testing.assert_array_equal(a[1], b[1])
    for p, q in zip(a[2], b[2]):
        assert q.dtype == np.float32
        np.testing.assert_allclose(p, q, rtol=1e-6)
    assert mlp_problem(4, (3, 5, 2), seed=7, bias=False)[2][1] is None


@needs_torch
def test_mlp_step_matches_pytorch():
    x, y, (w1, b1, w2, b2) = small_problem()
    ts = [torch.tensor(a, requires_grad=True) for a in (w1, b1, w2, b2)]
    logits = torch.relu(torch.tensor(x) @ ts[0] + ts[1]) @ ts[2] + ts[3]
    lt = torch.nn.functional.cross_entropy(logits, torch.as_tensor(y))
    lt.backward()
    loss, grads = mlp_step(x, y, [w1, b1, w2, b2])
    assert abs(loss - lt.item()) < 1e-12
    for t, g in zip(ts, grads):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)
