"""Optimisation passes over a traced :class:`~minigrad.trace.StaticGraph`.

Each pass takes a graph and returns a new one that computes the same outputs
(and, replayed, the same gradients) with fewer nodes. The original is never
changed. These are the textbook versions of what graph compilers (XLA,
TorchInductor, TVM) do first:

* ``eliminate_dead_code``: drop nodes (and constants) no output depends on;
* ``fold_constants``: a node whose arguments are all constants is computed
  once, now, and becomes a constant;
* ``eliminate_common_subexpressions``: two nodes with the same op, arguments
  and attributes compute the same value; keep the first;
* ``fuse_elementwise``: a chain of elementwise ops whose intermediate values
  have no other use becomes one node. Its forward makes one call where there
  were several; its backward recomputes the chain from the saved inputs, so the
  intermediates are never kept for backward (the trade TorchInductor makes for
  cheap pointwise ops).

``optimize(graph)`` runs them in that order, and dead-code elimination again at
the end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .function import Context, Function
from .tensor import Tensor
from .tracing import Node, StaticGraph

__all__ = ["FusedElementwise", "Step", "eliminate_dead_code", "fold_constants",
           "eliminate_common_subexpressions", "fuse_elementwise", "optimize", "DEFAULT_PASSES"]

def _copy(graph: StaticGraph, nodes: list[Node], constants: dict[int, np.ndarray],
          outputs: list[int]) -> StaticGraph:
    """The same graph (inputs, captured tensors, reads, output form) with new nodes."""
    return dataclasses.replace(graph, nodes=nodes, constants=constants, outputs=outputs)


# ------------------------------------------------------------ dead code

def eliminate_dead_code(graph: StaticGraph) -> StaticGraph:
    """Keep only the nodes and constants that some output depends on (``StaticGraph.prune``)."""
    return graph.prune()


# ------------------------------------------------------- constant folding

def fold_constants(graph: StaticGraph) -> StaticGraph:
    """Compute every node whose arguments are all constants, once, at compile time.

    The node's output becomes a constant slot; constants it no longer needs are
    left for ``eliminate_dead_code`` to drop.
    """
    constants = dict(graph.constants)
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.args and all(a in constants for a in node.args):
            ctx = Context(node.fn, (False,) * len(node.args))
            value = node.fn.forward(ctx, *(constants[a] for a in node.args), **node.attrs)
            constants[node.out] = np.asarray(value)
        else:
            nodes.append(node)
    return _copy(graph, nodes, constants, list(graph.outputs))


# ------------------------------------------------ common subexpressions

def _freeze(v: Any) -> Any:
    """A hashable stand-in for an attribute value (arrays by content)."""
    if isinstance(v, np.ndarray):
        return ("array", v.shape, v.dtype.str, v.tobytes())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple(sorted((k, _freeze(x)) for k, x in v.items())))
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))  # unknown and unhashable: never merged
    return v


def eliminate_common_subexpressions(graph: StaticGraph) -> StaticGraph:
    """Merge nodes that apply the same op to the same arguments with the same attributes.

    Only deterministic ops are recorded by ``trace`` (randomness enters as
    constants), so equal keys mean equal values.
    """
    seen: dict[tuple, int] = {}
    alias: dict[int, int] = {}
    nodes: list[Node] = []
    for node in graph.nodes:
        args = tuple(alias.get(a, a) for a in node.args)
        key = (node.fn, args, _freeze(node.attrs))
        if key in seen:
            alias[node.out] = seen[key]
            continue
        seen[key] = node.out
        nodes.append(Node(node.fn, args, dict(node.attrs), node.out))
    outputs = [alias.get(o, o) for o in graph.outputs]
    return _copy(graph, nodes, dict(graph.constants), outputs)


# ------------------------------------------------------ elementwise fusion

@dataclass(frozen=True)
class Step:
    """One op inside a fused node: ``local[k + j] = fn(local[args...], **attrs)``.

    Local slots 0..k-1 are the fused node's k inputs; step j writes slot k + j.
    """

    fn: type[Function]
    args: tuple[int, ...]
    attrs: tuple[tuple[str, Any], ...]


class FusedElementwise(Function):
    """Several elementwise ops run as one node; subclasses carry the ``program``.

    Forward runs the steps in order and saves only the node's inputs. Backward
    recomputes the steps (cheap: they are elementwise) and runs each step's own
    VJP in reverse, so the gradients are those of the unfused ops.
    """

    name = "fused"
    program: tuple[Step, ...] = ()

    @classmethod
    def _run(cls, arrays: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[Context]]:
        vals = list(arrays)
        ctxs = []
        for step in cls.program:
            c = Context(step.fn, (True,) * len(step.args))
            out = step.fn.forward(c, *(vals[a] for a in step.args), **dict(step.attrs))
            vals.append(out if type(out) is np.ndarray else np.asarray(out))
            ctxs.append(c)
        return vals, ctxs

    @classmethod
    def forward(cls, ctx: Context, *arrays: np.ndarray) -> np.ndarray:
        vals, _ = cls._run(arrays)
        ctx.save_for_backward(*arrays)  # inputs only: the intermediates are recomputed
        return vals[-1]

    @classmethod
    def backward(cls, ctx, g):
        if isinstance(g, Tensor):
            return cls._backward_differentiable(ctx, g)
        k = len(ctx.saved)
        vals, ctxs = cls._run(ctx.saved)
        grads: dict[int, Any] = {len(vals) - 1: g}
        for j in reversed(range(len(cls.program))):
            gj = grads.pop(k + j, None)
            if gj is None:
                continue
            step = cls.program[j]
            for a, ga in zip(step.args, step.fn.backward(ctxs[j], gj)):
                if ga is not None:
                    grads[a] = ga if a not in grads else grads[a] + ga
        return tuple(grads.get(i) if need else None
                     for i, need in enumerate(ctx.needs_input_grad))

    @classmethod
    def _backward_differentiable(cls, ctx, g: Tensor):
        """create_graph=True: replay the steps as recorded ops and differentiate them."""
        from .engine import grad

        vals = list(ctx.inputs)
        for step in cls.program:
            vals.append(step.fn.apply(*(vals[a] for a in step.args), **dict(step.attrs)))
        wanted = [i for i, (x, need) in enumerate(zip(ctx.inputs, ctx.needs_input_grad))
                  if need and x.requires_grad]
        gs = grad(vals[-1], [ctx.inputs[i] for i in wanted], grad_output=g,
                  create_graph=True, allow_unused=True) if wanted else ()
        out: list[Any] = [None] * len(ctx.inputs)
        for i, gi in zip(wanted, gs):
            out[i] = gi
        return tuple(out)


def _fused_class(program: tuple[Step, ...]) -> type[FusedElementwise]:
    label = "fused[" + ",".join(s.fn.name for s in program) + "]"
    return type("Fused", (FusedElementwise,), {"name": label, "program": program})


def fuse_elementwise(graph: StaticGraph) -> StaticGraph:
    """Merge chains of elementwise nodes whose intermediate values have one use.

    An op says whether it is elementwise (``Function.elementwise``: out[i] depends
    on in[i] only, with broadcasting); the pass asks it.

    A node joins the group that produced one of its arguments when that value is
    used by this node alone and is not a graph output. Groups of one node are
    left as they were.
    """
    uses: dict[int, int] = {}
    for node in graph.nodes:
        for a in node.args:
            uses[a] = uses.get(a, 0) + 1
    outputs = set(graph.outputs)

    group_of_value: dict[int, int] = {}   # value slot -> group id (the group's current output)
    members: dict[int, list[int]] = {}    # group id -> node indices
    for i, node in enumerate(graph.nodes):
        if not node.fn.elementwise:
            continue
        joined: list[int] = []
        for a in node.args:
            gid = group_of_value.get(a)
            if gid is not None and uses[a] == 1 and a not in outputs and gid not in joined:
                joined.append(gid)
        if not joined:
            gid = i
            members[gid] = [i]
        else:
            gid = joined[0]
            for other in joined[1:]:   # two chains meet here: one group
                members[gid].extend(members.pop(other))
            members[gid].append(i)
        for a in node.args:
            group_of_value.pop(a, None)
        group_of_value[node.out] = gid

    fused_at: dict[int, Node] = {}   # index of a group's last node -> the fused node
    dropped: set[int] = set()
    for idxs in members.values():
        if len(idxs) < 2:
            continue
        idxs = sorted(idxs)
        inside = {graph.nodes[i].out for i in idxs}
        inputs: list[int] = []
        for i in idxs:
            for a in graph.nodes[i].args:
                if a not in inside and a not in inputs:
                    inputs.append(a)
        local = {s: j for j, s in enumerate(inputs)}
        program = []
        for i in idxs:
            n = graph.nodes[i]
            program.append(Step(n.fn, tuple(local[a] for a in n.args), tuple(n.attrs.items())))
            local[n.out] = len(local)
        last = graph.nodes[idxs[-1]]
        fused_at[idxs[-1]] = Node(_fused_class(tuple(program)), tuple(inputs), {}, last.out)
        dropped.update(idxs[:-1])

    nodes = [fused_at.get(i, n) for i, n in enumerate(graph.nodes) if i not in dropped]
    return _copy(graph, nodes, dict(graph.constants), list(graph.outputs))


# ----------------------------------------------------------------- driver

DEFAULT_PASSES: tuple[Callable[[StaticGraph], StaticGraph], ...] = (
    eliminate_dead_code, fold_constants, eliminate_common_subexpressions, fuse_elementwise,
    eliminate_dead_code,
)


def optimize(graph: StaticGraph,
             passes: Sequence[Callable[[StaticGraph], StaticGraph]] = DEFAULT_PASSES) -> StaticGraph:
    """Run the passes in order; each returns a new graph."""
    for p in passes:
        graph = p(graph)
    return graph
