"""trace: replay equals eager, gradients flow, constants and parameters, frozen branches, errors."""

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad as mg
from minigrad import Tensor
from minigrad.viz import draw_static


def mlp_fn(rng):
    """A two-layer net whose weights are inputs of the traced function."""

    def f(x, w1, w2):
        return ((x @ w1).tanh() * 0.5 + 1.0) @ w2

    return f, rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal((5, 2))


def test_replay_equals_eager_on_new_inputs(rng):
    f, x, w1, w2 = mlp_fn(rng)
    g = mg.trace(f, x, w1, w2)
    for _ in range(3):  # new values and a new batch size
        x2 = rng.standard_normal((7, 3))
        w1b, w2b = rng.standard_normal((3, 5)), rng.standard_normal((5, 2))
        eager = f(Tensor(x2), Tensor(w1b), Tensor(w2b))
        replay = g(x2, w1b, w2b)
        np.testing.assert_allclose(replay.data, eager.data, rtol=0, atol=1e-14)
    assert replay.shape == (7, 2)


def test_the_recorded_program_is_the_ops_in_order(rng):
    f, x, w1, w2 = mlp_fn(rng)
    g = mg.trace(f, x, w1, w2)
    assert [n.name for n in g.nodes] == ["matmul", "tanh", "mul", "add", "matmul"]
    assert g.op_counts() == {"matmul": 2, "tanh": 1, "mul": 1, "add": 1}
    assert str(g).splitlines()[1] == "  v3 = matmul(in0, in1)"


def test_gradients_through_a_replayed_graph_match_eager(rng):
    f, x, w1, w2 = mlp_fn(rng)
    g = mg.trace(f, x, w1, w2)
    x2 = rng.standard_normal((6, 3))
    a = [Tensor(v, requires_grad=True) for v in (x2, w1, w2)]
    b = [Tensor(v, requires_grad=True) for v in (x2, w1, w2)]
    (g(*a) ** 2).sum().backward()
    (f(*b) ** 2).sum().backward()
    for ta, tb in zip(a, b):
        np.testing.assert_allclose(ta.grad, tb.grad, rtol=0, atol=1e-12)
    assert mg.gradcheck(lambda *t: g(*t), *[Tensor(v, requires_grad=True) for v in (x2, w1, w2)])


def test_constants_are_copied_and_parameters_are_captured_by_reference(rng):
    scale = Tensor(np.array([1.0, 2.0, 3.0]))          # data: frozen by value
    w = Tensor(rng.standard_normal((3, 3)), requires_grad=True, name="w")  # parameter: by reference
    f = lambda x: (x * scale + 2.0) @ w
    g = mg.trace(f, rng.standard_normal((2, 3)))
    assert len(g.constants) == 2 and list(g.captured.values()) == [w]
    assert str(g).splitlines()[1:] == ["  v2 = mul(in0, const(3,))", "  v4 = add(v2, 2)",
                                       "  v6 = matmul(v4, w)", "  return v6"]

    x2 = rng.standard_normal((4, 3))
    scale.data[:] = 0.0                 # later changes to a constant's source are not seen
    w.data *= 2.0                       # but the parameter's current value is
    expected = (x2 * np.array([1.0, 2.0, 3.0]) + 2.0) @ w.data
    np.testing.assert_allclose(g(x2).data, expected, rtol=0, atol=1e-12)

    g(x2).sum().backward()              # and its gradient arrives in w.grad
    np.testing.assert_allclose(w.grad, (x2 * np.array([1.0, 2.0, 3.0]) + 2.0).sum(0)[:, None]
                               * np.ones((1, 3)), rtol=0, atol=1e-12)


def test_multiple_outputs_come_back_as_a_tuple(rng):
    f = lambda x, y: (x + y, (x * y).sum(), x)
    g = mg.trace(f, np.ones(3), np.ones(3))
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    s, p, same = g(a, b)
    np.testing.assert_allclose(s.data, a + b)
    np.testing.assert_allclose(p.data, (a * b).sum())
    np.testing.assert_allclose(same.data, a)
    one = mg.trace(lambda x: [x.exp()], np.zeros(2))(np.zeros(2))
    assert isinstance(one, tuple) and len(one) == 1  # a one-element list stays a sequence


def branchy(x):
    s = x.sum()
    if s.item() > 0:        # a value leaves the graph; Python decides
        return x * 2.0
    return -x


def test_a_data_dependent_branch_is_frozen_to_the_one_taken():
    g = mg.trace(branchy, np.array([1.0, 2.0]))            # traced on the positive branch
    assert [n.name for n in g.nodes] == ["sum", "mul"]
    neg = np.array([-1.0, -3.0])
    np.testing.assert_allclose(branchy(Tensor(neg)).data, [1.0, 3.0])   # eager: -x
    np.testing.assert_allclose(g(neg).data, [-2.0, -6.0])              # replay: still x * 2
    assert g.reads == [1]                                   # the .item() on v1 was noticed
    assert "v1 was read into Python while tracing" in repr(g)


def test_prune_drops_what_no_output_needs():
    g = mg.trace(branchy, np.array([1.0, 2.0]))
    p = g.prune()
    assert [n.name for n in p.nodes] == ["mul"] and p.reads == []
    x = np.array([0.5, -4.0])
    np.testing.assert_array_equal(p(x).data, g(x).data)
    assert len(g.nodes) == 2  # the original is unchanged


@pytest.mark.parametrize("fn, what", [
    (lambda x: x.data * 2, "a NumPy array of shape (2,)"),
    (lambda x: x.sum().item(), "a float"),
    (lambda x: Tensor(x.data + 1), "a Tensor of shape (2,) made outside the recorded ops"),
])
def test_an_output_not_computed_from_the_inputs_is_a_clear_error(fn, what):
    with pytest.raises(ValueError, match=r"trace: output 0 was not computed from the inputs") as e:
        mg.trace(fn, np.ones(2))
    assert what in str(e.value)


def test_returning_a_captured_tensor_is_an_error():
    w = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(ValueError, match="output 1 was not computed"):
        mg.trace(lambda x: (x + w, w), np.ones(2))


def test_replay_errors_name_the_node_and_the_shapes():
    g = mg.trace(lambda x, w: x @ w, np.ones((2, 3)), np.ones((3, 4)))
    with pytest.raises(TypeError, match="expected 2 inputs, got 1"):
        g(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"replaying v2 = matmul\(in0, in1\) on shapes \(2, 3\), \(2, 4\)"):
        g(np.ones((2, 3)), np.ones((2, 4)))


def test_tracing_leaves_no_recorder_behind():
    with pytest.raises(ValueError):
        mg.trace(lambda x: x.data, np.ones(2))
    from minigrad.function import _state
    assert _state.hooks == ()
    Tensor(np.ones(2)).sum().item()  # reading outside a trace records nothing, anywhere


def test_drawing_is_deterministic_and_marks_reads():
    src = draw_static(mg.trace(branchy, np.array([1.0, 2.0]))).source
    assert src == draw_static(mg.trace(branchy, np.array([3.0, 4.0]))).source
    assert 'v1 -> py0 [style=dashed]' in src and 'v3 [label="v3 = mul"' in src


@needs_torch
def test_replayed_gradients_match_pytorch(rng):
    f, x, w1, w2 = mlp_fn(rng)
    g = mg.trace(f, x, w1, w2)
    x2 = rng.standard_normal((5, 3))
    ours = [Tensor(v, requires_grad=True) for v in (x2, w1, w2)]
    g(*ours).relu().sum().backward()
    theirs = [torch.tensor(v, requires_grad=True) for v in (x2, w1, w2)]
    (((theirs[0] @ theirs[1]).tanh() * 0.5 + 1.0) @ theirs[2]).relu().sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad, b.grad.numpy(), rtol=1e-12, atol=1e-12)


# ------------------------------------------- what a replay must not get wrong (issue 21)

def test_an_in_place_op_on_an_input_that_needs_no_grad_is_replayed():
    def f(x):
        x.add_(1.0)
        return x * 2.0

    g = mg.trace(f, np.zeros(3))
    x = Tensor(np.zeros(3))
    np.testing.assert_array_equal(g(x).data, [2.0, 2.0, 2.0])   # eager gives [2, 2, 2]
    np.testing.assert_array_equal(x.data, [1.0, 1.0, 1.0])      # and changes its input, as eager
    assert [n.name for n in g.nodes] == ["add", "mul"]
    assert "in0 is changed in place" in repr(g)


def test_setitem_and_an_in_place_op_on_an_intermediate_are_replayed():
    def f(x):
        y = x * 1.0
        y[0] = 5.0
        y.mul_(x)
        return y

    g = mg.trace(f, np.ones(3))
    x = np.array([2.0, 3.0, 4.0])
    np.testing.assert_array_equal(g(x).data, f(Tensor(x)).data)
    np.testing.assert_array_equal(g(x).data, [10.0, 9.0, 16.0])


def test_an_in_place_op_recorded_in_the_graph_is_what_the_output_holds(rng):
    w = rng.standard_normal(3)
    f = lambda x: (x * 2.0).add_(1.0)
    g = mg.trace(f, Tensor(w, requires_grad=True))
    a, b = Tensor(w, requires_grad=True), Tensor(w, requires_grad=True)
    np.testing.assert_array_equal(g(a).data, 2 * w + 1)
    g(a).sum().backward()
    f(b).sum().backward()
    np.testing.assert_array_equal(a.grad, b.grad)


def test_changing_a_constant_in_place_is_refused():
    buf = Tensor(np.zeros(3))
    with pytest.raises(RuntimeError, match="not an input and not computed by the function"):
        mg.trace(lambda x: x + buf.add_(1.0), np.zeros(3))


def test_a_shape_read_into_python_guards_the_input_shapes():
    g = mg.trace(lambda x: x.sum() / x.shape[0], np.ones(4))
    assert g(np.ones(4)).item() == 1.0
    assert g(2 * np.ones(4)).item() == 2.0
    with pytest.raises(ValueError, match=r"traced on input shapes \[\(4,\)\], called on \[\(8,\)\]"):
        g(np.ones(8))   # today's main answered 2.0; eager (and torch.jit.trace) give 1.0
    h = mg.trace(lambda x: x.sum() / len(x), np.ones(4))
    with pytest.raises(ValueError, match="read a shape into Python"):
        h(np.ones(8))
    free = mg.trace(lambda x: x.mean(), np.ones(4))   # no shape read: any shape replays
    assert free(np.ones(8)).item() == 1.0 and free.shape_reads == []


def test_dropout_is_refused_rather_than_frozen():
    drop = mg.nn.Dropout(0.5)
    refused = r"(?s)draws random numbers \(dropout\).*same units.*minigrad\.compile"
    with pytest.raises(RuntimeError, match=refused):
        mg.trace(lambda x: drop(x) * 1.0, np.ones((4, 4)))
    drop.eval()   # in eval mode dropout draws nothing and is the identity
    g = mg.trace(lambda x: drop(x) * 1.0, np.ones((4, 4)))
    np.testing.assert_array_equal(g(np.full((4, 4), 3.0)).data, np.full((4, 4), 3.0))


@pytest.mark.parametrize("call", ["backward", "grad", "step"])
def test_a_training_step_is_refused_and_points_to_compile(call, rng):
    w = Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    opt = mg.optim.SGD([w], lr=0.1)
    before = w.data.copy()

    def f(x):
        loss = (x @ w).sum()
        if call == "backward":
            loss.backward()
        elif call == "grad":
            mg.grad(loss, w)
        else:
            w.grad = np.ones_like(w.data)
            opt.step()
        return loss

    with pytest.raises(RuntimeError, match=r"minigrad\.compile\(step\)") as e:
        mg.trace(f, rng.standard_normal((4, 3)))
    assert {"backward": "backward pass", "grad": "backward pass", "step": "SGD.step()"}[call] in str(e.value)
    np.testing.assert_array_equal(w.data, before)   # refused before anything changed


def test_reads_list_data_and_truth_values_read_in_the_function():
    def f(x):
        s = x.sum()
        if s:                     # bool(t): a value left the graph
            pass
        _ = x.data.max()          # so did this
        return s * 1.0

    g = mg.trace(f, np.ones(2))
    assert g.reads == [1, 0]
    assert "in0 was read into Python" in repr(g) and "v1 was read into Python" in repr(g)


def test_tracing_puts_the_tensor_attributes_back():
    plain = {k: Tensor.__dict__[k] for k in ("data", "grad", "shape", "__bool__", "_inplace")}
    with pytest.raises(RuntimeError):
        mg.trace(lambda x: mg.nn.Dropout(0.5)(x), np.ones(2))
    assert {k: Tensor.__dict__[k] for k in plain} == plain
    from minigrad import capture
    assert capture.observers == []


def test_pruning_and_the_passes_keep_an_input_changed_in_place():
    def f(x):
        x.mul_(3.0)
        return x.sum() * 0.0 + 1.0

    g = mg.passes.optimize(mg.trace(f, np.ones(2)))
    x = Tensor(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g(x).data, 1.0)
    np.testing.assert_array_equal(x.data, [3.0, 6.0])   # eager multiplies the input too
