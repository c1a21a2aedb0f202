"""Checks of notebook 01's two exercises: predict the graph that ``rnn_score`` records, and walk a graph's edges.

``check_predicted_ops(predicted_ops, rnn_score, sentence)`` runs ``rnn_score`` on
random sentences of 1 to 6 tokens, each with both signs of the score (negating
every token negates the score: tanh is odd and h0 is 0), counts the nodes of
each name in ``topological_order`` of the result, and compares those counts
with ``predicted_ops(n_tokens, positive)``. Entries of 0 in your dict are
ignored. A wrong count gets the reason that node kind occurs as often as it
does; a name that is not a node of the graph gets the names minigrad uses.

``check_leaves_reached(leaves_reached, rnn_score, sentence)`` compares the
leaves your walk returns with the leaves ``backward()`` gives a gradient to,
on seven graphs: the recurrent network on 1, 2 and 4 tokens (W and U, each used
at every step), ``a * x + exp(b)`` with ``x`` data (no gradient), a diamond 12
levels deep (4,096 paths from the root to its leaf, one leaf), a chain of 3,000
ops under Python's default recursion limit, and an output built under
``no_grad()`` (no graph: no leaves). Each leaf must appear once, in any order;
``minigrad.topological_order`` may not be asked for the answer.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..engine import topological_order
from ..function import AccumulateGrad, no_grad
from ..tensor import Tensor
from ._op_checks import Tripwire, recursion_limit

__all__ = ["check_predicted_ops", "ADVICE", "check_leaves_reached"]

ADVICE = {
    "accumulate_grad": "each leaf that requires grad (W and U) has one AccumulateGrad node, however often it is "
                       "used; the tokens and h0 need no gradient, so they have no node",
    "matmul": "every step records two matmuls, tok @ W and h @ U, the first step too: h0 is zeros, but the op "
              "still runs, and it is recorded because U requires grad",
    "add": "one add per step", "tanh": "one tanh per step", "sum": "one sum, after the loop",
    "mul": "s * s is one mul node (both of its edges lead to the same sum node), run when s > 0",
    "neg": "-s is one neg node, run when s <= 0",
}


def _unknown_name(name, real: Counter) -> str:
    names = ", ".join(repr(n) for n in sorted(real))
    text = str(name)
    if text.replace("_", "").lower() == "accumulategrad":
        return f"minigrad names a leaf's node 'accumulate_grad' (PyTorch's class is AccumulateGrad); the graph's names: {names}"
    if "Backward" in text:
        return (f"{text!r} is PyTorch's spelling; minigrad names a node by its op, in lower case (MmBackward0 is "
                f"'matmul'). The graph's names: {names}")
    return f"the graph has no node named {text!r}; its nodes are named {names}"


def check_predicted_ops(predicted_ops, rnn_score, sentence, max_tokens: int = 6, *, seed: int = 1) -> None:
    """Raise AssertionError unless predicted_ops matches the recorded graph for 1..max_tokens tokens."""
    rng = np.random.default_rng(seed)
    for n_tokens in range(1, max_tokens + 1):
        rows = rng.standard_normal((n_tokens, 2))
        for signed in (rows, -rows):
            out = rnn_score(sentence(signed.tolist()))
            positive = out.op == "mul"
            real = Counter(n.name for n in topological_order(out))
            mine = predicted_ops(n_tokens, positive)
            if not hasattr(mine, "items"):
                raise AssertionError(f"predicted_ops returned {type(mine).__name__}; return a dict from node name "
                                     f"to count, e.g. {{'matmul': 2, ...}}")
            mine = {k: v for k, v in dict(mine).items() if v}
            case = f"{n_tokens} token{'s' * (n_tokens > 1)}, {'positive' if positive else 'negative'} score"
            for name in mine:
                if name not in real and name in ADVICE:
                    raise AssertionError(f"{case}: you predict {mine[name]} {name!r} nodes, the graph has 0. "
                                         f"{ADVICE[name]}")
                if name not in real:
                    raise AssertionError(f"{case}: you predict {mine[name]} {name!r} nodes. {_unknown_name(name, real)}")
            for name in sorted(real):
                if mine.get(name, 0) != real[name]:
                    raise AssertionError(
                        f"{case}: you predict {mine.get(name, 0)} {name!r} nodes, the graph has {real[name]}. "
                        f"{ADVICE.get(name, '')}")


def _leaf_graphs(rnn_score, sentence, seed: int = 3) -> tuple[dict, list]:
    """The graphs, by name, and the data tensors they use (kept alive, so that node.inputs still shows them)."""
    rng = np.random.default_rng(seed)
    graphs = {f"rnn_score on {n} token{'s' * (n > 1)}": rnn_score(sentence(rng.standard_normal((n, 2)).tolist()))
              for n in (1, 2, 4)}
    a = Tensor([0.5, -1.0], requires_grad=True, name="a")
    b = Tensor([2.0, 1.0], requires_grad=True, name="b")
    x = Tensor([3.0, 4.0], name="x")                                  # data: no node, no gradient
    graphs["a * x + exp(b), x data"] = ((a * x) + b.exp()).sum()
    d = Tensor(0.3, requires_grad=True, name="d")
    v = d
    for _ in range(12):
        v = v * 1.0 + v * 0.5                                         # two edges to v at every level
    graphs["a diamond 12 levels deep"] = v
    c = Tensor(1.0, requires_grad=True, name="c")
    w = c
    for _ in range(3000):
        w = w * 1.0001
    graphs["a chain of 3,000 muls"] = w
    with no_grad():
        graphs["an output made under no_grad()"] = (a * 2.0).sum()
    return graphs, [x]


def _names(leaves) -> str:
    return "[" + ", ".join(getattr(t, "name", None) or type(t).__name__ for t in leaves) + "]"


def check_leaves_reached(leaves_reached, rnn_score, sentence, *, seed: int = 3) -> None:
    """Raise AssertionError unless leaves_reached(root) is each leaf backward() reaches, once."""
    tripwire = Tripwire()
    graphs, _alive = _leaf_graphs(rnn_score, sentence, seed)
    for name, root in graphs.items():
        want = [n.variable for n in topological_order(root) if isinstance(n, AccumulateGrad)]
        try:
            with recursion_limit(1000), tripwire.armed():
                mine = leaves_reached(root)
        except NotImplementedError:
            raise
        except RecursionError:
            raise AssertionError(f"{name}: RecursionError: your walk calls itself once per node; keep a list of "
                                 f"nodes still to visit instead") from None
        except Exception as err:
            hint = ""
            if isinstance(err, AttributeError) and "NoneType" in str(err):
                hint = (" An edge is None for an input that needs no gradient, and an output made under "
                        "no_grad() has grad_fn None: skip those")
            raise AssertionError(f"{name}: leaves_reached raised {type(err).__name__}: {err}.{hint}") from err
        if tripwire.called:
            raise AssertionError(f"{name}: your function called minigrad.topological_order: walk the edges "
                                 f"node.parents yourself, from root.grad_fn")
        try:
            mine = list(mine)
        except TypeError:
            raise AssertionError(f"{name}: leaves_reached returned {type(mine).__name__}; return a list of "
                                 f"tensors") from None
        if any(not isinstance(t, Tensor) for t in mine):
            odd = next(t for t in mine if not isinstance(t, Tensor))
            raise AssertionError(f"{name}: your list holds {odd!r}, not a tensor: a leaf's node is an "
                                 f"AccumulateGrad node, and its leaf is node.variable")
        for t in mine:
            k = sum(u is t for u in mine)
            if k > 1:
                raise AssertionError(f"{name}: {t.name or 'a leaf'} appears {k} times: a leaf used by several "
                                     f"ops is reached along several edges; remember the nodes you have seen "
                                     f"and visit each once")
        extra = [t for t in mine if not any(t is w for w in want)]
        if extra:
            t = extra[0]
            why = ("it does not require grad, so it has no node and backward() gives it nothing"
                   if not t.requires_grad else "it is not a leaf: collect node.variable of the AccumulateGrad "
                                               "nodes only" if t.grad_fn is not None
                   else "backward() does not reach it: it takes no part in the loss")
            raise AssertionError(f"{name}: your list has {_names(extra)}, which backward() gives no gradient: {why}")
        missing = [w for w in want if not any(w is t for t in mine)]
        if missing:
            raise AssertionError(f"{name}: your list misses {_names(missing)}, which backward() gives a gradient: "
                                 f"follow every edge of node.parents (not only the first), down to the "
                                 f"AccumulateGrad nodes")
