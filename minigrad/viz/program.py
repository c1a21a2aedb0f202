"""Draw a compiled step (``minigrad.compile``): forward, backward and update as one graph.

Each line of the program is a node, coloured by its part of the step and drawn
with that part's border (a legend under the drawing names both); an edge
runs from the line that defines a value to each line that reads it, and a
dashed edge from a forward op to its VJP, which reads what the op saved. Nodes
are named by their line number, so the DOT source is the same on every run.
Drawing only reads the program.
"""

from __future__ import annotations

from .graph import CUES, PALETTE, Graph, legend_text, node_style

__all__ = ["draw_program", "PHASE_COLORS", "PHASE_CUES", "PHASE_LEGEND"]

PHASE_COLORS = {
    "input": PALETTE["data"],     # the step's inputs, parameters and data read from outside
    "forward": PALETTE["op"],
    "backward": "#f4cccc",        # seeds, VJPs and the engine's sums
    "update": "#c8f0c8",          # .grad written, zero_grad, the optimizer's step
    "random": "#e3d7f5",
}
# Each part's cue besides its colour (as minigrad.viz.graph.CUES gives a graph's states theirs).
PHASE_CUES = {
    "input": CUES["data"],             # dotted, as a graph's inputs that need no gradient
    "forward": {},
    "backward": {"style": "dashed"},
    "update": {"penwidth": "2"},
    "random": {"peripheries": "2"},
}
PHASE_LEGEND = {
    "input": ("grey", "dotted", "inputs"),
    "forward": ("yellow", "", "forward"),
    "backward": ("red", "dashed", "backward"),
    "update": ("green", "bold", "update"),
    "random": ("purple", "double border", "random draws"),
}

_PHASE = {"input": "input", "tensor": "input", "wrap": "input", "const": "input",
          "op": "forward", "random": "random", "inplace": "forward",
          "seed": "backward", "vjp": "backward", "sum": "backward",
          "grad": "update", "zero": "update", "step": "update"}


def _label(ins) -> str:
    if ins.kind == "tensor":
        return f"{ins.out[0]}\n{ins.how}"
    if ins.kind in ("op", "vjp"):
        outs = ", ".join(o for o in ins.out if o) or "-"
        return f"{outs} = {ins.name}"
    if ins.kind == "grad":
        return f"{ins.ref}.grad = {ins.args[0]}"
    if ins.kind == "zero":
        return f"{ins.ref}.grad = None"
    if ins.kind == "step":
        return f"{ins.how.split(':')[0]}.step\n(update in place)"
    if ins.kind == "seed":
        return f"{ins.out[0]} = 1 (seed)"
    if ins.out:
        return f"{', '.join(ins.out)} = {ins.kind}"
    return ins.kind


def draw_program(program, title: str | None = None, show_inputs: bool = True, legend: bool = True) -> Graph:
    """A Graphviz drawing of a :class:`~minigrad.compiling.Program` (``compiled.program``).

    Under it, the title and a legend of the parts shown (``legend=False`` leaves it out).

    ``show_inputs=False`` leaves out the lines that read inputs, parameters and data,
    and ``zero_grad``'s, so that the forward, backward and update lines stand out.
    """
    g = Graph(graph_attr={"rankdir": "TB", "fontname": "Helvetica", "fontsize": "11"},
              node_attr={"fontname": "Helvetica", "fontsize": "10"},
              edge_attr={"arrowsize": "0.6"})
    shown: set[str] = set()
    where: dict[str, str] = {}
    ctx_of: dict[str, str] = {}
    step_node = None
    grads: list[str] = []
    for k, ins in enumerate(program.instrs):
        phase = _PHASE[ins.kind]
        if not show_inputs and (phase == "input" or ins.kind == "zero"):
            continue
        node = f"i{k}"
        shape = "box" if phase == "input" else ("note" if ins.kind == "step" else "ellipse")
        shown.add(phase)
        g.node(node, _label(ins), shape=shape,
               **node_style(phase, base="filled,rounded" if shape == "box" else "filled",
                            fills=PHASE_COLORS, cues=PHASE_CUES))
        for a in ins.args:
            if a in where:
                g.edge(where[a], node)
        if ins.kind == "op":
            ctx_of[ins.ctx] = node
        if ins.kind == "vjp" and ins.ctx in ctx_of:
            g.edge(ctx_of[ins.ctx], node, style="dashed", color="#999999", constraint="false")
        if ins.kind == "grad":
            grads.append(node)
        if ins.kind == "step":
            step_node = node
        for o in ins.out:
            if o:
                where[o] = node
    if step_node is not None:  # the update reads every .grad written before it
        for n in grads:
            g.edge(n, step_node, style="dotted")
    caption = [title] if title else []
    if legend and shown:
        caption.append(legend_text(shown, words=PHASE_LEGEND))
    if caption:
        g.attr(label="\n".join(caption), labelloc="b")
    return g
