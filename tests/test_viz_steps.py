"""Step-by-step backward: the steps, the frames, the gradients, and a graph left as it was."""

import re

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor
from minigrad.viz import backward_steps, draw_graph
from minigrad.viz.graph import PALETTE


def two_paths():
    """x feeds a = 3x and b = x**2; L = a * b = 3x**3, so dL/dx = 9x**2 = 36 at x = 2."""
    x = Tensor(2.0, requires_grad=True, name="x")
    a = x * 3
    b = x ** 2
    return x, a * b


def colored(src, colour):
    """Node indices of the boxes (``t3``) or op ellipses (``op3``) filled with ``colour``."""
    found = re.findall(r'\t(?:t|op)(\d+) \[label="[^"]*" fillcolor="' + colour + '"', src)
    return sorted(int(i) for i in found)


def snapshot(root):
    """What a drawing must not change: saved arrays, versions, grads, release state."""
    state = []
    for node in mg.topological_order(root):
        saved = None
        if node.saved is not None:
            saved = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in node.saved]
        t = node.output
        state.append((None if t is None else t.grad, None if t is None else t._version,
                      node.released, saved, None if t is None else t.data.copy()))
    return state


def assert_same(before, after):
    assert len(before) == len(after)
    for (g0, v0, r0, s0, d0), (g1, v1, r1, s1, d1) in zip(before, after):
        assert g0 is None and g1 is None
        assert v0 == v1 and r0 == r1
        if d0 is not None:
            np.testing.assert_array_equal(d0, d1)
        if s0 is not None:
            for a, b in zip(s0, s1):
                np.testing.assert_array_equal(a, b)


def test_one_step_per_node_that_receives_a_gradient_in_reverse_topological_order():
    x, loss = two_paths()
    steps = backward_steps(loss)
    # nodes: x's accumulator 0, a = x * 3 (mul) 1, b = x ** 2 (pow) 2, loss 3; the
    # constant 3 needs no gradient, so it has no node
    assert len(steps) == 4
    assert [s.index for s in steps.steps] == [3, 2, 1, 0]
    assert [s.op for s in steps.steps] == ["mul", "pow", "mul", ""]
    assert steps.steps[0].sends_to == (1, 2)
    assert steps.steps[0].inputs == (1, 2)


def test_each_frame_highlights_the_node_of_its_step_and_greens_the_ones_before():
    x, loss = two_paths()
    steps = backward_steps(loss)
    for k, s in enumerate(steps.steps, start=1):
        src = steps.frame(k).source
        assert colored(src, PALETTE["focus"]) == [s.index]
        assert colored(src, PALETTE["done"]) == sorted(p.index for p in steps.steps[:k - 1])
        assert f"step {k} of 4" in src


def test_partial_gradients_show_between_the_two_paths():
    x, loss = two_paths()
    steps = backward_steps(loss)
    # after the pow node (step 2) x holds only the b-path part: a * 2x = 6 * 4 = 24
    assert steps.steps[1].grads[0] == 24.0
    assert steps.steps[2].grads[0] == 36.0
    assert "grad 24." in steps.frame(2).source and "grad 36." in steps.frame(3).source
    assert "x\n()\ndata 2.\ngrad None" in steps.frame(1).source


def test_classic_order_example_has_three_steps():
    a = Tensor(1.5, requires_grad=True, name="a")
    b = a + a
    c = b + b
    steps = backward_steps(c)
    assert [s.index for s in steps.steps] == [2, 1, 0]
    assert steps.steps[1].grads[1] == 2.0  # b gets both halves of c's gradient before it runs
    assert steps.grad_of(a) == 4.0


def mlp_graph(seed=0):
    rng = np.random.default_rng(seed)
    x = Tensor(rng.standard_normal((5, 3)), name="x")
    w1 = Tensor(rng.standard_normal((3, 4)), requires_grad=True, name="w1")
    b1 = Tensor(rng.standard_normal(4), requires_grad=True, name="b1")
    w2 = Tensor(rng.standard_normal((4, 2)), requires_grad=True, name="w2")
    h = ((x @ w1) + b1).tanh().retain_grad()
    z = (h @ w2) * h.sum(axis=1, keepdims=True)  # h is used twice
    loss = z.cross_entropy_with_logits(np.array([0, 1, 1, 0, 1]))
    return (w1, b1, w2, h), loss


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_final_gradients_equal_those_of_a_real_backward(seed):
    tensors, loss = mlp_graph(seed)
    steps = backward_steps(loss)
    expected = [steps.grad_of(t) for t in tensors]
    loss.backward()
    for t, e in zip(tensors, expected):
        np.testing.assert_allclose(e, t.grad, rtol=1e-13, atol=1e-15)


def test_a_non_scalar_root_takes_its_gradient_like_backward():
    rng = np.random.default_rng(3)
    w = Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    y = (Tensor(rng.standard_normal((4, 3))) @ w).sigmoid()
    g = rng.standard_normal((4, 2))
    got = backward_steps(y, grad=g).grad_of(w)
    y.backward(g)
    np.testing.assert_allclose(got, w.grad, rtol=1e-13)


def test_the_graph_is_unchanged_after_drawing():
    tensors, loss = mlp_graph()
    before = snapshot(loss)
    steps = backward_steps(loss)
    steps.frames()
    steps.table()
    assert_same(before, snapshot(loss))
    assert not any(n.released for n in mg.topological_order(loss))
    loss.backward()  # and the real pass still works on it
    assert tensors[0].grad is not None


def test_the_steps_are_the_engines_own():
    x, loss = two_paths()
    with mg.count_ops() as ops:
        steps = backward_steps(loss)
    # the real engine ran each VJP once (leaves run none), watched through its hook
    assert ops.total_backward == sum(1 for s in steps.steps if s.op) == 3
    assert dict(ops.backward) == {"mul": 2, "pow": 1}


def test_frames_show_the_steps_gradients_not_an_earlier_dot_grad():
    x, loss = two_paths()
    loss.backward(retain_graph=True)
    assert x.grad == 36.0
    src = backward_steps(loss).frame(1).source
    assert "x\n()\ndata 2.\ngrad None" in src  # not yet reached in step 1, whatever x.grad holds


def test_show_displays_every_frame_in_turn(monkeypatch):
    ipython_display = pytest.importorskip("IPython.display")

    shown = []
    monkeypatch.setattr(ipython_display, "display", lambda obj: shown.append(obj))
    x, loss = two_paths()
    steps = backward_steps(loss)
    steps.show()
    assert [g.source for g in shown] == [f.source for f in steps.frames()]
    shown.clear()
    steps.show(2, 3)
    assert len(shown) == 2


def test_bad_input_gives_clear_errors():
    x, loss = two_paths()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward_steps: .*retain_graph=True"):
        backward_steps(loss)
    with pytest.raises(RuntimeError, match=r"backward_steps: .*shape \(2,\)"):
        backward_steps(Tensor([1.0, 2.0], requires_grad=True) * 2)
    with pytest.raises(RuntimeError, match="does not require grad"):
        backward_steps(Tensor(1.0) * 2)
    with pytest.raises(ValueError, match=r"grad has shape \(3,\) but the tensor has shape \(2,\)"):
        backward_steps(Tensor([1.0, 2.0], requires_grad=True) * 2, grad=np.ones(3))
    x, loss = two_paths()
    with pytest.raises(IndexError, match="4 steps, numbered 1 to 4"):
        backward_steps(loss).frame(5)


def test_in_place_change_after_the_forward_is_refused():
    w = Tensor([1.0, 2.0], requires_grad=True)
    h = w * 3
    y = (h * h).sum()
    with mg.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="backward_steps: .*modified in place"):
        backward_steps(y)


def test_frames_tell_this_step_and_finished_apart_by_border_too():
    """Not by colour alone: the current node has a thick border, finished ones a dashed border."""
    x, loss = two_paths()
    steps = backward_steps(loss)
    for k, s in enumerate(steps.steps, start=1):
        src = steps.frame(k).source
        thick = sorted(int(i) for i in re.findall(r'\t(?:t|op)(\d+) \[[^\]]*penwidth=3 ', src))
        dashed = sorted(int(i) for i in
                        re.findall(r'\t(?:t|op)(\d+) \[[^\]]*style="filled,[a-z,]*dashed"', src))
        assert thick == [s.index], src
        assert dashed == sorted(p.index for p in steps.steps[:k - 1]), src
    # A plain drawing marks a highlighted node the same way; outline=False leaves fills only.
    plain = draw_graph(loss, highlight=[x]).source
    assert re.findall(r'\tt(\d+) \[[^\]]*penwidth=3 ', plain) == ["0"], plain
    assert "penwidth" not in draw_graph(loss, highlight=[x], outline=False).source
    legend = re.search(r'\tlabel="([^"]*)"', steps.frame(2).source)[1]
    assert "orange, thick border: this step" in legend and "green, dashed: finished" in legend
