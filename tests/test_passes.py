"""Graph passes: fewer nodes, the same outputs, the same gradients (first and second order)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad import Tensor
from minigrad.passes import (
    FusedElementwise,
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    fuse_elementwise,
    optimize,
)

R = np.random.default_rng(0)
W1, B1, W2 = R.standard_normal((4, 5)), R.standard_normal(5), R.standard_normal((5, 3))
X = R.standard_normal((6, 4))
Y = np.array([0, 1, 2, 2, 1, 0])


def model(x, w1):
    """A small network with everything a pass can remove."""
    scale = Tensor(np.array(4.0)).log() / Tensor(np.array(2.0)).log()   # constants: 2.0
    unused = (x * 3.0).exp().sum()                                       # dead
    h = ((x @ w1) + Tensor(B1)) * scale                                   # fusable: add, mul
    a = h.tanh() * 0.5 + h.tanh() * 0.5                                  # tanh twice: CSE
    z = a.sigmoid() * 2.0 - 1.0
    del unused
    return (z @ Tensor(W2)).cross_entropy_with_logits(Y)


def grads_of(graph, x0, w0, create_graph=False):
    x, w = Tensor(x0, requires_grad=True), Tensor(w0, requires_grad=True)
    out = graph(x, w)
    return out, mg.grad(out, [x, w], create_graph=create_graph)


@pytest.fixture
def traced():
    return mg.trace(model, X, W1)


def check_same(g1, g2, tol=1e-12):
    x0, w0 = R.standard_normal(X.shape), R.standard_normal(W1.shape)  # new inputs, not the examples
    o1, d1 = grads_of(g1, x0, w0)
    o2, d2 = grads_of(g2, x0, w0)
    np.testing.assert_allclose(o2.data, o1.data, rtol=0, atol=tol)
    for a, b in zip(d1, d2):
        np.testing.assert_allclose(b.data, a.data, rtol=0, atol=tol)


def test_dead_code_is_removed(traced):
    g = eliminate_dead_code(traced)
    removed = traced.op_counts()
    assert removed["exp"] == 1 and "exp" not in g.op_counts()
    assert len(g.nodes) == len(traced.nodes) - 3        # mul, exp, sum
    check_same(traced, g)


def test_constants_are_folded(traced):
    g = eliminate_dead_code(fold_constants(traced))
    assert traced.op_counts()["log"] == 2 and "log" not in g.op_counts()
    assert len(g.nodes) == len(traced.nodes) - 3 - 3    # dead: 3; folded: log, log, div
    folded = [c for c in g.constants.values() if c.shape == () and c == 2.0]
    assert folded, "log 4 / log 2 should now be the constant 2"
    check_same(traced, g)


def test_common_subexpressions_are_merged(traced):
    g = eliminate_dead_code(eliminate_common_subexpressions(traced))
    assert traced.op_counts()["tanh"] == 2 and g.op_counts()["tanh"] == 1
    check_same(traced, g)


def test_elementwise_chains_fuse_into_one_node(traced):
    g = optimize(traced)
    names = [n.name for n in g.nodes]
    # the two 0.5s are one constant, so tanh(h) * 0.5 is computed once; it has two uses
    # (the add), so the chain is cut after it
    assert names == ["matmul", "fused[add,mul,tanh,mul]", "fused[add,sigmoid,mul,sub]",
                     "matmul", "cross_entropy_with_logits"], names
    assert len(g.nodes) == 5 < len(traced.nodes) == 19
    check_same(traced, g)


def test_passes_leave_the_original_graph_alone(traced):
    before = repr(traced)
    optimize(traced)
    assert repr(traced) == before


def test_fused_node_saves_only_its_inputs():
    f = lambda x: ((x * 2.0).tanh() + 1.0).exp().sum()
    g = mg.trace(f, np.ones((50, 40)))
    fg = fuse_elementwise(g)
    assert [n.name for n in fg.nodes] == ["fused[mul,tanh,add,exp]", "sum"]

    def saved(graph):
        x = Tensor(R.standard_normal((50, 40)), requires_grad=True)
        out = graph(x)
        return sum(n.saved_nbytes() for n in mg.topological_order(out))

    # mul saves only the constant 2.0 (dx = g * 2 needs no x); tanh and exp save their outputs
    assert saved(g) == 2 * 50 * 40 * 8 + 8
    # the fused node keeps its inputs only: x and the constants 2.0 and 1.0
    assert saved(fg) == 50 * 40 * 8 + 16
    assert fg.nodes[0].fn.program[0].fn is mg.ops.Mul


def test_second_derivatives_through_a_fused_node():
    f = lambda x: ((x * x).tanh() * x).sum()
    fg = fuse_elementwise(mg.trace(f, np.ones(3)))
    assert issubclass(fg.nodes[0].fn, FusedElementwise)
    x0, v = np.array([0.3, -0.7, 1.1]), np.array([1.0, -2.0, 0.5])
    _, hv_plain = mg.hvp(f, Tensor(x0), v)
    _, hv_fused = mg.hvp(lambda x: fg(x), Tensor(x0), v)
    np.testing.assert_allclose(hv_fused.data, hv_plain.data, atol=1e-12)


def test_fused_graph_passes_gradcheck():
    fg = optimize(mg.trace(model, X, W1))
    x = Tensor(R.standard_normal(X.shape), requires_grad=True)
    w = Tensor(R.standard_normal(W1.shape), requires_grad=True)
    assert mg.gradcheck(lambda a, b: fg(a, b), x, w)


def test_a_value_used_twice_is_not_fused_away():
    f = lambda x: (x.exp() * 2.0).sum() + x.exp().tanh().sum()
    g = mg.trace(f, np.ones(3))
    fg = fuse_elementwise(g)
    # exp(x) is computed twice (no CSE here), each chain fuses with what follows it
    assert [n.name for n in fg.nodes] == ["fused[exp,mul]", "sum", "fused[exp,tanh]", "sum", "add"]
    h = fuse_elementwise(eliminate_common_subexpressions(g))
    assert h.op_counts()["exp"] == 1  # shared: used twice, so kept as its own node
    check_graph = lambda gr: gr(Tensor([0.1, 0.2, 0.3])).item()
    assert abs(check_graph(g) - check_graph(h)) < 1e-12


def test_graph_outputs_stay_visible():
    f = lambda x: (x.tanh(), x.tanh().exp())
    g = fuse_elementwise(mg.trace(f, np.ones(2)))
    a, b = g(Tensor([0.5, -0.5]))
    np.testing.assert_allclose(b.data, np.exp(a.data))


def test_two_chains_meeting_fuse_into_one():
    f = lambda x, y: (x.exp() + y.tanh()).sum()
    g = fuse_elementwise(mg.trace(f, np.ones(2), np.ones(2)))
    assert [n.name for n in g.nodes] == ["fused[exp,tanh,add]", "sum"]
    x, y = Tensor([0.1, 0.2], requires_grad=True), Tensor([0.3, 0.4], requires_grad=True)
    assert mg.gradcheck(lambda a, b: g(a, b), x, y)


# ------------------------------------------------ random programs (hypothesis)

UNARY = [lambda a: a.tanh(), lambda a: a.sigmoid(), lambda a: (a * 0.5).exp(), lambda a: -a,
         lambda a: a.relu() + 0.1]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b * 2.0]


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 4), st.integers(0, 50), st.integers(0, 50)),
                min_size=1, max_size=12),
       st.sampled_from([(), (3,), (2, 3)]))
def test_random_elementwise_programs_keep_outputs_and_gradients(program, b_shape):
    """Any chain of elementwise ops (with reuse and broadcasting) optimises to the same function."""

    def f(x, b):
        vals = [x, b]
        for binary, op, i, j in program:
            a = vals[i % len(vals)]
            if binary:
                vals.append(BINARY[op % len(BINARY)](a, vals[j % len(vals)]))
            else:
                vals.append(UNARY[op](a))
        return (vals[-1] * vals[-1]).sum() + vals[-2].sum()

    r = np.random.default_rng(1)
    x0, b0 = r.standard_normal((2, 3)), r.standard_normal(b_shape)
    g = mg.trace(f, x0, b0)
    fast = optimize(g)
    assert len(fast.nodes) <= len(g.nodes)
    x1, b1 = r.standard_normal((2, 3)), r.standard_normal(b_shape)
    outs = []
    for graph in (g, fast):
        xt, bt = Tensor(x1, requires_grad=True), Tensor(b1, requires_grad=True)
        out = graph(xt, bt)
        outs.append((out.item(), [d.data for d in mg.grad(out, [xt, bt], allow_unused=True)
                                  if d is not None]))
    (o1, d1), (o2, d2) = outs
    assert abs(o1 - o2) <= 1e-10 * max(1.0, abs(o1))
    assert len(d1) == len(d2)
    for a, b in zip(d1, d2):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------ tracing (the passes' input)


def test_trace_replays_on_new_inputs_and_bakes_in_control_flow():
    f = lambda x: x.relu() * 2.0 if x.data.sum() > 0 else x.tanh()
    g = mg.trace(f, np.array([1.0, 2.0]))
    assert [n.name for n in g.nodes] == ["relu", "mul"]
    assert g(Tensor([3.0, -1.0])).data.tolist() == [6.0, 0.0]
    assert g(Tensor([-1.0, -2.0])).data.tolist() == [0.0, 0.0]      # eager would take tanh
    assert "v1 = relu(in0)" in repr(g) and "return v3" in repr(g)


def test_trace_bad_use_is_named():
    g = mg.trace(lambda a, b: a * b, np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match=r"StaticGraph: expected 2 inputs, got 1"):
        g(Tensor(np.ones(2)))
    outside = Tensor([1.0])
    with pytest.raises(ValueError, match=r"trace: output 0 was not computed from the inputs by minigrad ops"):
        mg.trace(lambda x: outside, np.ones(1))
