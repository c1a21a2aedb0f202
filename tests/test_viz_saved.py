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
    x, w, z, h = small()
    src = draw_fields(h).source
    assert src == draw_fields(h).source                      # deterministic
    # nodes: w's accumulator (t0), matmul (f1, its output z is t1), relu (f2, output t2);
    # x needs no gradient, so it has no node and no record, but z names it as a parent
    for piece in ["data: array (2, 4)", "grad: None", "requires_grad: True", "op: 'matmul'",
                  "parents: (x, w)", r"<f> grad_fn: \<MatMulBackward\>", "is_leaf: False",
                  "needs_input_grad: (False, True)", "<s0> saved input 0: (2, 3) float64",
                  "saved output: (2, 4) float64", "t1:f -> f1 [style=dashed]", "f1 -> t0",
                  "f2 -> f1", "parents: (z,)"]:
        assert piece in src, piece
    x.requires_grad = True                                   # now x is a leaf with a record
    src = draw_fields((x @ w).relu()).source
    assert "saved input 1: (3, 4) float64" in src
    assert 'f2:s0 -> t0:d [color="#888888" style=dotted]' in src
    assert 'f2:s1 -> t1:d [color="#888888" style=dotted]' in src


def test_fields_drawing_leaves_out_values_nobody_holds():
    x = Tensor(np.ones((2, 3)), name="x")
    w = Tensor(np.ones((3, 4)), requires_grad=True, name="w")
    src = draw_fields((x @ w).relu()).source                 # the matmul's output is freed
    assert "op: 'matmul'" not in src and "MatMulBackward" in src and "parents: ()" in src


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
    with pytest.raises(ValueError, match="11 nodes, more than max_tensors=8.*draw_graph"):
        draw_fields(y, max_tensors=8)


def test_plot_saved_stacks_bytes_by_kind():
    mg.random.manual_seed(0)
    model = mg.nn.MLP([6, 5, 2])
    loss = model(Tensor(np.ones((4, 6)))).cross_entropy_with_logits(np.zeros(4, dtype=np.int64))
    rows = saved_values(loss)
    fig = plot_saved(rows, unit=1.0, unit_name="bytes")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"op{r.index} {r.op}" for r in rows]
    total_width = sum(p.get_width() for p in ax.patches)
    assert total_width == pytest.approx(sum(r.nbytes for r in rows))
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert legend == {"parameter", "input", "activation", "extra"}
    assert saved_values(loss) == rows  # plotting changed nothing


def test_plot_saved_names_a_segment_too_thin_to_see():
    """The loss's 1 kB of int64 arrays beside a 400 kB bar: its kind and size are written out."""
    mg.random.manual_seed(0)
    model = mg.nn.MLP([784, 256, 128, 10])
    x = Tensor(np.random.default_rng(0).standard_normal((64, 784)))
    loss = model(x).softmax(axis=1).cross_entropy(np.zeros(64, dtype=np.int64))
    fig = plot_saved(saved_values(loss))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("extra 1.0" in t for t in texts), texts
    assert not any("of which" in t for t in texts[:1]), texts      # the first matmul's bar is all input
