"""The backward pass one node at a time, drawn as a strip of frames.

``backward_steps(loss)`` runs the real engine (``minigrad.grad`` with
``retain_graph=True``, so no ``.grad`` is set and nothing is freed) and watches
it through its hook (``minigrad.op_hook``'s ``"backward"`` and ``"accumulate"``
events): every node the engine processes becomes one step, in the engine's own
order. Each step is one frame: a drawing of the whole graph in which

* the node being processed is orange, with a thick border: every consumer has
  already sent its part, so its gradient is complete;
* the nodes processed earlier are green, with a dashed border;
* every box shows the gradient known *so far*; a box with a plain border that
  shows a gradient is still waiting for more contributions.

(The real engine also frees each intermediate gradient as soon as it is used;
the frames keep them all on show.)

The frames are plain Graphviz drawings (:class:`minigrad.viz.Graph`), so a
saved notebook shows them without JavaScript or widgets: display them in
sequence with ``steps.show()`` (or by making ``steps`` a cell's last line), or
one at a time with ``steps.frame(k)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine import grad as engine_grad
from ..function import AccumulateGrad, gradient_edge
from ..hooks import op_hook
from ..tensor import Tensor
from .graph import Graph, draw_graph, graph_view

__all__ = ["Step", "BackwardSteps", "backward_steps"]

# What the states mean in a frame (the legend under it gives each its colour and border).
MEANINGS = {"focus": "this step", "done": "finished", "others": "gradient so far"}


@dataclass(frozen=True)
class Step:
    """One node processed by the backward pass.

    Fields:
        number: 1, 2, ... in the order the engine processes nodes.
        index: the node's topological index (its box is ``t{index}``).
        name: the node's name, or ``t{index}``.
        op: the op that made the node ("" for a leaf).
        inputs: topological indices of the node's input nodes, in operand order.
        args: the names of all its operands, constants (which have no node) included.
        sends_to: topological indices of the inputs its VJP added a gradient into.
        grads: {topological index: gradient} known after this step.
    """

    number: int
    index: int
    name: str
    op: str
    inputs: tuple[int, ...]
    args: tuple[str, ...]
    sends_to: tuple[int, ...]
    grads: dict[int, np.ndarray] = field(repr=False)

    def describe(self, names: dict[int, str]) -> str:
        if not self.op:
            return f"{self.name} is a leaf: its gradient is complete and goes into .grad"
        targets = ", ".join(names[i] for i in self.sends_to) or "nothing (no input needs a gradient)"
        args = ", ".join(self.args)
        return f"{self.name} = {self.op}({args}) has its full gradient; its VJP adds into {targets}"


def _constant_name(t) -> str:
    """How a step names an operand that needs no gradient (it has no node)."""
    if t is None:
        return "a constant"
    if t.name:
        return t.name
    return f"{t.data.item():g}" if t.data.size == 1 else f"a constant {tuple(t.shape)}"


class BackwardSteps:
    """The steps of one backward pass from ``root``, and a frame for each.

    Attributes:
        root: the tensor the pass starts from.
        order: every node ``root`` depends on, in topological order.
        steps: one :class:`Step` per node that receives a gradient, in the
            order the engine processes them.
    """

    def __init__(self, root: Tensor, grad: Any = None, show_data: bool = True,
                 max_nodes: int = 60, rankdir: str = "LR"):
        if not isinstance(root, Tensor):
            raise TypeError(f"backward_steps: expected a Tensor, got {type(root).__name__}")
        if not root.requires_grad:
            raise RuntimeError(
                f"backward_steps: the tensor (shape {root.shape}) does not require grad, so a "
                f"backward pass has nothing to do")
        self.root = root
        self.show_data, self.max_nodes, self.rankdir = show_data, max_nodes, rankdir
        self.order, index = graph_view(root)
        self.names = {}
        for i, node in enumerate(self.order):
            t = node.output
            self.names[i] = (t.name if t is not None and t.name else None) or f"t{i}"
        leaves = [n.variable for n in self.order if isinstance(n, AccumulateGrad)]
        grads: dict[int, np.ndarray] = {}
        self.steps: list[Step] = []

        def watch(event, fn, in_grads, node, attrs):
            if event not in ("backward", "accumulate"):
                return
            i = index[id(node)]
            if not grads:  # the first node is the root: it received the seed
                grads[i] = np.array(attrs["grad"])
            sends: list[int] = []
            for p, pg in zip(node.parents, in_grads):
                if p is None or pg is None:
                    continue
                j = index[id(p)]
                grads[j] = np.array(pg) if j not in grads else grads[j] + pg
                if j not in sends:
                    sends.append(j)
            inputs = tuple(index[id(p)] for p in node.parents if p is not None)
            op = "" if isinstance(node, AccumulateGrad) else node.name
            args = tuple(self.names[index[id(p)]] if p is not None else _constant_name(t)
                         for p, t in zip(node.parents, node.inputs))
            self.steps.append(Step(len(self.steps) + 1, i, self.names[i], op, inputs, args,
                                   tuple(sends), dict(grads)))

        try:
            with op_hook(watch):
                engine_grad(root, leaves, grad_output=grad, retain_graph=True, allow_unused=True)
        except (RuntimeError, ValueError, TypeError) as e:
            raise type(e)(f"backward_steps: {str(e).removeprefix('backward: ')}") from None

    # ------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.steps)

    @property
    def final_grads(self) -> dict[int, np.ndarray]:
        """{topological index: gradient} once every step is done."""
        return dict(self.steps[-1].grads) if self.steps else {}

    def grad_of(self, t: Tensor) -> np.ndarray | None:
        """The gradient the pass gives ``t`` (None if it gets none)."""
        e = gradient_edge(t)
        for i, node in enumerate(self.order):
            if node is e:
                return self.final_grads.get(i)
        raise ValueError(f"backward_steps: the tensor of shape {t.shape} is not in this graph")

    def table(self) -> str:
        """One line per step: which node is processed and where its gradient goes."""
        width = len(str(len(self)))
        return "\n".join(f"step {s.number:>{width}}: {s.describe(self.names)}" for s in self.steps)

    # ------------------------------------------------------------ drawing
    def frame(self, number: int) -> Graph:
        """The drawing of step ``number`` (1 .. len(self))."""
        if not 1 <= number <= len(self):
            raise IndexError(f"backward_steps: step {number} does not exist; there are "
                             f"{len(self)} steps, numbered 1 to {len(self)}")
        s = self.steps[number - 1]
        done = [self.order[p.index] for p in self.steps[:number - 1]]
        title = f"step {number} of {len(self)}: {s.describe(self.names)}"
        return draw_graph(self.root, show_grads=True, show_data=self.show_data,
                          max_nodes=self.max_nodes, rankdir=self.rankdir,
                          highlight=[self.order[s.index]], done=done, grads=s.grads, title=title,
                          legend=MEANINGS)

    def frames(self) -> list[Graph]:
        return [self.frame(k) for k in range(1, len(self) + 1)]

    def show(self, first: int = 1, last: int | None = None) -> None:
        """Display frames ``first`` .. ``last`` one after the other (in a notebook)."""
        from IPython.display import display

        last = len(self) if last is None else last
        for k in range(first, last + 1):
            display(self.frame(k))

    def _ipython_display_(self) -> None:
        self.show()

    def __repr__(self) -> str:
        return f"BackwardSteps({len(self)} steps)\n{self.table()}"


def backward_steps(root: Tensor, grad: Any = None, show_data: bool = True,
                   max_nodes: int = 60, rankdir: str = "LR") -> BackwardSteps:
    """Work out the backward pass from ``root`` one node at a time, for drawing.

    Args:
        root: the tensor to backpropagate from (usually the loss).
        grad: dL/droot; may be left out when root has one element (then 1).
        show_data, max_nodes, rankdir: passed on to :func:`draw_graph` for every frame.

    Returns a :class:`BackwardSteps`: ``len()`` steps, ``.table()`` in words,
    ``.frame(k)`` the drawing of step k, ``.show()`` every frame in turn,
    ``.final_grads`` what a real backward would give. The graph is not changed.
    """
    return BackwardSteps(root, grad, show_data=show_data, max_nodes=max_nodes, rankdir=rankdir)
