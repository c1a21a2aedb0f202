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
