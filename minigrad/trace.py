"""Record a Python function once into a static graph, then replay it.

``trace(fn, *example_inputs)`` runs ``fn`` on the examples and writes down
every op it calls, in order. The result is a :class:`StaticGraph`: a list of
nodes that can run again on new inputs without the Python code, can be
printed, drawn, and rewritten by optimisation passes. This is the idea behind
TensorFlow 1.x graphs and ``torch.jit.trace``/``torch.compile``'s capture.

What tracing cannot see: Python control flow. An ``if`` or a loop that depends
on the data is run once, on the example, and only the branch taken is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .function import Function, _state
from .tensor import Tensor

__all__ = ["Node", "StaticGraph", "trace"]


@dataclass
class Node:
    """One recorded op call: ``values[out] = fn(values[args...], **attrs)``.

    ``args`` are value slots: an int indexes ``StaticGraph.values``. Slots 0..k-1
    are the graph's inputs; constants get slots of their own.
    """

    fn: type[Function]
    args: tuple[int, ...]
    attrs: dict[str, Any]
    out: int

    @property
    def name(self) -> str:
        return self.fn.name


@dataclass
class StaticGraph:
    n_inputs: int
    nodes: list[Node]
    constants: dict[int, np.ndarray]
    outputs: list[int]
    n_values: int = field(default=0)

    def __call__(self, *inputs: Any):
        """Replay on new inputs. Ops are applied to Tensors, so the result is differentiable."""
        if len(inputs) != self.n_inputs:
            raise TypeError(f"StaticGraph: expected {self.n_inputs} inputs, got {len(inputs)}")
        values: dict[int, Tensor] = {}
        for i, x in enumerate(inputs):
            values[i] = x if isinstance(x, Tensor) else Tensor(x)
        for slot, c in self.constants.items():
            values[slot] = Tensor._make(c, False, (), "", None)
        for node in self.nodes:
            values[node.out] = node.fn.apply(*(values[a] for a in node.args), **node.attrs)
        outs = [values[o] for o in self.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.name] = counts.get(n.name, 0) + 1
        return counts

    def __repr__(self) -> str:
        def ref(a: int) -> str:
            if a < self.n_inputs:
                return f"in{a}"
            if a in self.constants:
                c = self.constants[a]
                return f"const{tuple(c.shape)}" if c.size > 1 else f"{c.item():g}"
            return f"v{a}"

        lines = [f"StaticGraph(inputs={[f'in{i}' for i in range(self.n_inputs)]})"]
        for n in self.nodes:
            attrs = "".join(f", {k}={_short(v)}" for k, v in n.attrs.items())
            lines.append(f"  v{n.out} = {n.name}({', '.join(ref(a) for a in n.args)}{attrs})")
        lines.append(f"  return {', '.join(ref(o) for o in self.outputs)}")
        return "\n".join(lines)

    def draw(self):
        """A Graphviz drawing: inputs, constants and ops, in recorded order."""
        from .viz.graph import PALETTE, Graph

        g = Graph(graph_attr={"rankdir": "LR", "fontname": "Helvetica"},
                  node_attr={"fontname": "Helvetica", "fontsize": "10"})
        for i in range(self.n_inputs):
            g.node(f"v{i}", f"in{i}", shape="box", style="filled,rounded", fillcolor=PALETTE["param"])
        for slot, c in self.constants.items():
            label = f"const {tuple(c.shape)}" if c.size > 1 else f"{c.item():g}"
            g.node(f"v{slot}", label, shape="box", style="filled,rounded", fillcolor=PALETTE["data"])
        for n in self.nodes:
            g.node(f"v{n.out}", f"v{n.out} = {n.name}", shape="ellipse", style="filled",
                   fillcolor=PALETTE["root"] if n.out in self.outputs else PALETTE["op"])
            for a in n.args:
                g.edge(f"v{a}", f"v{n.out}")
        return g


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array{tuple(v.shape)}"
    return repr(v)


def trace(fn: Callable[..., Any], *example_inputs: Any) -> StaticGraph:
    """Run ``fn(*example_inputs)`` once and record every op into a StaticGraph."""
    inputs = [x if isinstance(x, Tensor) else Tensor(x) for x in example_inputs]
    log: list = []
    prev, _state.tracer = _state.tracer, log
    try:
        result = fn(*inputs)
    finally:
        _state.tracer = prev
    results: Sequence[Tensor] = result if isinstance(result, (tuple, list)) else [result]

    slot = {id(t): i for i, t in enumerate(inputs)}
    keep = list(inputs)  # keep tensors alive so ids stay unique while we map them
    constants: dict[int, np.ndarray] = {}
    nodes: list[Node] = []
    for cls, tensors, attrs, out in log:
        args = []
        for t in tensors:
            if id(t) not in slot:  # not an input, not made by a recorded op: a constant
                slot[id(t)] = len(slot)
                constants[slot[id(t)]] = t.data
                keep.append(t)
            args.append(slot[id(t)])
        slot[id(out)] = len(slot)
        keep.append(out)
        nodes.append(Node(cls, tuple(args), dict(attrs), slot[id(out)]))
    missing = [i for i, r in enumerate(results) if id(r) not in slot]
    if missing:
        raise ValueError(f"trace: output {missing[0]} was not computed by minigrad ops from the inputs")
    return StaticGraph(len(inputs), nodes, constants, [slot[id(r)] for r in results], len(slot))
