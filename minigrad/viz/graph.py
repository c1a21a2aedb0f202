"""Draw a computation graph with Graphviz. Drawing only reads the graph.

The graph drawn is the one the engine walks: backward nodes (ellipses for ops),
with boxes for the tensors Python still holds. Edges follow the data (inputs to
op, op to output). Names come from the topological index (``t0, op1, ...``),
never from ``id()``, and inputs are walked in operand order, so the DOT source
of a graph is the same on every run and every machine.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable
from typing import Any

import graphviz
import numpy as np

from ..engine import topological_order
from ..function import AccumulateGrad, gradient_edge
from ..tensor import Tensor

__all__ = ["Graph", "GraphvizNotFound", "draw_graph", "draw_static", "tensor_label", "INSTALL_HINT",
           "PALETTE", "CUES", "LEGEND", "node_style", "legend_text"]

INSTALL_HINT = (
    "Graphviz's `dot` program was not found on the PATH. The Python package `graphviz` "
    "only writes DOT text; drawing needs the program too. Install it with one of:\n"
    "  Debian/Ubuntu: sudo apt-get install -y graphviz\n"
    "  macOS:         brew install graphviz\n"
    "  conda:         conda install -c conda-forge graphviz\n"
    "then restart the kernel. `make test` and `make lab` install it for you where they can."
)

PALETTE = {
    "param": "#cfe8fc",     # leaf that requires grad
    "data": "#eeeeee",      # leaf that does not
    "inner": "#ffffff",     # recorded intermediate
    "root": "#ffe08a",      # the tensor we draw from
    "op": "#fff6d5",
    "focus": "#ff8c69",     # highlighted node
    "done": "#c8f0c8",      # finished (step-by-step backward)
}

# No state rests on its fill alone (some fills are barely apart: "done" and "param"
# differ by 1.01:1 in contrast): each also has a cue that needs no colour, the
# Graphviz attributes below. A node has a kind (param, data, inner, root, op) and
# may have a state of the drawing (focus, done); the kind's cue is the number of
# borders or the text's weight, a state's the border's width or dashes, so a node
# shows both (a finished parameter has a dashed double border). Ops also differ
# by shape (ellipses). Every drawing of minigrad.viz takes its look from
# node_style and its legend from legend_text.
CUES: dict[str, dict[str, str]] = {
    "param": {"peripheries": "2"},
    "data": {"style": "dotted"},
    "inner": {},
    "root": {"penwidth": "2", "fontname": "Helvetica-Bold"},
    "op": {},
    "focus": {"penwidth": "3"},
    "done": {"style": "dashed", "penwidth": "1.5"},
}
# (fill, cue, meaning) of each state, as a legend words them ("" where the other says it all).
LEGEND: dict[str, tuple[str, str, str]] = {
    "param": ("blue", "double border", "requires grad"),
    "data": ("grey", "dotted", "needs no grad"),
    "root": ("yellow", "bold", "the root"),
    "inner": ("white", "", "intermediate"),
    "op": ("", "ellipse", "op"),
    "focus": ("orange", "thick border", "highlighted"),
    "done": ("green", "dashed", "finished"),
}
LEGEND_WIDTH = 64  # characters on one line of a legend


def node_style(kind: str, state: str | None = None, base: str = "filled", outline: bool = True,
               fills: dict[str, str] = PALETTE, cues: dict[str, dict[str, str]] = CUES) -> dict[str, str]:
    """The Graphviz attributes of a node of ``kind`` (a key of ``cues``) in ``state`` ("focus", "done", None).

    The fill is the state's colour if there is a state, else the kind's (from
    ``fills``); ``base`` is the style every node of its sort has ("filled,rounded"
    for a tensor's box). With ``outline=False`` only the fill tells states apart.
    A drawing with states of its own passes its own ``fills`` and ``cues``
    (:func:`minigrad.viz.draw_program`'s parts of a step).
    """
    attrs = {"fillcolor": PALETTE[state] if state is not None else fills[kind]}
    style = base
    if outline:
        cue = dict(cues[kind])
        kind_style = cue.pop("style", None)
        if state is not None:
            cue.update({k: v for k, v in CUES[state].items() if k != "style"})
            kind_style = CUES[state].get("style", kind_style)  # a state's line style replaces the kind's
        if kind_style:
            style = f"{base},{kind_style}"
        attrs.update(cue)
    attrs["style"] = style
    return attrs


def legend_text(states: Iterable[str], meanings: dict[str, str] | None = None,
                words: dict[str, tuple[str, str, str]] = LEGEND) -> str:
    """One entry per state ("blue, double border: requires grad"), in the order of ``words``
    (fill, cue and meaning of each state; LEGEND), wrapped into lines.

    ``meanings`` says what a state means in this drawing (a step-by-step frame
    calls "focus" "this step"); a key that is not a state adds an entry of its
    own at the end (``{"others": "gradient so far"}``).
    """
    meanings = meanings or {}
    shown = set(states)
    entries = [", ".join(w for w in (fill, cue) if w) + f": {meanings.get(s, means)}"
               for s, (fill, cue, means) in words.items() if s in shown]
    entries += [f"{k}: {v}" for k, v in meanings.items() if k not in words]
    lines: list[str] = []
    for e in entries:
        if lines and len(lines[-1]) + 3 + len(e) <= LEGEND_WIDTH:
            lines[-1] += "   " + e
        else:
            lines.append(e)
    return "\n".join(lines)


# Pixels per inch of the PNG beside each graph's SVG. Graphviz lays out in points
# (72 to the inch) and a browser shows the SVG's points at 96 CSS pixels to the
# inch, so at 96 the PNG is exactly as large on screen as the SVG.
PNG_DPI = 96
# Cairo draws the PNG; where Graphviz has its gd plugin, gd writes it with a
# colour palette, about a third of the bytes of cairo's own full-colour PNG and
# the same to the eye. Either way the same Graphviz gives the same bytes.
PNG_FORMATS = ("png:cairo:gd", "png")
_png_format: dict[str, str] = {}  # dot program -> the first of PNG_FORMATS it has


class GraphvizNotFound(RuntimeError):
    """Rendering needs Graphviz's `dot` executable, and it is missing."""


class PNGUnavailable(RuntimeError):
    """This Graphviz writes none of PNG_FORMATS."""


class Graph(graphviz.Digraph):
    """A ``graphviz.Digraph`` that shows itself in notebooks as a picture and as DOT text.

    A notebook saves three renderings of each graph:

    * ``image/svg+xml``: sharp at any zoom; JupyterLab shows it in trusted notebooks.
    * ``image/png``: shown in any viewer, including an untrusted notebook, where
      JupyterLab refuses SVG. Drawn at ``PNG_DPI`` (as large as the SVG looks),
      with a palette where Graphviz can, so it stays small; the same Graphviz
      gives the same bytes for the same graph.
    * ``text/plain``: the DOT source. The pictures depend on the Graphviz version;
      the source does not, so notebook tests compare the source.
    """

    def pipe(self, *args: Any, **kwargs: Any):
        try:
            return super().pipe(*args, **kwargs)
        except graphviz.ExecutableNotFound:
            raise GraphvizNotFound(INSTALL_HINT) from None

    def render(self, *args: Any, **kwargs: Any):
        try:
            return super().render(*args, **kwargs)
        except graphviz.ExecutableNotFound:
            raise GraphvizNotFound(INSTALL_HINT) from None

    def _repr_image_png(self) -> bytes:
        """The graph as PNG at ``PNG_DPI``. The dpi goes on the command line, so the
        graph and its DOT source stay as they are."""
        program = shutil.which(self.engine)
        if program is None:
            raise GraphvizNotFound(INSTALL_HINT)
        formats = [_png_format[program]] if program in _png_format else list(PNG_FORMATS)
        errors = []
        for fmt in formats:
            done = subprocess.run([program, f"-T{fmt}", f"-Gdpi={PNG_DPI}"], input=self.source.encode(),
                                  capture_output=True, check=False)
            if done.returncode == 0 and done.stdout.startswith(b"\x89PNG"):
                _png_format[program] = fmt
                return done.stdout
            errors.append(f"-T{fmt}: {done.stderr.decode(errors='replace').strip()}")
        raise PNGUnavailable(f"{self.engine} could not draw the graph as PNG: " + "; ".join(errors))

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        if shutil.which(self.engine) is None:
            raise GraphvizNotFound(INSTALL_HINT)
        include = set(include) if include is not None else {"image/svg+xml", "image/png"}
        include -= set(exclude or ())
        bundle = super()._repr_mimebundle_(include - {"image/png"}, None, **kwargs)
        if "image/png" in include:
            try:
                bundle["image/png"] = self._repr_image_png()
            except PNGUnavailable:
                pass  # a Graphviz without PNG output: the SVG and the text, as before
        bundle["text/plain"] = self.source
        return bundle


def _fmt(a: np.ndarray) -> str:
    """Small arrays in full, large ones summarised; 4 significant digits."""
    a = np.asarray(a)
    if a.size <= 4:
        return np.array2string(a, precision=4, separator=",", suppress_small=True,
                               max_line_width=48).replace("\n", "")
    return f"|max| {np.abs(a).max():.3g}"


def tensor_label(t: Tensor, index: int, grad: np.ndarray | None = None,
                 show_grad: bool = False, show_data: bool = True, *,
                 fall_back_to_grad: bool = True) -> str:
    """The text of a tensor's box: name, shape, small values, and optionally its grad.

    The grad shown is ``grad`` if given, else ``t.grad`` (unless ``fall_back_to_grad``
    is False: then a missing ``grad`` shows as None).
    """
    lines = [t.name or f"t{index}", str(tuple(t.shape))]
    if t.dtype != np.float64:
        lines[-1] += f" {t.dtype}"
    if show_data:
        lines.append(f"data {_fmt(t.data)}")
    if show_grad:
        g = t.grad if grad is None and fall_back_to_grad else grad
        lines.append("grad None" if g is None else f"grad {_fmt(g)}")
    return "\n".join(lines)


def _kind(t: Tensor, root: Tensor | None) -> str:
    if t is root:
        return "root"
    if t.grad_fn is None:
        return "param" if t.requires_grad else "data"
    return "inner"


def graph_view(root) -> tuple[list, dict[int, int]]:
    """The nodes ``root`` depends on in topological order, and {id(node): index}."""
    order = topological_order(root)
    return order, {id(n): i for i, n in enumerate(order)}


def draw_graph(root, show_grads: bool = False, show_data: bool = True,
               max_nodes: int = 60, rankdir: str = "LR",
               highlight: Iterable = (), done: Iterable = (),
               grads: dict[int, np.ndarray] | None = None, title: str | None = None,
               outline: bool = True, legend: bool | dict[str, str] = True) -> Graph:
    """A Graphviz drawing of the graph of backward nodes behind ``root``.

    Ops are ellipses; tensors are boxes, drawn only while Python still holds them
    (a value that no name refers to has been freed, and its op's ellipse stands
    alone). A leaf that requires grad is blue with a double border, an input
    that needs no gradient grey with a dotted border, the root yellow in bold
    (:data:`CUES`): a legend under the graph names the states it shows, by
    colour and by cue. Box and ellipse names come from the node's topological
    index (``t3`` is the output of op ``op3``), constants are ``c0, c1, ...`` in
    order of first use, so the DOT source is the same on every run.

    Args:
        root: the tensor (usually the loss) or node to draw back from.
        show_grads: add each tensor's ``.grad`` (or the entry of ``grads``) to its box.
        show_data: add small values (or the largest magnitude) to each box.
        max_nodes: at most this many nodes are drawn: those computed last.
            The rest are folded into one box that counts what it hides.
        rankdir: "LR" (left to right) or "TB" (top to bottom).
        highlight, done: nodes (or tensors) to draw as the current node (orange, thick
            border) / as finished (green, dashed border).
        grads: {topological index: gradient} to show instead of ``.grad``.
        title: a caption under the graph (the legend follows it).
        outline: give each state its cue besides its fill (False: fills only, and no legend).
        legend: False for none; a dict gives states a meaning of this drawing's own
            (``{"focus": "this step"}``).
    """
    order, index = graph_view(root)
    root_t = root if isinstance(root, Tensor) else None
    hidden = order[:-max_nodes] if len(order) > max_nodes else []
    hidden_ids = {id(n) for n in hidden}

    def node_ids(items) -> set[int]:
        out = set()
        for x in items:
            e = gradient_edge(x) if isinstance(x, Tensor) else x
            if e is not None:
                out.add(id(e))
        return out

    focus, finished = node_ids(highlight), node_ids(done)
    g = Graph(graph_attr={"rankdir": rankdir, "fontname": "Helvetica", "fontsize": "11"},
              node_attr={"fontname": "Helvetica", "fontsize": "10"},
              edge_attr={"arrowsize": "0.6"})
    if hidden:
        ops = Counter(n.name for n in hidden if not isinstance(n, AccumulateGrad))
        summary = ", ".join(f"{op} x{k}" for op, k in sorted(ops.items()))
        g.node("hidden", f"{len(hidden)} earlier nodes not shown\n({summary or 'leaves'})",
               shape="note", style="filled", fillcolor="#f4f4f4")
    shown: set[str] = set()  # the states drawn, for the legend

    def state_of(node) -> str | None:
        if id(node) in focus:
            return "focus"
        return "done" if id(node) in finished else None

    def look(kind: str, state: str | None, base: str) -> dict[str, str]:
        shown.update(s for s in (kind, state) if s is not None)
        return node_style(kind, state, base, outline)

    def grad_of(i: int, t: Tensor | None):
        if grads is not None:
            return grads.get(i)
        return t.grad if t is not None else None

    source: dict[int, str] = {}   # id(node) -> the DOT name its value leaves from
    constants: dict[int, str] = {}
    for i, node in enumerate(order):
        if id(node) in hidden_ids:
            source[id(node)] = "hidden"
            continue
        t = node.output
        if isinstance(node, AccumulateGrad):
            g.node(f"t{i}", tensor_label(t, i, grad_of(i, t), show_grads, show_data,
                                         fall_back_to_grad=grads is None),
                   shape="box", **look(_kind(t, root_t), state_of(node), "filled,rounded"))
            source[id(node)] = f"t{i}"
            continue
        label = node.name
        if t is None and show_grads and grads is not None:  # a freed value keeps no .grad to show
            gi = grad_of(i, None)
            label += "\n" + ("grad None" if gi is None else f"grad {_fmt(gi)}")
        # A freed value's state shows on its op's ellipse; a live one's on its box.
        op_state = state_of(node) if t is None else None
        g.node(f"op{i}", label, shape="ellipse", **look("op", op_state, "filled"))
        if t is not None:
            g.node(f"t{i}", tensor_label(t, i, grad_of(i, t), show_grads, show_data,
                                         fall_back_to_grad=grads is None),
                   shape="box", **look(_kind(t, root_t), state_of(node), "filled,rounded"))
            g.edge(f"op{i}", f"t{i}")
            source[id(node)] = f"t{i}"
        else:
            source[id(node)] = f"op{i}"
        cut = False
        for p, c in zip(node.parents, node.inputs):
            if p is None:
                if c is None:
                    continue
                name = constants.get(id(c))
                if name is None:
                    name = constants[id(c)] = f"c{len(constants)}"
                    g.node(name, tensor_label(c, 0, None, False, show_data).replace("t0", name, 1),
                           shape="box", **look("data", None, "filled,rounded"))
                g.edge(name, f"op{i}")
            elif source[id(p)] == "hidden":
                cut = True
            else:
                g.edge(source[id(p)], f"op{i}")
        if cut:
            g.edge("hidden", f"op{i}", style="dashed")
    caption = [title] if title else []
    if outline and legend is not False and shown:
        caption.append(legend_text(shown, legend if isinstance(legend, dict) else None))
    if caption:
        g.attr(label="\n".join(caption), labelloc="b")
    return g


def draw_static(graph, title: str | None = None, legend: bool = True) -> Graph:
    """A Graphviz drawing of a traced :class:`~minigrad.tracing.StaticGraph`, in recorded order:
    inputs, constants, captured tensors and ops.

    Inputs and constants are grey with a dotted border, captured tensors (parameters)
    blue with a double border, the outputs' ops yellow in bold, as :func:`draw_graph`
    draws them; a legend under the graph says so (``legend=False`` leaves it out).
    Values read into Python while tracing (.item(), .data, a comparison) get a dashed edge to a note.
    """
    g = Graph(graph_attr={"rankdir": "LR", "fontname": "Helvetica", "fontsize": "11"},
              node_attr={"fontname": "Helvetica", "fontsize": "10"},
              edge_attr={"arrowsize": "0.6"})
    shown: set[str] = set()

    def look(kind: str, base: str) -> dict[str, str]:
        shown.add(kind)
        return node_style(kind, None, base)

    for i in range(graph.n_inputs):
        g.node(f"v{i}", f"in{i}", shape="box", **look("data", "filled,rounded"))
    for slot in graph.constants:
        g.node(f"v{slot}", graph._ref(slot), shape="box", **look("data", "filled,rounded"))
    for slot in graph.captured:
        g.node(f"v{slot}", graph._ref(slot), shape="box", **look("param", "filled,rounded"))
    for n in graph.nodes:
        g.node(f"v{n.out}", f"v{n.out} = {n.name}", shape="ellipse",
               **look("root" if n.out in graph.outputs else "op", "filled"))
        for a in n.args:
            g.edge(f"v{a}", f"v{n.out}")
    for k, r in enumerate(graph.reads):
        g.node(f"py{k}", "read into Python", shape="note", style="filled",
               fillcolor="#f4f4f4")
        g.edge(f"v{r}", f"py{k}", style="dashed")
    caption = [title] if title else []
    if legend and shown:
        caption.append(legend_text(shown, {"root": "output", "data": "input, constant", "param": "captured"}))
    if caption:
        g.attr(label="\n".join(caption), labelloc="b")
    return g
