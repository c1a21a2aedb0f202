"""Compile a whole training step: forward, backward and update as one straight-line program.

``minigrad.compile(step)`` wraps a function that runs one step as a learner
writes it (``zero_grad``, forward, ``loss.backward()``, ``opt.step()``). The
first call runs the step eagerly and records, through the op hooks and the
observers of :mod:`minigrad.capture`, everything it does to arrays:

* every forward op (its own ``forward``, with a context kept for the program);
* every VJP the engine runs, and the sums the engine forms where a value was
  used twice;
* the gradients written into ``.grad`` (``zero_grad`` writes ``None``);
* the optimizer's update (parameters and state, in place);
* every random draw (dropout), redrawn on every call.

The record becomes a :class:`Program`: a list of statements in the IR that
:mod:`minigrad.passes` rewrites for traced graphs too, so the same passes (dead
code, constant folding, common subexpressions, elementwise fusion) simplify it.
It is printed as the generated Python (``compiled.code``) and drawn by
``minigrad.viz.draw_program``. Later calls run the generated function: no graph
is built, no version is checked, nothing is released, because the order of the
whole step is known. This is AOTAutograd's *joint graph* of forward and
backward, plus the update.

The hot ops of a step (matmul, add, ReLU, the fused cross-entropy) and the
updates of SGD and Adam are written out as the NumPy lines their own code runs,
for the shapes and dtypes the guards fix, so the program computes the same bits
as eager execution. Because the program sees the whole step, it also knows when
an array is read for the last time: an elementwise line then writes its result
into that array instead of a new one (a fused chain runs in one buffer).

What the capture assumed is a list of *guards* (input shapes and dtypes, grad
mode, which tensors require grad, dropout's mode, the step function's numeric
globals and closure values, which form of update the optimizer takes), checked
on every call. When one fails the step is captured again and the reason is kept
(``compiled.captures``). Hyperparameters (``opt.lr``...) are read at run time.

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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import capture as _capture
from . import function as _function
from . import optim as _optim
from . import passes as _passes
from . import tensor as _tensor
from .function import Context, _state, _user_frame
from .hooks import op_hook
from .passes import Block, Instr
from .passes import Name as _Name
from .tensor import Tensor

__all__ = ["compile", "CompiledStep", "Program", "Instr", "GraphBreak", "CompileError"]


class CompileError(RuntimeError):
    """The step does something a compiled program cannot reproduce."""


class GraphBreak(CompileError):
    """A value left the graph while the step was captured (``on_break="error"``)."""


@dataclasses.dataclass
class Program:
    """The captured step: statements, what they refer to outside, and the outputs.

    ``meta`` holds the shape and dtype every name had while capturing (the
    guards keep them); the code generator uses it to decide where a result can
    be written into an array that is read for the last time.
    """

    instrs: list[Instr]
    inputs: list[str]
    outputs: Any                # the step's return value, with names where it held tensors
    refs: dict[str, Any]        # name -> outside object (parameter, context, optimizer, ...)
    contexts: dict[str, Context] = dataclasses.field(default_factory=dict)
    meta: dict[str, tuple] = dataclasses.field(default_factory=dict)

    # ----------------------------------------------------------- code
    guard: str = "True"                     # the guards, as one Python condition
    guard_refs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def source(self) -> str:
        """The program as straight-line Python over NumPy arrays, its guards first."""
        return _Gen(self).source()

    def build(self) -> Callable:
        gen = _Gen(self)
        env = dict(self.refs)
        env.update(self.guard_refs)
        env.update(_RUNTIME)
        env["__builtins__"] = __builtins__
        code = builtins.compile(gen.source(), "<minigrad.compile>", "exec")
        exec(code, env)  # noqa: S102
        return env["step"]

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for ins in self.instrs:
            counts[ins.name] = counts.get(ins.name, 0) + 1
        return counts

    # --------------------------------------------------------- passes
    def to_block(self) -> Block:
        """The program as the passes' IR (:class:`minigrad.passes.Block`)."""
        values = {i.ref: self.refs[i.ref] for i in self.instrs if i.kind == "const"}
        return Block(list(self.instrs), tuple(_names(self.outputs)), values, fusible=_fusible)

    def from_block(self, block: Block) -> Program:
        """This program with the statements of ``block`` (a pass's result)."""
        refs = dict(self.refs)
        refs.update(block.values)
        return dataclasses.replace(self, instrs=list(block.instrs), refs=refs,
                                   outputs=_rename(self.outputs, block.renamed))

    def eliminate_dead_code(self) -> Program:
        """Drop lines whose results nothing uses (no output, no effect, no VJP reads their context)."""
        return _passes.eliminate_dead_code(self)

    def fold_constants(self) -> Program:
        """Compute once, now, every op whose inputs are all constants and that no VJP needs."""
        return _passes.fold_constants(self)

    def eliminate_common_subexpressions(self) -> Program:
        """Equal small constants, and ops with the same op, inputs and attributes (no VJP): keep the first."""
        return _passes.eliminate_common_subexpressions(self)

    def fuse_elementwise(self) -> Program:
        """Chains of written-out elementwise ops, and their VJPs, as one statement each."""
        return _passes.fuse_elementwise(self)

    def optimize(self, passes: Sequence[Callable] = _passes.DEFAULT_PASSES) -> Program:
        return _passes.optimize(self, passes)


def _fusible(ins: Instr) -> bool:
    """A compiled step fuses the elementwise ops it writes out as NumPy (a chain then runs in one buffer)."""
    return ins.fn.elementwise and ins.fn in _LOWER and bool(ins.how) and ins.how.get("lower", False)


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


def _expand(instrs: list[Instr]) -> list[Instr]:
    """The statements with every fused chain replaced by its members, in order."""
    out = []
    for ins in instrs:
        members = ins.how.get("members") if isinstance(ins.how, dict) else None
        if members:
            out.extend(_expand(list(members)))
        else:
            out.append(ins)
    return out


def _attr_src(ins: Instr, key: str) -> str:
    v = ins.attrs[key]
    if isinstance(v, _Name):
        return v.name
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    if isinstance(v, tuple) and all(x is None or isinstance(x, (bool, int, float, str)) for x in v):
        return repr(v)
    return f"{ins.ctx}_{key}"


def _as_array(ctx, raw):
    """What ``Function.apply`` does with a NumPy scalar result: an array, also in ``ctx.saved``."""
    return _function._as_output(ctx, raw)


def _grads(r, n: int) -> tuple:
    return r if type(r) is tuple and len(r) == n else (tuple(r) if isinstance(r, (tuple, list)) else (r,))


# ====================================================================== code generation

class _Gen:
    """Writes a program as Python lines, one statement after another.

    Before writing, it finds for every line the arrays it reads for the last
    time that the program itself made (a new array from a written-out line,
    never a parameter, an input, something a ``.grad`` or the result holds, or
    something an op called through its own ``forward`` may have kept): such an
    array may receive the line's result (``np.add(a, b, out=a)``), which saves
    allocating a new one. Fused chains are written as their members' lines, so
    their intermediate values share one buffer.
    """

    def __init__(self, prog: Program):
        self.prog = prog
        self.flat = _expand(prog.instrs)
        self.fwd = {i.ctx: i for i in self.flat if i.kind == "op"}
        self.seeds = {i.out[0]: prog.refs[i.ref] for i in self.flat if i.kind == "seed"}
        self.meta = dict(prog.meta)         # name -> (shape, dtype), with the lines' own names
        self.free = self._plan()

    # ------------------------------------------------------------ buffers
    def _lowering(self, ins: Instr):
        if ins.kind == "op" and ins.how and ins.how.get("lower"):
            return _LOWER[ins.fn]
        if ins.kind == "vjp":
            f = self.fwd.get(ins.ctx)
            if f is not None and f.how and f.how.get("lower"):
                return _LOWER[ins.fn]
        return None

    def _plan(self) -> list[frozenset]:
        buf: dict[Any, Any] = {}      # name -> the array it is (names that alias share one)
        fresh: set = set()            # arrays the written-out lines made
        pinned: set = set()           # arrays something else may hold
        last: dict[Any, int] = {}     # array -> index of the line that reads it last
        reads: list[tuple] = []
        for k, ins in enumerate(self.flat):
            low = self._lowering(ins)
            if ins.kind == "vjp" and low is not None:
                r = tuple(ins.args) + low.vjp_reads(ins, self.fwd[ins.ctx])
            elif ins.kind == "op" and low is not None:
                r = tuple(ins.args)
            elif ins.kind == "sum":
                r = tuple(ins.args)
            else:  # called through its own code, or kept outside (a .grad): never reused
                r = tuple(ins.args)
                pinned.update(buf.get(a, a) for a in r)
            reads.append(r)
            for a in r:
                last[buf.get(a, a)] = k
            made, same = ((), {})
            if low is not None and ins.kind == "op":
                self.meta.update(low.meta(ins, self.meta))
            if low is not None:
                made, same = (low.made(ins) if ins.kind == "op"
                              else low.vjp_made(ins, self.fwd[ins.ctx]))
            elif ins.kind == "sum":
                made = ins.out
            for o in ins.out:
                if o is None:
                    continue
                if o in same:
                    buf[o] = buf.get(same[o], same[o])
                else:
                    buf[o] = o
            for o in made:
                buf.setdefault(o, o)
                fresh.add(buf[o])
        pinned.update(buf.get(n, n) for n in _names(self.prog.outputs))
        free = []
        for k, r in enumerate(reads):
            free.append(frozenset(a for a in r if buf.get(a, a) in fresh
                                  and buf.get(a, a) not in pinned and last[buf.get(a, a)] == k))
        return free

    def into(self, k: int, candidates, out: str) -> str | None:
        """A name among ``candidates`` whose array line ``k`` may overwrite with ``out``'s value
        (read here for the last time, made by the program, of ``out``'s shape and dtype). Never a
        0-d value: NumPy's arithmetic may have made it a scalar, which cannot receive a result."""
        want = self.meta.get(out)
        if want is None or want[0] == ():
            return None
        for a in candidates:
            if a in self.free[k] and want is not None and self.meta.get(a) == want:
                return a
        return None

    # -------------------------------------------------------------- lines
    def source(self) -> str:
        p = self.prog
        lines = [f"def step({', '.join(p.inputs)}):",
                 "    if not (" + p.guard + "):",
                 "        return _MISS  # a guard failed: capture again"]
        grad_is_none: set[str] = set()
        self.grad_name: dict[str, str] = {}   # parameter -> the name of the array now in its .grad
        first_of = {}
        for ins in p.instrs:
            members = ins.how.get("members") if isinstance(ins.how, dict) else None
            if members:
                first_of[id(_expand(list(members))[0])] = ins.name
        for k, ins in enumerate(self.flat):
            if id(ins) in first_of:
                lines.append(f"    # {first_of[id(ins)]}")
            if ins.kind == "grad":
                fresh = ins.ref in grad_is_none  # zero_grad ran: no old gradient
                how = ins.how
                self.grad_name[ins.ref] = ins.args[0] if fresh and how == "same" else None
                ins = dataclasses.replace(ins, how=("fresh" if fresh else None, how))
            if ins.kind in ("grad", "zero"):
                (grad_is_none.add if ins.kind == "zero" else grad_is_none.discard)(ins.ref)
                if ins.kind == "zero":
                    self.grad_name.pop(ins.ref, None)
            lines += ["    " + s for s in self.emit(k, ins)]
        lines.append(f"    return {_outputs_src(p.outputs)}")
        return "\n".join(lines)

    def emit(self, k: int, ins: Instr) -> list[str]:
        kind = ins.kind
        if kind == "input":
            return [f"{ins.out[0]} = {ins.args[0]}.data" if ins.how == "tensor" else
                    f"{ins.out[0]} = {ins.args[0]}"]
        if kind == "tensor":
            return [f"{ins.out[0]} = {ins.ref}.data  # {ins.how}"]
        if kind == "wrap":  # an array operand converted to a constant tensor, as the op does
            return [f"{ins.out[0]} = {ins.args[0]}.astype({ins.how!r})" if ins.how else
                    f"{ins.out[0]} = {ins.args[0]}.copy()"]
        if kind == "const":
            return [f"{ins.out[0]} = {ins.ref}"]
        if kind == "op":
            low = self._lowering(ins)
            if low is not None:
                return low.fwd(self, k, ins)
            kw = "".join(f", {a}={_attr_src(ins, a)}" for a in ins.attrs)
            lines = [f"{ins.out[0]} = {ins.fn.__name__}_fwd({ins.ctx}, {', '.join(ins.args)}{kw})"]
            if ins.how.get("out_ndim", 0) == 0:  # a NumPy scalar becomes a 0-d array, as apply does
                lines.append(f"if type({ins.out[0]}) is not _ndarray: "
                             f"{ins.out[0]} = _as_array({ins.ctx}, {ins.out[0]})")
            return lines
        if kind == "seed":
            return [f"{ins.out[0]} = {ins.ref}  # d{ins.how}/d{ins.how} = 1"]
        if kind == "vjp":
            low = self._lowering(ins)
            if low is not None:
                return low.vjp(self, k, ins, self.fwd[ins.ctx])
            outs = [o or "_" for o in ins.out]
            call = f"{ins.fn.__name__}_vjp({ins.ctx}, {ins.args[0]})"
            if len(outs) == 1:  # a one-input op may return its gradient bare
                return [f"_t = {call}", f"{outs[0]} = _t if type(_t) is _ndarray else _t[0]"]
            return [f"{', '.join(outs)} = {call}"]
        if kind == "sum":
            a, b = ins.args
            dest = self.into(k, (a, b), ins.out[0])
            if dest is not None:
                return [f"{ins.out[0]} = add({a}, {b}, out={dest})"]
            return [f"{ins.out[0]} = {a} + {b}"]
        if kind == "grad":
            g = ins.args[0]
            fresh, how = ins.how
            conv = {"same": g, "copy": f"{g}.copy()"}.get(how, f"{g}.astype({how!r})")
            if fresh:
                return [f"{ins.ref}.grad = {conv}"]
            return [f"_o = {ins.ref}.grad",
                    f"{ins.ref}.grad = {conv} if _o is None else _o + {conv}"]
        if kind == "zero":
            return [f"{ins.ref}.grad = None"]
        if kind == "inplace":
            if ins.how == "setitem":
                return [f"{ins.args[0]}[{ins.ref}] = {ins.args[1]}"]
            return [f"{ins.fn.__name__}_inplace({ins.args[0]}, {ins.args[1]})"]
        if kind == "random":
            return [f"{ins.out[0]} = {ins.ref}()  # a fresh random draw"]
        if kind == "step":
            return _update_lines(self, ins)
        raise AssertionError(kind)

    # ------------------------------------------------------------ helpers
    def data_name(self, ref: str, before: Instr) -> str | None:
        """The program's name for ``ref.data``, if a line before ``before`` reads it."""
        for ins in self.flat:
            if ins is before:
                break
            if ins.kind == "tensor" and ins.ref == ref:
                return ins.out[0]
        return None


# ------------------------------------------------------------------ lowering
# The hot ops of a training step are written out as the NumPy lines their own
# forward and VJP run (ops.py), for the shapes and dtypes the guards fix; every
# other op is called through its forward and backward. A lowering must compute
# what the op computes, operation for operation, so the results are the same bits
# (tests/test_compiling.py checks each against the op on the same inputs). A
# reduction is written as the ufunc's reduce that ndarray.sum and .max call.

class _Lowering:
    """One op written out: its forward and VJP lines, what they make, what the VJP reads."""

    def fwd(self, gen: _Gen, k: int, ins: Instr) -> list[str]:
        raise NotImplementedError

    def vjp(self, gen: _Gen, k: int, ins: Instr, f: Instr) -> list[str]:
        raise NotImplementedError

    def made(self, ins: Instr) -> tuple[tuple, dict]:
        """The names the forward lines make as new arrays, and the names that are another."""
        return ins.out, {}

    def vjp_made(self, ins: Instr, f: Instr) -> tuple[tuple, dict]:
        return tuple(o for o in ins.out if o), {}

    def vjp_reads(self, ins: Instr, f: Instr) -> tuple:
        """What the VJP lines read besides the incoming gradient (what the op saved)."""
        return ()

    def meta(self, ins: Instr, meta: dict) -> dict:
        """Shape and dtype of the names the forward lines make besides the op's result."""
        return {}


def _zero_d(ins: Instr, expr: str) -> str:
    """A 0-d result stays an array (a ufunc gives a NumPy scalar), as ``Function.apply`` makes it."""
    return f"asarray({expr})" if ins.how.get("out_ndim", 1) == 0 else expr


class _MatMul(_Lowering):
    def fwd(self, gen, k, ins):
        a, b = ins.args
        return [f"{ins.out[0]} = {a} @ {b}"]

    def vjp(self, gen, k, ins, f):
        a, b = f.args
        g = ins.args[0]
        da, db = ins.out
        return ([f"{da} = {g} @ {b}.T"] if da else []) + ([f"{db} = {a}.T @ {g}"] if db else [])

    def vjp_reads(self, ins, f):
        return tuple(f.args)


def _sum_to_src(g: str, shape: tuple, out_shape: tuple) -> str:
    if shape == out_shape:
        return g
    lead = len(out_shape) - len(shape)
    if out_shape[lead:] == shape:
        axes = tuple(range(lead))
        return f"add.reduce({g}, axis={axes[0] if len(axes) == 1 else axes!r})"
    return f"_sum_to({g}, {shape!r})"


class _Add(_Lowering):
    def fwd(self, gen, k, ins):
        a, b = ins.args
        o = ins.out[0]
        dest = gen.into(k, (a, b), o)
        if dest is not None:
            return [f"{o} = add({a}, {b}, out={dest})"]
        return [f"{o} = {_zero_d(ins, f'{a} + {b}')}"]

    def vjp(self, gen, k, ins, f):
        g = ins.args[0]
        return [f"{o} = {_sum_to_src(g, sh, f.how['out_shape'])}"
                for o, sh in zip(ins.out, f.how["shapes"]) if o]

    def vjp_made(self, ins, f):
        made, same = [], {}
        for o, sh in zip(ins.out, f.how["shapes"]):
            if o:
                if sh == f.how["out_shape"]:
                    same[o] = ins.args[0]
                else:
                    made.append(o)
        return tuple(made), same


class _ReLU(_Lowering):
    def fwd(self, gen, k, ins):
        a, o = ins.args[0], ins.out[0]
        dest = gen.into(k, (a,), o)
        if dest is not None:
            return [f"{o} = maximum({a}, 0, out={dest})"]
        return [f"{o} = {_zero_d(ins, f'maximum({a}, 0)')}"]

    def vjp(self, gen, k, ins, f):
        d, g, y = ins.out[0], ins.args[0], f.out[0]
        if not d:
            return []
        dest = gen.into(k, (g,), d)
        # the mask as bytes, 0 or 1: the same numbers as booleans, converted faster
        if dest is not None:
            return [f"{d} = multiply({g}, ({y} > 0).view(uint8), out={dest})"]
        return [f"{d} = {_zero_d(f, f'{g} * ({y} > 0).view(uint8)')}"]

    def vjp_reads(self, ins, f):
        return (f.out[0],)


_MANY_ROWS, _FEW_COLUMNS = 32, 16  # logits of this shape take each row's maximum column by column


class _CrossEntropy(_Lowering):
    """The fused loss of notebook 08. The target entries are reached through flat indices
    (``take``/``put``: the same entries, in the same order, as ``logp[rows, t]``)."""

    def fwd(self, gen, k, ins):
        z, o, c = ins.args[0], ins.out[0], ins.ctx
        n, c_ = ins.how["shapes"][0]
        lines = []
        if isinstance(ins.attrs["target"], _Name):  # labels given on each call: checked on each call
            lines += [f"{c}_t = _check_targets('cross_entropy_with_logits', "
                      f"{ins.attrs['target'].name}, {n}, {ins.how['shapes'][0][1]})",
                      f"{c}_flat = {c}_rowsC + {c}_t"]
        dest = gen.into(k, (z,), f"{o}_logp")  # z is read here for the last time
        if n >= _MANY_ROWS and c_ <= _FEW_COLUMNS:
            # each row's maximum, column by column: NumPy pays per row for a short row, and
            # a maximum is the same number in any order (+0 and -0 tie, and give the same logp)
            top = f"maximum.reduce({z}.T.copy(), axis=0)[:, None]"
        else:
            top = f"maximum.reduce({z}, axis=1, keepdims=True)"
        first = (f"{o}_logp = subtract({z}, {top}, out={dest})" if dest is not None
                 else f"{o}_logp = {z} - {top}")
        dt = gen.prog.refs[f"{c}_dtype"]
        loss = f"-add.reduce({o}_logp.take({c}_flat)) / {n}"
        kept = (-np.add.reduce(np.zeros(1, dt)) / n).dtype == dt  # NumPy's scalar keeps the dtype
        return lines + [first,
                        f"{o}_logp -= log(add.reduce(exp({o}_logp), axis=1, keepdims=True))",
                        f"{o} = asarray({loss})" if kept else f"{o} = asarray({loss}, dtype={c}_dtype)"]

    def made(self, ins):
        return (ins.out[0], f"{ins.out[0]}_logp"), {}

    def meta(self, ins, meta):
        return {f"{ins.out[0]}_logp": meta.get(ins.args[0])}

    def vjp(self, gen, k, ins, f):
        g, d, c = ins.args[0], ins.out[0], f.ctx
        n = f.how["shapes"][0][0]
        logp = f"{f.out[0]}_logp"
        if g in gen.seeds:  # the seed is 1: g / N is a number known now
            s = repr(float(gen.seeds[g]) / n)
            lines = []
        else:
            s, lines = "_s", [f"_s = float({g}) / {n}"]
        dest = gen.into(k, (logp,), d)
        lines.append(f"{d} = exp({logp}, out={dest})" if dest is not None else f"{d} = exp({logp})")
        return lines + [f"{d} *= {s}", f"{d}.put({c}_flat, {d}.take({c}_flat) - {s})"]

    def vjp_reads(self, ins, f):
        return (f"{f.out[0]}_logp",)


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
    _ops.MatMul: _MatMul(),
    _ops.Add: _Add(),
    _ops.ReLU: _ReLU(),
    _ops.CrossEntropyWithLogits: _CrossEntropy(),
}


# ------------------------------------------------------------- the update
# SGD (with or without momentum, weight decay, Nesterov) and Adam are written
# out as the arithmetic of their kernels in optim.py, on whole parameters:
# the same operations in the same order, so the same bits as eager, without
# the block-by-block loop that bounds eager's temporaries. Which form the update
# takes (momentum or not, weight decay or not, Nesterov) is guarded; the
# numbers (lr, momentum, betas, eps, weight_decay) are read when the line runs.
# Any other optimizer is called through its own ``_apply``.

def _update_form(opt) -> str | None:
    if type(opt) is _optim.SGD:
        return "momentum" if opt.momentum else "sgd"
    if type(opt) is _optim.Adam:
        return "adam"
    return None


def _update_lines(gen: _Gen, ins: Instr) -> list[str]:
    a, o = ins.attrs, ins.ref
    form = a.get("form")
    if form is None:
        return [f"{o}._apply({ins.args[0]})  # {ins.how}"]
    lines = [f"_check_param({a['name']!r}, {i}, {p}, True)" for i, p in a["params"]] \
        if a["check_finite"] else []
    lines.append(f"{o}.steps += 1  # {ins.how}")
    wd = a["weight_decay"]
    if form == "sgd":
        lines.append(f"_lr = {o}.lr" + (f"; _wd = {o}.weight_decay" if wd else ""))
    elif form == "momentum":
        lines.append(f"_lr, _mu = {o}.lr, {o}.momentum" + (f"; _wd = {o}.weight_decay" if wd else ""))
        lines.append(f"_S = {o}.state")
    else:
        lines.append(f"_lr, _b1, _b2, _eps = {o}.lr, {o}.b1, {o}.b2, {o}.eps"
                     + (f"; _wd = {o}.weight_decay" if wd else ""))
        lines.append(f"_S = {o}.state")
    for i, p in a["params"]:
        d = gen.data_name(p, ins)
        if d is None:
            lines.append(f"_d = {p}.data")
            d = "_d"
        g = gen.grad_name.get(p) or f"{p}.grad"
        if form == "sgd":
            lines.append(f"{d} -= _lr * ({g} + _wd * {d})" if wd else f"{d} -= _lr * {g}")
            continue
        if wd:
            lines.append(f"_g = {g} + _wd * {d}")
            g = "_g"
        if form == "momentum":
            lines += [f"_v = _S[{i}]['momentum']", "_v *= _mu", f"_v += {g}",
                      f"{d} -= _lr * ({g} + _mu * _v)" if a["nesterov"] else f"{d} -= _lr * _v"]
        else:
            lines += [f"_s = _S[{i}]", "_s['step'] += 1", "_t = _s['step']",
                      "_m, _v = _s['m'], _s['v']",
                      "_m *= _b1", f"_m += (1 - _b1) * {g}", "_v *= _b2", f"_v += (1 - _b2) * {g} * {g}",
                      f"{d} -= _lr * (_m / (1 - _b1 ** _t)) / (sqrt(_v / (1 - _b2 ** _t)) + _eps)"]
    lines.append("; ".join(f"{p}._vc[0] += 1" for _, p in a["params"])
                 + "  # values saved from the parameters are stale")
    return lines


_MISS = object()  # what the program returns when a guard fails

_RUNTIME = {"_ndarray": np.ndarray, "_as_array": _as_array, "_grads": _grads,
            "_tensor": Tensor._make, "np": np, "_MISS": _MISS,
            # NumPy's functions by their own names: one lookup a call instead of two
            "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
            "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "asarray": np.asarray, "uint8": np.uint8,
            "_sum_to": _ops.sum_to, "_check_targets": _ops._check_targets,
            "_check_param": _optim._check_param, "_st": _state, "_Tensor": Tensor}


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
        self.guards: list[tuple] = []   # (why, check) or (why, check, the check as an expression)
        self.meta: dict[str, tuple] = {}  # name -> (shape, dtype) while capturing
        self.n = 0
        self.args = args
        self.inputs = [f"a{i}" for i in range(len(args))]
        self.array_inputs: dict[int, int] = {}
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                name = self._new("x")
                self.instrs.append(Instr("input", (name,), (f"a{i}",), how="tensor"))
                self.sym[id(a)] = name
                self._meta(name, a.data)
                self.keep.append(a)
            elif isinstance(a, np.ndarray):
                self.array_inputs[id(a)] = i
        self.on_break = on_break
        self.thread = threading.get_ident()

    def _new(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def _meta(self, name: str, a) -> None:
        if isinstance(a, (np.ndarray, np.generic)):
            self.meta[name] = (tuple(a.shape), a.dtype.str)

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
            self._meta(name, t.data)
            return name
        # a tensor from outside the step: a parameter, or data it closes over; read at run time
        ref = self._ref(t, "T" if not t.requires_grad else "P")
        self.tensors[ref] = t
        name = self._new("p" if t.requires_grad else "d")
        self.instrs.append(Instr("tensor", (name,), ref=ref,
                                 how=(t.name or ("parameter" if t.requires_grad else "data")) +
                                 f" {tuple(t.data.shape)}"))
        self.sym[id(t)] = name
        self._meta(name, t.data)
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
            rows_c = np.arange(z.shape[0]) * z.shape[1]   # row i's entries start at i * C
            self.refs[f"{ctx_name}_dtype"] = z.dtype
            if isinstance(kw["target"], _Name):
                self.refs[f"{ctx_name}_rowsC"] = rows_c
            else:  # fixed labels: checked now, as eager did
                self.refs[f"{ctx_name}_flat"] = rows_c + _ops._check_targets(
                    "cross_entropy_with_logits", attrs["target"], *z.shape)
        ins = Instr("op", (name,), args, fn=fn, ctx=ctx_name, attrs=kw, how=how)
        self.instrs.append(ins)
        self.sym[id(out)] = name
        self._meta(name, out.data)
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
            if total in self.meta:
                self.meta[s] = self.meta[total]
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
            self._meta(gname, g)
            self.passes.append([])
        outs = []
        for p, pg in zip(node.parents, in_grads):
            if p is None or pg is None:
                outs.append(None)
                continue
            name = self._new("g")
            outs.append(name)
            self._meta(name, pg)
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
                self._meta(v, arr)
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
            form = _update_form(opt)
            attrs = {"form": form, "name": type(opt).__name__,
                     "params": tuple((i, self.ref_of[id(p)]) for i, p in live)}
            if form is not None:
                attrs.update(weight_decay=bool(opt.weight_decay), check_finite=bool(opt.check_finite),
                             nesterov=bool(getattr(opt, "nesterov", False)))
                self._guard_update(opt, ref, form, attrs, live)
            self.instrs.append(Instr("step", (), (lst,), ref=ref, attrs=attrs,
                                     how=f"{type(opt).__name__}: update {names} and its state"))
        elif kind == "random":
            mask, redraw, guard = args
            name = self._new("r")
            self.instrs.append(Instr("random", (name,), ref=self._ref(redraw, "R")))
            self.sym[id(mask)] = name
            self._meta(name, mask.data)
            self.keep.append(mask)
            self.guards.append(("a dropout layer's p or training mode changed", guard))

    def _guard_update(self, opt, ref: str, form: str, attrs: dict, live: list) -> None:
        """The form of the written-out update is assumed; its numbers are read when it runs."""
        name = type(opt).__name__
        checks = [("weight decay", lambda: bool(opt.weight_decay), attrs["weight_decay"],
                   f"{'' if attrs['weight_decay'] else 'not '}{ref}.weight_decay"),
                  ("check_finite", lambda: bool(opt.check_finite), attrs["check_finite"],
                   f"{ref}.check_finite is {attrs['check_finite']}")]
        if form in ("sgd", "momentum"):
            checks += [("momentum", lambda: bool(opt.momentum), form == "momentum",
                        f"{'' if form == 'momentum' else 'not '}{ref}.momentum")]
        if form == "momentum":
            checks += [("nesterov", lambda: bool(opt.nesterov), attrs["nesterov"],
                        f"{ref}.nesterov is {attrs['nesterov']}")]
        for what, now, was, expr in checks:
            self.guards.append((f"{name}'s {what} changed {'on' if was else 'off'} -> "
                                f"{'off' if was else 'on'}", lambda now=now, was=was: now() is was, expr))
        if form in ("momentum", "adam"):  # the lines read each parameter's state: step() would make it
            self.guards.append((f"{name} has no state for some parameter (step() makes it)",
                                lambda: all(opt.state.get(i) is not None for i, _ in live),
                                " and ".join(f"{ref}.state.get({i}) is not None" for i, _ in live)))

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
        for why, ok, *_ in self.guards:
            if not ok():
                return why
        return None


_MISSING = object()


def _guard_source(cap: Capture, fn: Callable, refs: dict) -> tuple[str, dict]:
    """The guards of ``cap`` as one Python condition over the step's arguments (and its refs)."""
    conds = [f"_st.grad_enabled is {cap.grad_mode}", "not _st.observed"]  # no hook, no anomaly mode
    env: dict[str, Any] = {}
    for i, d in enumerate(cap.args):
        a = f"a{i}"
        if d[0] == "Tensor":
            env[f"DT_a{i}"] = np.dtype(d[2])
            conds.append(f"type({a}) is _Tensor and {a}.data.shape == {d[1]!r} and "
                         f"{_dtype_is(f'{a}.data.dtype', f'DT_a{i}')} and {a}.requires_grad is {d[3]}")
        elif d[0] == "array":
            env[f"DT_a{i}"] = np.dtype(d[2])
            conds.append(f"type({a}) is _ndarray and {a}.shape == {d[1]!r} and "
                         f"{_dtype_is(f'{a}.dtype', f'DT_a{i}')}")
        elif d[0] == "value":
            conds.append(f"type({a}) is {d[1]} and {a} == {d[2]!r}" if d[1] != "NoneType"
                         else f"{a} is None")
        else:
            env[f"OBJ_a{i}"] = d[1].obj
            conds.append(f"{a} is OBJ_a{i}")
    for ref, (shape, dt, rg) in cap.tensors.items():
        env[f"DT_{ref}"] = np.dtype(dt)
        conds.append(f"{ref}.requires_grad is {rg} and {ref}.data.shape == {shape!r} and "
                     f"{_dtype_is(f'{ref}.data.dtype', f'DT_{ref}')}")
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
    for k, (_, ok, *expr) in enumerate(cap.guards):
        if expr:  # a plain expression over the program's names: no call
            conds.append(expr[0])
        else:
            env[f"GUARD{k}"] = ok
            conds.append(f"GUARD{k}()")
    return "\n            and ".join(conds), env


def _dtype_is(expr: str, dt: str) -> str:
    """``expr == dt`` for a dtype, asking first whether it is the very same object (it usually is)."""
    return f"({expr} is {dt} or {expr} == {dt})"


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

    ``optimize``: True runs ``minigrad.passes.DEFAULT_PASSES`` on each captured
    program, False none, and a sequence of passes runs those. Attributes:
    ``captures`` (one :class:`Capture` per capture, with its ``reason``),
    ``program`` and ``code`` (the current program and its source), ``eager``
    (True once a graph break sent the step back to eager execution).
    """

    def __init__(self, fn: Callable, on_break: str = "error", optimize: bool | Sequence = True,
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
        prog = Program(rec.instrs, rec.inputs, outputs, rec.refs, rec.contexts, rec.meta)
        if self.optimize:
            prog = prog.optimize(_passes.DEFAULT_PASSES if self.optimize is True else self.optimize)
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


def compile(step: Callable | None = None, *, on_break: str = "error",  # noqa: A001
            optimize: bool | Sequence = True):
    """Compile a whole training step; use as ``compile(step)`` or ``@compile(on_break=...)``."""
    if step is None:
        return lambda f: CompiledStep(f, on_break=on_break, optimize=optimize)
    return CompiledStep(step, on_break=on_break, optimize=optimize)
