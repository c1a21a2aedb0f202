"""inspect: what each op saves for backward, by role and kind, and bytes counted once."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor
from minigrad.inspect import format_saved, saved_memory, saved_values


def only_row(out):
    rows = saved_values(out)
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize("method, roles", [
    ("exp", ["output"]), ("tanh", ["output"]), ("sigmoid", ["output"]), ("softmax", ["output"]),
    ("log", ["input 0"]), ("relu", ["output"]), ("sum", []), ("mean", []), ("T", []),
])
def test_what_an_elementwise_op_keeps(method, roles):
    a = Tensor(np.linspace(0.1, 2.0, 12).reshape(3, 4), requires_grad=True)
    out = getattr(a, method)
    out = out if isinstance(out, Tensor) else out()
    row = only_row(out)
    assert [s.role for s in row.saved] == roles and row.op == out.op
    assert row.nbytes == out.grad_fn.saved_nbytes()


def test_relu_keeps_its_output_and_matmul_only_what_its_vjp_reads():
    x = Tensor(np.ones((5, 3)))
    w = Tensor(np.ones((3, 4)), requires_grad=True)
    z = x @ w
    h = z.relu()
    mm, relu = saved_values(h)
    # x needs no gradient, so dW = x.T @ g needs x, and nothing needs w (as PyTorch's MmBackward)
    assert [(s.role, s.kind, s.shape, s.nbytes) for s in mm.saved] == [
        ("input 0", "input", (5, 3), 5 * 3 * 8)]
    (out,) = relu.saved
    assert (out.role, out.kind, out.dtype, out.nbytes) == ("output", "activation", "float64", 5 * 4 * 8)
    assert (mm.index, relu.index) == (1, 2)  # op1, op2 in draw_graph (t0 is w's accumulator)
    both = saved_values(Tensor(np.ones((5, 3)), requires_grad=True) @ w)[0]
    assert [s.role for s in both.saved] == ["input 0", "input 1"]


def test_a_buffer_saved_twice_is_counted_once():
    z = Tensor(np.random.default_rng(0).standard_normal((6, 3)), requires_grad=True)
    loss = z.softmax(axis=1).cross_entropy(np.array([0, 1, 2, 0, 1, 2]))
    soft, ce = saved_values(loss)
    assert soft.saved[0].role == "output" and ce.saved[0].role == "input 0"  # the same array
    assert [s.role for s in ce.saved[1:]] == ["ctx.idx[0]", "ctx.idx[1]"]
    mem = saved_memory(loss)
    assert mem == {"parameter": 0, "input": 0, "activation": 6 * 3 * 8, "extra": 2 * 6 * 8,
                   "total": 6 * 3 * 8 + 2 * 6 * 8}
    assert soft.nbytes + ce.nbytes == mem["total"] + 6 * 3 * 8


def test_a_saved_view_counts_as_the_buffer_it_keeps_alive():
    w = Tensor(np.ones((4, 3)), requires_grad=True)
    x = Tensor(np.ones((2, 3)), requires_grad=True)
    out = x @ w.T                      # matmul saves a transposed view of w's data (for dx)
    assert saved_memory(out) == {"parameter": (4 * 3 + 2 * 3) * 8, "input": 0, "activation": 0,
                                 "extra": 0, "total": (12 + 6) * 8}


def test_an_mlp_keeps_activations_and_masks_on_top_of_what_exists_anyway():
    mg.random.manual_seed(0)
    model = mg.nn.MLP([8, 16, 4])
    x = Tensor(np.ones((10, 8)))
    loss = model(x).cross_entropy_with_logits(np.zeros(10, dtype=np.int64))
    mem = saved_memory(loss)
    # the first matmul keeps only x (for dW1: dx is not needed), the second W2 (for dh)
    assert mem["parameter"] == 16 * 4 * 8
    assert mem["input"] == x.data.nbytes
    # relu's output (saved by relu and by the 2nd matmul: one buffer)
    assert mem["activation"] == 10 * 16 * 8
    # what the loss made for its backward: the log-probabilities and the two index arrays
    assert mem["extra"] == 10 * 4 * 8 + 2 * 10 * 8


def test_nothing_is_saved_under_no_grad_or_after_backward():
    w = Tensor(np.ones((3, 2)), requires_grad=True)
    with mg.no_grad():
        out = (Tensor(np.ones((4, 3))) @ w).tanh().sum()
    assert saved_values(out) == [] and saved_memory(out)["total"] == 0

    out = (Tensor(np.ones((4, 3))) @ w).tanh().sum()
    assert saved_memory(out)["total"] > 0
    out.backward()
    rows = saved_values(out)
    assert all(r.released and r.saved == () for r in rows)
    assert saved_memory(out)["total"] == 0


def test_format_saved_is_a_readable_table():
    x = Tensor(np.ones((5, 3)), name="x")
    w = Tensor(np.ones((3, 4)), requires_grad=True)
    text = format_saved(saved_values((x @ w).relu().sum()))
    lines = text.splitlines()
    assert lines[0].split() == ["node", "op", "output", "saved", "for", "backward", "bytes"]
    assert "input 0 (5, 3)" in lines[2] and lines[2].endswith("120")
    assert "output (5, 4)" in lines[3] and lines[3].endswith("160")
    assert "nothing" in lines[4]
    assert lines[-1].split() == ["sum", "over", "ops", "280"]


def test_inspecting_changes_nothing():
    w = Tensor(np.ones((3, 2)), requires_grad=True)
    out = (Tensor(np.ones((4, 3))) @ w).sigmoid().sum()
    saved_values(out), saved_memory(out), format_saved(saved_values(out))
    out.backward()
    np.testing.assert_allclose(w.grad, mg.grad((Tensor(np.ones((4, 3))) @ w).sigmoid().sum(), w)[0].data)
