"""gradcheck: it passes correct VJPs and names the worst element of a wrong one."""

import numpy as np
import pytest

from minigrad import Function, GradcheckError, Tensor, gradcheck, numerical_grad


class WrongSquare(Function):
    """y = a**2 with a deliberately wrong VJP (forgets the factor 2 in one corner)."""

    name = "wrong_square"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved
        d = 2 * a * g
        d[1, 2] /= 2
        return (d,)


def test_numerical_grad_of_a_known_function():
    x = np.array([1.0, -2.0, 0.5])
    g = numerical_grad(lambda: float((x ** 3).sum()), x)
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-8)
    np.testing.assert_array_equal(x, [1.0, -2.0, 0.5])  # restored


def test_gradcheck_passes_a_correct_op_and_does_not_touch_grad():
    a = Tensor(np.random.default_rng(0).normal(size=(3, 4)), requires_grad=True)
    assert gradcheck(lambda a: (a * a).tanh(), a)
    assert a.grad is None


def test_gradcheck_names_the_worst_element():
    a = Tensor(np.random.default_rng(0).normal(size=(3, 4)) + 3, requires_grad=True)
    with pytest.raises(GradcheckError, match=r"input 0 \(shape \(3, 4\)\).*index \(1, 2\)"):
        gradcheck(lambda a: WrongSquare.apply(a), a)
    assert gradcheck(lambda a: WrongSquare.apply(a), a, raise_exception=False) is False


def test_gradcheck_refuses_float32():
    with pytest.raises(ValueError, match="float64"):
        gradcheck(lambda a: a * 2, Tensor([1.0], requires_grad=True, dtype=np.float32))
