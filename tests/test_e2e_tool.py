"""The browser check's own logic, and the website's alt text.

tools/e2e.py: which cells must show a graph, what a saved notebook promises,
the untrusted copy, and on the website which requests may go out, which links
resolve and whether previous/next follow the course. docs/alt_text.py: the alt
text every picture on the website gets.
"""

import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("e2e", ROOT / "tools" / "e2e.py")
e2e = importlib.util.module_from_spec(spec)
spec.loader.exec_module(e2e)
# The website's alt text is written with docutils, one of the website's tools: `make test`
# installs them, a conda environment may not have them, and then those tests are skipped.
if importlib.util.find_spec("docutils") is None:
    alt_text = None
else:
    spec = importlib.util.spec_from_file_location("alt_text", ROOT / "docs" / "alt_text.py")
    alt_text = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(alt_text)
needs_docutils = pytest.mark.skipif(alt_text is None, reason="docutils (a website tool) is not installed")


@pytest.mark.parametrize("src, draws", [
    ("draw_graph(loss)", True),
    ("g = trace(f, x)\nminigrad.viz.draw_static(g)", True),
    ("minigrad.viz.draw_graph(loss, show_grads=True)", True),
    ("g = draw_graph(loss)", False),
    ("print(draw_graph(loss).source)", False),
    ("x = 1 +", False),
])
def test_which_cells_draw_a_graph(src, draws):
    assert e2e.draws_a_graph(src) is draws


def test_a_graph_cell_without_its_picture_is_reported(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": ["draw_graph(loss)"], "outputs": [
        {"output_type": "execute_result", "data": {"text/plain": "digraph {}"}}]}]}
    path = tmp_path / "01_x.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(e2e.Failure, match="code cell 1 ends by drawing a graph"):
        e2e.expected(path)


def test_every_saved_notebook_meets_its_own_expectations():
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        exp = e2e.expected(path)
        assert exp["svg"] + exp["png"] > 0, path.name


# ------------------------------------------------ what the saved outputs promise

def _nb(cells):
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _md(text):
    return {"cell_type": "markdown", "id": "m", "metadata": {}, "source": [text]}


def _code(source, *datas):
    return {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": 1, "source": [source],
            "outputs": [{"output_type": "display_data", "metadata": {}, "data": d} for d in datas]}


GRAPH = {"image/svg+xml": "<svg/>", "image/png": "iVBORw0KGgo=", "text/plain": "digraph {}"}
OLD_GRAPH = {"image/svg+xml": "<svg/>", "text/plain": "digraph {}"}
FIGURE = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"}


def test_graphs_and_figures_are_counted_apart(tmp_path):
    path = tmp_path / "00_x.ipynb"
    path.write_text(json.dumps(_nb([_code("draw_graph(loss)", GRAPH), _code("x", OLD_GRAPH),
                                    _code("plt.show()", FIGURE)])))
    exp = e2e.expected(path)
    assert (exp["svg"], exp["png"], exp["graph_png"]) == (2, 1, 1)
    assert exp["must_draw"] == [0] and exp["graph_cells"] == [0, 1]


@pytest.mark.parametrize("text, maths", [
    ("the loss $L = f(x)$ falls", True),
    ("$$\n\\frac{a}{b}\n$$", True),
    ("it costs $5 and $6 a month", False),
    ("no dollars here", False),
    ("an escaped \\$5", False),
])
def test_which_markdown_has_maths(text, maths):
    assert e2e.has_maths(_nb([_md(text)])) is maths


def test_links_between_notebooks_are_found():
    nb = _nb([_md("See [backprop](03_backpropagation.ipynb), [the VJP](./05_vjp_matmul.ipynb#sec) "
                  "and [the README](../README.md).")])
    assert e2e.notebook_links(nb) == {"03_backpropagation", "05_vjp_matmul"}


def test_the_untrusted_copy_matches_no_trust_signature(tmp_path):
    from nbformat.sign import NotebookNotary

    src = tmp_path / "00_x.ipynb"
    nb = _nb([_code("draw_graph(loss)", GRAPH)])
    nb["metadata"]["signature"] = "sha256:abc"
    src.write_text(json.dumps(nb))
    copy = e2e.untrusted_copy(src, tmp_path / "copy")
    assert copy.parent == tmp_path / "copy" and copy.name == src.name
    copied = json.loads(copy.read_text())
    assert copied["cells"] == nb["cells"] and "signature" not in copied["metadata"]
    import nbformat

    notary = NotebookNotary(db_file=":memory:", secret=b"test")
    original = nbformat.reads(src.read_text(), as_version=4)
    notary.sign(original)  # the original trusted...
    assert notary.check_signature(original)
    assert not notary.check_signature(nbformat.reads(copy.read_text(), as_version=4))  # ...its copy not


# ------------------------------------------------------------- the website

BASE = "http://127.0.0.1:8765"


@pytest.mark.parametrize("url, local", [
    (f"{BASE}/notebooks/03_backpropagation.html", True),
    (f"{BASE}/_static/mathjax/tex-mml-chtml.js?v=1", True),
    ("data:image/png;base64,iVBORw0KGgo=", True),
    ("http://127.0.0.1:8766/x.js", False),             # another port
    ("https://127.0.0.1:8765/x.js", False),            # another scheme
    ("http://localhost:8765/x.js", False),             # another name
    ("http://127.0.0.1.example.org:8765/x.js", False),
    ("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js", False),
    ("ws://127.0.0.1:8765/socket", False),
])
def test_only_requests_to_the_local_server_may_go_out(url, local):
    assert e2e.is_local(url, BASE) is local


def _site(tmp_path):
    site = tmp_path / "site"
    (site / "notebooks").mkdir(parents=True)
    (site / "_static").mkdir()
    (site / "index.html").write_text('<h1 id="top">x</h1>')
    (site / "notebooks" / "03_b.html").write_text('<section id="checks"><a name="old"></a></section>')
    (site / "_static" / "macros.html").write_text("")
    (site / "_static" / "site.css").write_text("")
    return site


def test_link_targets_are_files_of_the_site(tmp_path):
    site = _site(tmp_path)
    assert e2e.link_target(f"{BASE}/notebooks/03_b.html#checks", BASE, site) == (
        site / "notebooks" / "03_b.html", "checks")
    assert e2e.link_target(f"{BASE}/", BASE, site) == (site / "index.html", "")
    assert e2e.link_target(f"{BASE}/notebooks/03%20b.html", BASE, site)[0].name == "03 b.html"
    assert e2e.link_target("https://doi.org/10.24432/C50P49", BASE, site) is None
    assert e2e.link_target("mailto:someone@example.org", BASE, site) is None


def test_broken_links_and_anchors_are_reported(tmp_path):
    site = _site(tmp_path)
    links = [f"{BASE}/notebooks/03_b.html#checks", f"{BASE}/notebooks/03_b.html#old",
             f"{BASE}/index.html#top", f"{BASE}/_static/site.css", "https://example.org/",
             f"{BASE}/notebooks/03_b.html#nope", f"{BASE}/notebooks/04_missing.html",
             f"{BASE}/notebooks/04_missing.html"]
    assert e2e.link_problems(links, BASE, site) == [
        "/notebooks/03_b.html#nope (no such anchor)", "/notebooks/04_missing.html (no such file)"]


def test_site_pages_leave_out_the_theme_files(tmp_path):
    assert e2e.site_pages(_site(tmp_path)) == ["index.html", "notebooks/03_b.html"]


def test_previous_and_next_must_follow_the_course_order():
    order = ["n/00.html", "n/01.html", "n/02.html"]
    good = {"n/00.html": ("index.html", "n/01.html"), "n/01.html": ("n/00.html", "n/02.html"),
            "n/02.html": ("n/01.html", None)}
    assert e2e.neighbour_problems(order, good) == []
    bad = dict(good, **{"n/01.html": ("n/00.html", "n/00.html")})
    assert e2e.neighbour_problems(order, bad) == ["n/01.html: 'next' goes to n/00.html, not n/02.html"]
    assert e2e.neighbour_problems(order, {k: v for k, v in good.items() if k != "n/02.html"}) == [
        "n/02.html: 'previous' goes to None, not n/01.html"]


def test_the_site_server_serves_the_folder_on_localhost_only(tmp_path):
    import urllib.request

    site = _site(tmp_path)
    server = e2e.SiteServer(site)
    try:
        assert server.base.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.base + "/notebooks/03_b.html", timeout=10) as r:
            assert r.status == 200 and b'id="checks"' in r.read()
    finally:
        server.stop()


def test_the_browser_resolves_no_host_but_the_loopback():
    assert "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" in e2e.CHROMIUM_ARGS


# --------------------------------------------------------- the website's alt text

@needs_docutils
def test_a_computation_graph_is_described_by_what_it_computes():
    import minigrad as mg

    x = mg.Tensor([[1.0, 2.0]], name="x")
    w = mg.Tensor([[0.5], [-1.0]], requires_grad=True, name="w")
    z = x @ w
    z.name = "z"
    loss = (z.relu() * z).sum()
    loss.name = "loss"
    src = mg.viz.draw_graph(loss, title="a small graph").source
    assert "double border" in src            # the drawing has a legend; the alt text leaves it out
    assert alt_text.graph_alt(src) == (
        "Computation graph: a small graph. It computes z = matmul(x, w); loss = sum(mul(relu(z), z)). "
        "w requires grad. x needs no gradient.")
    loss.backward()
    after = alt_text.graph_alt(mg.viz.draw_graph(loss, show_grads=True, show_data=False).source)
    # z's and loss's gradients are None: not listed
    assert after.endswith("x needs no gradient. Gradients shown: w [[0.], [0.]]."), after
    # A value read twice but held by no name is written out once, under a name.
    s = (x @ w).sum()
    square = s * s
    del s
    twice = alt_text.graph_alt(mg.viz.draw_graph(square).source)
    assert "the sum = sum(matmul(x, w)); t3 = mul(the sum, the sum)" in twice, twice


@needs_docutils
def test_a_frame_says_which_node_is_this_step_and_which_are_finished():
    import minigrad as mg

    x = mg.Tensor(2.0, requires_grad=True, name="x")
    a = x * 3
    a.name = "a"
    b = x ** 2
    b.name = "b"
    L = a * b
    L.name = "L"
    alt = alt_text.graph_alt(mg.viz.backward_steps(L).frame(3).source)
    assert alt.startswith("Computation graph: step 3 of 4: a = mul(x, a constant) has its full gradient"), alt
    assert "Highlighted: a. Finished: b and L." in alt and "orange" not in alt and "dashed" not in alt


@needs_docutils
def test_a_folded_graph_says_what_it_hides():
    import minigrad as mg

    y = mg.Tensor(1.0, requires_grad=True)
    for _ in range(30):
        y = (y * 1.01).tanh()
    alt = alt_text.graph_alt(mg.viz.draw_graph(y, max_nodes=12).source)
    assert alt == ("Computation graph: It computes t60 = tanh(mul(tanh(mul(tanh(mul(tanh(mul(…)))))))). "
                   "49 earlier nodes not shown."), alt
    kept = [mg.Tensor(1.0, requires_grad=True)]
    for _ in range(80):
        kept.append(kept[-1] * 2.0)                  # every value held: a box each, too long to read out
    alt = alt_text.graph_alt(mg.viz.draw_graph(kept[-1]).source)
    assert alt == "Computation graph: It computes t80 in 60 ops (mul ×60). 21 earlier nodes not shown.", alt
    assert len(alt) <= alt_text.MAX_ALT


@needs_docutils
def test_other_drawings_are_diagrams_of_their_labels():
    src = """digraph {
	graph [rankdir=TB]
	node [shape=box]
	label="the loop" labelloc=b
	subgraph cluster_a {
		label="step one"
		init [label="1. initialise W"]
	}
	"graph" [label="autograd\ngraph"]
	t2 [label="z|<d> data: array (2, 4)|<f> grad_fn: \\<MatMulBackward\\>" shape=record]
	init -> "graph" -> t2:d
}"""
    g = alt_text.parse_dot(src)
    assert [n["name"] for n in g["nodes"]] == ["init", "graph", "t2"]  # a quoted "graph" is a node
    assert [n["cluster"] for n in g["nodes"]] == ["step one", "", ""]
    assert g["edges"] == [("init", "graph"), ("graph", "t2")]  # ports dropped
    assert alt_text.graph_alt(src) == "Diagram: the loop. step one: 1. initialise W. autograd graph; z."


@needs_docutils
def test_a_figure_is_described_by_its_title_and_axes():
    src = """fig, axes = plt.subplots(1, 2)
axes[0].set_title("Loss falls")
axes[1].set_title(f"Accuracy after {n} steps")
axes[0].set_xlabel("step")
ax.set_ylabel(r"$|dL/dW|$")
"""
    assert alt_text.figure_alt("<Figure size 800x320 with 2 Axes>", src) == (
        "Figure with 2 panels: Loss falls; Accuracy after … steps. x axis: step, y axis: |dL/dW|.")
    assert alt_text.figure_alt("<Figure size 600x350 with 1 Axes>",
                               'fig = plot_curves(losses, title="Training loss", logy=True)') == (
        "Training curves: Training loss.")


@needs_docutils
def test_a_figure_without_titles_falls_back_to_its_comment_then_its_heading():
    src = "# BEGIN SOLUTION\n# Mistakes the model makes\nshow(mistakes)"
    assert alt_text.figure_alt("<Figure size 640x480 with 1 Axes>", src, "9. Results") == (
        "Figure: Mistakes the model makes.")
    assert alt_text.figure_alt("<Figure size 640x480 with 1 Axes>", "show(x)", "9. Results") == (
        "Figure: a figure in the section “9. Results”.")
    assert alt_text.figure_alt("A 28 x 28 digit, label 3", "show(x)") == "Figure: A 28 x 28 digit, label 3"
    assert alt_text.figure_alt("<matplotlib.image.AxesImage at 0x7f>", "show(x)") == "Figure: a figure."


@needs_docutils
def test_tex_is_read_out_and_a_plotting_function_says_what_it_draws():
    assert alt_text.tex_to_text(r"one VJP with $v = e_1$ gives row 1, $e_1^\top J$") == \
        "one VJP with v = e_1 gives row 1, e_1ᵀ J"
    tex = r"$J_A = I_N \otimes B^T$, $\varepsilon^{1/2}$, $\mathcal N(0, \sigma_W^2)$"
    assert alt_text.tex_to_text(tex) == "J_A = I_N ⊗ B^T, ε^(1/2), N(0, σ_W^2)"
    src = 'fig = plot_images(images[k], titles=t, ncols=10,\n    suptitle="the first three of each digit")'
    assert alt_text.figure_alt("<Figure size 900x337 with 30 Axes>", src, "3. Data") == (
        "Grid of images: the first three of each digit.")
    confusion = 'plot_confusion(cm, title="test digits")'
    assert alt_text.figure_alt("<Figure size 610x570 with 1 Axes>", confusion) == (
        "Confusion matrix, true class against predicted class: test digits.")


def _saved_alts():
    """(notebook, alt text) of every picture the saved notebooks show, as the website gets them."""
    out = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        heading = ""
        for cell in json.loads(path.read_text())["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                heading = next((ln.lstrip("# ") for ln in reversed(src.splitlines()) if ln.startswith("#")),
                               heading)
                continue
            for o in cell.get("outputs", []):
                data = o.get("data", {})
                if not any(k.startswith("image/") for k in data):
                    continue
                given = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
                text = "".join(data.get("text/plain", ""))
                alt = given or (alt_text.graph_alt(text) if text.lstrip().startswith("digraph")
                                else alt_text.figure_alt(text, src, heading))
                out.append((path.name, alt))
    return out


@needs_docutils
@pytest.mark.skipif(not (ROOT / "notebooks").is_dir(), reason="the notebooks are not here")
def test_every_saved_picture_has_alt_text_of_its_own_in_words():
    alts = _saved_alts()
    assert len(alts) > 100
    bad = [(nb, a) for nb, a in alts if "$" in a or "\\" in a or "a figure in the section" in a
           or a.rstrip(".").endswith(": a figure") or "double border" in a or "dotted" in a]
    assert not bad, bad[:5]
    seen = {}
    for nb, a in alts:
        seen.setdefault((nb, a), 0)
        seen[(nb, a)] += 1
    dup = [k for k, n in seen.items() if n > 1]
    assert not dup, dup[:5]


@needs_docutils
def test_alt_text_is_set_on_every_picture_of_a_bundle_and_kept_from_metadata():
    from docutils import nodes

    def cell(data, metadata=None):
        c = nodes.container(nb_element="cell_code", cell_metadata=metadata or {})
        source = nodes.container(nb_element="cell_code_source")
        source += nodes.literal_block(text="# the training loss\nplot(losses)")
        bundle = nodes.container(nb_element="mime_bundle")
        for mime, kind in data:
            m = nodes.container(mime_type=mime)
            m += nodes.image(uri="x.png") if kind == "img" else nodes.literal_block(text=kind)
            bundle += m
        out = nodes.container(nb_element="cell_code_output")
        out += bundle
        c += source
        c += out
        return c

    doc = nodes.document(None, None)
    section = nodes.section()
    section += nodes.title(text="Training")
    graph = cell([("image/svg+xml", "img"), ("image/png", "img"),
                  ("text/plain", 'digraph {\n\tt0 [label="x" shape=box]\n\top1 [label=exp]\n}')])
    figure = cell([("image/png", "img"), ("text/plain", "<Figure size 640x480 with 1 Axes>")])
    given = cell([("image/png", "img")], {"mystnb": {"image": {"alt": "Given by the author"}}})
    for c in (graph, figure, given):
        section += c
    doc += section
    alt_text.add_alt_text(None, doc)
    alts = [[i["alt"] for i in c.findall(nodes.image)] for c in (graph, figure, given)]
    assert alts == [["Computation graph: It shows x and the op exp."] * 2,
                    ["Figure: the training loss."], ["Given by the author"]]


def test_the_site_check_rejects_tex_generic_and_shared_alt_text():
    assert e2e.alt_problems(["Computation graph: It computes y = exp(x).", "Figure: loss, by step."]) == []
    found = e2e.alt_problems(["Figure: $e_1^\\top J$.", "Figure: a figure in the section “9. Results”.",
                              "Computation graph: a.", "Computation graph: a."])
    assert len(found) == 3 and "raw TeX" in found[0] and "only where" in found[1] and "shared" in found[2]


def test_the_student_download_check_rejects_solutions_outputs_and_other_cells():
    ref = {"cells": [{"cell_type": "code", "id": "a", "source": "# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n",
                      "outputs": [{"output_type": "stream", "text": "1"}]}]}
    good = {"cells": [{"cell_type": "code", "id": "a", "outputs": [],
                       "source": "# YOUR CODE HERE\nraise NotImplementedError\n"}]}
    assert e2e.student_problems(json.dumps(good), ref) == []
    assert e2e.student_problems(json.dumps(ref), ref)[:2] == [
        "the student download holds solution markers", "the student download keeps outputs"]
    other = {"cells": [{**good["cells"][0], "id": "b"}]}
    assert e2e.student_problems(json.dumps(other), ref) == [
        "the student download's cells are not the reference's"]
    assert e2e.student_problems("<html>404</html>", ref) == ["the student download is not a notebook"]


def test_the_accessibility_audit_fails_on_any_violation_and_names_the_worst_first():
    assert e2e.axe_summary([]) == (0, "no violations")
    minor = [{"impact": "minor", "id": "empty-table-header", "nodes": [{}]}]
    assert e2e.axe_summary(minor) == (1, "minor empty-table-header x1")
    serious = minor + [{"impact": "moderate", "id": "region", "nodes": [{}]},
                       {"impact": "serious", "id": "scrollable-region-focusable", "nodes": [{}, {}]},
                       {"impact": "critical", "id": "image-alt", "nodes": [{}]}]
    n, line = e2e.axe_summary(serious)
    assert n == 4 and line.startswith("critical image-alt x1; serious scrollable-region-focusable x2; "
                                      "moderate region x1; minor")
    assert e2e.AXE_OPTIONS["rules"]["label-content-name-mismatch"] == {"enabled": True}
