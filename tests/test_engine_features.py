"""What the reading's mini engine leaves out and minigrad does: in-place detection,
higher-order gradients, anomaly detection, views. Errors are checked word by word."""

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad as mg
from minigrad import Tensor

# ---------------------------------------------------------------- in place


@pytest.mark.parametrize("change", [
    lambda t: t.add_(1.0),
    lambda t: t.mul_(2.0),
    lambda t: t.__setitem__((0, 0), 5.0),
    lambda t: t.__setitem__(..., 0.0),
])
def test_every_inplace_change_bumps_the_version(change):
    t = Tensor(np.ones((2, 2)))
    assert t._version == 0
    change(t)
    assert t._version == 1
    change(t)
    assert t._version == 2


@pytest.mark.parametrize("change, op", [
    (lambda a: a.add_(1.0), "mul"),
    (lambda a: a.mul_(3.0), "mul"),
    (lambda a: a.__setitem__(0, 7.0), "mul"),
])
def test_backward_names_the_op_and_both_versions(change, op):
    a = Tensor([1.0, 2.0])
    w = Tensor([3.0, 4.0], requires_grad=True)
    loss = (a * w).sum()
    change(a)
    with pytest.raises(RuntimeError, match=rf"'{op}' saved for backward was modified in place: "
                                           r"its input 0 \(shape \(2,\)\) is at version 1, but "
                                           r"version 0 was saved"):
        loss.backward()
    assert w.grad is None  # nothing half-updated


def test_a_saved_output_changed_in_place_is_caught_too():
    x = Tensor([0.5, -0.5], requires_grad=True)
    y = x.exp()                      # exp saves its output
    with mg.no_grad():
        y.mul_(2.0)
    with pytest.raises(RuntimeError, match=r"'exp'.*its output \(shape \(2,\)\) is at version 1, "
                                           r"but version 0 was saved"):
        y.sum().backward()
    assert x.grad is None


def test_a_change_nobody_saved_is_allowed():
    a = Tensor([1.0, 2.0])
    w = Tensor([3.0, 4.0], requires_grad=True)
    loss = (a + w).sum()             # add saves nothing
    a.add_(10.0)
    loss.backward()
    assert w.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("shape, make_view", [
    ((4,), lambda x: x.reshape(2, 2)),
    ((2, 2), lambda x: x.reshape(4).reshape(2, 2).T),
    ((4,), lambda x: x[0:2]),
    ((4,), lambda x: x[::-1]),
    ((2, 2), lambda x: x[1]),
])
def test_views_share_the_version_counter_with_their_base(shape, make_view):
    base = Tensor(np.arange(4.0).reshape(shape))
    v = make_view(base)
    assert np.shares_memory(v.data, base.data)
    base.add_(1.0)
    assert v._version == base._version == 1
    v.mul_(2.0)
    assert base._version == 2


def test_a_reshape_that_must_copy_gets_its_own_counter():
    base = Tensor(np.arange(6.0).reshape(2, 3))
    flat = base.T.reshape(6)          # not expressible as strides over base: a copy
    assert not np.shares_memory(flat.data, base.data)
    base.add_(1.0)
    assert flat._version == 0 and flat.data.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert base.reshape(3, 2)._vc is base._vc   # contiguous: a view, one counter


def test_an_index_array_makes_a_copy_with_its_own_counter():
    base = Tensor(np.arange(4.0))
    c = base[np.array([0, 2])]
    base.add_(1.0)
    assert c._version == 0 and c.data.tolist() == [0.0, 2.0]


def test_regression_change_through_the_base_of_a_saved_slice_is_caught():
    # Before views shared their counter this gave w.grad == [10, 11] silently.
    x = Tensor(np.arange(4.0))
    w = Tensor(np.ones(2), requires_grad=True)
    loss = (x[0:2] * w).sum()
    x.add_(10.0)
    with pytest.raises(RuntimeError, match=r"'mul'.*version 1, but version 0 was saved"):
        loss.backward()
    assert w.grad is None


def test_optimizer_steps_count_as_inplace_changes():
    w = Tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    mg.optim.SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError, match=r"'mul'.*version 1, but version 0"):
        loss.backward()


def test_inplace_on_a_tensor_that_requires_grad_is_refused_while_recording():
    w = Tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"add_: a leaf that requires grad \(shape \(1,\)\) cannot "
                                           r"be changed in place.*no_grad"):
        w.add_(1.0)
    h = w * 2
    h.mul_(2.0)                          # a non-leaf records the in-place op, as in PyTorch
    assert h.op == "mul" and h._version == 1
    with pytest.raises(RuntimeError, match=r"__setitem__: a leaf that requires grad"):
        w[0] = 3.0
    assert w.data.tolist() == [1.0] and w._version == 0
    with mg.no_grad():
        w.add_(1.0)
    assert w.data.tolist() == [2.0] and w._version == 1


@pytest.mark.parametrize("call, msg", [
    (lambda t: t.add_(np.ones(3)), r"add_: the operand of shape \(3,\) cannot be broadcast to the "
                                   r"tensor's shape \(2, 2\)"),
    (lambda t: t.mul_(np.ones((3, 2, 2))), r"mul_: the operand of shape \(3, 2, 2\) cannot"),
    (lambda t: t.__setitem__(5, 1.0), r"__setitem__: cannot set index 5 of a tensor of shape \(2, 2\)"),
    (lambda t: t.__setitem__(0, np.ones(3)), r"__setitem__: .*value of shape \(3,\)"),
])
def test_bad_inplace_calls_name_the_op_and_shapes_and_change_nothing(call, msg):
    t = Tensor(np.ones((2, 2)))
    with pytest.raises((ValueError, IndexError), match=msg):
        call(t)
    assert t._version == 0 and (t.data == 1).all()


# ------------------------------------------------------ higher-order gradients


def fd_of_grad(f, x: np.ndarray, v: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """(grad f(x + eps v) - grad f(x - eps v)) / (2 eps): a numerical H v."""
    def g(at):
        t = Tensor(at, requires_grad=True)
        return mg.grad(f(t), t)[0].data
    return (g(x + eps * v) - g(x - eps * v)) / (2 * eps)


def test_grad_returns_tensors_and_leaves_dot_grad_alone():
    x = Tensor([1.0, 2.0], requires_grad=True)
    out = mg.grad((x * x).sum(), [x])
    assert isinstance(out, tuple) and isinstance(out[0], Tensor)
    assert not out[0].requires_grad and x.grad is None
    (g,) = mg.grad((x * x).sum(), [x], create_graph=True)
    assert g.requires_grad and g.grad_fn is not None and x.grad is None


def test_create_graph_builds_the_backward_from_recorded_ops():
    x = Tensor([0.3], requires_grad=True)
    (g,) = mg.grad(x.tanh().sum(), x, create_graph=True)
    ops = {n.name for n in mg.topological_order(g)}
    assert {"mul", "sub"} <= ops       # g * (1 - y * y), as ops


def test_second_derivative_of_tanh():
    xs = np.linspace(-3, 3, 13)
    x = Tensor(xs, requires_grad=True)
    (g,) = mg.grad(x.tanh().sum(), x, create_graph=True)
    (h,) = mg.grad(g.sum(), x, create_graph=True)
    (h3,) = mg.grad(h.sum(), x)
    t = np.tanh(xs)
    np.testing.assert_allclose(g.data, 1 - t ** 2, atol=1e-14)
    np.testing.assert_allclose(h.data, -2 * t * (1 - t ** 2), atol=1e-14)
    np.testing.assert_allclose(h3.data, -2 * (1 - t ** 2) * (1 - 3 * t ** 2), atol=1e-13)


def test_hvp_matches_finite_differences_of_the_gradient(rng):
    a = rng.standard_normal((4, 4))

    def f(x):
        return ((x @ Tensor(a)).tanh() * x).sum() + (x * x * x).sum()

    x0 = rng.standard_normal((3, 4))
    v = rng.standard_normal((3, 4))
    value, hv = mg.hvp(f, Tensor(x0), v)
    np.testing.assert_allclose(hv.data, fd_of_grad(f, x0, v), rtol=1e-6, atol=1e-8)
    assert np.isclose(value.item(), f(Tensor(x0)).item())


def test_hessian_is_symmetric_and_matches_the_closed_form(rng):
    a = rng.standard_normal((3, 3))
    q = a @ a.T
    x0 = rng.standard_normal(3)
    h = mg.hessian(lambda x: (x * (Tensor(q) @ x.reshape(3, 1)).reshape(3)).sum(), Tensor(x0))
    np.testing.assert_allclose(h, q + q.T, atol=1e-12)


def small_mlp_loss(activation):
    r = np.random.default_rng(3)
    x = Tensor(r.standard_normal((6, 4)))
    y = np.array([0, 1, 2, 1, 0, 2])
    w2 = Tensor(r.standard_normal((5, 3)) * 0.5)

    def loss(w1):
        h = getattr(x @ w1, activation)()
        return (h @ w2).cross_entropy_with_logits(y)

    return loss, r.standard_normal((4, 5)) * 0.5


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", "relu"])
def test_mlp_loss_second_derivatives_match_finite_differences(activation):
    loss, w0 = small_mlp_loss(activation)
    v = np.random.default_rng(4).standard_normal(w0.shape)
    _, hv = mg.hvp(loss, Tensor(w0), v)
    np.testing.assert_allclose(hv.data, fd_of_grad(loss, w0, v), rtol=1e-5, atol=1e-8)


def test_hvp_with_two_inputs_uses_the_cross_terms(rng):
    a0, b0 = rng.standard_normal(3), rng.standard_normal(3)
    f = lambda a, b: (a * a * b).sum()      # H = [[2b, 2a], [2a, 0]] (diagonal blocks)
    va, vb = rng.standard_normal(3), rng.standard_normal(3)
    _, (ha, hb) = mg.hvp(f, [Tensor(a0), Tensor(b0)], [va, vb])
    np.testing.assert_allclose(ha.data, 2 * b0 * va + 2 * a0 * vb, atol=1e-12)
    np.testing.assert_allclose(hb.data, 2 * a0 * va, atol=1e-12)


def test_hvp_of_a_linear_function_is_zero():
    _, hv = mg.hvp(lambda x: (x * 3.0).sum(), Tensor([1.0, 2.0]), np.ones(2))
    assert hv.data.tolist() == [0.0, 0.0]


def test_hvp_bad_input():
    with pytest.raises(ValueError, match=r"hvp: v\[0\] has shape \(3,\) but input 0 has shape \(2,\)"):
        mg.hvp(lambda x: x.sum(), Tensor([1.0, 2.0]), np.ones(3))
    with pytest.raises(ValueError, match=r"hvp: f must return a Tensor with one element, got \(2,\)"):
        mg.hvp(lambda x: x * 2, Tensor([1.0, 2.0]), np.ones(2))
    with pytest.raises(ValueError, match=r"hvp: got 2 inputs but 1 vectors"):
        mg.hvp(lambda a, b: (a * b).sum(), [Tensor([1.0]), Tensor([2.0])], [np.ones(1)])


def test_grad_bad_input():
    x = Tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"grad: input 0 \(shape \(1,\)\) does not require grad"):
        mg.grad((x * 2).sum(), [Tensor([1.0])])
    with pytest.raises(RuntimeError, match=r"grad: input 0 must be a Tensor .* got a list"):
        mg.grad((x * 2).sum(), [[1.0]])
    z = Tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"grad: input 1 \(shape \(1,\)\) was not used"):
        mg.grad((x * 2).sum(), [x, z])
    assert mg.grad((x * 2).sum(), [x, z], allow_unused=True)[1] is None


@needs_torch
def test_hvp_matches_pytorch():
    loss, w0 = small_mlp_loss("tanh")
    v = np.random.default_rng(4).standard_normal(w0.shape)
    _, hv = mg.hvp(loss, Tensor(w0), v)
    r = np.random.default_rng(3)
    x = torch.tensor(r.standard_normal((6, 4)))
    y = torch.tensor([0, 1, 2, 1, 0, 2])
    w2 = torch.tensor(r.standard_normal((5, 3)) * 0.5)
    f = lambda w1: torch.nn.functional.cross_entropy(torch.tanh(x @ w1) @ w2, y)
    _, ref = torch.autograd.functional.hvp(f, torch.tensor(w0), torch.tensor(v))
    np.testing.assert_allclose(hv.data, ref.numpy(), atol=1e-10)


# ------------------------------------------------------------ anomaly mode


def test_anomaly_forward_names_op_phase_and_the_callers_line():
    x = Tensor([-1.0, 1.0], requires_grad=True)
    with mg.detect_anomaly(), np.errstate(invalid="ignore"):
        with pytest.raises(mg.AnomalyError) as info:
            x.log()   # the line the error must point at
    err = info.value
    assert err.op == "log" and err.phase == "forward"
    assert err.frame.filename.endswith("test_engine_features.py")
    assert "x.log()" in err.frame.line
    assert "forward pass of 'log' produced 1 NaN in its output of shape (2,)" in str(err)


def test_anomaly_backward_names_the_op_and_where_it_was_created():
    x = Tensor([0.0, 4.0], requires_grad=True)
    with mg.detect_anomaly(), np.errstate(divide="ignore"):
        y = x ** 0.5          # forward is finite; its VJP divides by sqrt(0)
        with pytest.raises(mg.AnomalyError) as info:
            y.sum().backward()
    err = info.value
    assert err.op == "pow" and err.phase == "backward"
    assert "y = x ** 0.5" in err.frame.line
    assert "backward pass of 'pow' returned 1 inf in the gradient of its input 0" in str(err)
    assert x.grad is None


def test_anomaly_catches_inf_as_well_as_nan():
    with mg.detect_anomaly(), np.errstate(over="ignore"):
        with pytest.raises(mg.AnomalyError, match=r"'exp' produced 1 inf"):
            Tensor([1000.0, 0.0], requires_grad=True).exp()


def test_without_anomaly_mode_nans_pass_silently():
    with np.errstate(invalid="ignore"):
        y = Tensor([-1.0], requires_grad=True).log()
    assert np.isnan(y.data).all()
    assert not mg.function.is_anomaly_enabled()


# ------------------------------------------------------------------- views


def test_view_gradients_pass_gradcheck(rng):
    x = Tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    assert mg.gradcheck(lambda t: t.reshape(6, 4), x)
    assert mg.gradcheck(lambda t: t.reshape(-1).reshape(4, 3, 2), x)
    assert mg.gradcheck(lambda t: t.transpose(), x)
    assert mg.gradcheck(lambda t: t.transpose(1, 2, 0), x)
    assert mg.gradcheck(lambda t: t.transpose((2, 0, 1)).reshape(4, 6).T, x)


@pytest.mark.parametrize("idx", [
    (slice(None), 1), (0, slice(1, None)), (Ellipsis, slice(None, None, -2)),
    (1, 2, 3), (np.array([0, 1, 0]),), (slice(None), np.array([2, 2, 0])),
])
def test_indexing_gradients_scatter_back(rng, idx):
    x = Tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    assert mg.gradcheck(lambda t: t[idx] * 2.0, x)


def test_repeated_indices_add_up_and_a_mask_selects():
    x = Tensor(np.arange(4.0), requires_grad=True)
    x[np.array([1, 1, 3])].sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 0.0, 1.0]
    x.zero_grad()
    x[x.data > 1.5].sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 1.0]


def test_second_order_through_views():
    x = Tensor(np.array([[0.5, -1.0], [2.0, 0.1]]), requires_grad=True)
    f = lambda t: (t.T.reshape(4)[1:3] ** 3).sum()
    v = np.ones((2, 2))
    _, hv = mg.hvp(f, x, v)
    expected = np.zeros((2, 2))
    expected[1, 0], expected[0, 1] = 6 * 2.0, 6 * -1.0   # d2/dt2 t^3 = 6t at the chosen entries
    np.testing.assert_allclose(hv.data, expected, atol=1e-12)


def test_bad_views_name_the_op_and_shapes():
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"reshape: cannot reshape a tensor of shape \(2, 3\) \(6 elements\) "
                                         r"into shape \(4, 2\)"):
        x.reshape(4, 2)
    with pytest.raises(RuntimeError, match=r"transpose: axis 0 appears more than once in \(0, 0\)"):
        x.transpose(0, 0)
    with pytest.raises(ValueError, match=r"transpose: axes \(0,\) do not permute the 2 axes"):
        x.transpose(0)
    with pytest.raises(IndexError, match=r"getitem: index .* is invalid for shape \(2, 3\)"):
        x[5]


def test_hessian_of_the_fused_loss_in_its_leaf_logits_is_the_softmax_jacobian_over_n():
    # The node keeps log p, not the logits; for create_graph it rebuilds p as the softmax
    # of a stand-in on the logits' edge. Here the logits are a leaf, so the stand-in
    # shares the leaf's accumulator. d2L/dz2 is block diagonal: (diag(p_i) - p_i p_i^T) / N.
    r = np.random.default_rng(5)
    z0, y = r.standard_normal((3, 4)) * 3, np.array([1, 0, 3])
    z = Tensor(z0, requires_grad=True)
    (g,) = mg.grad(z.cross_entropy_with_logits(y), z, create_graph=True)
    v = r.standard_normal(z0.shape)
    (hv,) = mg.grad((g * Tensor(v)).sum(), z)
    p = np.exp(z0 - z0.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    expected = (p * v - p * (p * v).sum(axis=1, keepdims=True)) / 3
    np.testing.assert_allclose(hv.data, expected, atol=1e-12)
    np.testing.assert_allclose(g.data, (p - np.eye(4)[y]) / 3, atol=1e-12)
    assert z.grad is None  # grad() hands gradients back and leaves .grad alone
