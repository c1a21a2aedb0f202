"""Checks of notebook 01's exercise (predict the graph that ``rnn_score`` records).

``check_predicted_ops(predicted_ops, rnn_score, sentence)`` runs ``rnn_score`` on
random sentences of 1 to 6 tokens, each with both signs of the score (negating
every token negates the score: tanh is odd and h0 is 0), counts the nodes of
each name in ``topological_order`` of the result, and compares those counts
with ``predicted_ops(n_tokens, positive)``. Entries of 0 in your dict are
ignored. A wrong count gets the reason that node kind occurs as often as it
does; a name that is not a node of the graph gets the names minigrad uses.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..engine import topological_order

__all__ = ["check_predicted_ops", "ADVICE"]

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


def check_predicted_ops(predicted_ops, rnn_score, sentence, max_tokens: int = 6) -> None:
    """Raise AssertionError unless predicted_ops matches the recorded graph for 1..max_tokens tokens."""
    rng = np.random.default_rng(1)
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
