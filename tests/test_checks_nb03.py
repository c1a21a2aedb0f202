"""minigrad.checks.nb03: both exercises' checks reject plausible wrong engines, each with the slip named.

The wrong orders and backward loops below are the ones a learner writes: counting
consumers but decrementing per edge (and the mirror image), a recursive walk,
asking minigrad for the order, skipping the leaves; assigning instead of adding,
writing .grad during the walk, sharing one array between two leaves, seeding
with a float, running the engine itself.
"""

import collections
import sys

import numpy as np
import pytest

import minigrad
import minigrad.inspect
from minigrad.checks import nb03
from minigrad.engine import topological_order as early_topological_order  # bound before any check runs
from minigrad.function import AccumulateGrad


def counting(root, edge_count=True, edge_release=True, fifo=False, skip_leaves=False, at_most=False):
    """Kahn's algorithm over node.parents; the flags make the classic slips."""
    start = root.grad_fn
    pending, seen, stack = {id(start): 0}, {id(start)}, [start]
    while stack:
        node = stack.pop()
        parents = [p for p in node.parents if p is not None]
        for p in (parents if edge_count else list({id(p): p for p in parents}.values())):
            pending[id(p)] = pending.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    order, ready = [], collections.deque([start])
    while ready:
        node = ready.popleft() if fifo else ready.pop()
        if not (skip_leaves and isinstance(node, AccumulateGrad)):
            order.append(node)
        parents = [p for p in node.parents if p is not None]
        for p in (parents if edge_release else list({id(p): p for p in parents}.values())):
            pending[id(p)] -= 1
            if pending[id(p)] == 0 or (at_most and pending[id(p)] < 0):
                ready.append(p)
    return order


def recursive(root):
    order, seen = [], set()

    def visit(n):
        if id(n) in seen:
            return
        seen.add(id(n))
        for p in n.parents:
            if p is not None:
                visit(p)
        order.append(n)
    visit(root.grad_fn)
    return order[::-1]


def breadth_first(root):
    order, seen, queue = [], set(), collections.deque([root.grad_fn])
    while queue:
        n = queue.popleft()
        if id(n) in seen:
            continue
        seen.add(id(n))
        order.append(n)
        queue.extend(p for p in n.parents if p is not None)
    return order


def test_the_reference_order_passes():
    nb03.check_order(counting)


@pytest.mark.parametrize("alternative", [
    lambda r: counting(r, fifo=True),                                  # a FIFO ready queue
    lambda r: counting(r, edge_count=False, edge_release=False),       # per consumer, both ways: also valid
    lambda r: counting(r, at_most=True),                               # release at <= 0
], ids=["fifo", "per-consumer-both", "at-most-zero"])
def test_alternative_orders_pass(alternative):
    nb03.check_order(alternative)


@pytest.mark.parametrize("wrong, phrase", [
    (lambda r: counting(r, edge_count=False),
     "comes before its consumer.*count and decrement in the same unit"),
    (lambda r: counting(r, edge_count=False, fifo=True), "comes before its consumer"),
    (lambda r: counting(r, edge_release=False), "nodes are missing.*count and decrement in the same unit"),
    (recursive, "RecursionError: your function recursed"),
    (lambda r: list(reversed(minigrad.topological_order(r))), "called minigrad.topological_order"),
    (lambda r: list(reversed(minigrad.topological_order(r.grad_fn))), "called minigrad.topological_order"),
    (lambda r: list(reversed(early_topological_order(r.grad_fn))), "called minigrad.topological_order"),
    (lambda r: list(reversed(minigrad.inspect.topological_order(r.grad_fn))),
     "called minigrad.topological_order"),
    (lambda r: counting(r, skip_leaves=True), "AccumulateGrad nodes included"),
    (breadth_first, "comes before its consumer"),
    (lambda r: counting(r)[::-1], "not with root.grad_fn|comes before its consumer"),
], ids=["consumers-lifo", "consumers-fifo", "release-per-consumer", "recursive", "bypass", "bypass-node",
        "bypass-imported-early", "bypass-inspect", "no-leaves", "bfs", "reversed"])
def test_wrong_orders_are_named(wrong, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb03.check_order(wrong)


def test_show_order_prints_one_line_per_graph(capsys):
    nb03.show_order(counting)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and all(line.endswith("a valid order") for line in lines)


# ------------------------------------------------------------------ my_backward

def make_backward(assign=False, write_during=False, forward_order=False, no_copy=False, overwrite=False,
                  seed_float=False, vjp_on_leaves=False, in_place=False, use_engine=False, dict_cls=dict):
    def my_backward(root):
        if use_engine:
            root.backward()
            return
        order = minigrad.topological_order(root)
        grads = dict_cls()
        grads[id(order[-1])] = 1.0 if seed_float else np.ones_like(root.data)
        done = []
        for node in (order if forward_order else reversed(order)):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if isinstance(node, AccumulateGrad) and not vjp_on_leaves:
                leaf = node.variable
                if write_during:
                    leaf.grad = np.array(g) if leaf.grad is None else leaf.grad + g
                else:
                    done.append((leaf, g))
                continue
            for parent, pg in zip(node.parents, node.fn.backward(node, g)):
                if parent is None or pg is None:
                    continue
                if id(parent) in grads and not assign:
                    if in_place:
                        grads[id(parent)] += pg
                    else:
                        grads[id(parent)] = grads[id(parent)] + pg
                else:
                    grads[id(parent)] = pg
        for leaf, g in done:
            if leaf.grad is None or overwrite:
                leaf.grad = g if no_copy else np.array(g, dtype=leaf.data.dtype)
            else:
                leaf.grad = leaf.grad + g
    return my_backward


def test_the_reference_backward_passes():
    nb03.check_backward(make_backward())


def test_an_alternative_backward_passes():
    """Own counting order, a defaultdict of lists summed at pop time, and a copy by g + 0."""
    def my_backward(root):
        order = counting(root, fifo=True)
        shares = collections.defaultdict(list)
        shares[id(order[0])].append(np.ones_like(root.data))
        collected = []
        for node in order:
            if id(node) not in shares:
                continue
            parts = shares.pop(id(node))
            g = parts[0] + 0
            for p in parts[1:]:
                g = g + p
            if isinstance(node, AccumulateGrad):
                collected.append((node.variable, g))
                continue
            for parent, pg in zip(node.parents, node.fn.backward(node, g)):
                if parent is not None and pg is not None:
                    shares[id(parent)].append(pg)
        for leaf, g in collected:
            leaf.grad = g + 0 if leaf.grad is None else leaf.grad + g
    nb03.check_backward(my_backward)


@pytest.mark.parametrize("wrong, phrase", [
    (make_backward(assign=True), r"differs from backward\(\)'s.*add every share"),
    (make_backward(write_during=True), "x.grad was written before the walk finished"),
    (make_backward(forward_order=True), "visit the nodes from the root's node back to the leaves"),
    (make_backward(no_copy=True), "two writable arrays of their own"),
    (make_backward(overwrite=True), "Across calls gradients add up"),
    (make_backward(seed_float=True), r"np.ones_like\(root.data\)"),
    (make_backward(vjp_on_leaves=True), "An AccumulateGrad node runs no VJP"),
    (make_backward(in_place=True), "never in place|never change a gradient array in place"),
    (make_backward(use_engine=True), "ran minigrad's engine"),
], ids=["assign", "write-during", "forward-order", "no-copy", "overwrite", "float-seed", "vjp-on-leaves",
        "in-place", "engine"])
def test_wrong_backward_loops_are_named(wrong, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb03.check_backward(wrong)


def test_a_recursive_backward_is_named():
    def recursive_backward(root):
        def push(node, g):
            if isinstance(node, AccumulateGrad):
                v = node.variable
                v.grad = np.array(g) if v.grad is None else v.grad + g
                return
            for parent, pg in zip(node.parents, node.fn.backward(node, g)):
                if parent is not None and pg is not None:
                    push(parent, pg)
        push(root.grad_fn, np.ones_like(root.data))
    with pytest.raises(AssertionError, match="RecursionError: walk the nodes with a loop"):
        nb03.check_backward(recursive_backward)


def test_the_checks_restore_the_recursion_limit_and_topological_order():
    limit, topo = sys.getrecursionlimit(), minigrad.topological_order
    with pytest.raises(AssertionError):
        nb03.check_order(recursive)
    assert sys.getrecursionlimit() == limit and minigrad.topological_order is topo


def test_a_failing_backward_leaves_no_gradient_in_minigrad_and_a_partial_one_in_pytorch():
    """Notebook 03 says that writing .grad only at the end is minigrad's choice: PyTorch differs."""
    torch = pytest.importorskip("torch")

    class Fails(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("fails on purpose")

    xt, yt = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0], requires_grad=True)
    with pytest.raises(ValueError, match="on purpose"):
        (Fails.apply(yt).sum() + (xt * 2.0).sum()).backward()
    assert xt.grad is not None and xt.grad.tolist() == [2.0, 2.0] and yt.grad is None

    xm = minigrad.Tensor([1.0, 2.0], requires_grad=True)
    ym = minigrad.Tensor([3.0], requires_grad=True)
    with pytest.raises(ValueError, match="on purpose"):
        (nb03._Fails.apply(ym).sum() + (xm * 2.0).sum()).backward()
    assert xm.grad is None and ym.grad is None
