"""The checks of notebook 13's exercises (minigrad.checks.nb13) reject plausible wrong hinges and ring
all-reduces with a message that names the slip, and accept correct ones written differently."""

import numpy as np
import pytest

from minigrad import Tensor
from minigrad.checks import nb13

# ---------------------------------------------------------------- the hinge, with ops only


def hinge_relu(x, w):                                   # the notebook's solution
    return (1.0 - (x @ w).sum()).relu()


def hinge_abs(x, w):                                    # (m + |m|) / 2
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


@pytest.mark.parametrize("f, phrase", [
    (hinge_item, "read a value into Python while it was traced"),
    (hinge_mask_from_data, "something was decided while tracing"),
    (hinge_no_one, r"max\(0, 1 - score\)"),
    (hinge_numpy, "compute with ops instead of .data"),
], ids=[".item() branch", "mask from .data", "missing 1", "NumPy on .data"])
def test_hinge_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb13.check_hinge(f)


# ---------------------------------------------------------------- the ring all-reduce


def ring(vectors):                                      # the notebook's solution
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


def ring_shifted_start(vectors, shift=1):               # every worker starts one chunk later
    K = len(vectors)
    chunks = [[c.copy() for c in np.array_split(v, K)] for v in vectors]
    sent = [0] * K
    for s in range(K - 1):
        for i in reversed(range(K)):                    # sequential, no snapshot: still correct
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
                chunks[(i + 1) % K][c] += data              # the all-gather adds too
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
    chunks = [np.array_split(v, K) for v in vectors]      # views of the inputs, no copies
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


@pytest.mark.parametrize("f, phrase", [
    (gather_adds, "overwrite the receiver's chunk"),
    (no_gather, "do not hold the sum"),
    (whole_vector_bytes, r"one chunk \(1/K of the\s+vector"),
    (k_gather_steps, r"in 2\(K - 1\) steps"),
    (in_place_inputs, "changed the vectors it was given"),
], ids=["all-gather adds", "no all-gather", "whole-vector bytes", "K gather steps", "writes into the inputs"])
def test_ring_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb13.check_ring_allreduce(f)
