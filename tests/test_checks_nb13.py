"""The checks of notebook 13's exercises (minigrad.checks.nb13) reject plausible wrong hinges and ring
all-reduces with a message that names the slip, and accept correct ones written differently."""

import numpy as np
import pytest

from minigrad import Tensor
from minigrad.checks import nb13

# ---------------------------------------------------------------- the hinge, with ops only


def hinge_relu(x, w):  # the notebook's solution
    return (1.0 - (x @ w).sum()).relu()


def hinge_abs(x, w):  # (m + |m|) / 2
    m = 1.0 - (x @ w).sum()
    return (m + (m * m) ** 0.5) * 0.5


@pytest.mark.parametrize("f", [hinge_relu, hinge_abs])
def test_hinge_correct_solutions_pass(f):
    nb13.check_hinge(f)


def hinge_item(x, w):
    m = 1.0 - (x @ w).sum()
    return m if m.item() > 0 else m * 0.0


def hinge_mask_from_data(x, w):
    m = 1.0 - (x @ w).sum()
    return m * float(m.data > 0)


def hinge_no_one(x, w):
    return (-(x @ w).sum()).relu()


def hinge_numpy(x, w):
    return Tensor(np.maximum(0.0, 1.0 - (x.data @ w.data).sum()))


@pytest.mark.parametrize(
    "f, phrase",
    [
        (hinge_item, "read a value into Python while it was traced"),
        (hinge_mask_from_data,
         r"read a value into Python while it was traced \(.item\(\), .numpy\(\), .data"),
        (hinge_no_one, r"max\(0, 1 - score\)"),
        (hinge_numpy, "compute with ops instead of .data"),
    ],
    ids=[".item() branch", "mask from .data", "missing 1", "NumPy on .data"],
)
def test_hinge_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb13.check_hinge(f)


# ---------------------------------------------------------------- the ring all-reduce


def ring(vectors):  # the notebook's solution
    K = len(vectors)
    chunks = [[c.copy() for c in np.array_split(v, K)] for v in vectors]
    sent = [0] * K
    for s in range(K - 1):
        msgs = [(i, (i - s) % K, chunks[i][(i - s) % K].copy()) for i in range(K)]
        for i, c, data in msgs:
            chunks[(i + 1) % K][c] += data
            sent[i] += data.nbytes
    for s in range(K - 1):
        msgs = [(i, (i + 1 - s) % K, chunks[i][(i + 1 - s) % K].copy()) for i in range(K)]
        for i, c, data in msgs:
            chunks[(i + 1) % K][c] = data
            sent[i] += data.nbytes
    return [np.concatenate(c) for c in chunks], sent


def ring_shifted_start(vectors, shift=1):  # every worker starts one chunk later
    K = len(vectors)
    chunks = [[c.copy() for c in np.array_split(v, K)] for v in vectors]
    sent = [0] * K
    for s in range(K - 1):
        for i in reversed(range(K)):  # sequential, no snapshot: still correct
            c = (i - s + shift) % K
            data = chunks[i][c].copy()
            chunks[(i + 1) % K][c] = chunks[(i + 1) % K][c] + data
            sent[i] += data.nbytes
    for s in range(K - 1):
        msgs = [(i, (i + 1 - s + shift) % K, chunks[i][(i + 1 - s + shift) % K].copy()) for i in range(K)]
        for i, c, data in msgs:
            chunks[(i + 1) % K][c] = data
            sent[i] += data.nbytes
    return [np.concatenate(c) for c in chunks], sent


@pytest.mark.parametrize("f", [ring, ring_shifted_start])
def test_ring_correct_solutions_pass(f):
    nb13.check_ring_allreduce(f)


def gather_adds(vectors):
    K = len(vectors)
    chunks = [[c.copy() for c in np.array_split(v, K)] for v in vectors]
    sent = [0] * K
    for phase in (0, 1):
        for s in range(K - 1):
            msgs = [(i, (i + phase - s) % K, chunks[i][(i + phase - s) % K].copy()) for i in range(K)]
            for i, c, data in msgs:
                chunks[(i + 1) % K][c] += data  # the all-gather adds too
                sent[i] += data.nbytes
    return [np.concatenate(c) for c in chunks], sent


def no_gather(vectors):
    K = len(vectors)
    chunks = [[c.copy() for c in np.array_split(v, K)] for v in vectors]
    sent = [0] * K
    for s in range(K - 1):
        msgs = [(i, (i - s) % K, chunks[i][(i - s) % K].copy()) for i in range(K)]
        for i, c, data in msgs:
            chunks[(i + 1) % K][c] += data
            sent[i] += data.nbytes
    return [np.concatenate(c) for c in chunks], sent


def whole_vector_bytes(vectors):
    results, sent = ring(vectors)
    return results, [2 * (len(vectors) - 1) * vectors[0].nbytes] * len(vectors)


def k_gather_steps(vectors):
    results, sent = ring(vectors)
    K = len(vectors)
    extra = [np.array_split(v, K)[(i + 1) % K].nbytes for i, v in enumerate(vectors)]
    return results, [s + e for s, e in zip(sent, extra)]


def in_place_inputs(vectors):
    K = len(vectors)
    chunks = [np.array_split(v, K) for v in vectors]  # views of the inputs, no copies
    sent = [0] * K
    for s in range(K - 1):
        msgs = [(i, (i - s) % K, chunks[i][(i - s) % K].copy()) for i in range(K)]
        for i, c, data in msgs:
            chunks[(i + 1) % K][c] += data
            sent[i] += data.nbytes
    for s in range(K - 1):
        msgs = [(i, (i + 1 - s) % K, chunks[i][(i + 1 - s) % K].copy()) for i in range(K)]
        for i, c, data in msgs:
            chunks[(i + 1) % K][c][...] = data
            sent[i] += data.nbytes
    return [np.concatenate(c) for c in chunks], sent


@pytest.mark.parametrize(
    "f, phrase",
    [
        (gather_adds, "overwrite the receiver's chunk"),
        (no_gather, "do not hold the sum"),
        (whole_vector_bytes, r"one chunk \(1/K of the\s+vector"),
        (k_gather_steps, r"in 2\(K - 1\) steps"),
        (in_place_inputs, "changed the vectors it was given"),
    ],
    ids=[
        "all-gather adds",
        "no all-gather",
        "whole-vector bytes",
        "K gather steps",
        "writes into the inputs",
    ],
)
def test_ring_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb13.check_ring_allreduce(f)


# ---------------------------------------------------------------- the loss scaler


class Scaler:  # the notebook's solution
    def __init__(self, init=2.0**16, growth_interval=2000):
        self.scale, self.growth_interval, self.good = float(init), growth_interval, 0

    def update(self, finite):
        if not finite:
            self.scale, self.good = self.scale / 2, 0
            return False
        self.good += 1
        if self.good == self.growth_interval:
            self.scale, self.good = self.scale * 2, 0
        return True


class ScalerHistory:  # counts from the last change, kept as a list
    def __init__(self, init, growth_interval):
        self.scale, self.n, self.run = init, growth_interval, []

    def update(self, finite):
        self.run = self.run + [finite] if finite else []
        self.scale = self.scale * 2 if len(self.run) == self.n else self.scale if finite else self.scale * 0.5
        if len(self.run) == self.n:
            self.run = []
        return finite


def fake_net(scale):  # a float16 backward overflows from 2^16 on
    return scale < 2.0**16


@pytest.mark.parametrize("cls", [Scaler, ScalerHistory])
def test_loss_scaler_correct_solutions_pass(cls):
    nb13.check_loss_scaler(cls, fake_net)


class DoublesEveryStep(Scaler):
    def update(self, finite):
        if not finite:
            self.scale /= 2
            return False
        self.scale *= 2
        return True


class NoResetOnOverflow(Scaler):
    def update(self, finite):
        if not finite:
            self.scale /= 2
            return False
        return super().update(finite)


class AppliesOverflow(Scaler):
    def update(self, finite):
        super().update(finite)
        return True


class OffByOne(Scaler):
    def update(self, finite):
        if not finite:
            self.scale, self.good = self.scale / 2, 0
            return False
        if self.good == self.growth_interval:
            self.scale, self.good = self.scale * 2, 0
        self.good += 1
        return True


class NeverGrows(Scaler):
    def update(self, finite):
        if not finite:
            self.scale /= 2
        return finite


@pytest.mark.parametrize(
    "cls, phrase",
    [
        (DoublesEveryStep, "double\\s+it after 3 applied steps"),
        (NoResetOnOverflow, "counting again from 0 after every change and every\\s+overflow"),
        (AppliesOverflow, "return False for a step whose gradients are not\\s+finite"),
        (OffByOne, "before step 6 the scale is 512, expected 1024"),
        (NeverGrows, "the scale is 512, expected 1024"),
    ],
    ids=[
        "doubles every step",
        "no reset on overflow",
        "applies an overflowed step",
        "off by one",
        "never grows",
    ],
)
def test_loss_scaler_wrong_solutions_are_named(cls, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb13.check_loss_scaler(cls, fake_net)


# ---------------------------------------------------------------- the dead-code pass


def dead_code(instrs, outputs):  # the notebook's solution
    live = set(outputs)
    kept = []
    for ins in reversed(instrs):
        needed = ins.effect or any(o in live for o in ins.out if o) or (ins.kind == "op" and ins.ctx in live)
        if needed:
            kept.append(ins)
            live.update(ins.args)
            if ins.kind == "vjp":
                live.add(ins.ctx)
    return kept[::-1]


def dead_code_recursive(instrs, outputs):  # marks from the outputs and effects, depth first
    maker = {}
    for ins in instrs:
        for name in [o for o in ins.out if o is not None] + ([ins.ctx] if ins.kind == "op" else []):
            maker[name] = ins
    marked = set()

    def mark(ins):
        if id(ins) in marked:
            return
        marked.add(id(ins))
        for name in ins.args + ((ins.ctx,) if ins.kind == "vjp" else ()):
            if name in maker:
                mark(maker[name])

    for name in outputs:
        mark(maker[name])
    for ins in instrs:
        if ins.effect:
            mark(ins)
    return [ins for ins in instrs if id(ins) in marked]


def dead_code_two_passes(instrs, outputs):  # the live names first, then one filter in order
    live = set(outputs)
    for ins in reversed(instrs):
        if ins.effect or live & set(ins.out) or (ins.kind == "op" and ins.ctx in live):
            live |= set(ins.args) | ({ins.ctx} if ins.kind == "vjp" else set())
    return [ins for ins in instrs
            if ins.effect or live & set(ins.out) or (ins.kind == "op" and ins.ctx in live)]


@pytest.mark.parametrize("f", [dead_code, dead_code_recursive, dead_code_two_passes])
def test_dead_code_correct_solutions_pass(f):
    nb13.check_remove_dead_code(f)


def dead_code_no_effects(instrs, outputs):  # keeps only what the outputs need
    live, kept = set(outputs), []
    for ins in reversed(instrs):
        if any(o in live for o in ins.out if o) or (ins.kind == "op" and ins.ctx in live):
            kept.append(ins)
            live.update(ins.args + ((ins.ctx,) if ins.kind == "vjp" else ()))
    return kept[::-1]


def dead_code_no_ctx(instrs, outputs):  # a VJP's context is not made live
    live, kept = set(outputs), []
    for ins in reversed(instrs):
        if ins.effect or any(o in live for o in ins.out if o):
            kept.append(ins)
            live.update(ins.args)
    return kept[::-1]


def dead_code_forwards(instrs, outputs):  # walks forwards: a line is seen before the lines that read it
    live, kept = set(outputs), []
    for ins in instrs:
        if ins.effect or any(o in live for o in ins.out if o) or (ins.kind == "op" and ins.ctx in live):
            kept.append(ins)
            live.update(ins.args + ((ins.ctx,) if ins.kind == "vjp" else ()))
    return kept


def dead_code_reversed(instrs, outputs):  # forgets to reverse what the backward walk collected
    return dead_code(instrs, outputs)[::-1]


def dead_code_keeps_all(instrs, outputs):
    return list(instrs)


def dead_code_first_output(instrs, outputs):  # as if the step returned one tensor
    return dead_code(instrs, outputs[:1])


def dead_code_copies(instrs, outputs):
    import copy

    return [copy.copy(ins) for ins in dead_code(instrs, outputs)]


@pytest.mark.parametrize(
    "f, phrase",
    [
        (dead_code_no_effects, r"lines with an effect were removed \(zero\(\);.*keep every instruction whose "
                               r"ins\.effect is True"),
        (dead_code_no_ctx, r"not the loss: the forward op of a kept VJP was removed \(context X\d+, read by "
                           r"g\d+ = cross_entropy_with_logits_vjp"),
        (dead_code_forwards, r"lines that a kept line reads were removed .*walk the program backwards"),
        (dead_code_reversed, r"in the program's order .*reverse the list before returning it"),
        (dead_code_keeps_all,
         r"mean of h \* h\): lines that nothing needs are kept "
         r"\(v\d+ = mul\(v\d+, v\d+\); v\d+ = mean\(v\d+\)\)"),
        (dead_code_first_output, r"no kept line computes the outputs \['v\d+'\]"),
        (dead_code_copies, r"the program's own Instr objects"),
    ],
    ids=["forgets effects", "forgets the ctx of a kept VJP", "walks forwards", "reversed order",
         "keeps everything", "only the first output", "copies"],
)
def test_dead_code_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb13.check_remove_dead_code(f)


def test_dead_code_check_leaves_the_global_generator_alone():
    import minigrad as mg

    before = mg.random.get_state()
    nb13.check_remove_dead_code(dead_code)
    assert mg.random.get_state() == before
