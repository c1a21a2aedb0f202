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
    expected = [
        't0 [label="x\n(1, 2)"', 't1 [label="w\n(2, 1)"',
        "op2 [label=matmul", "op2 -> t2", "t0 -> op2", "t1 -> op2",
        "op3 [label=relu", "t2 -> op3", "op4 [label=sum", "t3 -> op4",
    ]
    for piece in expected:
        assert piece in src, piece
    assert "0x" not in src and "id(" not in src


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
    assert src.count("shape=box") == 60
    # 100 x (constant 1.01, mul, tanh) + the leaf = 301 tensors; 241 are folded
    assert "241 earlier tensors not shown" in src and "(mul x80, tanh x80)" in src


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
    assert fig is not None and tl.plot().axes
    with pytest.raises(TypeError, match="expected a minigrad.memory.Timeline"):
        mg.viz.plot_memory_timeline([1, 2, 3])
