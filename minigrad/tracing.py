"""Record a Python function once into a static graph, then replay it.

``trace(fn, *example_inputs)`` runs ``fn`` on the examples and writes down
every op it calls, in order. The result is a :class:`StaticGraph`: a list of
nodes that can run again on new inputs without the Python code, can be
printed, drawn, and rewritten by passes such as :meth:`StaticGraph.prune`. This
is the idea behind TensorFlow 1.x graphs and ``torch.jit.trace``, and the
capture step of ``torch.compile``.

A value the function uses without computing it from the inputs is *captured*:

* a tensor that requires grad (a parameter) is kept **by reference**, so a
  replay reads its current value and backward reaches its ``.grad``, like a
  TensorFlow ``Variable``;
* anything else (numbers, arrays, data tensors) is copied **by value** into a
  constant, frozen as it was while tracing.

What tracing cannot see is Python itself. An ``if`` or a loop whose outcome
depends on the data runs once, on the example, and only the branch taken is
recorded. The graph notes every ``.item()`` / ``.numpy()`` call made while
tracing (``StaticGraph.reads``): each is a place where a value left the graph
and Python may have branched on it, including a read of ``.data`` or a truth
value (``if t:``) in the function's own code.

A trace never replays something other than what eager would do:

* an in-place op (``x.add_(1)``, ``x[0] = 5``) is recorded as its out-of-place
  op, and later uses see the new value; when the changed tensor is an input,
  the replay writes the final value back into it, as eager would;
* a Python number read from a shape (``x.shape[0]``, ``len(x)``) is frozen into
  the graph, so a graph that read one refuses to replay on other input shapes;
* dropout, and anything else that draws random numbers, is refused (a replay
  would reuse one frozen mask); so are ``backward()``, ``minigrad.grad()`` and
  an optimizer's ``step()``: a whole training step is what ``minigrad.compile``
  captures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import capture as _capture
from .function import Function, _user_frame, no_grad
from .hooks import op_hook
from .tensor import Tensor

__all__ = ["Node", "StaticGraph", "trace"]


@dataclass
class Node:
    """One recorded op call: ``values[out] = fn(values[args...], **attrs)``.

    ``args`` are value slots: an int indexes the graph's values. Slots
    ``0..n_inputs-1`` are the graph's inputs; constants and captured tensors get
    slots of their own, and so does every node's output.
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
    """A recorded function: inputs, constants, captured tensors, nodes in order, outputs.

    Calling it replays the nodes on new inputs. The ops are applied to Tensors,
    so the result is differentiable exactly as the eager result would be.
    """

    n_inputs: int
    nodes: list[Node]
    constants: dict[int, np.ndarray]
    outputs: list[int]
    n_values: int = 0
    captured: dict[int, Tensor] = field(default_factory=dict)
    reads: list[int] = field(default_factory=list)
    single_output: bool = True
    #: the inputs' shapes while tracing, and where the function read a shape (then they must match)
    input_shapes: list[tuple] = field(default_factory=list)
    shape_reads: list[str] = field(default_factory=list)
    #: input index -> the slot of its final value, for inputs the function changed in place
    mutated: dict[int, int] = field(default_factory=dict)

    def __call__(self, *inputs: Any):
        """Replay on new inputs (Tensors or arrays), without running the Python function."""
        if len(inputs) != self.n_inputs:
            raise TypeError(f"StaticGraph: expected {self.n_inputs} inputs, got {len(inputs)}")
        values: dict[int, Tensor] = {}
        for i, x in enumerate(inputs):
            values[i] = x if isinstance(x, Tensor) else Tensor(x)
        if self.shape_reads:
            shapes = [tuple(values[i].data.shape) for i in range(self.n_inputs)]
            if shapes != self.input_shapes:
                raise ValueError(
                    f"StaticGraph: traced on input shapes {self.input_shapes}, called on {shapes}; "
                    f"the traced function read a shape into Python ({self.shape_reads[0]}), so the "
                    f"graph holds numbers of the old shapes. Trace it again on inputs of the new "
                    f"shapes (or use minigrad.compile, which re-captures when a shape changes).")
        for slot, c in self.constants.items():
            values[slot] = Tensor._make(c, False)
        values.update(self.captured)
        for node in self.nodes:
            args = [values[a] for a in node.args]
            try:
                values[node.out] = node.fn.apply(*args, **node.attrs)
            except (ValueError, IndexError, TypeError) as e:
                shapes = ", ".join(str(tuple(a.shape)) for a in args)
                raise type(e)(f"StaticGraph: replaying v{node.out} = {node.name}"
                              f"({self._refs(node.args)}) on shapes {shapes} failed: {e}") from None
        if self.mutated:
            with no_grad():  # the function changed these inputs in place: so does its replay
                for i, final in self.mutated.items():
                    values[i][...] = values[final].data
        outs = [values[o] for o in self.outputs]
        return outs[0] if self.single_output else tuple(outs)

    # ----------------------------------------------------------- inspection
    def op_counts(self) -> dict[str, int]:
        """How many times each op occurs, in order of first appearance."""
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.name] = counts.get(n.name, 0) + 1
        return counts

    def prune(self) -> StaticGraph:
        """A copy without the nodes no output depends on (dead-code elimination).

        Slots keep their numbers, so the pruned graph's listing lines up with the
        original's. A static graph can do this because it sees the whole program.
        """
        live = set(self.outputs) | set(self.mutated.values())  # an input's final value is an effect
        kept: list[Node] = []
        for n in reversed(self.nodes):
            if n.out in live:
                kept.append(n)
                live.update(n.args)
        kept.reverse()
        return StaticGraph(self.n_inputs, kept,
                           {s: c for s, c in self.constants.items() if s in live},
                           list(self.outputs), self.n_values,
                           {s: t for s, t in self.captured.items() if s in live},
                           [r for r in self.reads if r in live], self.single_output,
                           list(self.input_shapes), list(self.shape_reads), dict(self.mutated))

    def _ref(self, a: int) -> str:
        if a < self.n_inputs:
            return f"in{a}"
        if a in self.constants:
            c = self.constants[a]
            return f"const{tuple(c.shape)}" if c.size != 1 else f"{c.item():g}"
        if a in self.captured:
            t = self.captured[a]
            return t.name or f"param{tuple(t.shape)}"
        return f"v{a}"

    def _refs(self, args) -> str:
        return ", ".join(self._ref(a) for a in args)

    def __repr__(self) -> str:
        lines = [f"StaticGraph(inputs={[f'in{i}' for i in range(self.n_inputs)]})"]
        for n in self.nodes:
            attrs = "".join(f", {k}={_short(v)}" for k, v in n.attrs.items())
            lines.append(f"  v{n.out} = {n.name}({self._refs(n.args)}{attrs})")
        lines.append(f"  return {', '.join(self._ref(o) for o in self.outputs)}")
        for r in self.reads:
            lines.append(f"  # {self._ref(r)} was read into Python while tracing: "
                         f"control flow that depended on it is frozen")
        for i, final in self.mutated.items():
            lines.append(f"  # in{i} is changed in place: it ends as {self._ref(final)}")
        if self.shape_reads:
            lines.append(f"  # a shape was read into Python ({self.shape_reads[0]}): "
                         f"replays need the input shapes {self.input_shapes}")
        return "\n".join(lines)


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array{tuple(v.shape)}"
    return repr(v)


def _describe(r: Any) -> str:
    if isinstance(r, Tensor):
        return f"a Tensor of shape {r.shape} made outside the recorded ops"
    if isinstance(r, np.ndarray):
        return f"a NumPy array of shape {r.shape}"
    return f"a {type(r).__name__}"


def _refuse(what: str, why: str = "A static graph records the forward ops only, so a replay "
                                   "would silently skip this.") -> RuntimeError:
    return RuntimeError(
        f"trace: the traced function {what} at {_user_frame()}. {why} To capture a whole "
        f"training step (forward, backward, the optimizer's update, fresh random numbers) use "
        f"minigrad.compile(step); otherwise trace only a deterministic forward computation.")


def trace(fn: Callable[..., Any], *example_inputs: Any) -> StaticGraph:
    """Run ``fn(*example_inputs)`` once and record every op into a StaticGraph.

    ``fn`` takes Tensors and returns a Tensor or a tuple/list of Tensors, each
    computed by minigrad ops (or one of the inputs itself). Arrays among the
    examples are wrapped as Tensors first.
    """
    inputs = [x if isinstance(x, Tensor) else Tensor(x) for x in example_inputs]
    log: list = []
    pending: list = []  # the tensor an in-place op that records a node is changing
    shape_reads: list[str] = []
    me = threading.get_ident()

    def record(event, op, tensors, out, attrs):
        if event == "forward":
            log.append((op, tensors, attrs, out))
            if pending and tensors and tensors[0] is pending[-1]:
                log.append(("alias", pending.pop(), out))  # x.add_(1) records x_new = add(x, 1)
        elif event == "read":
            log.append(("read", tensors[0], _user_frame()))
        elif event == "backward":
            raise _refuse("runs a backward pass (backward() or minigrad.grad())")
        elif event == "reused":
            raise _refuse("reuses kept outputs (a selective recomputation)")

    def observe(kind, *args):
        if threading.get_ident() != me:  # another thread's optimizer or dropout
            return
        if kind == "step":
            raise _refuse(f"calls {type(args[0]).__name__}.step()")
        if kind == "random":
            raise _refuse("draws random numbers (dropout)",
                          "A static graph would keep this one draw as a constant, so every "
                          "replay would drop the same units.")

    def report(kind, t, *details):
        if kind == "read":
            log.append(("read", t, _user_frame()))
        elif kind == "shape":
            shape_reads.append(f"{details[0]} at {_user_frame()}")
        elif kind == "inplace":
            what, op, value, attrs = details
            from .function import is_grad_enabled
            value_grad = isinstance(value, Tensor) and value.requires_grad
            if is_grad_enabled() and (t.requires_grad or value_grad):
                pending.append(t)  # recorded as a node; the forward event follows
            else:
                if t._view is not None:
                    raise _refuse(f"changes a view ({t.op}) in place with {what} outside the graph")
                if not isinstance(value, Tensor):
                    value = Tensor._make(np.array(value, dtype=t.dtype))
                log.append(("inplace", t, op, value, dict(attrs)))

    record.is_trace = True  # checkpoint refuses to be traced
    _capture.observers.append(observe)
    try:
        with op_hook(record), _capture.watch(report):
            result = fn(*inputs)
    finally:
        _capture.observers.remove(observe)
    single = not isinstance(result, (tuple, list))
    results = [result] if single else list(result)

    # ``log`` keeps every tensor alive, so the ids below stay unique while we map them.
    slot = {id(t): i for i, t in enumerate(inputs)}
    constants: dict[int, np.ndarray] = {}
    captured: dict[int, Tensor] = {}
    nodes: list[Node] = []
    reads: list[int] = []
    mutated: dict[int, int] = {}
    input_of = {id(t): i for i, t in enumerate(inputs)}

    def slot_of(t: Tensor) -> int:
        if id(t) not in slot:  # not an input, not made by a recorded op: captured
            slot[id(t)] = len(slot)
            if t.requires_grad:
                captured[slot[id(t)]] = t
            else:
                constants[slot[id(t)]] = t.data.copy()
        return slot[id(t)]

    for entry in log:
        if entry[0] == "read":  # tensor.item() / .numpy() / .data / bool() while tracing
            if id(entry[1]) in slot and slot[id(entry[1])] not in reads:
                reads.append(slot[id(entry[1])])
            continue
        if entry[0] == "alias":  # an in-place op recorded a node: the tensor now holds its output
            _, t, out = entry
            if id(t) in input_of:
                raise _refuse(f"changes input {input_of[id(t)]}, which requires grad, in place")
            slot[id(t)] = slot[id(out)]
            continue
        if entry[0] == "inplace":  # changed outside the graph: recorded as the out-of-place op
            _, t, cls, value, attrs = entry
            if id(t) not in slot or slot[id(t)] in constants or slot[id(t)] in captured:
                raise _refuse(f"changes a tensor of shape {t.shape} that is not an input and not "
                              f"computed by the function in place")
            args = (slot[id(t)], slot_of(value))
            out = len(slot)
            slot[("inplace", out)] = out  # reserve the slot number
            nodes.append(Node(cls, args, attrs, out))
            slot[id(t)] = out
            if id(t) in input_of:
                mutated[input_of[id(t)]] = out
            continue
        cls, tensors, attrs, out = entry
        args = [slot_of(t) for t in tensors]
        slot[id(out)] = len(slot)
        nodes.append(Node(cls, tuple(args), dict(attrs), slot[id(out)]))

    for i, r in enumerate(results):
        if not isinstance(r, Tensor) or id(r) not in slot or slot[id(r)] in constants \
                or slot[id(r)] in captured:
            raise ValueError(
                f"trace: output {i} was not computed from the inputs by minigrad ops (it is "
                f"{_describe(r)}), so a replay could not recompute it. Return Tensors made by ops "
                f"(or the inputs themselves); compute with ops instead of .data or .item().")
    return StaticGraph(len(inputs), nodes, constants, [slot[id(r)] for r in results], len(slot),
                       captured, reads, single, [tuple(t.data.shape) for t in inputs],
                       shape_reads, mutated)
