"""Function and Context: what an op records and saves, and that release frees it."""

import numpy as np
import pytest
from conftest import needs_torch, torch

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


# ------------------------------------------------------------------ an op with several outputs


class SinCos(mg.Function):
    """x -> (sin x, cos x): one node, two outputs; saves x and its second output."""

    name = "sincos"

    @staticmethod
    def forward(ctx, x):
        c = np.cos(x)
        ctx.save_for_backward(x, c)
        return np.sin(x), c

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        x, c = ctx.saved
        return (g_sin * c - g_cos * np.sin(x),)


def _x():
    return Tensor([0.1, 0.5, 2.0, -1.3], requires_grad=True)


def test_an_op_with_two_outputs_runs_its_backward_once_with_both_gradients():
    x = _x()
    s, c = SinCos.apply(x)
    np.testing.assert_allclose(s.data, np.sin(x.data))
    np.testing.assert_allclose(c.data, np.cos(x.data))
    assert s.grad_fn.parents == c.grad_fn.parents == (s.grad_fn.parents[0],)
    calls = []
    SinCos.backward, original = staticmethod(lambda ctx, a, b: calls.append(1) or original(ctx, a, b)), \
        SinCos.backward
    try:
        (s * s * 3 + c * 2 + s * c).sum().backward()
    finally:
        SinCos.backward = staticmethod(original)
    assert calls == [1]

    def f():
        return float((3 * np.sin(x.data) ** 2 + 2 * np.cos(x.data) + np.sin(x.data) * np.cos(x.data)).sum())
    np.testing.assert_allclose(x.grad, numerical_grad(f, x.data), rtol=1e-7, atol=1e-9)


def test_an_unused_output_gets_a_zero_gradient():
    x = _x()
    s, c = SinCos.apply(x)
    c.sum().backward()
    np.testing.assert_allclose(x.grad, -np.sin(x.data))
    x2 = _x()
    s2, _ = SinCos.apply(x2)
    s2.sum().backward()
    np.testing.assert_allclose(x2.grad, np.cos(x2.data))


def test_an_op_with_two_outputs_passes_gradcheck_and_keeps_hooks_and_retain_grad():
    x = _x()
    mg.gradcheck(lambda t: (SinCos.apply(t)[0] * SinCos.apply(t)[1] ** 3).sum(), x)
    s, c = SinCos.apply(x)
    c.retain_grad()
    seen = []
    s.register_hook(lambda g: seen.append(g.data.copy()))
    (s * 5 + c * 7).sum().backward()
    np.testing.assert_allclose(c.grad, np.full(4, 7.0))
    np.testing.assert_allclose(seen[0], np.full(4, 5.0))


def test_a_saved_output_changed_in_place_is_caught():
    x = _x()
    s, c = SinCos.apply(x)
    loss = (s + c).sum()
    with mg.no_grad():
        c.add_(1.0)
    with pytest.raises(RuntimeError, match=r"'sincos' saved for backward was modified in place: its "
                                           r"output \(shape \(4,\)\) is at version 1, but version 0"):
        loss.backward()
    assert x.grad is None


def test_an_op_with_two_outputs_and_no_input_needing_grad_records_nothing():
    s, c = SinCos.apply(Tensor([1.0, 2.0]))
    assert s.grad_fn is None and c.grad_fn is None and not s.requires_grad


def test_an_op_with_two_outputs_refuses_what_it_does_not_support():
    x = _x()
    s, _ = SinCos.apply(x)
    with pytest.raises(NotImplementedError, match=r"'sincos' has several outputs: .*create_graph=True"):
        mg.grad(s.sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match=r"sincos: an op with several outputs cannot be traced"):
        mg.trace(lambda t: SinCos.apply(t)[0].sum(), x)

    class Empty(SinCos):
        name = "empty"

        @staticmethod
        def forward(ctx, x):
            return ()
    with pytest.raises(TypeError, match=r"empty: forward returned an empty tuple"):
        Empty.apply(x)


@needs_torch
def test_an_op_with_two_outputs_beside_pytorch():
    class TorchSinCos(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            c = torch.cos(x)
            ctx.save_for_backward(x, c)
            return torch.sin(x), c

        @staticmethod
        def backward(ctx, g_sin, g_cos):
            x, c = ctx.saved_tensors
            return g_sin * c - g_cos * torch.sin(x)

    xa = np.array([0.1, 0.5, 2.0, -1.3])
    x, xt = Tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    s, c = SinCos.apply(x)
    st, ct = TorchSinCos.apply(xt)
    (s * c * 3 + s).sum().backward()
    (st * ct * 3 + st).sum().backward()
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-14)
    # only the first output used: PyTorch, too, fills the other's gradient with zeros
    x.grad, xt.grad = None, None
    SinCos.apply(x)[0].sum().backward()
    TorchSinCos.apply(xt)[0].sum().backward()
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-14)


def test_a_function_subclass_without_a_name_is_shown_by_its_class_name():
    class Square(mg.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved
            return (2 * a * g,)

    class Named(Square):
        name = "named"

    x = Tensor([3.0], requires_grad=True)
    y = Square.apply(x)
    assert (Square.name, y.grad_fn.name, Named.name) == ("Square", "Square", "named")
    assert "Square" in repr(y.grad_fn) or "Square" in str(y.op)
    y.backward()
    assert x.grad.tolist() == [6.0]


def test_a_number_operand_is_one_shared_read_only_array_and_keeps_its_sign():
    x = Tensor(np.array([1.0, -2.0, 4.0]), requires_grad=True)
    a, b = x * 0.9, x * 0.9
    ka, kb = a.grad_fn.saved[1], b.grad_fn.saved[1]
    assert ka is kb, "the same number, in the same dtype, should be one array for both nodes"
    assert not ka.flags.writeable, "a shared constant must be read-only, so no op can change it"
    f32 = Tensor(np.ones(3), requires_grad=True, dtype=np.float32) * 0.9
    assert f32.grad_fn.saved[1].dtype == np.float32 and f32.dtype == np.float32
    # 0.0 and -0.0 compare equal, so they must not share an entry: 1 / -0.0 is -inf.
    pos, neg = (x * 0.0).grad_fn.saved[1], (x * -0.0).grad_fn.saved[1]
    assert np.signbit(neg) and not np.signbit(pos), "the sign of a zero constant was lost"
    y = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with np.errstate(divide="ignore"):
        assert (1.0 / (y * -0.0)).data.tolist() == [-np.inf, -np.inf]
    n = (y * float("nan")).sum()
    n.backward()
    assert np.isnan(y.grad).all(), "a NaN operand must stay NaN"
    (x * 0.9).sum().backward()
    np.testing.assert_allclose(x.grad, np.full(3, 0.9))


def test_a_node_shares_its_first_inputs_shape_tuple_only_when_the_shapes_agree():
    x = Tensor(np.ones((3, 1)), requires_grad=True)
    y = x * 2.0
    assert y.grad_fn.out_shape is y.grad_fn.parents[0].out_shape == (3, 1)
    z = y + Tensor(np.ones((1, 4)), requires_grad=True)  # broadcasts: not the first input's shape
    assert z.grad_fn.out_shape == (3, 4)
    z.sum().backward()
    assert x.grad.shape == (3, 1) and np.all(x.grad == 8.0)


def test_a_saved_constant_is_its_input_and_is_never_stale():
    x = Tensor(np.array([1.0, -2.0]), requires_grad=True)
    y = x * 0.5
    (rec,) = [r for r in y.grad_fn.saved_values if r is not None and r.which == 1]
    assert float(rec.value) == 0.5 and not rec.stale, rec
    y.sum().backward()
    np.testing.assert_allclose(x.grad, [0.5, 0.5])
