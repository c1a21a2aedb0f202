"""Optimisation passes, one set for traced graphs and compiled training steps.

Both kinds of program are rewritten by the same passes, written once over a
common IR: a :class:`Block` of :class:`Instr` statements in order. A
:class:`~minigrad.tracing.StaticGraph` (``trace``) is its forward ops, its
constants and its captured tensors; a compiled step's
:class:`~minigrad.compiling.Program` (``compile``) is the whole joint program:
forward ops, the VJPs the engine ran, the writes into ``.grad``, the
optimizer's update. Each pass takes either and returns a new one of the same
kind that computes the same outputs (and, for a traced graph replayed, the same
gradients); the original is never changed. These are the textbook versions of
what graph compilers (XLA, TorchInductor, TVM) do first:

* ``eliminate_dead_code``: drop statements nothing needs (no output, no effect,
  no VJP reading what an op saved);
* ``fold_constants``: an op whose arguments are all constants is computed
  once, now, and becomes a constant;
* ``eliminate_common_subexpressions``: equal small constants, and two ops with
  the same op, arguments and attributes, compute the same value; keep the first;
* ``fuse_elementwise``: a chain of elementwise ops whose intermediate values
  have no other use becomes one statement. In a traced graph it is one node
  whose backward recomputes the chain from the saved inputs, so the
  intermediates are never kept for backward (the trade TorchInductor makes for
  cheap pointwise ops). In a compiled step the chain's VJPs become one
  statement too, and the program computes the chain in one buffer.

``optimize(program)`` runs them in that order, and dead-code elimination again
at the end.

What the passes must respect is written into the statements, the same way for
both: an op whose context a VJP reads is not folded or merged away, a value an
in-place statement changes is made afresh on every call, and nothing moves
across a statement that writes arrays in place (``Instr.writes``).
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

__all__ = ["Instr", "Block", "Name", "FusedElementwise", "Step", "eliminate_dead_code", "fold_constants",
           "eliminate_common_subexpressions", "fuse_elementwise", "optimize", "DEFAULT_PASSES"]


# ====================================================================== the IR

@dataclasses.dataclass
class Instr:
    """One statement of a program.

    ``kind`` is one of ``"input"``, ``"tensor"`` (read an outside tensor's data),
    ``"op"`` (a forward op), ``"seed"``, ``"vjp"``, ``"sum"`` (the engine adding two
    gradients), ``"grad"`` (write ``.grad``), ``"zero"`` (``.grad = None``),
    ``"inplace"`` (an in-place op outside the graph), ``"random"``, ``"step"``
    (the optimizer's update), ``"wrap"`` or ``"const"`` (a constant, its value in
    the block's ``values`` under ``ref``). ``out`` are the names it defines,
    ``args`` the names it reads; ``fn`` is the op class (for ops and VJPs), ``ctx``
    the name of the op's context, ``attrs`` its keyword arguments, ``ref`` the
    outside object it touches, and ``how`` a detail. A traced graph uses the
    kinds ``"op"``, ``"const"`` and ``"tensor"``, with its slot numbers as names.
    """

    kind: str
    out: tuple[Any, ...]
    args: tuple[Any, ...] = ()
    fn: Any = None
    ctx: str | None = None
    attrs: dict = dataclasses.field(default_factory=dict)
    ref: Any = None
    how: Any = None

    @property
    def name(self) -> str:
        if self.kind in ("op", "vjp"):
            return self.fn.name + ("" if self.kind == "op" else "_vjp")
        return self.kind

    @property
    def effect(self) -> bool:
        """True for a line that changes something outside the program (never dead)."""
        return self.kind in ("grad", "zero", "inplace", "step", "random")

    @property
    def writes(self) -> bool:
        """True for a line that may change arrays in place: nothing moves across it."""
        return self.kind in ("inplace", "step")

    def reads(self) -> tuple:
        """The names it needs: its arguments, and for a VJP what its op saved (the context)."""
        return self.args + ((self.ctx,) if self.kind == "vjp" else ())

    def defines(self) -> tuple:
        """The names it makes: its results, and for an op its context."""
        return tuple(o for o in self.out if o is not None) + ((self.ctx,) if self.kind == "op" else ())


@dataclasses.dataclass(frozen=True)
class Name:
    """An attribute whose value is a name of the program (a step's input), not a constant."""
    name: str


def _elementwise(ins: Instr) -> bool:
    return ins.fn.elementwise


@dataclasses.dataclass
class Block:
    """The common IR the passes rewrite.

    ``instrs`` in order; ``live_out`` the names whose values the program's
    results need at the end (outputs, an input's final value); ``values`` the
    arrays of its ``"const"`` statements, by ``Instr.ref``; ``fusible`` says
    which ops the fusion pass may merge (a compiled step fuses what it writes
    out as NumPy); ``renamed`` the merges so far (name -> the name kept).
    """

    instrs: list[Instr]
    live_out: tuple
    values: dict
    fusible: Callable[[Instr], bool] = _elementwise
    renamed: dict = dataclasses.field(default_factory=dict)


def _on_block(graph, rewrite: Callable[[Block], Block]):
    """Run ``rewrite`` on the block of ``graph`` and give back the same kind of program."""
    if isinstance(graph, StaticGraph):
        return _graph_from_block(graph, rewrite(_graph_block(graph)))
    return graph.from_block(rewrite(graph.to_block()))


def _graph_block(g: StaticGraph) -> Block:
    instrs = [Instr("tensor", (s,), ref=s) for s in g.captured]
    instrs += [Instr("const", (s,), ref=s) for s in g.constants]
    instrs += [Instr("op", (n.out,), n.args, fn=n.fn, attrs=n.attrs) for n in g.nodes]
    return Block(instrs, tuple(g.outputs) + tuple(g.mutated.values()), dict(g.constants))


def _graph_from_block(g: StaticGraph, b: Block) -> StaticGraph:
    r = b.renamed
    nodes = [Node(i.fn, tuple(i.args), dict(i.attrs), i.out[0]) for i in b.instrs if i.kind == "op"]
    outputs = [r.get(o, o) for o in g.outputs]
    mutated = {k: r.get(v, v) for k, v in g.mutated.items()}
    live = set(outputs) | set(mutated.values()) | {a for n in nodes for a in n.args}
    reads: list[int] = []
    for x in g.reads:
        x = r.get(x, x)
        if x in live and x not in reads:
            reads.append(x)
    return dataclasses.replace(
        g, nodes=nodes, outputs=outputs, mutated=mutated, reads=reads,
        constants={i.out[0]: b.values[i.ref] for i in b.instrs if i.kind == "const"},
        captured={i.out[0]: g.captured[i.ref] for i in b.instrs if i.kind == "tensor"})


def _changed_in_place(instrs: list[Instr]) -> set:
    """The names an in-place statement writes into: their values are never shared or folded."""
    return {i.args[0] for i in instrs if i.kind == "inplace"}


def _saved_for_vjp(instrs: list[Instr]) -> set:
    """The contexts some VJP reads: their ops stay as they are."""
    return {i.ctx for i in instrs if i.kind == "vjp"}


# ------------------------------------------------------------ dead code

def _dead_code(b: Block) -> Block:
    live = set(b.live_out)
    kept = []
    for ins in reversed(b.instrs):
        if ins.effect or live.intersection(ins.defines()):
            kept.append(ins)
            live.update(ins.reads())
    kept.reverse()
    return dataclasses.replace(b, instrs=kept)


def eliminate_dead_code(graph):
    """Keep only what some output, effect or VJP needs (for a traced graph: ``StaticGraph.prune``)."""
    return _on_block(graph, _dead_code)


# ------------------------------------------------------- constant folding

def _names_in(attrs: dict) -> bool:
    return any(isinstance(v, Name) for v in attrs.values())


def _fold(b: Block) -> Block:
    changed = _changed_in_place(b.instrs)
    kept_ops = _saved_for_vjp(b.instrs)
    consts = {i.out[0]: b.values[i.ref] for i in b.instrs
              if i.kind == "const" and i.out[0] not in changed}
    values = dict(b.values)
    out = []
    for ins in b.instrs:
        if (ins.kind == "op" and ins.args and all(a in consts for a in ins.args)
                and ins.ctx not in kept_ops and ins.out[0] not in changed
                and not _names_in(ins.attrs)):
            ctx = Context(ins.fn, (False,) * len(ins.args))
            value = np.asarray(ins.fn.forward(ctx, *(consts[a] for a in ins.args), **ins.attrs))
            ref = f"K_{ins.out[0]}"
            values[ref] = consts[ins.out[0]] = value
            out.append(Instr("const", ins.out, ref=ref))
        else:
            out.append(ins)
    return dataclasses.replace(b, instrs=out, values=values)


def fold_constants(graph):
    """Compute every op whose arguments are all constants, once, at compile time.

    The op becomes a constant; constants it no longer needs are left for
    ``eliminate_dead_code`` to drop. An op whose context a VJP reads, or whose
    value an in-place statement changes later, stays.
    """
    return _on_block(graph, _fold)


# ------------------------------------------------ common subexpressions

def _freeze(v: Any) -> Any:
    """A hashable stand-in for an attribute value (arrays by identity: they may change)."""
    if isinstance(v, np.ndarray):
        return ("array", id(v))
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


_SMALL = 64  # constants of at most this many numbers are compared by value


def _cse(b: Block) -> Block:
    changed = _changed_in_place(b.instrs)
    kept_ops = _saved_for_vjp(b.instrs)
    seen: dict[Any, Any] = {}
    rename = dict(b.renamed)
    out = []
    for ins in b.instrs:
        if any(a in rename for a in ins.args):
            ins = dataclasses.replace(ins, args=tuple(rename.get(a, a) for a in ins.args))
        if ins.writes:  # it may change an array in place: nothing before it can be reused
            seen.clear()
        key = None
        if ins.kind == "const" and ins.out[0] not in changed:
            c = np.asarray(b.values[ins.ref])
            if c.size <= _SMALL:
                key = ("const", c.dtype.str, c.shape, c.tobytes())
        elif ins.kind == "op" and ins.ctx not in kept_ops and ins.out[0] not in changed:
            key = (ins.fn, ins.args, _freeze(ins.attrs))
        if key is not None:
            if key in seen:
                rename[ins.out[0]] = seen[key]
                continue
            seen[key] = ins.out[0]
        out.append(ins)
    live_out = tuple(rename.get(o, o) for o in b.live_out)
    return dataclasses.replace(b, instrs=out, live_out=live_out, renamed=rename)


def eliminate_common_subexpressions(graph):
    """Merge equal small constants, and ops applying the same op to the same arguments
    with the same attributes.

    Ops are deterministic (randomness enters as constants in a trace, as its own
    statement in a compiled step), so equal keys mean equal values. An op whose
    context a VJP reads is kept: its VJP reads that context.
    """
    return _on_block(graph, _cse)


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


def _uses(b: Block) -> dict:
    uses: dict[Any, int] = {}
    for ins in b.instrs:
        for a in ins.args:
            uses[a] = uses.get(a, 0) + 1
    return uses


def _groups(b: Block, uses: dict) -> list[list[int]]:
    """Chains of fusible ops, as indices into ``b.instrs``.

    An op joins the group that made one of its arguments when that value is
    used by this op alone and is not live at the end, and no statement that
    writes arrays in place lies between them.
    """
    live_out = set(b.live_out)
    changed = _changed_in_place(b.instrs)
    group_of_value: dict[Any, int] = {}   # value -> group id (the group's current output)
    members: dict[int, list[int]] = {}    # group id -> statement indices
    for i, ins in enumerate(b.instrs):
        if ins.writes:
            group_of_value.clear()
            continue
        if ins.kind != "op" or ins.out[0] in changed or not b.fusible(ins):
            continue
        joined: list[int] = []
        for a in ins.args:
            gid = group_of_value.get(a)
            if gid is not None and uses[a] == 1 and a not in live_out and gid not in joined:
                joined.append(gid)
        if not joined:
            gid = i
            members[gid] = [i]
        else:
            gid = joined[0]
            for other in joined[1:]:   # two chains meet here: one group
                members[gid].extend(members.pop(other))
            members[gid].append(i)
        for a in ins.args:
            group_of_value.pop(a, None)
        group_of_value[ins.out[0]] = gid
    return [sorted(m) for m in members.values() if len(m) >= 2]


def _fused_vjp(b: Block, nodes: list[Instr], cls, vjp_at: dict, uses: dict):
    """The one VJP statement of a fused chain, with the positions of the VJPs it replaces.

    ``(None, [])`` when no gradient flows through the chain; ``None`` when the
    VJPs are not the chain's own (then the chain is left as it was). The
    statement keeps every gradient the engine computed for the chain's inputs
    under its own name, so the sums the engine formed afterwards stay as they were.
    """
    if any(len(vjp_at.get(n.ctx, ())) > 1 for n in nodes):  # two backward passes: left alone
        return None
    vjps = [b.instrs[vjp_at[n.ctx][0]] if n.ctx in vjp_at else None for n in nodes]
    if not any(vjps):
        return None, []
    inside = {n.out[0]: j for j, n in enumerate(nodes)}
    for j, n in enumerate(nodes):            # each gradient inside the chain goes from one
        for k, a in enumerate(n.args):       # member's VJP straight into its producer's
            if a not in inside:
                continue
            gname = vjps[j].out[k] if vjps[j] is not None else None
            producer = vjps[inside[a]]
            if producer is None:
                if gname is not None:
                    return None
            elif gname is None or producer.args[0] != gname or uses.get(gname) != 1:
                return None
    if vjps[-1] is None:
        return None
    at = sorted(vjp_at[n.ctx][0] for n, v in zip(nodes, vjps) if v is not None)
    if any(b.instrs[p].writes for p in range(at[0], at[-1] + 1)):
        return None
    outs = tuple(vjps[j].out[k] for j, n in enumerate(nodes) for k, a in enumerate(n.args)
                 if a not in inside and vjps[j] is not None and vjps[j].out[k] is not None)
    members = tuple(b.instrs[p] for p in at)  # in the order the engine ran them
    return Instr("vjp", outs, (vjps[-1].args[0],), fn=cls, ctx=nodes[-1].ctx,
                 how={"members": members}), at


def _fuse(b: Block) -> Block:
    uses = _uses(b)
    vjp_at: dict[Any, list[int]] = {}   # context -> the positions of the VJPs that read it
    for k, ins in enumerate(b.instrs):
        if ins.kind == "vjp":
            vjp_at.setdefault(ins.ctx, []).append(k)
    put: dict[int, Instr] = {}   # index -> the statement that replaces what was there
    dropped: set[int] = set()
    for idxs in _groups(b, uses):
        nodes = [b.instrs[i] for i in idxs]
        inside = {n.out[0] for n in nodes}
        inputs: list[Any] = []
        for n in nodes:
            for a in n.args:
                if a not in inside and a not in inputs:
                    inputs.append(a)
        local = {s: j for j, s in enumerate(inputs)}
        program = []
        for n in nodes:
            program.append(Step(n.fn, tuple(local[a] for a in n.args), tuple(n.attrs.items())))
            local[n.out[0]] = len(local)
        cls = _fused_class(tuple(program))
        made = _fused_vjp(b, nodes, cls, vjp_at, uses)
        if made is None:
            continue
        vjp, at = made
        put[idxs[-1]] = Instr("op", nodes[-1].out, tuple(inputs), fn=cls, ctx=nodes[-1].ctx,
                              how={"members": tuple(nodes)})
        dropped.update(idxs[:-1])
        if vjp is not None:
            put[at[0]] = vjp
            dropped.update(at[1:])
    instrs = [put.get(i, ins) for i, ins in enumerate(b.instrs) if i not in dropped]
    return dataclasses.replace(b, instrs=instrs)


def fuse_elementwise(graph):
    """Merge chains of elementwise ops whose intermediate values have one use.

    An op says whether it is elementwise (``Function.elementwise``: out[i]
    depends on in[i] only, with broadcasting); the pass asks it. A compiled
    step fuses only the ops it writes out as NumPy, and fuses their VJPs with
    them. An op joins the group that produced one of its arguments when that
    value is used by this op alone and is not an output. Groups of one op are
    left as they were.
    """
    return _on_block(graph, _fuse)


# ----------------------------------------------------------------- driver

DEFAULT_PASSES: tuple[Callable, ...] = (
    eliminate_dead_code, fold_constants, eliminate_common_subexpressions, fuse_elementwise,
    eliminate_dead_code,
)


def optimize(graph, passes: Sequence[Callable] = DEFAULT_PASSES):
    """Run the passes in order on a traced graph or a compiled step's program; each returns a new one."""
    for p in passes:
        graph = p(graph)
    return graph
