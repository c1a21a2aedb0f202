"""Function and Context: what an op records and saves, and that release frees it."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor, numerical_grad


def test_saved_nbytes_counts_index_arrays_kept_in_a_tuple():
    p = Tensor(np.full((4, 3), 1 / 3), requires_grad=True)
    loss = p.cross_entropy(np.array([0, 1, 2, 0]))
    ctx = loss.grad_fn
    rows, target = ctx.idx
    assert ctx.saved_nbytes() == p.data.nbytes + rows.nbytes + target.nbytes


def test_release_drops_array_attributes_and_keeps_the_rest():
    p = Tensor(np.full((4, 3), 1 / 3), requires_grad=True)
    loss = p.cross_entropy(np.array([0, 1, 2, 0]))
    ctx = loss.grad_fn
    loss.backward()
    assert ctx.released and ctx.idx is None and ctx.saved_nbytes() == 0
    assert ctx.needs_input_grad == (True,)
    np.testing.assert_allclose(p.grad[[0, 1, 2, 3], [0, 1, 2, 0]], -1 / (4 * (1 / 3)))


# Function.apply: what an op records for its backward pass.
#
# Regression: on a 0-d tensor NumPy's ufuncs return a scalar, not an array. The
# output was then wrapped in a new array while the op had saved the scalar, so
# ``create_graph`` no longer saw that the saved value *was* the output and
# treated it as a constant: second derivatives of exp, tanh and sigmoid of a
# 0-d tensor came out wrong, and an in-place change of such an output went
# unnoticed.



ELEMENTWISE = {
    "exp": lambda x: x.exp(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "tanh * exp(-x^2/2)": lambda x: x.tanh() * (-(x ** 2) * 0.5).exp(),
}


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_second_derivatives_of_outputs_saved_by_an_op(name, shape):
    f = ELEMENTWISE[name]
    x = np.array(np.full(shape, 0.7) + np.arange(np.prod(shape)).reshape(shape) * 0.3)

    def first(t):
        return mg.grad(f(t).sum(), t, create_graph=True)[0]

    t = Tensor(x, requires_grad=True)
    (second,) = mg.grad(first(t).sum(), t)
    numeric = numerical_grad(lambda: first(Tensor(x, requires_grad=True)).data.sum(), x)
    np.testing.assert_allclose(second.data, numeric, rtol=1e-6, atol=1e-8)


def test_a_saved_0d_output_is_the_output_itself():
    x = Tensor(0.5, requires_grad=True)
    y = x.exp()
    assert y.grad_fn.saved[0] is y.data


def test_in_place_change_of_a_saved_0d_output_is_caught():
    x = Tensor(0.5, requires_grad=True)
    y = x.exp()  # exp's VJP uses its saved output
    with mg.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="'exp' saved for backward was modified in place"):
        y.backward()


def test_a_vjp_may_return_one_gradient_bare_but_not_the_wrong_number():
    class Square(mg.Function):
        name = "square"

        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved
            return 2 * a * g          # bare, as PyTorch allows for one input

    class Times(mg.Function):
        name = "times"

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved
            return (g * b,)           # one gradient for two inputs

    x = mg.Tensor([1.0, 2.0], requires_grad=True)
    Square.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 4.0])
    x.grad = None
    with pytest.raises(TypeError, match=r"'times' backward returned 1 gradient, but the op has 2 input"):
        Times.apply(x, x).sum().backward()
    assert x.grad is None
