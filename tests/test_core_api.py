"""The core's API where it follows PyTorch's: each test fails on the engine before the rewrite.

Where PyTorch is installed, the same program runs on both.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor, ops


def _torch():
    return pytest.importorskip("torch")


# ------------------------------------------------------------ grad mode


def test_no_grad_on_a_generator_holds_inside_its_body():
    w = Tensor([1.0, 2.0], requires_grad=True)

    @mg.no_grad()
    def gen():
        for k in range(3):
            yield w * k

    outs = list(gen())
    assert all(o.grad_fn is None and not o.requires_grad for o in outs)
    assert mg.is_grad_enabled()  # and the mode is back outside

    @mg.enable_grad()
    def gen2():
        yield w * 2

    with mg.no_grad():
        (o,) = list(gen2())
    assert o.requires_grad and o.op == "mul"


def test_no_grad_generator_beside_torch():
    torch = _torch()
    wt = torch.tensor([1.0], requires_grad=True)

    @torch.no_grad()
    def gen_t():
        yield wt * 2

    w = Tensor([1.0], requires_grad=True)

    @mg.no_grad()
    def gen_m():
        yield w * 2

    assert next(gen_t()).requires_grad is next(gen_m()).requires_grad is False


def test_set_grad_enabled_as_a_call_and_as_a_block():
    w = Tensor([1.0], requires_grad=True)
    with mg.set_grad_enabled(False):
        assert (w * 2).grad_fn is None
    assert mg.is_grad_enabled()
    mg.set_grad_enabled(False)
    try:
        assert not mg.is_grad_enabled() and (w * 2).grad_fn is None
    finally:
        mg.set_grad_enabled(True)
    assert (w * 2).grad_fn is not None
    with pytest.raises(TypeError, match="set_grad_enabled: mode must be a bool"):
        mg.set_grad_enabled("no")


# ------------------------------------------------------------ backward


def test_backward_takes_pytorchs_gradient_keyword():
    w = Tensor([1.0, 2.0], requires_grad=True)
    (w * 3).backward(gradient=np.array([1.0, 10.0]))
    assert w.grad.tolist() == [3.0, 30.0]


def test_a_wrongly_shaped_gradient_is_a_runtime_error_as_in_pytorch():
    w = Tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"grad has shape \(2, 3\)"):
        (w * 2).backward(np.ones((2, 3)))
    with pytest.raises(RuntimeError, match=r"grad has shape \(2, 3\)"):
        mg.grad(w * 2, w, grad_output=np.ones((2, 3)))


def test_backward_over_several_roots_adds_their_gradients():
    w = Tensor([1.0, 2.0], requires_grad=True)
    l1, l2 = (w * w).sum(), (w * 3)
    mg.backward([l1, l2], [None, np.array([1.0, 2.0])])
    assert w.grad.tolist() == [2 * 1 + 3, 2 * 2 + 6]


def test_backward_inputs_limits_which_leaves_get_grad():
    a, b = Tensor([1.0], requires_grad=True), Tensor([2.0], requires_grad=True)
    (a * b).sum().backward(inputs=[a])
    assert a.grad.tolist() == [2.0] and b.grad is None


def test_a_second_backward_through_nodes_that_saved_nothing_is_allowed():
    b = Tensor([1.0, 2.0], requires_grad=True)
    c = (b + 1).sum()
    c.backward()
    c.backward()  # add and sum keep nothing for backward: nothing was freed
    assert b.grad.tolist() == [2.0, 2.0]
    d = (b * b).sum()
    d.backward()
    with pytest.raises(RuntimeError, match="a second time"):
        d.backward()  # mul kept b


def test_second_backward_rules_beside_torch():
    torch = _torch()
    bt = torch.tensor([1.0, 2.0], requires_grad=True)
    ct = (bt + 1).sum()
    ct.backward()
    ct.backward()
    dt = (bt * bt).sum()
    dt.backward()
    with pytest.raises(RuntimeError):
        dt.backward()
    assert bt.grad.tolist() == [2.0 + 2, 2.0 + 4]
    b = Tensor([1.0, 2.0], requires_grad=True)
    c = (b + 1).sum()
    c.backward()
    c.backward()
    (b * b).sum().backward()
    assert b.grad.tolist() == bt.grad.tolist()


def test_gradients_accumulate_in_place_into_an_existing_grad():
    w = Tensor([1.0, 2.0], requires_grad=True)
    (w * 2).sum().backward()
    ref = w.grad
    (w * 3).sum().backward()
    assert w.grad is ref and ref.tolist() == [5.0, 5.0]  # a reference stays current, as in PyTorch


def test_in_place_accumulation_never_writes_into_a_shared_vjp_result():
    a, b = Tensor([1.0, 1.0], requires_grad=True), Tensor([1.0, 1.0], requires_grad=True)
    (a + b).sum().backward()      # add hands one array to both inputs
    (a + b).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0] and b.grad.tolist() == [2.0, 2.0]
    assert not np.shares_memory(a.grad, b.grad)


# ------------------------------------------------------------ custom Functions


class _Returns(mg.Function):
    name = "returns"

    @staticmethod
    def forward(ctx, a, value=None):
        ctx.value = value
        return a * 1.0

    @staticmethod
    def backward(ctx, g):
        return (ctx.value(g),)


def test_a_backward_that_returns_a_python_float_is_named():
    w = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"'returns' backward returned a float .*expected a NumPy array"):
        _Returns.apply(w, value=lambda g: 1.5).sum().backward()
    assert w.grad is None


def test_a_complex_gradient_for_a_real_input_is_refused():
    w = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"'returns' backward returned a complex gradient"):
        _Returns.apply(w, value=lambda g: g * (1 + 2j)).sum().backward()
    assert w.grad is None


def test_complex_gradient_beside_torch():
    torch = _torch()

    class R(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1.0

        @staticmethod
        def backward(ctx, g):
            return g * (1 + 2j)

    with pytest.raises(RuntimeError):
        R.apply(torch.tensor([1.0], requires_grad=True)).sum().backward()


# ------------------------------------------------------------ the op is the unit


def test_every_op_carries_its_jvp_and_its_facts():
    for cls in (ops.Add, ops.Mul, ops.MatMul, ops.Tanh, ops.CrossEntropyWithLogits):
        assert "forward" in vars(cls) and "backward" in vars(cls) and "jvp" in vars(cls)
    assert ops.Add.elementwise and ops.Tanh.elementwise and not ops.MatMul.elementwise
    assert ops.Transpose.view is True and ops.GetItem.view == "maybe" and not ops.Add.view


def test_a_python_number_operand_gets_no_tensor_and_no_edge():
    w = Tensor([1.0, 2.0], requires_grad=True)
    y = w * 0.5
    assert y.grad_fn.parents[1] is None and y.grad_fn.inputs[1] is None
    assert y.dtype == np.float64 and (Tensor([1.0], dtype=np.float32) * 0.5).dtype == np.float32


def test_a_non_number_operand_names_the_op():
    w = Tensor([1.0], requires_grad=True)
    for bad in ("a", None, np.array([object()])):
        with pytest.raises(TypeError, match=r"^(add|unsupported)"):
            w + bad


def test_a_saved_value_is_one_record():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x.tanh()
    (rec,) = y.grad_fn.saved_values
    assert isinstance(rec, mg.SavedValue) and rec.which == -1 and rec.value is y.data
    assert rec.version == 0 and not rec.stale
    with mg.no_grad():
        y.add_(1.0)
    assert rec.stale
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


# ------------------------------------------------------------ views, arrays, masks


def test_in_place_through_a_view_of_a_leaf_that_requires_grad_is_refused():
    a = Tensor([1.0, 2.0, 3.0])
    b = a[:]
    a.requires_grad = True
    with pytest.raises(RuntimeError, match=r"add_: this tensor \(shape \(3,\)\) is a view of a leaf"):
        b.add_(5)
    assert a.data.tolist() == [1.0, 2.0, 3.0]
    with mg.no_grad():
        b.add_(5)  # allowed under no_grad, as in PyTorch
    assert a.data.tolist() == [6.0, 7.0, 8.0]


def test_view_of_a_leaf_beside_torch():
    torch = _torch()
    a = torch.tensor([1.0, 2.0, 3.0])
    b = a[:]
    a.requires_grad_(True)
    with pytest.raises(RuntimeError):
        b.add_(5)


def test_np_asarray_gives_the_numbers_or_a_clear_error():
    t = Tensor([1.0, 2.0])
    arr = np.asarray(t)
    assert arr.dtype == np.float64 and arr.tolist() == [1.0, 2.0]
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(Tensor([1.0], requires_grad=True))


def test_del_grad_leaves_none():
    w = Tensor([1.0], requires_grad=True)
    (w * 2).sum().backward()
    del w.grad
    assert w.grad is None


def test_a_bool_tensor_stays_a_mask_and_bad_dtypes_are_named():
    m = Tensor([True, False])
    assert m.dtype == np.bool_
    assert (Tensor([2.0, 3.0]) * m).data.tolist() == [2.0, 0.0]
    with pytest.raises(TypeError, match=r"Tensor: dtype 'foo' is not a NumPy dtype"):
        Tensor([1.0], dtype="foo")
    with pytest.raises(RuntimeError, match="only floating-point tensors can require gradients"):
        Tensor([True], requires_grad=True)


# ------------------------------------------------------------ checkpoint


def test_checkpoint_of_a_view_shares_the_version_counter():
    a = Tensor(np.arange(8.0), requires_grad=True)
    y = mg.checkpoint(lambda t: t[0:4], a)
    loss = (y * y).sum()
    with mg.no_grad():
        y.add_(1.0)  # changes a's numbers too, which the checkpoint saved
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()
    b = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = mg.checkpoint(lambda t: t, b * 1.0)
    assert z._version == 0 and z._vc is not None
    with mg.no_grad():
        z.mul_(2.0)  # the input itself, changed behind the checkpoint's back: refused, not wrong
    with pytest.raises(RuntimeError, match="changed in place|modified in place"):
        (z * z).sum().backward()


def test_checkpoint_of_a_function_of_nothing_needs_no_grad():
    x = Tensor([1.0, 2.0], requires_grad=True)
    out = mg.checkpoint(lambda t: Tensor([1.0, 2.0, 3.0]), x)
    assert not out.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        out.sum().backward()
    assert x.grad is None


# ------------------------------------------------------------ new API


def test_logsumexp_matches_its_definition_and_gradcheck():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)) * 50  # large: a naive exp would overflow in float32
    for axis, keepdims in ((None, False), (1, False), (0, True), ((0, 1), False)):
        t = Tensor(x, requires_grad=True)
        y = t.logsumexp(axis=axis, keepdims=keepdims)
        m = x.max(axis=axis, keepdims=True)
        ref = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
        assert np.allclose(y.data, ref if keepdims else ref.reshape(y.shape))
        mg.gradcheck(lambda t, axis=axis, keepdims=keepdims: t.logsumexp(axis=axis, keepdims=keepdims),
                     Tensor(x / 50, requires_grad=True))
    t = Tensor(x[:2, :3] / 50, requires_grad=True)
    (g,) = mg.grad(t.logsumexp(axis=1).sum(), t, create_graph=True)
    h = mg.grad((g * g).sum(), t)[0]  # second order through the VJP
    e = np.exp(t.data - t.data.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    ref = 2 * (p * p - p * (p * p).sum(1, keepdims=True))  # d/dx sum(p^2) = 2 p (p - sum p^2)
    assert np.allclose(h.data, ref)


def test_logsumexp_beside_torch():
    torch = _torch()
    x = np.random.default_rng(1).standard_normal((4, 5))
    t, tt = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    t.logsumexp(axis=1).sum().backward()
    torch.logsumexp(tt, dim=1).sum().backward()
    assert np.allclose(t.grad, tt.grad.numpy(), atol=1e-14)
    u = np.random.default_rng(2).standard_normal(x.shape)
    _, d = mg.jvp(lambda a: a.logsumexp(axis=1), Tensor(x), u)
    _, dt = torch.func.jvp(lambda a: torch.logsumexp(a, dim=1), (torch.tensor(x),), (torch.tensor(u),))
    assert np.allclose(d.data, dt.numpy(), atol=1e-14)


def test_exp_and_fill_in_place_are_recorded():
    w = Tensor([1.0, 2.0], requires_grad=True)
    a = w * 1.0
    a.exp_()
    a.sum().backward()
    assert np.allclose(w.grad, np.exp([1.0, 2.0])) and np.allclose(a.data, np.exp([1.0, 2.0]))
    b = w * 1.0
    b.fill_(3.0)
    w.grad = None
    (b * w).sum().backward()
    assert b.data.tolist() == [3.0, 3.0] and w.grad.tolist() == [3.0, 3.0]  # fill_ cut the path


def test_register_hook_on_a_leaf_and_an_intermediate_beside_torch():
    w = Tensor([1.0, 2.0], requires_grad=True)
    h = w.register_hook(lambda g: g * 10)
    a = w * 3
    a.register_hook(lambda g: g + 1)
    a.sum().backward()
    assert w.grad.tolist() == [60.0, 60.0]
    h.remove()
    w.grad = None
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        Tensor([1.0]).register_hook(lambda g: g)
    try:
        import torch
    except ImportError:
        return
    wt = torch.tensor([1.0, 2.0], requires_grad=True)
    wt.register_hook(lambda g: g * 10)
    at = wt * 3
    at.register_hook(lambda g: g + 1)
    at.sum().backward()
    assert wt.grad.tolist() == [60.0, 60.0]
