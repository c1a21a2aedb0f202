"""Op hooks: every op is seen once, nothing is left registered, counting is exact."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor
from minigrad.function import _state


def test_hooks_see_forward_ops_and_backward_steps_in_order():
    seen = []
    x = Tensor(np.ones((2, 3)), requires_grad=True)
    w = Tensor(np.ones((3, 1)), requires_grad=True)
    with mg.op_hook(lambda ev, fn, inputs, out, attrs: seen.append((ev, fn.name, len(inputs)))):
        loss = (x @ w).relu().sum()
        loss.backward()
    assert seen == [("forward", "matmul", 2), ("forward", "relu", 1), ("forward", "sum", 1),
                    ("backward", "sum", 1), ("backward", "relu", 1), ("backward", "matmul", 2),
                    ("accumulate", "accumulate_grad", 0), ("accumulate", "accumulate_grad", 0)]
    assert _state.hooks == ()


def test_hooks_also_see_ops_under_no_grad():
    names = []
    with mg.op_hook(lambda ev, fn, i, o, attrs: names.append(fn.name)), mg.no_grad():
        (Tensor([1.0, 2.0]) * 2).exp()
    assert names == ["mul", "exp"]


def test_count_ops_counts_every_evaluation():
    model = mg.nn.MLP([4, 4, 4, 2])
    x = Tensor(np.ones((3, 4)))
    with mg.count_ops() as ops:
        model(x).sum().backward()
    assert ops.forward["matmul"] == 3 and ops.forward["add"] == 3 and ops.forward["relu"] == 2
    assert ops.total_forward == 9 and ops.total_backward == 9
    assert "matmul 3" in repr(ops)


def test_hooks_nest_and_are_removed_even_after_an_error():
    outer, inner = mg.hooks.OpCounter(), mg.hooks.OpCounter()
    with pytest.raises(ValueError):
        with mg.op_hook(outer):
            Tensor(1.0) * 2
            with mg.op_hook(inner):
                Tensor(1.0) + 2
                raise ValueError("boom")
    assert outer.total_forward == 2 and inner.total_forward == 1
    assert _state.hooks == ()


def test_a_hook_must_be_callable():
    with pytest.raises(TypeError, match="op_hook: the hook must be callable"):
        with mg.op_hook(42):
            pass


def test_hooks_see_values_read_out_of_the_graph():
    events = []
    x = Tensor([2.0, 3.0])
    with mg.op_hook(lambda ev, fn, inputs, out, attrs: events.append((ev, attrs))):
        y = x.sum(axis=0)
        y.item()
    assert events == [("forward", {"axis": 0, "keepdims": False}), ("read", {})]
