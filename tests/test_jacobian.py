"""Full Jacobians three ways (central differences, the engine row by row, closed forms) and vjp.

The closed forms are the ones the operator notebooks derive: matmul's Kronecker
structure, ReLU's diagonal mask, softmax's diag(s) - s s^T and the fused
cross-entropy's (softmax - onehot) / N.
"""

import numpy as np
import pytest
from conftest import needs_torch, torch
from hypothesis import given
from hypothesis import strategies as st

from minigrad import Tensor, jacobian, jacobian_nbytes, numerical_jacobian, vjp

dims = st.integers(1, 4)
seeds = st.integers(0, 2**16)


def softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


@given(n=dims, d=dims, m=dims, seed=seeds)
def test_matmul_jacobians_are_kronecker_products(n, d, m, seed):
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(n, d)), rng.normal(size=(d, m))
    J_A = np.kron(np.eye(n), B.T)          # C's row i depends only on A's row i, through B.T
    J_B = np.kron(A, np.eye(m))            # C[i, k] depends on B[:, k] only, weighted by A[i, :]
    assert J_A.shape == (n * m, n * d) and J_B.shape == (n * m, d * m)
    np.testing.assert_allclose(jacobian(lambda a: a @ Tensor(B), A), J_A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jacobian(lambda b: Tensor(A) @ b, B), J_B, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(numerical_jacobian(lambda a: a @ B, A), J_A, atol=1e-8)
    np.testing.assert_allclose(numerical_jacobian(lambda b: A @ b, B), J_B, atol=1e-8)


@given(c=st.integers(1, 7), seed=seeds)
def test_softmax_jacobian_is_diag_s_minus_outer(c, seed):
    z = np.random.default_rng(seed).normal(size=c) * 3
    s = softmax(z)
    closed = np.diag(s) - np.outer(s, s)
    np.testing.assert_allclose(jacobian(lambda t: t.softmax(), z), closed, atol=1e-14)
    np.testing.assert_allclose(numerical_jacobian(softmax, z), closed, atol=1e-9)
    np.testing.assert_allclose(closed.sum(axis=0), 0, atol=1e-15)  # shifting z changes nothing


def test_batched_softmax_jacobian_is_block_diagonal():
    z = np.random.default_rng(1).normal(size=(3, 4))
    J = jacobian(lambda t: t.softmax(axis=1), z)
    blocks = [np.diag(s) - np.outer(s, s) for s in map(softmax, z)]
    expected = np.zeros((12, 12))
    for i, b in enumerate(blocks):
        expected[4 * i:4 * i + 4, 4 * i:4 * i + 4] = b
    np.testing.assert_allclose(J, expected, atol=1e-14)


def test_relu_jacobian_is_a_diagonal_mask():
    x = np.array([[-1.5, 0.3, 2.0], [0.7, -0.2, -3.0]])  # away from the kink at 0
    mask = (x > 0).astype(float).ravel()
    np.testing.assert_array_equal(jacobian(lambda t: t.relu(), x), np.diag(mask))
    np.testing.assert_allclose(numerical_jacobian(lambda t: t.relu(), Tensor(x)), np.diag(mask),
                               atol=1e-9)


def test_relu_at_zero_engine_picks_0_while_central_differences_give_half():
    x = np.array([-1.0, 0.0, 1.0])
    assert np.diag(jacobian(lambda t: t.relu(), x)).tolist() == [0.0, 0.0, 1.0]
    np.testing.assert_allclose(np.diag(numerical_jacobian(lambda t: t.relu(), Tensor(x))), [0, 0.5, 1])


def test_cross_entropy_with_logits_jacobian_is_softmax_minus_onehot_over_n():
    z = np.random.default_rng(2).normal(size=(3, 5))
    y = np.array([4, 0, 2])
    onehot = np.eye(5)[y]
    expected = ((np.stack([softmax(r) for r in z]) - onehot) / 3).reshape(1, -1)
    J = jacobian(lambda t: t.cross_entropy_with_logits(y), z)
    assert J.shape == (1, 15)  # a scalar output: the Jacobian is the gradient
    np.testing.assert_allclose(J, expected, atol=1e-15)
    np.testing.assert_allclose(numerical_jacobian(lambda t: t.cross_entropy_with_logits(y), Tensor(z)),
                               expected, atol=1e-9)


@given(n=dims, d=dims, m=dims, seed=seeds)
def test_vjp_is_g_times_jacobian(n, d, m, seed):
    rng = np.random.default_rng(seed)
    A, B, g = rng.normal(size=(n, d)), rng.normal(size=(d, m)), rng.normal(size=(n, m))
    f = lambda a: (a @ Tensor(B)).tanh()
    dA = vjp(f, A, g)
    assert dA.shape == A.shape
    np.testing.assert_allclose(dA, (g.reshape(-1) @ jacobian(f, A)).reshape(A.shape), atol=1e-12)
    np.testing.assert_allclose(vjp(lambda a: a @ Tensor(B), A, g), g @ B.T, atol=1e-12)


def test_numerical_jacobian_of_a_numpy_function_and_input_untouched():
    x = np.array([0.3, -1.2, 2.0])
    before = x.copy()
    np.testing.assert_allclose(numerical_jacobian(np.sin, x), np.diag(np.cos(x)), atol=1e-9)
    np.testing.assert_array_equal(x, before)
    t = Tensor(x, requires_grad=True)
    numerical_jacobian(lambda u: u.exp(), t)
    jacobian(lambda u: u.exp(), t)
    np.testing.assert_array_equal(t.data, before)
    assert t.grad is None


def test_numerical_jacobian_is_second_order_accurate():
    x = np.array([0.7])
    err = [abs(numerical_jacobian(np.exp, x, eps=e)[0, 0] - np.exp(0.7)) for e in (1e-2, 1e-3)]
    assert 50 < err[0] / err[1] < 200  # error ~ eps**2: ten times smaller eps, 100 times smaller error


def test_scalar_output_and_an_output_that_ignores_x():
    x = np.arange(4.0)
    np.testing.assert_array_equal(jacobian(lambda t: t.sum(), x), np.ones((1, 4)))
    np.testing.assert_array_equal(jacobian(lambda t: Tensor(np.ones(2)), x), np.zeros((2, 4)))
    np.testing.assert_array_equal(vjp(lambda t: Tensor(np.ones(2)), x, np.ones(2)), np.zeros(4))


def test_jacobian_nbytes_matches_the_built_matrix():
    A, B = np.ones((2, 3)), np.ones((3, 4))
    J = jacobian(lambda a: a @ Tensor(B), A)
    assert jacobian_nbytes((2, 4), (2, 3)) == J.nbytes == 8 * 8 * 6
    assert jacobian_nbytes(10, 10, np.float32) == 400
    assert jacobian_nbytes((50_000,), (50_000,)) == 20_000_000_000  # no overflow in int32


def test_clear_errors():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"vjp: g has shape \(3,\) but fn\(x\) has shape \(2,\)"):
        vjp(lambda t: t.sum(axis=1), x, np.ones(3))
    with pytest.raises(TypeError, match="jacobian: fn must return a minigrad Tensor"):
        jacobian(lambda t: t.data * 2, x)
    with pytest.raises(ValueError, match="eps must be positive"):
        numerical_jacobian(np.sin, x, eps=0.0)
    with pytest.raises(TypeError, match="numerical_jacobian: x must be numeric"):
        numerical_jacobian(np.sin, np.array(["a"]))
    with pytest.raises(TypeError, match="fn must return a Tensor or an array"):
        numerical_jacobian(lambda a: "no", x)


@needs_torch
def test_against_pytorch_jacobian():
    from torch.autograd.functional import jacobian as tjac

    rng = np.random.default_rng(3)
    A, B, z = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=(2, 5))
    tB = torch.tensor(B)
    ours = jacobian(lambda a: a @ Tensor(B), A)
    theirs = tjac(lambda a: a @ tB, torch.tensor(A)).reshape(8, 6).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-14)
    ours = jacobian(lambda t: t.softmax(axis=1), z)
    theirs = tjac(lambda t: torch.softmax(t, dim=1), torch.tensor(z)).reshape(10, 10).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-14)
