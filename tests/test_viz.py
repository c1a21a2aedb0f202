"""Drawing: deterministic DOT, SVG and PNG pictures, grads on request, folding big graphs, read-only."""

import json
import pathlib
import re
import shutil
import struct

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
def test_renders_svg_and_png_and_shows_dot_source_as_text():
    g = draw_graph(small_graph()[2])
    source = g.source
    bundle = g._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")
    assert bundle["text/plain"].startswith("digraph") and bundle["text/plain"] == source
    png = bundle["image/png"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    # At PNG_DPI = 96 the PNG is as many pixels as the SVG is CSS pixels (96 per 72 pt).
    width, height = struct.unpack(">II", png[16:24])
    svg_w, svg_h = (float(v) for v in re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"',
                                                  bundle["image/svg+xml"]).groups())
    assert abs(width - svg_w * 96 / 72) <= 2 and abs(height - svg_h * 96 / 72) <= 2
    assert len(png) < 40_000  # a small graph stays small (about 6 kB with a palette, 21 kB without)
    # The same graph gives the same bytes, and drawing changed nothing on the graph.
    assert draw_graph(small_graph()[2])._repr_mimebundle_()["image/png"] == png
    assert g.source == source and "dpi" not in source


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_the_png_falls_back_to_plain_png_or_to_none_where_graphviz_lacks_a_format(monkeypatch):
    from minigrad.viz import graph as graph_module

    monkeypatch.setattr(graph_module, "PNG_FORMATS", ("png:no-such-renderer", "png"))
    monkeypatch.setattr(graph_module, "_png_format", {})
    png = draw_graph(small_graph()[2])._repr_mimebundle_()["image/png"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert graph_module._png_format == {shutil.which("dot"): "png"}
    # A Graphviz with no PNG at all: the SVG and the DOT text, as before the PNG existed.
    monkeypatch.setattr(graph_module, "PNG_FORMATS", ("png:no-such-renderer",))
    monkeypatch.setattr(graph_module, "_png_format", {})
    g = draw_graph(small_graph()[2])
    with pytest.raises(graph_module.PNGUnavailable, match="could not draw the graph as PNG"):
        g._repr_image_png()
    assert set(g._repr_mimebundle_()) == {"image/svg+xml", "text/plain"}


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_the_bundle_honours_include_and_exclude():
    g = draw_graph(small_graph()[2])
    assert set(g._repr_mimebundle_(include=["image/svg+xml"])) == {"image/svg+xml", "text/plain"}
    assert set(g._repr_mimebundle_(exclude=["image/svg+xml"])) == {"image/png", "text/plain"}


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


# ------------------------------------------------- colour-blind-safe figures

# Okabe & Ito (2008), in their order: black, orange, sky blue, bluish green, yellow,
# blue, vermillion, reddish purple.
OKABE_ITO_HEX = {"#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7"}


def _hex(c):
    import matplotlib.colors

    return matplotlib.colors.to_hex(c, keep_alpha=False)


def _legend_sizes(fig):
    return [t.get_fontsize() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def _legend_is_right_of_its_axes(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


def _labelled_lines(ax):
    return [line for line in ax.lines if not line.get_label().startswith("_")]


def test_importing_viz_sets_the_okabe_ito_cycle_and_legible_font_sizes():
    import json
    import subprocess
    import sys

    code = ("import json, matplotlib; matplotlib.use('Agg'); import matplotlib as m; "
            "before = m.rcParams['axes.prop_cycle'].by_key()['color']; import minigrad.viz; "
            "print(json.dumps([before, m.rcParams['axes.prop_cycle'].by_key()['color'], "
            "m.rcParams['font.size'], m.rcParams['legend.fontsize']]))")
    root = pathlib.Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         check=True, timeout=120).stdout
    before, after, font, legend = json.loads(out)
    assert {c.lower() for c in after} == OKABE_ITO_HEX and len(after) == 8
    assert before != after  # the import did it: matplotlib's own cycle is another one
    assert font == 10 and legend >= 8
    from minigrad.viz import OKABE_ITO

    assert [c.lower() for c in after] == [c.lower() for c in OKABE_ITO]


def test_plot_curves_distinguishes_curves_without_colour_and_keeps_its_legend_off_the_data():
    import matplotlib

    matplotlib.use("Agg")
    from minigrad.viz import OKABE_ITO

    for n in (20, 300):  # with markers on every point, and on a few of a dense curve
        rng = np.random.default_rng(n)
        curves = {name: rng.random(n) for name in ("train", "held-out", "test", "baseline")}
        fig = mg.viz.plot_curves(curves)
        ax = fig.axes[0]
        lines = _labelled_lines(ax)
        assert [line.get_label() for line in lines] == list(curves)
        assert [_hex(line.get_color()) for line in lines] == [c.lower() for c in OKABE_ITO[:4]]
        assert len({line.get_linestyle() for line in lines}) == 4  # a line style each
        assert len({line.get_marker() for line in lines}) == 4     # and a marker each
        sizes = _legend_sizes(fig)
        assert len(sizes) == 4 and min(sizes) >= 8
        _legend_is_right_of_its_axes(fig)
        matplotlib.pyplot.close(fig)


def test_grad_flow_tells_records_apart_by_marker_and_statistics_by_line_style():
    import matplotlib

    matplotlib.use("Agg")
    from minigrad.flow import record_flow

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(16, 5)), rng.integers(0, 3, 16)
    recs = {}
    for act in ("tanh", "relu", "sigmoid"):
        mg.random.manual_seed(0)
        recs[act] = record_flow(mg.nn.MLP([5, 6, 6, 3], act), x,
                                lambda out: out.cross_entropy_with_logits(y))
    fig = mg.viz.plot_grad_flow(recs)
    ax = fig.axes[0]
    mean, peak = ax.lines[0::2], ax.lines[1::2]
    assert len({line.get_marker() for line in mean}) == 3
    assert {_hex(line.get_color()) for line in ax.lines} <= OKABE_ITO_HEX
    assert all(m.get_linestyle() != p.get_linestyle() for m, p in zip(mean, peak))
    assert min(_legend_sizes(fig)) >= 8
    _legend_is_right_of_its_axes(fig)
    matplotlib.pyplot.close("all")
    fig = mg.viz.plot_histograms(recs, which="activations")
    for ax in fig.axes:
        outlines = [p for p in ax.patches if not p.get_label().startswith("_")]
        assert len(outlines) == 3 and len({str(p.get_linestyle()) for p in outlines}) == 3
    assert min(_legend_sizes(fig)) >= 8
    _legend_is_right_of_its_axes(fig)
    matplotlib.pyplot.close("all")


def test_update_ratios_and_scaling_lines_differ_without_colour():
    import matplotlib

    matplotlib.use("Agg")
    from minigrad.viz import plot_scaling

    r = np.abs(np.random.default_rng(0).normal(size=(30, 4))) * 1e-3
    fig = mg.viz.plot_update_ratios(r)
    layers = _labelled_lines(fig.axes[0])[:4]
    assert len({(line.get_linestyle(), line.get_marker()) for line in layers}) == 4
    assert len({line.get_marker() for line in layers}) == 4
    deep = mg.viz.plot_update_ratios(np.abs(np.random.default_rng(1).normal(size=(30, 12))))
    named = _labelled_lines(deep.axes[0])  # layer 1, layer 12, the reference
    assert [line.get_label() for line in named] == ["layer 1", "layer 12", "0.001"]
    assert len({line.get_marker() for line in named[:2]}) == 2 and "None" not in {
        line.get_marker() for line in named[:2]}
    fig2 = plot_scaling([10, 100, 1000], {"J": [100, 1e4, 1e6], "VJP": [10, 100, 1000], "x": [1, 2, 3]})
    lines = fig2.axes[0].lines
    assert len({line.get_linestyle() for line in lines}) == 3
    assert len({line.get_marker() for line in lines}) == 3
    for f in (fig, deep, fig2):
        assert min(_legend_sizes(f)) >= 8
        _legend_is_right_of_its_axes(f)
    matplotlib.pyplot.close("all")


def test_memory_and_saved_bytes_give_each_category_a_hatch_and_an_okabe_ito_colour():
    import matplotlib

    matplotlib.use("Agg")
    from minigrad.inspect import saved_values
    from minigrad.memory import CATEGORIES, profile_step
    from minigrad.viz import plot_saved

    mg.random.manual_seed(0)
    model = mg.nn.MLP([8, 8, 3])
    x = Tensor(np.ones((4, 8)))
    tl = profile_step(model, x, np.array([0, 1, 2, 0]), optimizer=mg.optim.Adam(model.parameters()))
    fig = mg.viz.plot_memory_timeline(tl)
    areas = fig.axes[0].collections[:len(CATEGORIES)]
    assert [a.get_label() for a in areas] == list(CATEGORIES)
    assert len({a.get_hatch() for a in areas}) == len(CATEGORIES)
    colours = [_hex(a.get_facecolor()[0]) for a in areas]
    assert len(set(colours)) == len(CATEGORIES) and set(colours) <= OKABE_ITO_HEX
    assert min(_legend_sizes(fig)) >= 8
    _legend_is_right_of_its_axes(fig)

    loss = model(x).cross_entropy_with_logits(np.zeros(4, dtype=np.int64))
    fig = plot_saved(saved_values(loss))
    ax = fig.axes[0]
    kinds = {t.get_text() for t in ax.get_legend().get_texts()}
    by_kind = {bars.get_label(): {(p.get_hatch(), _hex(p.get_facecolor())) for p in bars.patches}
               for bars in ax.containers}
    assert set(by_kind) == kinds and all(len(v) == 1 for v in by_kind.values())
    styles = [v.pop() for v in by_kind.values()]
    assert len({h for h, _ in styles}) == len(styles) and {c for _, c in styles} <= OKABE_ITO_HEX
    assert min(_legend_sizes(fig)) >= 8
    _legend_is_right_of_its_axes(fig)
    matplotlib.pyplot.close("all")


def _notebook_with_a_graph(tmp_path, png: bytes, dot_source: str):
    """A one-cell notebook whose saved output is a graph bundle with the given PNG and DOT."""
    import base64

    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "id": "c1",
            "source": ["import minigrad as mg\n",
                       "x = mg.Tensor([[1.0, 2.0]], name='x')\n",
                       "w = mg.Tensor([[0.5], [-1.0]], requires_grad=True, name='w')\n",
                       "mg.viz.draw_graph((x @ w).relu().sum())"],
            "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                         "data": {"image/png": base64.b64encode(png).decode(),
                                  "image/svg+xml": "<?xml version='1.0'?><svg>old</svg>",
                                  "text/plain": dot_source}}]}
    nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                       "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "graph.ipynb"
    path.write_text(json.dumps(nb))
    return path


def _nbval(path):
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
         "--nbval-sanitize-with", str(root / "tests" / "nbval_sanitize.cfg"), str(path)],
        capture_output=True, text=True, cwd=path.parent, timeout=300)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_nbval_ignores_the_graph_pictures_but_compares_the_dot_source(tmp_path):
    # The way `make nbtest` runs nbval: a saved graph whose PNG and SVG differ from a
    # fresh run still passes (pictures depend on Graphviz), a different DOT source fails.
    x = Tensor([[1.0, 2.0]], name="x")
    w = Tensor([[0.5], [-1.0]], requires_grad=True, name="w")
    source = draw_graph((x @ w).relu().sum()).source
    other_png = b"\x89PNG\r\n\x1a\n" + b"not the same picture"
    same = _nbval(_notebook_with_a_graph(tmp_path, other_png, source))
    assert same.returncode == 0, same.stdout[-2000:]
    changed = _nbval(_notebook_with_a_graph(tmp_path, other_png, source.replace("relu", "tanh")))
    assert changed.returncode == 1 and "tanh" in changed.stdout, changed.stdout[-2000:]


def test_distinguish_gives_each_colour_a_marker_and_one_legend_beside_the_axes():
    import matplotlib.pyplot as plt

    from minigrad.viz import MARKERS, distinguish

    fig, (a, b) = plt.subplots(1, 2)
    for ax in (a, b):
        ax.plot([0, 1], [0, 1], "o-", color="C0", label="one")
        ax.plot([0, 1], [1, 0], "o-", color="C1", label="two")
        ax.legend()
    distinguish(a, b)
    assert [ln.get_marker() for ln in a.get_lines()] == list(MARKERS[:2])
    assert a.get_legend() is None and b.get_legend() is not None
    assert b.get_legend().get_bbox_to_anchor().x0 > b.get_window_extent().x1 - 1  # outside the axes
    plt.close(fig)


# ------------------------------------------- graph states: not by colour alone
def _nodes(src):
    """{DOT name: its attributes} of every node statement of a DOT source."""
    found = {}
    for name, body in re.findall(r'^\t(\w+) \[((?:[^\]"]|"[^"]*")*)\]$', src, re.M):
        if name not in ("graph", "node", "edge"):
            found[name] = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', body))
    return found


def _caption(src):
    return re.search(r'^\tlabel="([^"]*)" labelloc=b$', src, re.M)[1]


def _grey(attrs):
    """What is left of a node's look in grey-scale: everything but its fill (and its text)."""
    return tuple(sorted((k, v) for k, v in attrs.items() if k not in ("fillcolor", "label")))


def test_each_kind_of_node_differs_without_colour_and_the_legend_names_colour_and_cue():
    from minigrad.viz.graph import CUES, LEGEND

    x = Tensor([[1.0, 2.0]], name="x")                       # data: no gradient
    w = Tensor([[0.5], [-1.0]], requires_grad=True, name="w")  # a leaf that requires grad
    z = x @ w
    z.name = "z"                                               # an intermediate, kept alive
    loss = (z.relu() * 2.0).sum()
    src = draw_graph(loss).source
    nodes = _nodes(src)
    looks = {"param": nodes["t0"], "data": nodes["c0"], "inner": nodes["t1"], "root": nodes["t4"],
             "op": nodes["op1"]}
    assert looks["data"]["style"] == '"filled,rounded,dotted"' and looks["param"]["peripheries"] == "2"
    assert looks["root"]["fontname"] == '"Helvetica-Bold"' and looks["root"]["penwidth"] == "2"
    greys = {k: _grey(a) for k, a in looks.items()}
    assert len(set(greys.values())) == len(greys), greys       # five kinds, five looks without colour
    caption = _caption(src)
    for state in ("param", "data", "inner", "root", "op"):
        fill, cue, means = LEGEND[state]
        assert ", ".join(w for w in (fill, cue) if w) + f": {means}" in caption, (state, caption)
    assert "orange" not in caption and "green" not in caption     # only the states drawn
    assert set(CUES) == set(LEGEND)
    # One look per state in every drawing: the same kind gets the same attributes.
    assert _grey(_nodes(draw_graph(loss, show_data=False).source)["t0"]) == greys["param"]


def test_highlighted_and_finished_keep_the_kinds_cue_and_differ_from_every_kind():
    x = Tensor(2.0, requires_grad=True, name="x")
    y = Tensor(3.0, requires_grad=True, name="y")
    loss = x * y
    src = draw_graph(loss, highlight=[x], done=[y]).source
    nodes = _nodes(src)
    focus, done = nodes["t0"], nodes["t1"]
    assert focus["penwidth"] == "3" and focus["peripheries"] == "2"          # thick, and still a parameter
    assert done["style"] == '"filled,rounded,dashed"' and done["peripheries"] == "2"
    assert _grey(focus) != _grey(done)
    plain = draw_graph(loss).source
    kinds = {_grey(a) for a in _nodes(plain).values()}
    assert _grey(focus) not in kinds and _grey(done) not in kinds
    assert "orange, thick border: highlighted" in _caption(src) and "green, dashed: finished" in _caption(src)


def test_a_title_comes_first_and_the_legend_can_be_left_out():
    loss = small_graph()[2]
    assert _caption(draw_graph(loss, title="a title").source).startswith("a title\n")
    assert "label=" not in draw_graph(loss, legend=False).source.split("\n")[-2]
    bare = draw_graph(loss, outline=False).source
    assert "peripheries" not in bare and "dotted" not in bare and "labelloc" not in bare


def test_traced_graphs_and_compiled_steps_give_each_part_a_cue_besides_colour():
    from minigrad.viz import draw_program, draw_static

    mg.random.manual_seed(0)
    model = mg.nn.MLP([3, 4, 2])
    traced = mg.trace(model, np.ones((2, 3)))
    src = draw_static(traced, title="t").source
    nodes = _nodes(src)
    kinds = {_grey(a) for a in nodes.values()}
    assert len(kinds) == 4, kinds    # input (dotted), captured (double), op, output (bold)
    assert "blue, double border: captured" in _caption(src) and "yellow, bold: output" in _caption(src)

    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    data, labels = np.ones((2, 3)), np.array([0, 1])

    def step(xb, yb):
        loss = model(mg.Tensor(xb)).cross_entropy_with_logits(yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    compiled = mg.compile(step)
    compiled(data, labels)
    compiled(data, labels)
    src = draw_program(compiled.program).source
    by_fill = {}
    for a in _nodes(src).values():
        by_fill.setdefault(a["fillcolor"], set()).add(_grey({k: v for k, v in a.items() if k != "shape"}))
    assert all(len(v) == 1 for v in by_fill.values()), by_fill     # one look per part of the step
    assert len({next(iter(v)) for v in by_fill.values()}) == len(by_fill)   # and each its own
    assert "red, dashed: backward" in _caption(src) and "green, bold: update" in _caption(src)


def test_the_fields_drawing_marks_the_root_and_the_data_without_colour():
    from minigrad.viz import draw_fields

    x, w, loss = small_graph()
    z = x @ w
    z.name = "z"
    root = z.sum()
    nodes = _nodes(draw_fields(root).source)
    assert nodes["t2"]["fontname"] == '"Helvetica-Bold"'
    assert "requires_grad: True" in nodes["t0"]["label"] and "is_leaf: True" in nodes["t0"]["label"]
