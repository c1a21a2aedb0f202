"""minigrad.checks.nb01: the graph-prediction check rejects wrong counts and wrong names, saying why."""

import numpy as np
import pytest

from minigrad import Tensor
from minigrad.checks import nb01

rng = np.random.default_rng(0)
W = Tensor(rng.standard_normal((2, 3)) * 0.8, requires_grad=True, name="W")
U = Tensor(rng.standard_normal((3, 3)) * 0.8, requires_grad=True, name="U")


def rnn_score(tokens):
    h = Tensor(np.zeros((1, 3)), name="h0")
    for tok in tokens:
        h = (tok @ W + h @ U).tanh()
    s = h.sum()
    return s * s if s.item() > 0 else -s


def sentence(rows):
    return [Tensor([r], name=f"x{i + 1}") for i, r in enumerate(rows)]


def reference(n, positive):
    counts = {"accumulate_grad": 2, "matmul": 2 * n, "add": n, "tanh": n, "sum": 1}
    counts["mul" if positive else "neg"] = 1
    return counts


def test_the_reference_passes():
    nb01.check_predicted_ops(reference, rnn_score, sentence)


def test_an_alternative_with_zero_entries_passes():
    from collections import Counter

    def predicted(n, positive):
        c = Counter(matmul=n, add=n, tanh=n, sum=1, accumulate_grad=2,
                    mul=int(positive), neg=int(not positive))
        c["matmul"] += n
        return c
    nb01.check_predicted_ops(predicted, rnn_score, sentence)


def changed(**delta):
    def predicted(n, positive):
        c = reference(n, positive)
        for k, v in delta.items():
            c[k] = v(n, positive) if callable(v) else v
        return c
    return predicted


@pytest.mark.parametrize("predicted, phrase", [
    (changed(matmul=lambda n, p: 2 * n - 1), "the first step too: h0 is zeros"),
    (changed(accumulate_grad=lambda n, p: 2 * n), "one AccumulateGrad node, however often it is used"),
    (changed(accumulate_grad=0), "one AccumulateGrad node"),
    (lambda n, p: {**{k: v for k, v in reference(n, p).items() if k not in ("mul", "neg")},
                   ("neg" if p else "mul"): 1}, "run when s"),
    (lambda n, p: {**{k: v for k, v in reference(n, p).items() if k != "accumulate_grad"},
                   "AccumulateGrad": 2},
     "minigrad names a leaf's node 'accumulate_grad'"),
    (lambda n, p: {**{k: v for k, v in reference(n, p).items() if k != "matmul"}, "MmBackward0": 2 * n},
     "PyTorch's spelling"),
    (changed(tanh=lambda n, p: n + 1), "one tanh per step"),
    (lambda n, p: [("matmul", 2 * n)], "return a dict"),
])
def test_wrong_predictions_are_named(predicted, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb01.check_predicted_ops(predicted, rnn_score, sentence)


# ------------------------------------------------------------ leaves_reached

import minigrad  # noqa: E402
from minigrad.function import AccumulateGrad  # noqa: E402


def walk(dedupe=True, skip_none=True, recursive=False, first_edge_only=False, take="variable",
         inputs_too=False):
    def leaves_reached(root):
        out, seen = [], set()

        def visit(node):
            if isinstance(node, AccumulateGrad):
                out.append(node.variable if take == "variable" else node)
            for p, t in zip(node.parents, getattr(node, "inputs", ()) or ()):
                if inputs_too and p is None and t is not None and all(t is not u for u in out):
                    out.append(t)
            edges = [p for p in node.parents if p is not None or not skip_none]
            return edges[:1] if first_edge_only else edges

        if recursive:
            def rec(node):
                if node in seen:
                    return
                seen.add(node)
                for p in visit(node):
                    rec(p)
            if root.grad_fn is not None:
                rec(root.grad_fn)
            return out
        stack = [root.grad_fn] if root.grad_fn is not None or not skip_none else []
        while stack:
            node = stack.pop()
            if dedupe and node in seen:
                continue
            seen.add(node)
            stack.extend(visit(node))
        return out
    return leaves_reached


def test_the_reference_walk_passes():
    nb01.check_leaves_reached(walk(), rnn_score, sentence)


def test_an_alternative_breadth_first_walk_with_a_dict_passes():
    from collections import deque

    def leaves_reached(root):
        found, seen, queue = {}, set(), deque([root.grad_fn])
        while queue:
            node = queue.popleft()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if type(node).__name__ == "AccumulateGrad":
                found[id(node.variable)] = node.variable
            queue.extend(node.parents)
        return list(found.values())
    nb01.check_leaves_reached(leaves_reached, rnn_score, sentence)


@pytest.mark.parametrize("wrong, phrase", [
    (walk(dedupe=False), "appears 2 times: .* visit each once"),
    (walk(recursive=True), "RecursionError: your walk calls itself"),
    (walk(first_edge_only=True), r"misses \[U\].*follow every edge"),
    (lambda r: [n.variable for n in minigrad.topological_order(r) if isinstance(n, AccumulateGrad)],
     "called minigrad.topological_order"),
    (walk(take="node"), "not a tensor: .* its leaf is node.variable"),
    (walk(skip_none=False), "An edge is None .*skip those"),
    (walk(inputs_too=True), r"your list has \[x\].*it does not require grad"),
])
def test_wrong_walks_are_named(wrong, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb01.check_leaves_reached(wrong, rnn_score, sentence)
