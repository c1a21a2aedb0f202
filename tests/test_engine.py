"""The engine: order, accumulation, release, retain_graph, no_grad, bad input, memory."""

import gc
import weakref

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad as mg
from minigrad import Tensor
from minigrad.reference import train_two_layer


def seed_two_layer_minigrad(steps=50):
    """The same example written exactly as the reading writes it, on minigrad."""
    np.random.seed(0)
    x = Tensor(np.array([[1.0, 2.0, 1.0], [2.0, 0.0, 1.0], [0.0, 1.0, 2.0]]), requires_grad=False)
    y = np.array([0, 1, 1])
    w1 = Tensor(np.random.randn(3, 4) * 0.1, requires_grad=True)
    w2 = Tensor(np.random.randn(4, 2) * 0.1, requires_grad=True)
    losses = []
    for _ in range(steps):
        for p in (w1, w2):
            p.zero_grad()
        logits = (x @ w1).relu() @ w2
        probs = logits.softmax(axis=1)
        loss = probs.cross_entropy(y)
        loss.backward()
        w1.data -= 0.5 * w1.grad
        w2.data -= 0.5 * w2.grad
        losses.append(float(loss.data))
    return losses


def test_the_readings_training_example_matches_a_hand_derivation():
    ours, ref = seed_two_layer_minigrad(), train_two_layer(steps=50)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    assert ours[40] < ours[0] / 10  # it learns


def test_fan_out_accumulates():
    x = Tensor(3.0, requires_grad=True)
    a, b = x * 2, x * x     # two paths from x
    (a + b).backward()
    assert x.grad == 2 + 2 * 3


def test_classic_order_example():
    a = Tensor(1.5, requires_grad=True)
    b = a + a
    c = b + b
    c.backward()
    assert a.grad == 4.0


def test_grads_accumulate_across_calls_until_zero_grad():
    w = Tensor([1.0, 2.0], requires_grad=True)
    (w * 3).sum().backward()
    (w * 3).sum().backward()
    assert w.grad.tolist() == [6.0, 6.0]
    w.zero_grad()
    assert w.grad is None


def test_grad_arrays_are_never_shared_between_tensors():
    a, b = Tensor([1.0], requires_grad=True), Tensor([2.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad *= 10
    assert b.grad.tolist() == [1.0]


def test_a_100k_op_chain_has_no_recursion_error():
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad == 1.0


def test_no_grad_records_nothing():
    w = Tensor([1.0], requires_grad=True)
    with mg.no_grad():
        y = w * 2
    assert y.parents == () and not y.requires_grad and y.grad_fn is None
    assert mg.is_grad_enabled()

    @mg.no_grad()
    def f(t):
        return t * 2

    assert not f(w).requires_grad


def test_saved_values_are_released_after_backward():
    w = Tensor(np.ones((2, 2)), requires_grad=True)
    y = (w @ w).tanh()
    ctxs = [y.grad_fn, y.grad_fn.parents[0]]
    assert all(c.saved for c in ctxs)
    y.sum().backward()
    assert all(c.released for c in ctxs)


def test_second_backward_needs_retain_graph():
    w = Tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        loss.backward()
    assert w.grad.tolist() == [2.0, 4.0]  # unchanged by the failed call

    w.zero_grad()
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert w.grad.tolist() == [4.0, 8.0]


def test_intermediate_grads_only_when_retained():
    w = Tensor([1.0, -1.0], requires_grad=True)
    h = (w * 3).retain_grad()
    z = w * 2
    (h.relu() + z).sum().backward()
    assert h.grad.tolist() == [1.0, 0.0] and z.grad is None


def test_grad_function_leaves_dot_grad_alone():
    w = Tensor([1.0, 2.0], requires_grad=True)
    (gw,) = mg.grad((w ** 3).sum(), [w])
    assert np.allclose(gw.data, [3.0, 12.0]) and w.grad is None


def test_second_order_through_create_graph():
    x = Tensor([0.3, -1.2], requires_grad=True)
    (g,) = mg.grad(x.tanh().sum(), [x], create_graph=True)
    (h,) = mg.grad(g.sum(), [x])
    t = np.tanh(x.data)
    assert np.allclose(h.data, -2 * t * (1 - t ** 2), atol=1e-12)


def test_version_counter_catches_an_inplace_change_of_a_saved_value():
    a = Tensor(np.ones((2, 2)))              # data: needs no grad, but matmul saves it
    w = Tensor(np.ones((2, 2)), requires_grad=True)
    loss = (a @ w).sum()
    a.mul_(2.0)
    with pytest.raises(RuntimeError, match=r"'matmul'.*input 0.*version 1.*version 0"):
        loss.backward()
    assert w.grad is None


def test_detect_anomaly_names_the_op_and_the_line():
    x = Tensor([0.0, 1.0], requires_grad=True)
    with mg.detect_anomaly(), np.errstate(divide="ignore"):  # the infs are the point
        with pytest.raises(mg.AnomalyError, match=r"(?s)'log'.*test_engine.py"):
            x.log()
        y = (x * 0.0) ** 0.5
        with pytest.raises(mg.AnomalyError, match=r"(?s)backward pass of 'pow'.*test_engine.py"):
            y.sum().backward()
    assert x.grad is None


# ------------------------------------------------------------------ bad input

def test_matmul_shape_mismatch_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\)"):
        Tensor(np.ones((2, 3))) @ Tensor(np.ones((4, 5)))


def test_broadcast_failure_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \(2, 3\) and \(4,\)"):
        Tensor(np.ones((2, 3))) + Tensor(np.ones(4))


def test_backward_on_non_scalar_needs_grad():
    w = Tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"shape \(3, 2\)"):
        (w * 2).backward()
    assert w.grad is None


def test_backward_grad_of_wrong_shape():
    w = Tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(ValueError, match=r"grad has shape \(2, 3\) but the tensor has shape \(3, 2\)"):
        (w * 2).backward(np.ones((2, 3)))
    assert w.grad is None


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad"):
        (Tensor([1.0]) * 2).sum().backward()


@pytest.mark.parametrize("target, msg", [
    ([0, 1], r"expected 3 targets"),
    ([0, 1, 5], r"\[0, 1\] for 2 classes, got \[5\]"),
    ([0, -1, 1], r"got \[-1\]"),
    ([0.0, 1.0, 1.0], r"integer class ids, got dtype float64"),
])
@pytest.mark.parametrize("loss", ["cross_entropy", "cross_entropy_with_logits"])
def test_bad_targets(target, msg, loss):
    z = Tensor(np.full((3, 2), 0.5), requires_grad=True)
    with pytest.raises(ValueError, match=loss + ": .*" + msg):
        getattr(z, loss)(np.array(target))


def test_a_failed_backward_leaves_every_grad_as_it_was():
    w = Tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    before = w.grad.copy()
    loss = (w * 3).sum()
    loss.backward()
    with pytest.raises(RuntimeError):
        loss.backward()
    np.testing.assert_array_equal(w.grad, before + 3)


# --------------------------------------------------------------------- memory

def test_graph_has_no_reference_cycles():
    gc.disable()
    try:
        w = Tensor(np.ones((4, 4)), requires_grad=True)
        loss = ((w @ w).relu().softmax(axis=1) * 2).sum()
        refs = [weakref.ref(t) for t in mg.topological_order(loss) if t is not w]
        loss.backward()
        del loss
        assert all(r() is None for r in refs), "freed by reference counting alone"
    finally:
        gc.enable()


def test_topological_order_is_deterministic_and_parents_first():
    a = Tensor(1.0, requires_grad=True, name="a")
    b = Tensor(2.0, requires_grad=True, name="b")
    c = a * b + a
    order = mg.topological_order(c)
    pos = {id(n): i for i, n in enumerate(order)}
    assert order[-1] is c.grad_fn and order[0].variable is a
    assert all(pos[id(p)] < pos[id(n)] for n in order for p in n.parents if p is not None)
    assert [n.name for n in order] == ["accumulate_grad", "accumulate_grad", "mul", "add"]
    assert [n.name for n in mg.topological_order(c)] == [n.name for n in order]


def test_a_training_loop_leaves_nothing_for_the_garbage_collector():
    """Each step's graph is freed by reference counting the moment it goes out of scope.

    (Closure-style engines form cycles out -> closure -> out, which only the
    cyclic garbage collector can free: memory then grows between collections.)
    """
    from minigrad import nn, optim

    rng = np.random.default_rng(0)
    model = nn.MLP([32, 64, 10], rng=rng)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = Tensor(rng.normal(size=(16, 32))), rng.integers(0, 10, size=16)
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            opt.zero_grad()
            model(x).cross_entropy_with_logits(y).backward()
            opt.step()
        assert gc.collect() == 0
    finally:
        gc.enable()


# ------------------------------------------------------- the fast paths stay right

def test_accumulation_never_writes_into_a_gradient_a_vjp_handed_out():
    # add returns one gradient array for both of its inputs; the engine adds the
    # third and later contributions in place, but only into sums it made itself.
    w = Tensor([1.0, 2.0], requires_grad=True)
    t = (w * 1.0).retain_grad()
    inner = (t + t).retain_grad()
    out = (inner + t + t).retain_grad()
    out.sum().backward()
    assert out.grad.tolist() == [1.0, 1.0]
    assert inner.grad.tolist() == [1.0, 1.0]
    assert t.grad.tolist() == [4.0, 4.0]
    assert w.grad.tolist() == [4.0, 4.0]


def test_many_paths_into_one_leaf_add_up():
    x = Tensor(np.arange(3.0), requires_grad=True)
    total = x * 0.0
    for k in range(1, 6):
        total = total + x * float(k)
    total.sum().backward()
    assert x.grad.tolist() == [15.0, 15.0, 15.0]


@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
                                lambda a, b: a / b])
def test_binary_vjps_skip_inputs_that_need_no_grad(op):
    a = Tensor(np.ones((2, 3)), requires_grad=True)
    b = Tensor(np.full(3, 2.0))  # a constant
    y = op(a, b)
    assert y.grad_fn.needs_input_grad == (True, False)
    da, db = y.grad_fn.fn.backward(y.grad_fn, np.ones((2, 3)))
    assert da.shape == (2, 3) and db is None


def test_a_bias_gradient_is_a_fresh_array_of_its_own():
    x = Tensor(np.ones((4, 3)))
    w = Tensor(np.ones((3, 2)), requires_grad=True)
    b = Tensor(np.zeros(2), requires_grad=True)
    (x @ w + b).sum().backward()
    assert b.grad.tolist() == [4.0, 4.0]
    assert b.grad.base is None and b.grad.flags.writeable


def test_release_drops_array_attributes_as_well_as_saved_values():
    w = Tensor(np.arange(4.0), requires_grad=True)
    y = w[np.array([0, 2, 2])]
    ctx = y.grad_fn
    assert set(vars(ctx)) == {"in_shape", "idx"}  # the fixed fields live in slots
    assert isinstance(ctx.idx, np.ndarray)
    y.sum().backward()
    assert ctx.released and ctx.idx is None
    assert w.grad.tolist() == [1.0, 0.0, 2.0, 0.0]


def test_inplace_change_of_a_value_that_was_not_saved_is_allowed():
    a = Tensor([1.0, -2.0], requires_grad=True)
    h = a * 1.0
    y = h.relu()  # relu keeps its mask, not h
    with mg.no_grad():
        h.add_(5.0)
    y.sum().backward()
    assert a.grad.tolist() == [1.0, 0.0]


def test_inplace_change_of_a_saved_output_is_caught():
    x = Tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()  # exp saves its output
    with mg.no_grad():
        y.mul_(2.0)
    with pytest.raises(RuntimeError, match=r"'exp'.*its output.*version 1.*version 0"):
        y.sum().backward()
    assert x.grad is None


def test_fused_cross_entropy_twice_with_retain_graph():
    z = Tensor([[1.0, 2.0, 0.5], [0.1, -1.0, 2.0]], requires_grad=True)
    loss = z.cross_entropy_with_logits(np.array([2, 0]))
    loss.backward(retain_graph=True)
    first = z.grad.copy()
    loss.backward()  # the saved probabilities were not changed by the first pass
    np.testing.assert_allclose(z.grad, 2 * first, rtol=0, atol=1e-15)


def test_backward_from_a_leaf_and_from_a_one_element_tensor():
    w = Tensor([3.0], requires_grad=True)
    w.backward()
    assert w.grad.tolist() == [1.0]
    v = Tensor([[2.0]], requires_grad=True)
    (v * 3.0).backward()
    assert v.grad.tolist() == [[3.0]]


def test_backward_pauses_the_cycle_collector_and_restores_it():
    w = Tensor([1.0, 2.0], requires_grad=True)
    seen = []

    class Spy(mg.Function):
        name = "spy"

        @staticmethod
        def forward(ctx, a):
            return a * 1.0

        @staticmethod
        def backward(ctx, g):
            seen.append(gc.isenabled())
            return (g,)

    assert gc.isenabled()
    Spy.apply(w).sum().backward()
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        Spy.apply(w).sum().backward()
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
    loss = Spy.apply(w).tanh().sum()
    loss.backward()
    with pytest.raises(RuntimeError):  # an error on the way out restores it too
        loss.backward()
    assert gc.isenabled()


# ------------------------------------------------------------------ backward(create_graph=True)


def _f(w, x):
    """A small nonlinear loss of w: sum(tanh(x @ w) ** 2)."""
    return ((x @ w).tanh() ** 2).sum()


def test_backward_with_create_graph_leaves_a_differentiable_grad(rng):
    x = Tensor(rng.standard_normal((4, 3)))
    w = Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    _f(w, x).backward(create_graph=True)
    g = w.grad
    assert isinstance(g, Tensor) and g.grad_fn is not None and g.requires_grad
    (expected,) = mg.grad(_f(w, x), w)
    np.testing.assert_allclose(g.data, expected.data, rtol=1e-12)
    # A gradient penalty: d/dw sum(grad^2) = 2 H grad, against finite differences of the gradient's norm.
    penalty = (g * g).sum()
    w.grad = None
    penalty.backward()
    assert type(w.grad) is np.ndarray

    def norm2():
        (gw,) = mg.grad(_f(w, x), w)
        return float((gw.data ** 2).sum())
    np.testing.assert_allclose(w.grad, mg.numerical_grad(norm2, w.data), rtol=1e-6, atol=1e-8)


def test_backward_with_create_graph_adds_to_an_existing_grad_out_of_place():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.grad = np.array([1.0, 1.0, 1.0])
    before = x.grad
    (x ** 3).sum().backward(create_graph=True)
    assert isinstance(x.grad, Tensor)
    np.testing.assert_array_equal(before, [1.0, 1.0, 1.0])  # the old array is not written into
    np.testing.assert_allclose(x.grad.data, [4.0, 13.0, 28.0])
    # A second backward through the recorded gradient: without create_graph it adds and leaves an array.
    kept = x.grad
    kept.sum().backward()
    assert type(x.grad) is np.ndarray
    np.testing.assert_allclose(x.grad, [4.0 + 6.0, 13.0 + 12.0, 28.0 + 18.0])
    np.testing.assert_allclose(kept.data, [4.0, 13.0, 28.0])  # the Tensor .grad was not changed


def test_backward_with_create_graph_checks_every_grad_before_changing_one():
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = Tensor([3.0, 4.0], requires_grad=True)
    b.grad = np.zeros(3)  # the wrong shape
    with pytest.raises(RuntimeError, match=r"existing \.grad .* shape \(2,\) has shape \(3,\)"):
        (a * b).sum().backward(create_graph=True)
    assert a.grad is None and b.grad.shape == (3,)


def test_an_optimizer_refuses_a_grad_that_is_a_graph_and_changes_nothing():
    w = Tensor([1.0, 2.0], requires_grad=True)
    v = Tensor([3.0], requires_grad=True)
    opt = mg.optim.SGD([v, w], lr=0.1)
    (v * v).sum().backward()
    (w ** 2).sum().backward(create_graph=True)
    with pytest.raises(TypeError, match=r"SGD\.step: .*shape \(2,\).* a Tensor with a graph.*"
                                        r"create_graph=True.*p\.grad = p\.grad\.data"):
        opt.step()
    np.testing.assert_array_equal(v.data, [3.0])  # the other parameter was not updated either
    w.grad = w.grad.data
    opt.step()
    np.testing.assert_allclose(w.data, [0.8, 1.6])


@needs_torch
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_with_create_graph_beside_pytorch(rng):
    xa, wa = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    x, w = Tensor(xa), Tensor(wa, requires_grad=True)
    _f(w, x).backward(create_graph=True)
    first = w.grad.data.copy()
    (w.grad * w.grad).sum().backward()
    xt, wt = torch.tensor(xa), torch.tensor(wa, requires_grad=True)
    (torch.tanh(xt @ wt) ** 2).sum().backward(create_graph=True)
    np.testing.assert_allclose(first, wt.grad.detach().numpy(), rtol=1e-12)
    (wt.grad * wt.grad).sum().backward()
    np.testing.assert_allclose(w.grad, wt.grad.detach().numpy(), rtol=1e-12)
