"""Draw a computation graph with Graphviz. Drawing only reads the graph.

Tensors are boxes, ops are ellipses, and edges follow the data (inputs to op,
op to output). Node names come from the topological index (``t0, t1, ...``),
never from ``id()``, and parents are walked in operand order, so the DOT source
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
from ..tensor import Tensor

__all__ = ["Graph", "GraphvizNotFound", "draw_graph", "tensor_label", "INSTALL_HINT"]

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


def _kind(t: Tensor, root: Tensor) -> str:
    if t is root:
        return "root"
    if t.grad_fn is None:
        return "param" if t.requires_grad else "data"
    return "inner"


def draw_graph(root: Tensor, show_grads: bool = False, show_data: bool = True,
               max_nodes: int = 60, rankdir: str = "LR",
               highlight: Iterable[Tensor] = (), done: Iterable[Tensor] = (),
               grads: dict[int, np.ndarray] | None = None, title: str | None = None) -> Graph:
    """A Graphviz drawing of everything ``root`` was computed from.

    Args:
        root: the tensor to draw back from (usually the loss).
        show_grads: add each tensor's ``.grad`` (or the entry of ``grads``) to its box.
        show_data: add small values (or the largest magnitude) to each box.
        max_nodes: at most this many tensors are drawn: those computed last.
            The rest are folded into one box that counts what it hides.
        rankdir: "LR" (left to right) or "TB" (top to bottom).
        highlight, done: tensors to colour as the current / finished node.
        grads: {topological index: gradient} to show instead of ``.grad`` (a tensor
            missing from it shows "grad None", whatever its ``.grad``).
        title: a caption under the graph.
    """
    order = topological_order(root)
    index = {id(t): i for i, t in enumerate(order)}
    hidden = order[:-max_nodes] if len(order) > max_nodes else []
    hidden_ids = {id(t) for t in hidden}
    focus = {id(t) for t in highlight}
    finished = {id(t) for t in done}

    g = Graph(graph_attr={"rankdir": rankdir, "fontname": "Helvetica", "fontsize": "11"},
              node_attr={"fontname": "Helvetica", "fontsize": "10"},
              edge_attr={"arrowsize": "0.6"})
    if title:
        g.attr(label=title, labelloc="b")

    if hidden:
        ops = Counter(t.op for t in hidden if t.op)
        summary = ", ".join(f"{op} x{n}" for op, n in sorted(ops.items()))
        g.node("hidden", f"{len(hidden)} earlier tensors not shown\n({summary or 'leaves'})",
               shape="note", style="filled", fillcolor="#f4f4f4")

    for t in order:
        i = index[id(t)]
        if id(t) in hidden_ids:
            continue
        fill = PALETTE["focus"] if id(t) in focus else (
            PALETTE["done"] if id(t) in finished else PALETTE[_kind(t, root)])
        grad = None if grads is None else grads.get(i)
        g.node(f"t{i}", tensor_label(t, i, grad, show_grads, show_data,
                                     fall_back_to_grad=grads is None), shape="box",
               style="filled,rounded", fillcolor=fill)
        if t.grad_fn is None:
            continue
        g.node(f"op{i}", t.op, shape="ellipse", style="filled", fillcolor=PALETTE["op"])
        g.edge(f"op{i}", f"t{i}")
        cut = False
        for p in t.parents:
            if id(p) in hidden_ids:
                cut = True
            else:
                g.edge(f"t{index[id(p)]}", f"op{i}")
        if cut:
            g.edge("hidden", f"op{i}", style="dashed")
    return g
