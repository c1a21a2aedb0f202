"""viz.saved: the fields drawing and the bytes-per-op chart read the graph and change nothing."""

import matplotlib
import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor
from minigrad.inspect import saved_values
from minigrad.viz import draw_fields, plot_saved

matplotlib.use("Agg")


def small():
    x = Tensor(np.ones((2, 3)), name="x")
    w = Tensor(np.ones((3, 4)), requires_grad=True, name="w")
    z = x @ w
    z.name = "z"
    return x, w, z, z.relu()


def test_fields_drawing_shows_every_field_and_the_saved_references():
    *_, h = small()
    src = draw_fields(h).source
    assert src == draw_fields(small()[3]).source            # deterministic
    for piece in ["data: array (2, 4)", "grad: None", "requires_grad: True", "op: 'matmul'",
                  "<p> parents: (x, w)", r"<f> grad_fn: \<MatMulBackward\>", "is_leaf: False",
                  "needs_input_grad: (False, True)", "<s0> saved input 0: (2, 3) float64",
                  "saved new: (2, 4) bool", "t2:p -> t0", "t2:p -> t1", "t2:f -> f2 [style=dashed]",
                  'f2:s0 -> t0:d [color="#888888" style=dotted]', "parents: (z,)"]:
        assert piece in src, piece


def test_fields_drawing_after_backward_shows_grads_and_released_values():
    x, w, z, h = small()
    h.sum().backward()
    src = draw_fields(h).source
    assert "saved: released" in src and "grad: array (3, 4)" in src
    assert "dotted" not in src


def test_fields_drawing_refuses_big_graphs():
    y = Tensor(1.0, requires_grad=True)
    for _ in range(10):
        y = y.tanh()
    with pytest.raises(ValueError, match="11 tensors, more than max_tensors=8.*draw_graph"):
        draw_fields(y, max_tensors=8)


def test_plot_saved_stacks_bytes_by_kind():
    mg.random.manual_seed(0)
    model = mg.nn.MLP([6, 5, 2])
    loss = model(Tensor(np.ones((4, 6)))).cross_entropy_with_logits(np.zeros(4, dtype=np.int64))
    rows = saved_values(loss)
    fig = plot_saved(rows, unit=1.0, unit_name="bytes")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"t{r.index} {r.op}" for r in rows]
    total_width = sum(p.get_width() for p in ax.patches)
    assert total_width == pytest.approx(sum(r.nbytes for r in rows))
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert legend == {"parameter", "input", "activation", "extra"}
    assert saved_values(loss) == rows  # plotting changed nothing
