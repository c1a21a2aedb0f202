"""Checks of notebook 13's exercises: a dynamic loss scaler, a hinge loss written with ops only, the ring
all-reduce, and a dead-code pass over a compiled step's program.

``check_hinge(hinge_ops)`` traces ``hinge_ops(x, w)`` with ``minigrad.trace`` on an example whose margin is
positive, and requires that nothing was read into Python while tracing (no ``.item()``, ``.numpy()``);
that eagerly and replayed from the trace it gives ``max(0, 1 - sum(x @ w))`` for x filled with -1, 0,
0.1, 0.5 and 1 (the last two have negative margins, so a branch frozen at tracing time shows); and that
the gradient through the trace passes ``gradcheck``.

``check_ring_allreduce(ring_allreduce)`` runs it on K = 4, 3 and 5 workers, with vectors that do not
split evenly, and requires that the vectors are left unchanged, that every worker ends with the sum,
and that each worker sends exactly one chunk per step for 2(K - 1) steps (the byte counts of the
schedule in the text, in any order: a ring that starts at another chunk sends a permutation of them).

``check_remove_dead_code(remove_dead_code)`` compiles two steps of its own without passes (one that logs
the mean of h * h, like the notebook's; one that returns the logits and their mean square but not the
loss, whose op only its VJP needs, and computes a ReLU nothing uses) and calls
``remove_dead_code(instrs, outputs)`` on each program. It requires the program's own instructions, once
each and in their order, every effect among them, the lines that compute the outputs, the forward op of
every kept VJP, and then exactly the lines of ``Program.eliminate_dead_code``; and that the pruned
program, built with ``dataclasses.replace(program, instrs=pruned).build()``, computes the same outputs
and the same update of the parameters and the optimizer's state as the full one (both run from the
same state).
"""

from __future__ import annotations

import dataclasses

import numpy as np

import minigrad as mg
from minigrad import Tensor

from ._op_checks import attempt

W_HINGE = np.array([[0.5], [1.0], [1.5]])
FILLS = [-1.0, 0.0, 0.1, 0.5, 1.0]


def check_hinge(hinge_ops) -> None:
    """Check ``hinge_ops(x, w)`` eagerly and through ``minigrad.trace`` (see the module's docstring)."""
    example = np.full((2, 3), 0.01)  # a small score: positive margin
    traced = attempt(
        "minigrad.trace(hinge_ops, x, w)",
        "compute with ops on Tensors (x @ w, .sum(), .relu(), ...)",
        mg.trace,
        hinge_ops,
        example,
        W_HINGE,
    )
    assert not traced.reads, (
        "hinge_ops read a value into Python while it was traced (.item(), .numpy(), .data or a truth "
        "value): the trace would freeze what was decided with it; compute the max with an op "
        "instead, so that the trace records it"
    )
    for fill in FILLS:
        xf = np.full((2, 3), fill)
        expected = max(0.0, 1.0 - (xf @ W_HINGE).sum())
        got = hinge_ops(Tensor(xf), Tensor(W_HINGE)).item()
        assert abs(got - expected) < 1e-12, (
            f"hinge_ops on x filled with {fill}: {got:.4g}, but max(0, 1 - score) is {expected:.4g}"
        )
        got = traced(xf, W_HINGE).item()
        assert abs(got - expected) < 1e-12, (
            f"the trace of hinge_ops, replayed on x filled with {fill}, gives {got:.4g} instead of "
            f"{expected:.4g}: "
            "something was decided while tracing (a value read from .data is frozen into the graph as a "
            "constant)"
        )
    assert mg.gradcheck(lambda v: traced(np.full((2, 3), 0.1), v), Tensor(W_HINGE, requires_grad=True)), (
        "the gradient through the trace of hinge_ops does not match central differences"
    )


def ring_problem(results, sent, vectors) -> str | None:
    """What is wrong with ``(results, sent)`` as the ring all-reduce of ``vectors``, or None."""
    k, total = len(vectors), np.sum(vectors, axis=0)
    if len(results) != k or any(np.shape(r) != total.shape for r in results):
        return f"K = {k}: return one array per worker, each of the vectors' shape {total.shape}"
    wrong = [i for i, r in enumerate(results) if not np.allclose(r, total, rtol=0, atol=1e-12)]
    if wrong:
        return (
            f"K = {k}: workers {wrong} do not hold the sum. Run both phases, K - 1 steps each: in the "
            f"reduce-scatter, add what arrives to the receiver's own copy of that chunk; in the all-gather, "
            f"overwrite the receiver's chunk with the completed sum it is sent"
        )
    chunk_bytes = [c.nbytes for c in np.array_split(vectors[0], k)]
    expected = [
        sum(chunk_bytes[(i - s) % k] for s in range(k - 1))
        + sum(chunk_bytes[(i + 1 - s) % k] for s in range(k - 1))
        for i in range(k)
    ]
    if len(sent) != k or sorted(sent) != sorted(expected):
        return (
            f"K = {k}: bytes sent per worker {list(sent)}, expected {expected} with the schedule of the "
            f"text (another starting chunk reorders them): each worker sends one chunk (1/K of the "
            f"vector, c.nbytes) per step, in 2(K - 1) steps, and nothing else"
        )
    return None


def check_ring_allreduce(ring_allreduce, vectors=None) -> None:
    """Check ``ring_allreduce`` on ``vectors`` (if given) and on K = 4, 3 and 5 random vectors."""
    rng = np.random.default_rng(11)
    cases = ([] if vectors is None else [list(vectors)]) + [
        [rng.standard_normal(n) for _ in range(k)] for k, n in ((4, 75), (3, 11), (5, 11))
    ]
    for vs in cases:
        given = [v.copy() for v in vs]
        results, sent = attempt(
            f"ring_allreduce on K = {len(vs)} vectors",
            "return (list of K arrays, list of K byte counts)",
            ring_allreduce,
            given,
        )
        assert all(np.array_equal(a, b) for a, b in zip(given, vs)), (
            f"K = {len(vs)}: ring_allreduce changed the vectors it was given: work on copies of the chunks"
        )
        problem = ring_problem(results, sent, vs)
        assert problem is None, problem


def _expected_scales(flags, init, growth_interval):
    """The scale before each step and whether the step is applied, by GradScaler's rule."""
    scale, good, out = init, 0, []
    for finite in flags:
        out.append((scale, finite))
        if not finite:
            scale, good = scale / 2, 0
        else:
            good += 1
            if good == growth_interval:
                scale, good = scale * 2, 0
    return out


def check_loss_scaler(LossScaler, grads_finite=None) -> None:
    """Check a dynamic loss scaler ``LossScaler(init, growth_interval)`` with ``.scale`` and
    ``.update(finite) -> bool`` (True: apply this step) against PyTorch's ``GradScaler`` rule: a step whose
    gradients hold inf or NaN is skipped and halves the scale, and ``growth_interval`` applied steps in a
    row double it. ``grads_finite(scale)``, if given, says whether a float16 backward at that scale stays
    finite; the scaler then drives it from 2^24 for 12 steps with a growth interval of 3."""
    flags = [
        True,
        True,
        False,
        True,
        True,
        True,
        True,
        False,
        False,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ]
    for init, interval in ((2.0**10, 3), (65536.0, 2), (8.0, 1)):
        scaler = attempt(
            "LossScaler(init, growth_interval)",
            "keep the scale in .scale and count the good steps",
            LossScaler,
            init,
            interval,
        )
        for k, ((want_scale, want_apply), finite) in enumerate(
            zip(_expected_scales(flags, init, interval), flags)
        ):
            got_scale = float(scaler.scale)
            assert got_scale == want_scale, (
                f"growth interval {interval}, from {init:g}: before step {k} the scale is {got_scale:g}, "
                "expected "
                f"{want_scale:g} (the flags so far: {flags[:k]}). Halve it after a step with inf or NaN, "
                "and double "
                f"it after {interval} applied steps in a row, counting again from 0 after every change and "
                "every "
                f"overflow"
            )
            applied = scaler.update(finite)
            assert bool(applied) == want_apply, (
                f"step {k}: update({finite}) returned {applied}: return False for a step whose gradients "
                "are not "
                f"finite (the optimizer must skip it, or inf reaches the weights) and True otherwise"
            )
    if grads_finite is not None:
        scaler, seen = LossScaler(2.0**24, 3), []
        for _ in range(12):
            seen.append(int(np.log2(scaler.scale)))
            scaler.update(grads_finite(scaler.scale))
        want = [
            int(np.log2(s)) for s, _ in _expected_scales([grads_finite(2.0**k) for k in seen], 2.0**24, 3)
        ]
        assert seen == want, f"on the float16 network the log2 scales were {seen}, expected {want}"


# ---------------------------------------------------------------- dead code

DEAD_CODE_STEPS = (
    "the notebook's kind of step (it logs the mean of h * h)",
    "a step that returns the logits and their mean square, not the loss",
)


def _dead_code_step(which: int):
    """A fresh 3-8-5 MLP, its optimizer, a batch, and step ``which`` of DEAD_CODE_STEPS for them."""
    rng = np.random.default_rng(1300 + which)
    net = mg.nn.MLP([3, 8, 5], rng=rng)
    params = net.parameters()
    opt = mg.optim.SGD(params, lr=0.1, momentum=0.9) if which == 0 else mg.optim.Adam(params, lr=0.01)
    x, y = Tensor(rng.standard_normal((4, 3))), rng.integers(0, 5, 4)
    stats = []

    def logs_a_statistic(x, y):
        opt.zero_grad()
        h = net[1](net[0](x))
        stats.append((h * h).mean())  # nothing reads it
        loss = net[2](h).cross_entropy_with_logits(y)
        loss.backward()
        opt.step()
        return loss

    def returns_the_logits(x, y):
        opt.zero_grad()
        logits = net(x)
        logits.cross_entropy_with_logits(y).backward()  # the loss op: only its VJP reads it (its context)
        logits.relu()  # nothing reads it
        opt.step()
        return logits, (logits * logits).mean()

    return net, opt, (x, y), (logs_a_statistic, returns_the_logits)[which]


def _line(ins) -> str:
    """An instruction as its line of the program: ``v13 = mean(v11)``."""
    outs = ", ".join(str(o) for o in ins.out)
    call = ins.name + "(" + ", ".join(str(a) for a in ins.args) + ")"
    return outs + " = " + call if outs else call


def _lines(instrs, most: int = 4) -> str:
    """Some instructions as their lines, the first ``most`` of them if there are more."""
    shown = "; ".join(_line(ins) for ins in instrs[:most])
    rest = len(instrs) - most
    return f"{shown} and {rest} more lines" if rest > 0 else shown


def _state(net, opt):
    """Copies of the parameters' values and of the optimizer's state."""
    state = {i: {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in s.items()}
             for i, s in opt.state.items()}
    return [p.data.copy() for p in net.parameters()], state


def _restore(net, opt, saved) -> None:
    """Put back what ``_state`` copied, in the same arrays (the program refers to them)."""
    params, state = saved
    for p, v in zip(net.parameters(), params):
        p.data[...] = v
    for i, s in state.items():
        for k, v in s.items():
            if isinstance(v, np.ndarray):
                opt.state[i][k][...] = v
            else:
                opt.state[i][k] = v


def _same_state(a, b) -> bool:
    (pa, sa), (pb, sb) = a, b
    return (all(np.array_equal(u, v) for u, v in zip(pa, pb)) and sa.keys() == sb.keys()
            and all(sa[i].keys() == sb[i].keys() and all(np.array_equal(sa[i][k], sb[i][k]) for k in sa[i])
                    for i in sa))


def _arrays(result) -> list:
    """The arrays of a program's result (a tensor, or a tuple of them)."""
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _arrays(r)]
    return [np.asarray(result.data if isinstance(result, Tensor) else result)]


def dead_code_problem(label: str, program, pruned) -> str | None:
    """What is wrong with ``pruned`` as the dead-code pass over ``program``, or None."""
    position = {id(ins): k for k, ins in enumerate(program.instrs)}
    if not isinstance(pruned, (list, tuple)) or not all(id(ins) in position for ins in pruned):
        return (
            f"{label}: return a list of the program's own Instr objects (some of instrs, not copies or "
            "names)"
        )
    order = [position[id(ins)] for ins in pruned]
    if order != sorted(set(order)):
        return (
            f"{label}: return each kept instruction once, in the program's order (a walk backwards "
            "collects them last to first: reverse the list before returning it)"
        )
    kept = set(map(id, pruned))
    lost = [ins for ins in program.instrs if ins.effect and id(ins) not in kept]
    if lost:
        return (
            f"{label}: lines with an effect were removed ({_lines(lost)}): zero_grad, the .grad writes and "
            "the optimizer's step change things outside the program, so keep every instruction whose "
            "ins.effect is True"
        )
    defined = {o for ins in pruned for o in ins.out if o is not None}
    outputs = program.to_block().live_out
    missing = [o for o in outputs if o not in defined]
    if missing:
        return (
            f"{label}: no kept line computes the outputs {missing} (the outputs are {list(outputs)}): start "
            "the walk with every name of outputs live"
        )
    ops = {ins.ctx for ins in pruned if ins.kind == "op"}
    orphans = [ins for ins in pruned if ins.kind == "vjp" and ins.ctx not in ops]
    if orphans:
        contexts = ", ".join(sorted({ins.ctx for ins in orphans}))
        return (
            f"{label}: the forward op of a kept VJP was removed (context {contexts}, read by "
            f"{_lines(orphans)}): a VJP reads what its op saved, so keep the op whose ins.ctx a kept VJP "
            "names, even where nothing reads the op's result"
        )
    want = program.eliminate_dead_code().instrs
    needed = set(map(id, want))
    removed = [ins for ins in want if id(ins) not in kept]
    if removed:
        return (
            f"{label}: lines that a kept line reads were removed ({_lines(removed)}): when you keep a line, "
            "make its args live, and walk the program backwards, so that every line is seen after the "
            "lines that read it"
        )
    extra = [ins for ins in pruned if id(ins) not in needed]
    if extra:
        return (
            f"{label}: lines that nothing needs are kept ({_lines(extra)}): keep a line only if it has an "
            "effect, a kept line reads one of its outputs, or it is the op whose ctx a kept VJP names"
        )
    return None


def check_remove_dead_code(remove_dead_code) -> None:
    """Check ``remove_dead_code(instrs, outputs)`` on the programs of DEAD_CODE_STEPS (see the module's
    docstring)."""
    for which, label in enumerate(DEAD_CODE_STEPS):
        net, opt, inputs, step = _dead_code_step(which)
        compiled = mg.compile(step, optimize=False)
        compiled(*inputs)  # the capture: one eager step, recorded
        program = compiled.program
        outputs = list(program.to_block().live_out)
        pruned = attempt(
            f"remove_dead_code(instrs, outputs) on {label}",
            "walk reversed(instrs) with a set of live names that starts as set(outputs)",
            remove_dead_code,
            list(program.instrs),
            outputs,
        )
        problem = dead_code_problem(label, program, pruned)
        assert problem is None, problem
        before = _state(net, opt)
        full = _arrays(program.build()(*inputs))
        after = _state(net, opt)
        _restore(net, opt, before)
        what, hint = f"the pruned program of {label}", "keep every line that a kept line reads"
        run_pruned = attempt(what, hint, dataclasses.replace(program, instrs=list(pruned)).build)
        result = attempt(what, hint, run_pruned, *inputs)
        assert len(full) == len(_arrays(result)) and all(
            np.array_equal(a, b) for a, b in zip(full, _arrays(result))
        ), f"{label}: the pruned program computes other outputs than the full one"
        assert _same_state(after, _state(net, opt)), (
            f"{label}: the pruned program changes the parameters or the optimizer's state otherwise than the "
            "full one: keep every step and .grad line, and the lines they read"
        )
