"""minigrad.checks.nb02: the bytes-prediction check names the array a wrong prediction miscounts."""

import numpy as np
import pytest

from minigrad.checks import nb02


def reference(batch, sizes):
    return batch * (sum(8 * h for h in sizes[1:-1]) + 8 * sizes[-1] + 16)


def test_the_reference_passes():
    nb02.check_training_bytes(reference)


def test_an_alternative_by_itemsize_passes():
    def predicted(batch, sizes):
        f, i = np.dtype(np.float64).itemsize, np.dtype(np.int64).itemsize
        arrays = [(batch * w, f) for w in sizes[1:]] + [(batch, i), (batch, i)]
        return sum(n * size for n, size in arrays)
    nb02.check_training_bytes(predicted)


@pytest.mark.parametrize("predicted, phrase", [
    (lambda b, s: reference(b, s) + b * 8 * sum(s[1:-1]), "ReLU output is counted twice"),
    (lambda b, s: reference(b, s) - 16 * b, "two int64 arrays"),
    (lambda b, s: reference(b, s) - 8 * b, "two int64 arrays"),
    (lambda b, s: reference(b, s) + 8 * b * s[0], "the input batch is not an activation"),
    (lambda b, s: reference(b, s) + 8 * b * sum(s[1:]), "matmul outputs and the logits are not kept"),
    (lambda b, s: reference(b, s) // 2, "8 bytes per number"),
    (lambda b, s: reference(b, s) + 8 * b * s[-1], "count it once"),
    (lambda b, s: str(reference(b, s)), "return one number"),
])
def test_wrong_predictions_are_named(predicted, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb02.check_training_bytes(predicted)


# ------------------------------------------------------------- kept_for_backward: the walk

import minigrad as mg  # noqa: E402


def owner(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def reference_walk(root):
    owners = {}
    for node in mg.topological_order(root):
        for a in node.arrays():
            owners[id(owner(a))] = owner(a).nbytes
    return sum(owners.values())


def test_the_reference_walk_passes():
    nb02.check_kept_for_backward(reference_walk)


def test_an_alternative_walk_of_its_own_passes():
    """Its own stack walk over node.parents instead of the order; owners kept in a list, by identity."""
    def kept(root):
        stack, seen, found = [root.grad_fn] if root.grad_fn is not None else [], set(), []
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(p for p in node.parents if p is not None)
            for a in node.arrays():
                o = owner(a)
                if not any(o is b for b in found):
                    found.append(o)
        return int(sum(b.nbytes for b in found))
    nb02.check_kept_for_backward(kept)


def per_node(root):
    return sum(a.nbytes for n in mg.topological_order(root) for a in n.arrays())


def by_identity(root):
    return sum({id(a): a.nbytes for n in mg.topological_order(root) for a in n.arrays()}.values())


def view_sizes(root):
    sizes = {}
    for n in mg.topological_order(root):
        for a in n.arrays():
            sizes.setdefault(id(owner(a)), a.nbytes)
    return sum(sizes.values())


def saved_only(root):
    found = {}
    for n in mg.topological_order(root):
        for a in n.saved or ():
            if isinstance(a, np.ndarray):
                found[id(owner(a))] = owner(a).nbytes
    return sum(found.values())


def with_leaves(root):
    found = {}
    for n in mg.topological_order(root):
        arrays = list(n.arrays()) + ([n.variable.data] if isinstance(n, mg.function.AccumulateGrad) else [])
        for a in arrays:
            found[id(owner(a))] = owner(a).nbytes
    return sum(found.values())


def no_release(root):
    return sum({id(owner(a)): owner(a).nbytes for n in mg.topological_order(root) for a in n.saved
                if a is not None}.values())


@pytest.mark.parametrize("wrong, phrase", [
    (per_node, "an array kept by two nodes .* count each buffer once"),
    (by_identity, "you counted a view apart from the array it was made from"),
    (view_sizes, "count the owner's nbytes"),
    (saved_only, r"node.arrays\(\) also lists the arrays in the node's own attributes"),
    (with_leaves, "an AccumulateGrad node keeps no array"),
    (no_release, r"node.saved is None\): node.arrays\(\) is then empty|node.arrays\(\) also lists"),
    (lambda root: float(reference_walk(root)), "return a whole number of bytes"),
])
def test_wrong_walks_are_named(wrong, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb02.check_kept_for_backward(wrong)
