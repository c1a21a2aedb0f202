"""The backward pass one node at a time, drawn as a strip of frames.

``backward_steps(loss)`` works out what ``loss.backward()`` would do, step by
step, without doing it: it walks the graph in the engine's order (reverse
topological), and at each node that has a gradient it calls the node's VJP on
a copy of what the node saved. Each step becomes one frame: a drawing of the
whole graph in which

* the node being processed is orange: every consumer has already sent its
  part, so its gradient is complete;
* the nodes processed earlier are green;
* every box shows the gradient known *so far*; a box that is neither orange nor
  green and shows a gradient is still waiting for more contributions.

The graph is only read: nothing is released, no ``.grad`` is set, saved values
are copied before a VJP sees them. (The real engine also frees each
intermediate gradient as soon as it is used; the frames keep them all on show.)

The frames are plain Graphviz drawings (:class:`minigrad.viz.Graph`), so a
saved notebook shows them without JavaScript or widgets: display them in
sequence with ``steps.show()`` (or by making ``steps`` a cell's last line), or
one at a time with ``steps.frame(k)``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine import _check_node, topological_order
from ..function import no_grad
from ..tensor import Tensor
from .graph import Graph, draw_graph

__all__ = ["Step", "BackwardSteps", "backward_steps"]

LEGEND = "orange: this step   green: finished   others: gradient so far"


@dataclass(frozen=True)
class Step:
    """One node processed by the backward pass.

    Fields:
        number: 1, 2, ... in the order the engine processes nodes.
        index: the node's topological index (its box is ``t{index}``).
        name: the node's name, or ``t{index}``.
        op: the op that made the node ("" for a leaf).
        inputs: topological indices of the node's inputs, in operand order.
        sends_to: topological indices of the inputs its VJP added a gradient into.
        grads: {topological index: gradient} known after this step.
    """

    number: int
    index: int
    name: str
    op: str
    inputs: tuple[int, ...]
    sends_to: tuple[int, ...]
    grads: dict[int, np.ndarray] = field(repr=False)

    def describe(self, names: dict[int, str]) -> str:
        if not self.op:
            return f"{self.name} is a leaf: its gradient is complete and goes into .grad"
        targets = ", ".join(names[i] for i in self.sends_to) or "nothing (no input needs a gradient)"
        args = ", ".join(names[i] for i in self.inputs)
        return f"{self.name} = {self.op}({args}) has its full gradient; its VJP adds into {targets}"


def _seed(root: Tensor, grad: Any) -> np.ndarray:
    if grad is None:
        if root.data.size != 1:
            raise RuntimeError(
                f"backward_steps: grad can be left out only for a tensor with one element; "
                f"this one has shape {root.shape}")
        return np.ones_like(root.data)
    g0 = np.array(grad.data if isinstance(grad, Tensor) else grad, dtype=root.dtype)
    if g0.shape != root.shape:
        raise ValueError(f"backward_steps: grad has shape {g0.shape} but the tensor has shape {root.shape}")
    return g0


def _vjp_on_copies(node: Tensor, g: np.ndarray) -> tuple:
    """The node's VJP, called on a copy of its ctx whose saved arrays are copies too."""
    ctx = copy.copy(node.grad_fn)
    ctx.saved = tuple(v.copy() if isinstance(v, np.ndarray) else v for v in ctx.saved)
    with no_grad():
        return ctx.fn.backward(ctx, g.copy())


class BackwardSteps:
    """The steps of one backward pass from ``root``, and a frame for each.

    Attributes:
        root: the tensor the pass starts from.
        order: every tensor ``root`` depends on, in topological order.
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
        self.order = topological_order(root)
        for node in self.order:
            if node.grad_fn is not None:
                try:
                    _check_node(node)
                except RuntimeError as e:
                    raise RuntimeError(f"backward_steps: {str(e).removeprefix('backward: ')}") from None
        index = {id(t): i for i, t in enumerate(self.order)}
        self.names = {i: t.name or f"t{i}" for i, t in enumerate(self.order)}

        grads: dict[int, np.ndarray] = {index[id(root)]: _seed(root, grad)}
        self.steps: list[Step] = []
        for node in reversed(self.order):
            i = index[id(node)]
            if i not in grads:
                continue
            sends: list[int] = []
            if node.grad_fn is not None:
                in_grads = _vjp_on_copies(node, grads[i])
                for k, (p, pg) in enumerate(zip(node.parents, in_grads)):
                    if pg is None or not p.requires_grad:
                        continue
                    if pg.shape != p.shape:
                        raise RuntimeError(
                            f"backward_steps: '{node.op}' backward returned a gradient of shape "
                            f"{pg.shape} for its input {k} of shape {p.shape}")
                    j = index[id(p)]
                    grads[j] = np.array(pg) if j not in grads else grads[j] + pg
                    if j not in sends:
                        sends.append(j)
            inputs = tuple(index[id(p)] for p in node.parents)
            self.steps.append(Step(len(self.steps) + 1, i, self.names[i], node.op, inputs,
                                   tuple(sends), dict(grads)))

    # ------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.steps)

    @property
    def final_grads(self) -> dict[int, np.ndarray]:
        """{topological index: gradient} once every step is done."""
        return dict(self.steps[-1].grads) if self.steps else {}

    def grad_of(self, t: Tensor) -> np.ndarray | None:
        """The gradient the pass gives ``t`` (None if it gets none)."""
        for i, u in enumerate(self.order):
            if u is t:
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
        title = f"step {number} of {len(self)}: {s.describe(self.names)}\n{LEGEND}"
        return draw_graph(self.root, show_grads=True, show_data=self.show_data,
                          max_nodes=self.max_nodes, rankdir=self.rankdir,
                          highlight=[self.order[s.index]], done=done, grads=s.grads, title=title)

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
