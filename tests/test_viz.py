"""Drawing: deterministic DOT, grads on request, folding big graphs, read-only."""

import shutil

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor
from minigrad.viz import GraphvizNotFound, draw_graph


def small_graph():
    x = Tensor([[1.0, 2.0]], name="x")
    w = Tensor([[0.5], [-1.0]], requires_grad=True, name="w")
    return x, w, (x @ w).relu().sum()


def test_dot_source_of_a_small_graph():
    x, w, loss = small_graph()
    src = draw_graph(loss, show_data=False).source
    # nodes: w's accumulator (t0), matmul (op1), relu (op2), sum (op3); x is a constant (c0).
    # The matmul's and relu's outputs are held by no name: freed, so only their ops are drawn.
    expected = [
        't0 [label="w\n(2, 1)"', "op1 [label=matmul", 'c0 [label="x\n(1, 2)"', "c0 -> op1",
        "t0 -> op1", "op2 [label=relu", "op1 -> op2", "op3 [label=sum", "op2 -> op3", "op3 -> t3",
    ]
    for piece in expected:
        assert piece in src, piece
    assert "t1 " not in src and "t2 " not in src
    assert "0x" not in src and "id(" not in src


def test_a_name_keeps_an_intermediate_alive_and_drawn():
    x = Tensor([[1.0, 2.0]], name="x")
    w = Tensor([[0.5], [-1.0]], requires_grad=True, name="w")
    z = x @ w
    z.name = "z"
    loss = z.relu().sum()
    src = draw_graph(loss, show_data=False).source
    assert 't1 [label="z\n(1, 1)"' in src and "op1 -> t1" in src and "t1 -> op2" in src
    assert loss.parents == () and z.parents == (x, w)      # the relu output is gone


def test_the_same_graph_twice_gives_the_same_source():
    assert draw_graph(small_graph()[2]).source == draw_graph(small_graph()[2]).source


def test_grads_appear_when_asked_and_drawing_changes_nothing():
    x, w, loss = small_graph()
    before = draw_graph(loss, show_grads=True).source
    assert "grad None" in before
    loss.backward()
    after = draw_graph(loss, show_grads=True).source
    assert "grad [[0.], [0.]]" in after  # relu cut the only path: w gets zeros
    assert loss.grad_fn.released  # drawing did not keep or revive anything


def test_big_graphs_are_folded_and_say_what_they_hide():
    y = Tensor(1.0, requires_grad=True)
    for _ in range(100):
        y = (y * 1.01).tanh()
    src = draw_graph(y, max_nodes=60).source
    assert src.count("shape=ellipse") == 60
    # the leaf's accumulator + 100 x (mul, tanh) = 201 nodes; 141 are folded
    assert "141 earlier nodes not shown" in src and "(mul x70, tanh x70)" in src


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_renders_svg_and_shows_dot_source_as_text():
    bundle = draw_graph(small_graph()[2])._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")
    assert bundle["text/plain"].startswith("digraph")


def test_missing_dot_gives_an_install_hint(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    g = draw_graph(small_graph()[2])
    with pytest.raises(GraphvizNotFound, match="apt-get install -y graphviz"):
        g._repr_mimebundle_()
    with pytest.raises(GraphvizNotFound, match="brew install graphviz"):
        g.pipe(format="svg")


def test_plot_curves_returns_a_figure():
    import matplotlib

    matplotlib.use("Agg")
    fig = mg.viz.plot_curves({"train": np.linspace(1, 0.1, 20)}, logy=True)
    assert fig.axes[0].get_yscale() == "log"


def test_memory_timeline_stacks_every_category_and_marks_phases():
    import matplotlib

    matplotlib.use("Agg")
    from minigrad.memory import CATEGORIES, profile_step

    mg.random.manual_seed(0)
    model = mg.nn.MLP([8, 8, 3])
    x = Tensor(np.ones((4, 8)))
    tl = profile_step(model, x, np.array([0, 1, 2, 0]), optimizer=mg.optim.Adam(model.parameters()))
    fig = mg.viz.plot_memory_timeline(tl, title="one step")
    ax = fig.axes[0]
    texts = {t.get_text() for t in ax.texts}
    assert {"forward", "backward", "free graph", "optimizer step"} <= texts
    labels = ax.get_legend_handles_labels()[1]
    assert set(CATEGORIES) <= set(labels) and "peak between samples" in labels
    assert fig is not None
    with pytest.raises(TypeError, match="expected a minigrad.memory.Timeline"):
        mg.viz.plot_memory_timeline([1, 2, 3])
