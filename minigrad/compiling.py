"""Compile a whole training step: forward, backward and update as one straight-line program.

``minigrad.compile(step)`` wraps a function that runs one step as a learner
writes it (``zero_grad``, forward, ``loss.backward()``, ``opt.step()``). The
first call runs the step eagerly and records, through the op hooks and the
observers of :mod:`minigrad.capture`, everything it does to arrays:

* every forward op (its own ``forward``, with a context kept for the program);
* every VJP the engine runs, and the sums the engine forms where a value was
  used twice;
* the gradients written into ``.grad`` (``zero_grad`` writes ``None``);
* the optimizer's update (its ``_apply``: parameters and state, in place);
* every random draw (dropout), redrawn on every call.

The record becomes a :class:`Program`: a list of instructions, printed as the
generated Python (``compiled.code``), drawn by ``minigrad.viz.draw_program``,
and simplified by passes (dead code, constant folding, common subexpressions).
Later calls run the generated function: no graph is built, no version is
checked, nothing is released, because the order of the whole step is known.
This is AOTAutograd's *joint graph* of forward and backward, plus the update.

What the capture assumed is a list of *guards* (input shapes and dtypes, grad
mode, which tensors require grad, dropout's mode, the step function's numeric
globals and closure values), checked on every call. When one fails the step is
captured again and the reason is kept (``compiled.captures``). Hyperparameters
(``opt.lr``...) are read at run time by the optimizer's own update.

A value that leaves the graph while capturing (``.item()``, ``bool(t)``,
``.numpy()``, ``.data`` read in the step, a ``.grad`` read outside the engine
and optimizer) is a *graph break*: ``on_break="error"`` (the default) raises
:class:`GraphBreak` naming the lines, ``on_break="eager"`` warns and runs the
step eagerly from then on. Hooks, anomaly mode, checkpointing, ``minigrad.grad``
and in-place ops on tensors that need grad inside the step are refused.
"""

from __future__ import annotations

import builtins
import dataclasses
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import capture as _capture
from . import function as _function
from . import tensor as _tensor
from .function import Context, _state, _user_frame
from .hooks import op_hook
from .tensor import Tensor

__all__ = ["compile", "CompiledStep", "Program", "Instr", "GraphBreak", "CompileError"]


class CompileError(RuntimeError):
    """The step does something a compiled program cannot reproduce."""


class GraphBreak(CompileError):
    """A value left the graph while the step was captured (``on_break="error"``)."""


@dataclasses.dataclass
class Instr:
    """One line of the program.

    ``kind`` is one of ``"input"``, ``"tensor"`` (read an outside tensor's data),
    ``"op"`` (a forward op), ``"seed"``, ``"vjp"``, ``"sum"`` (the engine adding two
    gradients), ``"grad"`` (write ``.grad``), ``"zero"`` (``.grad = None``),
    ``"inplace"`` (an in-place op outside the graph), ``"random"``, ``"step"``
    (the optimizer's update) or ``"const"`` (a folded value). ``out`` are the
    names it defines, ``args`` the names it reads; ``fn`` is the op class (for
    ops and VJPs), ``ctx`` the name of the op's context, ``attrs`` its keyword
    arguments, ``ref`` the outside object it touches, and ``how`` a detail.
    """

    kind: str
    out: tuple[str, ...]
    args: tuple[str, ...] = ()
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


@dataclasses.dataclass
class Program:
    """The captured step: instructions, what they refer to outside, and the outputs."""

    instrs: list[Instr]
    inputs: list[str]
    outputs: Any                # the step's return value, with names where it held tensors
    refs: dict[str, Any]        # name -> outside object (parameter, context, optimizer, ...)
    contexts: dict[str, Context] = dataclasses.field(default_factory=dict)

    # ----------------------------------------------------------- code
    guard: str = "True"                     # the guards, as one Python condition
    guard_refs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def source(self) -> str:
        """The program as straight-line Python over NumPy arrays, its guards first."""
        lines = [f"def step({', '.join(self.inputs)}):",
                 "    if not (" + self.guard + "):",
                 "        return _MISS  # a guard failed: capture again"]
        fwd = {i.ctx: i for i in self.instrs if i.kind == "op"}
        grad_is_none: set[str] = set()
        for ins in self.instrs:
            if ins.kind == "grad" and ins.ref in grad_is_none:  # zero_grad ran: no old gradient
                ins = dataclasses.replace(ins, how=("fresh", ins.how))
            if ins.kind in ("grad", "zero"):
                (grad_is_none.add if ins.kind == "zero" else grad_is_none.discard)(ins.ref)
            lines += ["    " + s for s in _emit(ins, self, fwd)]
        lines.append(f"    return {_outputs_src(self.outputs)}")
        return "\n".join(lines)

    def build(self) -> Callable:
        env = dict(self.refs)
        env.update(self.guard_refs)
        env.update(_RUNTIME)
        env["__builtins__"] = __builtins__
        code = builtins.compile(self.source(), "<minigrad.compile>", "exec")
        exec(code, env)  # noqa: S102
        return env["step"]

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for ins in self.instrs:
            counts[ins.name] = counts.get(ins.name, 0) + 1
        return counts

    # --------------------------------------------------------- passes
    def eliminate_dead_code(self) -> Program:
        """Drop lines whose results nothing uses (no output, no effect, no VJP reads their context)."""
        live = set(_names(self.outputs))
        kept = []
        for ins in reversed(self.instrs):
            if ins.effect or live.intersection(ins.out) or (ins.kind == "op" and ins.ctx in live):
                kept.append(ins)
                live.update(ins.args)
                if ins.kind == "vjp":
                    live.add(ins.ctx)
        kept.reverse()
        return dataclasses.replace(self, instrs=kept)

    def fold_constants(self) -> Program:
        """Compute once, now, every op whose inputs are all constants and that no VJP needs."""
        consts = {i.out[0]: self.refs[i.ref] for i in self.instrs if i.kind == "const"}
        vjp_ctx = {i.ctx for i in self.instrs if i.kind == "vjp"}
        vjp_ctx |= {f"out:{n}" for n in _changed_in_place(self.instrs)}
        refs = dict(self.refs)
        out = []
        for ins in self.instrs:
            foldable = ins.kind == "op" and ins.ctx not in vjp_ctx and bool(ins.args) \
                and f"out:{ins.out[0]}" not in vjp_ctx  # a value changed in place is made afresh
            if foldable and all(a in consts for a in ins.args):
                ctx = Context(ins.fn, (False,) * len(ins.args))
                value = np.asarray(ins.fn.forward(ctx, *(consts[a] for a in ins.args), **ins.attrs))
                name = f"K_{ins.out[0]}"
                refs[name] = consts[ins.out[0]] = value
                out.append(Instr("const", ins.out, ref=name))
            else:
                out.append(ins)
        return dataclasses.replace(self, instrs=out, refs=refs)

    def eliminate_common_subexpressions(self) -> Program:
        """Two ops with the same op, inputs and attributes (and no VJP): keep the first."""
        vjp_ctx = {i.ctx for i in self.instrs if i.kind == "vjp"}
        changed = _changed_in_place(self.instrs)
        seen: dict[Any, str] = {}
        rename: dict[str, str] = {}
        out = []
        for ins in self.instrs:
            ins = dataclasses.replace(ins, args=tuple(rename.get(a, a) for a in ins.args))
            if ins.effect:  # it may change an array in place: nothing before it can be reused
                seen.clear()
            if ins.kind == "const" and np.size(self.refs[ins.ref]) <= 64:  # equal small constants
                c = np.asarray(self.refs[ins.ref])
                key = ("const", c.dtype.str, c.shape, c.tobytes())
                if key in seen:
                    rename[ins.out[0]] = seen[key]
                    continue
                seen[key] = ins.out[0]
            if ins.kind == "op" and ins.ctx not in vjp_ctx and ins.out[0] not in changed:
                key = (ins.fn, ins.args, _freeze(ins.attrs))
                if key in seen:
                    rename[ins.out[0]] = seen[key]
                    continue
                seen[key] = ins.out[0]
            out.append(ins)
        return dataclasses.replace(self, instrs=out, outputs=_rename(self.outputs, rename))

    def optimize(self) -> Program:
        return self.fold_constants().eliminate_common_subexpressions().eliminate_dead_code()


def _changed_in_place(instrs: list[Instr]) -> set[str]:
    """The names an in-place instruction writes into: their values are never shared or folded."""
    return {i.args[0] for i in instrs if i.kind == "inplace"}


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.ndarray):
        return ("array", id(v))
    try:
        hash(v)
    except TypeError:
        return ("object", id(v))
    return v


def _names(outputs: Any) -> list[str]:
    if isinstance(outputs, _Out):
        return [outputs.name]
    if isinstance(outputs, (list, tuple)):
        return [n for o in outputs for n in _names(o)]
    return []


def _rename(outputs: Any, rename: dict) -> Any:
    if isinstance(outputs, _Out):
        return _Out(rename.get(outputs.name, outputs.name))
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(_rename(o, rename) for o in outputs)
    return outputs


@dataclasses.dataclass(frozen=True)
class _Out:
    name: str


@dataclasses.dataclass(frozen=True)
class _Same:
    """An output that is an outside object itself (an input, a parameter)."""
    ref: str


def _outputs_src(o: Any) -> str:
    if isinstance(o, _Out):
        return f"_tensor({o.name})"
    if isinstance(o, _Same):
        return o.ref
    if isinstance(o, tuple):
        return "(" + "".join(_outputs_src(x) + ", " for x in o) + ")"
    if isinstance(o, list):
        return "[" + ", ".join(_outputs_src(x) for x in o) + "]"
    return repr(o)


def _emit(ins: Instr, prog: Program, fwd: dict) -> list[str]:
    k = ins.kind
    if k == "input":
        return [f"{ins.out[0]} = {ins.args[0]}.data" if ins.how == "tensor" else
                f"{ins.out[0]} = {ins.args[0]}"]
    if k == "tensor":
        return [f"{ins.out[0]} = {ins.ref}.data  # {ins.how}"]
    if k == "wrap":  # an array operand converted to a constant tensor, as the op does
        return [f"{ins.out[0]} = {ins.args[0]}.astype({ins.how!r})" if ins.how else
                f"{ins.out[0]} = {ins.args[0]}.copy()"]
    if k == "const":
        return [f"{ins.out[0]} = {ins.ref}"]
    if k == "op":
        lower = _LOWER.get(ins.fn)
        lines = lower[0](ins) if lower is not None and ins.how.get("lower") else None
        if lines is not None:
            return lines
        kw = "".join(f", {a}={_attr_src(ins, a)}" for a in ins.attrs)
        lines = [f"{ins.out[0]} = {ins.fn.__name__}_fwd({ins.ctx}, {', '.join(ins.args)}{kw})"]
        if ins.how.get("out_ndim", 0) == 0:  # a NumPy scalar becomes a 0-d array, as apply does
            lines.append(f"if type({ins.out[0]}) is not _ndarray: "
                         f"{ins.out[0]} = _as_array({ins.ctx}, {ins.out[0]})")
        return lines
    if k == "seed":
        return [f"{ins.out[0]} = {ins.ref}  # d{ins.how}/d{ins.how} = 1"]
    if k == "vjp":
        f = fwd.get(ins.ctx)
        lower = _LOWER.get(ins.fn)
        if lower is not None and f is not None and f.how.get("lower"):
            return lower[1](ins, f)
        outs = [o or "_" for o in ins.out]
        call = f"{ins.fn.__name__}_vjp({ins.ctx}, {ins.args[0]})"
        if len(outs) == 1:  # a one-input op may return its gradient bare
            return [f"_t = {call}", f"{outs[0]} = _t if type(_t) is _ndarray else _t[0]"]
        return [f"{', '.join(outs)} = {call}"]
    if k == "sum":
        return [f"{ins.out[0]} = {ins.args[0]} + {ins.args[1]}"]
    if k == "grad":
        g = ins.args[0]
        fresh, how = ins.how if isinstance(ins.how, tuple) else (None, ins.how)
        conv = {"same": g, "copy": f"{g}.copy()"}.get(how, f"{g}.astype({how!r})")
        if fresh:
            return [f"{ins.ref}.grad = {conv}"]
        return [f"_o = {ins.ref}.grad",
                f"{ins.ref}.grad = {conv} if _o is None else _o + {conv}"]
    if k == "zero":
        return [f"{ins.ref}.grad = None"]
    if k == "inplace":
        if ins.how == "setitem":
            return [f"{ins.args[0]}[{ins.ref}] = {ins.args[1]}"]
        return [f"{ins.fn.__name__}_inplace({ins.args[0]}, {ins.args[1]})"]
    if k == "random":
        return [f"{ins.out[0]} = {ins.ref}()  # a fresh random draw"]
    if k == "step":
        return [f"{ins.ref}._apply({ins.args[0]})  # {ins.how}"]
    raise AssertionError(k)


def _attr_src(ins: Instr, key: str) -> str:
    v = ins.attrs[key]
    if isinstance(v, _Name):
        return v.name
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    if isinstance(v, tuple) and all(x is None or isinstance(x, (bool, int, float, str)) for x in v):
        return repr(v)
    return f"{ins.ctx}_{key}"


@dataclasses.dataclass(frozen=True)
class _Name:
    """An attribute that is one of the step's inputs (the labels of a batch, say)."""
    name: str


def _as_array(ctx, raw):
    """What ``Function.apply`` does with a NumPy scalar result: an array, also in ``ctx.saved``."""
    return _function._as_output(ctx, raw)


def _grads(r, n: int) -> tuple:
    return r if type(r) is tuple and len(r) == n else (tuple(r) if isinstance(r, (tuple, list)) else (r,))


# ------------------------------------------------------------------ lowering
# The hot ops of a training step are written out as the NumPy lines their own
# forward and VJP run (ops.py), for the shapes and dtypes the guards fix; every
# other op is called through its forward and backward. A lowering must compute
# what the op computes, operation for operation, so the results are the same bits
# (tests/test_compiling.py checks each against the op on the same inputs).

def _lower_matmul_fwd(ins):
    a, b = ins.args
    return [f"{ins.out[0]} = {a} @ {b}"]


def _lower_matmul_vjp(ins, f):
    a, b = f.args
    g = ins.args[0]
    da, db = ins.out
    return ([f"{da} = {g} @ {b}.T"] if da else []) + ([f"{db} = {a}.T @ {g}"] if db else [])


def _lower_add_fwd(ins):
    a, b = ins.args
    return [f"{ins.out[0]} = {a} + {b}"]


def _sum_to_src(g: str, shape: tuple, out_shape: tuple) -> str:
    if shape == out_shape:
        return g
    lead = len(out_shape) - len(shape)
    if out_shape[lead:] == shape:
        return f"{g}.sum(axis={tuple(range(lead))!r})"
    return f"_sum_to({g}, {shape!r})"


def _lower_add_vjp(ins, f):
    g = ins.args[0]
    return [f"{o} = {_sum_to_src(g, sh, f.how['out_shape'])}"
            for o, sh in zip(ins.out, f.how["shapes"]) if o]


def _lower_relu_fwd(ins):
    return [f"{ins.out[0]} = np.maximum({ins.args[0]}, 0)"]


def _lower_relu_vjp(ins, f):
    return [f"{ins.out[0]} = {ins.args[0]} * ({f.out[0]} > 0)"] if ins.out[0] else []


def _lower_ce_fwd(ins):
    z, o, c = ins.args[0], ins.out[0], ins.ctx
    n, k = ins.how["shapes"][0]
    t = _attr_src(ins, "target")
    lines = []
    if isinstance(ins.attrs["target"], _Name):  # labels given on each call: checked on each call
        lines.append(f"{c}_t = _check_targets('cross_entropy_with_logits', {t}, {n}, {k})")
        t = f"{c}_t"
    return lines + [f"{o}_logp = {z} - {z}.max(axis=1, keepdims=True)",
                    f"{o}_logp -= np.log(np.exp({o}_logp).sum(axis=1, keepdims=True))",
                    f"{o} = np.asarray(-{o}_logp[{c}_rows, {t}].sum() / {n}, dtype={c}_dtype)"]


def _lower_ce_vjp(ins, f):
    g, d, c = ins.args[0], ins.out[0], f.ctx
    n = f.how["shapes"][0][0]
    t = f"{c}_t" if isinstance(f.attrs["target"], _Name) else _attr_src(f, "target")
    return [f"_s = float({g}) / {n}", f"{d} = np.exp({f.out[0]}_logp)", f"{d} *= _s",
            f"{d}[{c}_rows, {t}] -= _s"]


def _lowerable(fn, tensors, attrs) -> bool:
    """Whether ``fn`` on these inputs runs as its lowering (same dtypes; 2-D for matmul)."""
    dts = {t.data.dtype for t in tensors}
    if len(dts) != 1 or fn not in _LOWER:
        return False
    if fn is _ops.MatMul:
        return all(t.data.ndim == 2 for t in tensors)
    if fn is _ops.CrossEntropyWithLogits:
        z = tensors[0].data
        return z.ndim == 2 and z.shape[0] > 0 and not isinstance(attrs.get("target"), Tensor)
    return True


from . import ops as _ops  # noqa: E402

_LOWER = {
    _ops.MatMul: (_lower_matmul_fwd, _lower_matmul_vjp),
    _ops.Add: (_lower_add_fwd, _lower_add_vjp),
    _ops.ReLU: (_lower_relu_fwd, _lower_relu_vjp),
    _ops.CrossEntropyWithLogits: (_lower_ce_fwd, _lower_ce_vjp),
}

_MISS = object()  # what the program returns when a guard fails

_RUNTIME = {"_ndarray": np.ndarray, "_as_array": _as_array, "_grads": _grads,
            "_tensor": lambda a: Tensor._make(a), "np": np, "_MISS": _MISS,
            "_sum_to": _ops.sum_to, "_check_targets": _ops._check_targets,
            "_st": _state, "_Tensor": Tensor}


# ====================================================================== capture

class _Recorder:
    """Turns the events of one eager run of the step into a Program."""

    def __init__(self, args: tuple, on_break: str):
        self.instrs: list[Instr] = []
        self.refs: dict[str, Any] = {}
        self.contexts: dict[str, Context] = {}
        self.keep: list = []           # everything seen stays alive, so ids stay unique
        self.sym: dict[int, str] = {}  # id(tensor) -> name of its array in the program
        self.ref_of: dict[int, str] = {}
        self.node_ctx: dict[int, str] = {}   # id(backward node) -> its op's context name
        self.node_out: dict[int, Any] = {}   # id(backward node) -> its op's instruction
        self.pending: dict[int, list[str]] = {}  # id(node) -> gradients sent to it so far
        self.acc: dict[int, tuple[str, np.ndarray]] = {}  # id(leaf) -> (name, gradient) awaiting .grad
        self.passes: list[list[int]] = []   # per backward pass, the leaves it reached
        self.breaks: list[str] = []
        self.refusal: str | None = None
        self.wrapped: dict[int, tuple] = {}  # id(wrapped constant tensor) -> (source, how)
        self.tensors: dict[str, Tensor] = {}  # outside tensors read by the program
        self.guards: list[tuple[str, Callable[[], bool]]] = []
        self.n = 0
        self.args = args
        self.inputs = [f"a{i}" for i in range(len(args))]
        self.array_inputs: dict[int, int] = {}
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                name = self._new("x")
                self.instrs.append(Instr("input", (name,), (f"a{i}",), how="tensor"))
                self.sym[id(a)] = name
                self.keep.append(a)
            elif isinstance(a, np.ndarray):
                self.array_inputs[id(a)] = i
        self.on_break = on_break
        self.thread = threading.get_ident()

    def _new(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def _ref(self, obj: Any, prefix: str) -> str:
        name = self.ref_of.get(id(obj))
        if name is None:
            name = self.ref_of[id(obj)] = f"{prefix}{len(self.refs)}"
            self.refs[name] = obj
            self.keep.append(obj)
        return name

    def refuse(self, why: str) -> None:
        if self.refusal is None:
            self.refusal = f"{why} (at {_user_frame()})"
        raise CompileError(f"compile: {self.refusal}")

    # ------------------------------------------------------------ forward values
    def value(self, t: Tensor) -> str:
        """The program's name for the array of ``t``, reading it from outside if it is new."""
        name = self.sym.get(id(t))
        if name is not None:
            return name
        self.keep.append(t)
        src = self.wrapped.get(id(t))
        if src is not None:
            source, how = src
            name = self._new("c")
            if isinstance(source, np.ndarray):
                i = self.array_inputs.get(id(source))
                arg = f"a{i}" if i is not None else self._ref(source, "A")
                self.instrs.append(Instr("wrap", (name,), (arg,), how=how))
            else:  # a Python number: a constant of the program (the step's globals are guarded)
                ref = self._ref(t.data, "K")
                self.instrs.append(Instr("const", (name,), ref=ref))
            self.sym[id(t)] = name
            return name
        # a tensor from outside the step: a parameter, or data it closes over; read at run time
        ref = self._ref(t, "T" if not t.requires_grad else "P")
        self.tensors[ref] = t
        name = self._new("p" if t.requires_grad else "d")
        self.instrs.append(Instr("tensor", (name,), ref=ref,
                                 how=(t.name or ("parameter" if t.requires_grad else "data")) +
                                 f" {tuple(t.data.shape)}"))
        self.sym[id(t)] = name
        return name

    # ---------------------------------------------------------------- op hooks
    def __call__(self, event, fn, tensors, out, attrs):
        if event == "forward":
            self.forward(fn, tensors, out, attrs)
        elif event == "backward":
            self.backward(fn, tensors, out, attrs["grad"])
        elif event == "accumulate":
            self.accumulate(out, attrs["grad"])
        elif event == "read":
            self.breaks.append(f"a tensor of shape {tensors[0].shape} was read into Python "
                               f"(.item(), .numpy() or a comparison) at {_user_frame()}")
        elif event == "reused":
            self.refuse("a selective recomputation (checkpoint) ran inside the step")

    def forward(self, fn, tensors, out, attrs):
        if _state.grad_enabled is False and _state.reuse is not None:
            self.refuse("a selective recomputation ran inside the step")
        args = tuple(self.value(t) for t in tensors)
        ctx_name = self._new("X")
        ctx = Context(fn, tuple(t.requires_grad for t in tensors) if out.grad_fn is not None
                      else (False,) * len(tensors))
        self.contexts[ctx_name] = ctx
        self.refs[ctx_name] = ctx
        kw = {}
        for k, v in attrs.items():
            if isinstance(v, np.ndarray) and id(v) in self.array_inputs:
                kw[k] = _Name(f"a{self.array_inputs[id(v)]}")
            else:
                kw[k] = v
                if _attr_src(Instr("op", (), ctx=ctx_name, attrs={k: v}), k) != repr(v):
                    self.refs[f"{ctx_name}_{k}"] = v
                    self.keep.append(v)
        name = self._new("v")
        self.refs.setdefault(f"{fn.__name__}_fwd", fn.forward)
        how = {"shapes": tuple(t.data.shape for t in tensors), "out_shape": out.data.shape,
               "out_ndim": out.data.ndim, "lower": _lowerable(fn, tensors, attrs)}
        if how["lower"] and fn is _ops.CrossEntropyWithLogits:
            z = tensors[0].data
            self.refs[f"{ctx_name}_rows"] = np.arange(z.shape[0])
            self.refs[f"{ctx_name}_dtype"] = z.dtype
            if not isinstance(kw["target"], _Name):  # fixed labels: checked now, as eager did
                self.refs[f"{ctx_name}_target"] = _ops._check_targets(
                    "cross_entropy_with_logits", attrs["target"], *z.shape)
        ins = Instr("op", (name,), args, fn=fn, ctx=ctx_name, attrs=kw, how=how)
        self.instrs.append(ins)
        self.sym[id(out)] = name
        self.keep.append(out)
        if out.grad_fn is not None:
            self.node_ctx[id(out.grad_fn)] = ctx_name
            self.node_out[id(out.grad_fn)] = ins
            self.keep.append(out.grad_fn)

    # --------------------------------------------------------------- backward
    def _gradient(self, node) -> str:
        parts = self.pending.pop(id(node))
        total = parts[0]
        for p in parts[1:]:  # the engine adds in arrival order: ((g1 + g2) + g3)
            s = self._new("s")
            self.instrs.append(Instr("sum", (s,), (total, p)))
            total = s
        return total

    def backward(self, fn, in_grads, node, g):
        if id(node) not in self.node_ctx:
            self.refuse(f"backward reached '{fn.name}', an op recorded before the step began")
        if id(node) in self.pending:
            gname = self._gradient(node)
        else:  # the root of a new backward pass: its seed
            if not (isinstance(g, np.ndarray) and np.all(g == 1)):
                self.refuse("backward() was given an explicit gradient; compile supports "
                            "loss.backward() on a one-element loss")
            gname = self._new("g")
            ref = self._ref(np.array(g, copy=True), "SEED")
            self.instrs.append(Instr("seed", (gname,), ref=ref, how="L"))
            self.passes.append([])
        outs = []
        for p, pg in zip(node.parents, in_grads):
            if p is None or pg is None:
                outs.append(None)
                continue
            name = self._new("g")
            outs.append(name)
            self.pending.setdefault(id(p), []).append(name)
            self.keep.append(p)
        ctx = self.node_ctx[id(node)]
        self.refs.setdefault(f"{fn.__name__}_vjp", fn.backward)
        self.instrs.append(Instr("vjp", tuple(outs), (gname,), fn=fn, ctx=ctx))

    def accumulate(self, node, g):
        leaf = node.variable
        name = self._gradient(node)
        self.acc[id(leaf)] = (name, g)
        self.keep.append(leaf)
        if self.passes:
            self.passes[-1].append(id(leaf))

    # ------------------------------------------------------------- watch/observe
    def report(self, kind, t, *details):
        if kind == "read":
            self.breaks.append(f"{details[0]} of a tensor of shape {t.shape} was read at {_user_frame()}")
        elif kind == "data":
            self.breaks.append(f".data of a tensor of shape {t.shape} was replaced at {_user_frame()}")
        elif kind == "grad":
            value, module, old = details
            ref = self._ref(t, "P")
            self.tensors[ref] = t
            if value is None:
                self.instrs.append(Instr("zero", (), ref=ref))
                self.acc.pop(id(t), None)
                return
            if module != "minigrad.engine" or id(t) not in self.acc:
                self.breaks.append(f".grad of a tensor of shape {t.shape} was set to an array "
                                   f"computed outside the graph at {_user_frame()}")
                return
            name, g = self.acc.pop(id(t))
            if old is None:  # what the engine did to g: kept it, copied it, or cast it
                how = "same" if value is g else (value.dtype.str if value.dtype != g.dtype else "copy")
            else:            # old + g hides it; a copy is always safe
                how = "copy" if g.dtype == t.data.dtype else t.data.dtype.str
            self.instrs.append(Instr("grad", (), (name,), ref=ref, how=how))
        elif kind == "inplace":
            what, op, value, attrs = details
            value_grad = isinstance(value, Tensor) and value.requires_grad
            if _state.grad_enabled and (t.requires_grad or value_grad):
                self.refuse(f"{what} changes a tensor that requires grad in place; use the "
                            f"out-of-place op inside a compiled step")
            target = self.value(t)
            if isinstance(value, Tensor):
                v = self.value(value)
            else:
                arr = np.asarray(value)
                if arr.dtype != t.data.dtype:
                    arr = arr.astype(t.data.dtype)
                v = self._new("c")
                self.instrs.append(Instr("const", (v,), ref=self._ref(arr, "K")))
            if "idx" in attrs:
                idx = self._ref(attrs["idx"], "I")
                self.instrs.append(Instr("inplace", (), (target, v), fn=op, ref=idx, how="setitem"))
            else:
                self.refs.setdefault(f"{op.__name__}_inplace", op.inplace)
                self.instrs.append(Instr("inplace", (), (target, v), fn=op))

    def observe(self, kind, *args):
        if threading.get_ident() != self.thread:  # another thread's optimizer or dropout
            return
        if kind == "step":
            opt, live = args
            ref = self._ref(opt, "O")
            lst = self._ref(list(live), "L")
            names = ", ".join(self.ref_of.get(id(p), "?") for _, p in live)
            for _, p in live:
                if id(p) not in self.ref_of:
                    self.tensors[self._ref(p, "P")] = p
            self.instrs.append(Instr("step", (), (lst,), ref=ref,
                                     how=f"{type(opt).__name__}: update {names} and its state"))
        elif kind == "random":
            mask, redraw, guard = args
            name = self._new("r")
            self.instrs.append(Instr("random", (name,), ref=self._ref(redraw, "R")))
            self.sym[id(mask)] = name
            self.keep.append(mask)
            self.guards.append(("a dropout layer's p or training mode changed", guard))

    def wrap(self, source, like=None):
        t = _plain_as_tensor(source, like)
        if t is not source and isinstance(t, Tensor):
            how = None
            if isinstance(source, np.ndarray):
                how = t.data.dtype.str if source.dtype != t.data.dtype else None
            self.wrapped[id(t)] = (source, how)
            self.keep.append(t)
        return t


_plain_as_tensor = _tensor.as_tensor


# ===================================================================== the guards

def _describe_arg(a: Any) -> tuple:
    if isinstance(a, Tensor):
        return ("Tensor", a.data.shape, a.data.dtype.str, a.requires_grad)
    if isinstance(a, np.ndarray):
        return ("array", a.shape, a.dtype.str)
    if a is None or isinstance(a, (bool, int, float, str)):
        return ("value", type(a).__name__, a)
    return ("object", _Is(a))


def _step_values(fn: Callable) -> dict[str, Any]:
    """What the step function reads from its globals and closure: numbers, strings and
    bools by value, arrays and tensors by identity (``("is", obj)``)."""
    out: dict[str, Any] = {}
    code = getattr(fn, "__code__", None)
    if code is None:
        return out
    g = getattr(fn, "__globals__", {})
    named = [(f"global {n}", g[n]) for n in code.co_names if n in g]
    for n, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            named.append((f"closure variable {n}", cell.cell_contents))
        except ValueError:
            continue
    for k, v in named:
        if v is None or isinstance(v, (bool, int, float, str)):
            out[k] = v
        elif isinstance(v, (np.ndarray, Tensor)):
            out[k] = _Is(v)
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class _Is:
    """Compares equal to a value only if it is the very same object."""
    obj: Any

    def __eq__(self, other):
        return isinstance(other, _Is) and other.obj is self.obj

    def __repr__(self):
        return f"the {type(self.obj).__name__} of shape {self.obj.shape}"


@dataclasses.dataclass
class Capture:
    """One capture of the step: why it happened, what it assumed, what it produced."""

    reason: str
    program: Program | None
    breaks: list[str]
    args: list[tuple]
    grad_mode: bool
    tensors: dict[str, tuple]  # outside tensor -> (shape, dtype, requires_grad) assumed
    values: dict[str, Any]
    guards: list[tuple[str, Callable[[], bool]]]
    run: Callable | None = None

    def check(self, fn: Callable, args: tuple, refs: dict) -> str | None:
        """None if every guard holds, else the first reason it does not."""
        if _state.grad_enabled is not self.grad_mode:
            return f"grad mode is {'on' if _state.grad_enabled else 'off'}, the capture had it " \
                   f"{'on' if self.grad_mode else 'off'}"
        if len(args) != len(self.args):
            return f"called with {len(args)} arguments, captured with {len(self.args)}"
        for i, (a, want) in enumerate(zip(args, self.args)):
            got = _describe_arg(a)
            if got != want:
                return f"argument {i}: {_explain(want)} -> {_explain(got)}"
        for ref, want in self.tensors.items():
            t = refs[ref]
            d = t.data
            got = (d.shape, d.dtype.str, t.requires_grad)
            if got != want:
                return f"{ref} ({t.name or 'an outside tensor'}): shape, dtype, requires_grad " \
                       f"{want} -> {got}"
        if self.values:
            now = _step_values(fn)
            for k, v in self.values.items():
                if now.get(k, _MISSING) != v:
                    return f"{k} was {v!r}, now {now.get(k, '<gone>')!r}"
        for why, ok in self.guards:
            if not ok():
                return why
        return None


_MISSING = object()


def _guard_source(cap: Capture, fn: Callable, refs: dict) -> tuple[str, dict]:
    """The guards of ``cap`` as one Python condition over the step's arguments (and its refs)."""
    conds = [f"_st.grad_enabled is {cap.grad_mode}", "not _st.hooks", "not _st.anomaly"]
    env: dict[str, Any] = {}
    for i, d in enumerate(cap.args):
        a = f"a{i}"
        if d[0] == "Tensor":
            env[f"DT_a{i}"] = np.dtype(d[2])
            conds.append(f"type({a}) is _Tensor and {a}.data.shape == {d[1]!r} and "
                         f"{a}.data.dtype == DT_a{i} and {a}.requires_grad is {d[3]}")
        elif d[0] == "array":
            env[f"DT_a{i}"] = np.dtype(d[2])
            conds.append(f"type({a}) is _ndarray and {a}.shape == {d[1]!r} and {a}.dtype == DT_a{i}")
        elif d[0] == "value":
            conds.append(f"type({a}) is {d[1]} and {a} == {d[2]!r}" if d[1] != "NoneType"
                         else f"{a} is None")
        else:
            env[f"OBJ_a{i}"] = d[1].obj
            conds.append(f"{a} is OBJ_a{i}")
    for ref, (shape, dt, rg) in cap.tensors.items():
        env[f"DT_{ref}"] = np.dtype(dt)
        conds.append(f"{ref}.requires_grad is {rg} and {ref}.data.shape == {shape!r} and "
                     f"{ref}.data.dtype == DT_{ref}")
    if cap.values:
        code = fn.__code__
        cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        env["_G"] = fn.__globals__
        for k, (key, v) in enumerate(cap.values.items()):
            kind, name = key.split(" ")[0], key.split(" ")[-1]
            where = f"_G.get({name!r}, _MISS)" if kind == "global" else f"CELL{k}.cell_contents"
            if kind != "global":
                env[f"CELL{k}"] = cells[name]
            if isinstance(v, _Is):
                env[f"VAL{k}"] = v.obj
                conds.append(f"{where} is VAL{k}")
            else:
                env[f"VAL{k}"] = v
                conds.append(f"type({where}) is type(VAL{k}) and {where} == VAL{k}")
    for k, (_, ok) in enumerate(cap.guards):
        env[f"GUARD{k}"] = ok
        conds.append(f"GUARD{k}()")
    return "\n            and ".join(conds), env


def _explain(d: tuple) -> str:
    if d[0] == "Tensor":
        return f"Tensor {d[1]} {np.dtype(d[2]).name}{' requiring grad' if d[3] else ''}"
    if d[0] == "array":
        return f"array {d[1]} {np.dtype(d[2]).name}"
    if d[0] == "value":
        return f"{d[1]} {d[2]!r}"
    return "another object"


class CompiledStep:
    """``minigrad.compile(step)``: call it as you would call ``step``.

    Attributes: ``captures`` (one :class:`Capture` per capture, with its
    ``reason``), ``program`` and ``code`` (the current program and its source),
    ``eager`` (True once a graph break sent the step back to eager execution).
    """

    def __init__(self, fn: Callable, on_break: str = "error", optimize: bool = True,
                 cache_size: int = 8):
        if not callable(fn):
            raise TypeError(f"compile: expected a function, got {type(fn).__name__}")
        if on_break not in ("error", "eager"):
            raise ValueError(f"compile: on_break must be 'error' or 'eager', got {on_break!r}")
        self.fn = fn
        self.on_break = on_break
        self.thread = threading.get_ident()
        self.optimize = optimize
        self.cache_size = cache_size
        self.captures: list[Capture] = []
        self._cache: list[Capture] = []
        self.eager = False
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)

    @property
    def program(self) -> Program | None:
        return self._cache[0].program if self._cache else None

    @property
    def code(self) -> str:
        if self.program is None:
            raise RuntimeError("compile: nothing captured yet (call the compiled step once)"
                               if not self.eager else "compile: the step runs eagerly (graph break)")
        return self.program.source()

    def __call__(self, *args):
        cache = self._cache
        if cache:
            r = cache[0].run(*args)
            if r is not _MISS:
                return r
        return self._slow(args)

    def _slow(self, args: tuple):
        if self.eager:
            return self.fn(*args)
        if _state.hooks:
            raise CompileError("compile: an op hook is active (op_hook, count_ops, a memory "
                               "profiler, jvp); a compiled step runs no ops for it to see. Call "
                               "the step itself (compiled.__wrapped__) under the hook.")
        if _state.anomaly:
            raise CompileError("compile: anomaly mode (detect_anomaly) checks every op of an "
                               "eager run; call the step itself (compiled.__wrapped__) to use it.")
        reasons = []
        for k, cap in enumerate(self._cache):
            why = cap.check(self.fn, args, cap.program.refs)
            if why is None:
                r = cap.run(*args)
                if r is not _MISS:
                    self._cache.insert(0, self._cache.pop(k))
                    return r
                why = "a guard failed"
            reasons.append(why)
        # the most telling reason: a program made for these arguments whose other guard failed
        reason = next((r for r in reasons if not r.startswith("argument")),
                      reasons[0] if reasons else "first call")
        return self._capture(args, reason)

    def _capture(self, args: tuple, reason: str):
        rec = _Recorder(args, self.on_break)
        rec.is_trace = True  # checkpoint refuses to be recorded
        grad_mode = _state.grad_enabled
        values = _step_values(self.fn)
        plain_f, plain_t = _function.as_tensor, _tensor.as_tensor
        _function.as_tensor = _tensor.as_tensor = rec.wrap
        _capture.observers.append(rec.observe)
        try:
            with op_hook(rec), _capture.watch(rec.report):
                result = self.fn(*args)
        except BaseException as e:  # the eager run failed: the attempt is listed, and it raises
            self.captures.append(Capture(reason, None, [f"the step raised {type(e).__name__}: {e}"],
                                         [], grad_mode, {}, values, []))
            if isinstance(e, RuntimeError) and "cannot be recorded by minigrad.trace" in str(e):
                raise CompileError("compile: checkpointing inside a compiled step is not "
                                   "supported (its recomputation is an eager mechanism); "
                                   "compile the step without checkpoint") from e
            raise
        finally:
            _function.as_tensor, _tensor.as_tensor = plain_f, plain_t
            _capture.observers.remove(rec.observe)
        for leaves in rec.passes:
            if not leaves or any(leaf in rec.acc for leaf in leaves):
                rec.breaks.append("a backward pass did not end in .grad (minigrad.grad() inside "
                                  "the step): compile supports loss.backward()")
                break
        if rec.breaks:
            cap = Capture(reason, None, rec.breaks, [], grad_mode, {}, values, [])
            self.captures.append(cap)
            lines = "\n  ".join(rec.breaks)
            if self.on_break == "error":
                raise GraphBreak(
                    f"compile: graph break: a value left the graph while the step was captured, "
                    f"so a compiled program would freeze it:\n  {lines}\nThis call ran eagerly. "
                    f"Compute with ops instead, move the Python decision out of the step, or "
                    f"pass on_break='eager' to run the step eagerly with a warning.")
            warnings.warn(f"compile: graph break, running the step eagerly from now on:\n  {lines}",
                          stacklevel=3)
            self.eager = True
            return result
        outputs = self._outputs(rec, result)
        prog = Program(rec.instrs, rec.inputs, outputs, rec.refs, rec.contexts)
        if self.optimize:
            prog = prog.optimize()
        cap = Capture(reason, prog, [], [_describe_arg(a) for a in args], grad_mode,
                      {ref: (t.data.shape, t.data.dtype.str, t.requires_grad)
                       for ref, t in rec.tensors.items()}, values, rec.guards)
        prog.guard, prog.guard_refs = _guard_source(cap, self.fn, rec.refs)
        cap.run = prog.build()
        self.captures.append(cap)
        self._cache.insert(0, cap)
        del self._cache[self.cache_size:]
        return result

    def _outputs(self, rec: _Recorder, r: Any) -> Any:
        if isinstance(r, Tensor):
            name = rec.sym.get(id(r))
            if name is None or not name.startswith(("v", "r")):
                for i, a in enumerate(rec.args):
                    if a is r:
                        return _Same(f"a{i}")
                if id(r) in rec.ref_of:
                    return _Same(rec.ref_of[id(r)])
                raise CompileError("compile: the step returns a tensor that no op of the step made")
            return _Out(name)
        if isinstance(r, (tuple, list)):
            return type(r)(self._outputs(rec, x) for x in r)
        if r is None or isinstance(r, (bool, int, float, str)):
            return r
        raise CompileError(f"compile: the step returns a {type(r).__name__}; return Tensors "
                           f"(or tuples of them), None or plain numbers")

    def __repr__(self) -> str:
        return (f"<compiled {getattr(self.fn, '__name__', 'step')}: {len(self.captures)} "
                f"capture(s), {'eager' if self.eager else 'compiled'}>")


def compile(step: Callable | None = None, *, on_break: str = "error", optimize: bool = True):  # noqa: A001
    """Compile a whole training step; use as ``compile(step)`` or ``@compile(on_break=...)``."""
    if step is None:
        return lambda f: CompiledStep(f, on_break=on_break, optimize=optimize)
    return CompiledStep(step, on_break=on_break, optimize=optimize)
