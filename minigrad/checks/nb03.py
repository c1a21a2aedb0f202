"""Checks of notebook 03's two exercises: a reverse topological order by counting, and the backward loop.

``check_order(reverse_topo_by_counting)`` calls your function on six graphs:

* ``b = a + a; c = b + b`` (two edges from one op to one input);
* ``r = exp(exp(y)) + y * y`` and ``y * y + exp(exp(y))``, where counting
  consumers instead of edges releases ``y`` too early (which of the two breaks
  depends on the order in which ready nodes are taken);
* a small network whose hidden layer is used twice;
* a chain of 10,000 muls, under Python's default recursion limit (1000);
* the ``exp(exp(y)) + y * y`` graph built of stand-in nodes that have only
  ``parents``: your walk may rely on ``root.grad_fn`` and ``node.parents``, and
  must not ask ``minigrad.topological_order`` for the answer (calling it fails
  the check anywhere).

A valid order holds every node of the graph once, starts with ``root.grad_fn``,
and puts every consumer before each of its inputs; backpropagating in your
order must also give minigrad's gradients. ``show_order`` prints that per graph.

``check_backward(my_backward)`` compares your ``my_backward`` with
``loss.backward()`` on fresh copies of six graphs (a network with a broadcast
bias and a hidden layer used twice; ``b = a + a; c = b * b``; a sum of two leaves
one of which is used again; an input that takes no part; a chain 10,000 deep;
two calls in a row on the same leaves, after which each leaf must hold a
writable array of its own), watches that minigrad's own engine does not run,
and runs a seventh graph whose VJP raises part-way: the error must come
through and no ``.grad`` may have changed (minigrad's choice: PyTorch leaves the
gradients it wrote before the error). ``show_backward`` prints the per-graph result.
"""

from __future__ import annotations

import numpy as np

from ..engine import topological_order as _topological_order
from ..function import AccumulateGrad, Function
from ..hooks import op_hook
from ..tensor import Tensor
from ._op_checks import Tripwire, recursion_limit

__all__ = ["check_order", "show_order", "check_backward", "show_backward", "StandInNode", "StandInRoot"]

DEPTH = 10_000
SAME_UNIT = ("A node is released when its count reaches 0, so count and decrement in the same unit: one per "
             "edge for both (y * y gives y two edges), or one per distinct consumer for both")


class StandInNode:
    """A backward node reduced to what the walk may read: a name and its edges ``parents``."""

    __slots__ = ("name", "parents", "__weakref__")

    def __init__(self, name: str, *parents):
        self.name, self.parents = name, tuple(parents)

    def __repr__(self) -> str:
        return f"<stand-in {self.name}>"


class StandInRoot:
    """A stand-in for a tensor: only ``grad_fn``."""

    def __init__(self, grad_fn: StandInNode):
        self.grad_fn = grad_fn


def _stand_in_graph() -> tuple[StandInRoot, list[StandInNode]]:
    """exp(exp(y)) + y * y with y = t * 2, built of stand-ins; the nodes inputs first."""
    leaf = StandInNode("accumulate_grad")
    y = StandInNode("mul", leaf, None)
    e1 = StandInNode("exp", y)
    e2 = StandInNode("exp", e1)
    sq = StandInNode("mul", y, y)
    r = StandInNode("add", e2, sq)
    return StandInRoot(r), [leaf, y, e1, e2, sq, r]


def _chain(start: Tensor, depth: int) -> Tensor:
    v = start
    for _ in range(depth):
        v = v * 1.001
    return v


def _order_problem(order, root, expected) -> str | None:
    """None if order holds each node of expected once, root.grad_fn first, consumers first; else what is wrong."""
    index = {id(n): i for i, n in enumerate(expected)}

    def name(n):
        if isinstance(n, AccumulateGrad):
            return f"leaf {n.variable.name or 'tensor'}"
        return f"op{index[id(n)]} {n.name}"

    try:
        order = list(order)
    except TypeError:
        return f"your function returned {type(order).__name__}, not a list of nodes"
    position = {}
    for k, n in enumerate(order):
        if id(n) not in index:
            return f"item {k} of your order is not a node of the graph: {n!r}"
        if id(n) in position:
            return f"{name(n)} appears twice: each node must appear exactly once"
        position[id(n)] = k
    missing = [name(n) for n in expected if id(n) not in position]
    if missing:
        text = (f"{len(missing)} of the {len(expected)} nodes are missing, e.g. {missing[:3]}: list every node "
                f"root depends on, the leaves' AccumulateGrad nodes included")
        repeated = any(len([p for p in n.parents if p is not None]) != len({id(p) for p in n.parents if p is not None})
                       for n in expected)
        if order and repeated:
            text += f". {SAME_UNIT}; a node whose count never reaches 0 is never released"
        return text
    if order[0] is not root.grad_fn:
        return f"the order starts with {name(order[0])}, not with root.grad_fn"
    for node in order:
        for p in node.parents:
            if p is not None and position[id(p)] < position[id(node)]:
                return (f"{name(p)} comes before its consumer {name(node)}: a node may come only after every node "
                        f"that uses it. {SAME_UNIT}")
    return None


def _backprop_in(order, root) -> dict:
    """Backpropagate in a given order (consumers first); {id(leaf): gradient}."""
    grads, leaf_grads = {id(order[0]): np.ones_like(root.data)}, {}
    for node in order:
        g = grads.pop(id(node), None)
        if g is None:
            continue
        if isinstance(node, AccumulateGrad):
            leaf_grads[id(node.variable)] = g
            continue
        for parent, pg in zip(node.parents, node.fn.backward(node, g)):
            if parent is not None and pg is not None:
                grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
    return leaf_grads


def _order_results(reverse_topo_by_counting, seed: int = 0) -> dict[str, tuple[int, str | None]]:
    """{graph name: (number of nodes returned, problem or None)}."""
    rng = np.random.default_rng(seed)
    X = Tensor(rng.standard_normal((4, 3)), name="X")
    W1 = Tensor(rng.standard_normal((3, 5)) * 0.5, requires_grad=True, name="W1")
    W2 = Tensor(rng.standard_normal((5, 2)) * 0.5, requires_grad=True, name="W2")
    H = (X @ W1).tanh()
    net_loss = ((H @ W2) * H.sum(axis=1, keepdims=True)).cross_entropy_with_logits(np.array([0, 1, 1, 0]))
    a = Tensor(1.5, requires_grad=True, name="a")
    b = a + a
    t = Tensor(0.3, requires_grad=True, name="t")
    y = t * 2.0
    three_edges = {"exp(exp(y)) + y * y": y.exp().exp() + y * y, "y * y + exp(exp(y))": y * y + y.exp().exp()}
    roots = {"doubling chain": b + b, **three_edges, "network": net_loss,
             "chain of 10,000 muls": _chain(Tensor(1.0, requires_grad=True, name="x"), DEPTH)}
    stand_in_root, stand_in_nodes = _stand_in_graph()
    results = {}
    tripwire = Tripwire()
    cases = [(name, r, None) for name, r in roots.items()] + [("stand-in nodes", stand_in_root, stand_in_nodes)]
    for name, r, expected in cases:
        expected = _topological_order(r) if expected is None else expected
        try:
            with recursion_limit(1000), tripwire.armed():
                order = reverse_topo_by_counting(r)
        except NotImplementedError:
            raise
        except RecursionError:
            results[name] = (0, "RecursionError: your function recursed once per node; keep a list of "
                                "ready nodes instead of calling itself")
            continue
        except Exception as err:
            hint = ("; this graph's nodes have only .name and .parents, and the root only .grad_fn: walk them "
                    "yourself" if expected is stand_in_nodes else "")
            results[name] = (0, f"your function raised {type(err).__name__}: {err}{hint}")
            continue
        if tripwire.called:
            results[name] = (len(order), "your function called minigrad.topological_order: find the order "
                                         "yourself, by counting each node's edges from its consumers")
            continue
        problem = _order_problem(order, r, expected)
        if problem is None and (name in three_edges or name == "network"):
            mine = _backprop_in(order, r)
            if name in three_edges:
                exact = 2 * np.exp(0.6) * np.exp(np.exp(0.6)) + 8 * 0.3           # d/dt exp(exp(2t)) + 4t^2
                gap = abs(float(mine.get(id(t), np.nan)) - exact)
            else:
                net_loss.backward()
                gap = max(np.abs(mine[id(W)] - W.grad).max() if id(W) in mine else np.inf for W in (W1, W2))
            if not gap < 1e-12:
                problem = f"backpropagating in your order gives a wrong gradient (off by {gap:.3g})"
        results[name] = (len(order), problem)
    if results["chain of 10,000 muls"][1] is None and results["chain of 10,000 muls"][0] != DEPTH + 1:
        results["chain of 10,000 muls"] = (results["chain of 10,000 muls"][0], "10,000 mul nodes and one leaf")
    return results


def show_order(reverse_topo_by_counting) -> None:
    """Print, for each graph the checks use, how many nodes your order has and whether it is valid."""
    for name, (n, problem) in _order_results(reverse_topo_by_counting).items():
        print(f"{name:22s} {n:6d} nodes, {'a valid order' if problem is None else 'NOT valid'}")


def check_order(reverse_topo_by_counting, *, seed: int = 0) -> None:
    """Raise AssertionError (naming the graph and the slip) unless every order is valid."""
    for name, (_, problem) in _order_results(reverse_topo_by_counting, seed).items():
        assert problem is None, f"{name}: {problem}"


# ---------------------------------------------------------------- the backward loop

def _graph_network():
    r = np.random.default_rng(3)
    x = Tensor(r.standard_normal((4, 3)), name="x")
    W = Tensor(r.standard_normal((3, 3)) * 0.5, requires_grad=True, name="W")
    b = Tensor(np.zeros(3), requires_grad=True, name="b")
    h = (x @ W + b).tanh()                                # b is broadcast over the 4 rows
    return (h * h + h.exp()).sum(), [W, b]                 # h feeds two branches


def _graph_doubling():
    a = Tensor(1.5, requires_grad=True, name="a")
    b = a + a
    return b * b, [a]


def _graph_shared_sum():
    u = Tensor([1.0, -2.0, 0.5], requires_grad=True, name="u")
    v = Tensor([0.3, 0.7, -1.1], requires_grad=True, name="v")
    s = u + v                                             # add hands one gradient array to u and to v
    return (u * 3.0).sum() + (s * s).sum(), [u, v]


def _graph_unused_input():
    x = Tensor([0.5, -1.0], requires_grad=True, name="x")
    unused = Tensor([2.0, 3.0], requires_grad=True, name="unused")
    return (x.exp() * 2.0).sum(), [x, unused]


def _graph_deep_chain():
    x = Tensor(0.7, requires_grad=True, name="x")
    return _chain(x, DEPTH), [x]


GRAPHS = [("network", _graph_network), ("b = a + a; c = b * b", _graph_doubling),
          ("u + v, u used again", _graph_shared_sum), ("unused input", _graph_unused_input),
          ("chain of 10,000 muls", _graph_deep_chain)]


class _Fails(Function):
    """An op whose VJP raises, on purpose."""

    name = "fails"

    @staticmethod
    def forward(ctx, a):
        return a.copy()

    @staticmethod
    def backward(ctx, g):
        raise ValueError("this VJP fails on purpose")


def _failure(e: Exception) -> str:
    if isinstance(e, RecursionError):
        return "RecursionError: walk the nodes with a loop, not with recursion"
    hint = ""
    if "read-only" in str(e):
        hint = " A VJP may return a read-only view (sum's does): add gradients with a + b, never in place."
    elif "AccumulateGrad" in str(e) or "accumulate" in str(e):
        hint = " An AccumulateGrad node runs no VJP: its gradient is the leaf's, node.variable."
    elif "'float' object" in str(e) or "'int' object" in str(e):
        hint = (" A VJP reads g as an array (g.reshape, g.shape): start the root's node with "
                "np.ones_like(root.data), not the number 1.")
    return f"my_backward raised {type(e).__name__}: {e}.{hint}"


def _engine_ran(fn, *args) -> bool:
    ran = []

    def hook(event, f, inputs, node, attrs):
        if event in ("backward", "accumulate"):
            ran.append(event)

    with op_hook(hook):
        fn(*args)
    return bool(ran)


def _compare(name, mine, theirs) -> str | None:
    for m, t in zip(mine, theirs):
        if t.grad is None and m.grad is not None:
            return (f"{name}: {m.name}.grad should stay None ({m.name} takes no part in the loss), not "
                    f"{np.asarray(m.grad).round(4).tolist()}: only leaves your walk reaches get a gradient")
        if m.grad is None and t.grad is not None:
            return (f"{name}: {m.name}.grad is None, but backward() gives it a gradient: visit the nodes from the "
                    f"root's node back to the leaves, and write each leaf's gradient (node.variable of its "
                    f"AccumulateGrad node) into .grad")
        if t.grad is not None and not (np.shape(m.grad) == t.grad.shape
                                       and np.allclose(m.grad, t.grad, rtol=1e-12, atol=1e-12)):
            return (f"{name}: {m.name}.grad differs from backward()'s by up to "
                    f"{np.abs(np.asarray(m.grad) - t.grad).max():.3g} (yours "
                    f"{np.asarray(m.grad).ravel()[:3].round(4)}..., backward()'s {t.grad.ravel()[:3].round(4)}...): "
                    f"add every share (never assign, never change a gradient array in place), and pass a node's "
                    f"gradient on only after all of its consumers")
    return None


def _two_calls(my_backward) -> str | None:
    name = "two calls on the same leaves"
    u2, v2 = Tensor([1.0, 2.0], requires_grad=True, name="u"), Tensor([3.0, 4.0], requires_grad=True, name="v")
    ut, vt = Tensor([1.0, 2.0], requires_grad=True, name="u"), Tensor([3.0, 4.0], requires_grad=True, name="v")
    (ut + vt).sum().backward()
    (ut * 2.0).sum().backward()
    try:
        my_backward((u2 + v2).sum())                      # u.grad = v.grad = 1: one array from add, for both
        if u2.grad is v2.grad or not (isinstance(u2.grad, np.ndarray) and u2.grad.flags.writeable):
            return (f"{name}: after (u + v).sum(), u.grad and v.grad must be two writable arrays of their own "
                    f"(add hands one, read-only, array to both): give each leaf a copy")
        my_backward((u2 * 2.0).sum())                     # u.grad += 2; v.grad must not change
    except NotImplementedError:
        raise
    except Exception as e:
        return f"{name}: {_failure(e)}"
    problem = _compare(name, [u2, v2], [ut, vt])
    if problem and u2.grad is not None and v2.grad is not None and np.allclose(u2.grad, v2.grad):
        problem += ". Here u and v hold the same array: add gave both one gradient, so give each leaf a copy"
    elif problem:
        problem += ". Across calls gradients add up: where .grad is already set, add the new gradient to it"
    return problem


def _fails_part_way(my_backward) -> str | None:
    name = "a VJP that fails part-way"
    xf = Tensor([1.0, 2.0], requires_grad=True, name="x")
    yf = Tensor([3.0], requires_grad=True, name="y")
    root = _Fails.apply(yf).sum() + (xf * 2.0).sum()     # the walk reaches x's node before 'fails' runs
    try:
        my_backward(root)
    except NotImplementedError:
        raise
    except ValueError as e:
        if "on purpose" not in str(e):
            return f"{name}: {_failure(e)}"
        if xf.grad is not None or yf.grad is not None:
            return (f"{name}: x.grad was written before the walk finished, and the error left it at "
                    f"{np.asarray(xf.grad).tolist()}: collect each leaf's gradient during the walk and write "
                    f".grad only after the loop (minigrad's choice; PyTorch would leave that partial gradient)")
        return None
    except Exception as e:
        return f"{name}: {_failure(e)}"
    return f"{name}: my_backward returned, but the VJP of 'fails' raised: let its error through"


def _backward_results(my_backward) -> dict[str, str | None]:
    results = {}
    with recursion_limit(1000):
        for name, build in GRAPHS:
            (root_m, mine), (root_t, theirs) = build(), build()
            try:
                ran = _engine_ran(my_backward, root_m)
            except NotImplementedError:
                raise
            except Exception as e:
                results[name] = f"{name}: {_failure(e)}"
                continue
            if ran:
                results[name] = (f"{name}: my_backward ran minigrad's engine (backward() or grad()): walk the "
                                 f"nodes yourself")
                continue
            root_t.backward()
            results[name] = _compare(name, mine, theirs)
        results["two calls on the same leaves"] = _two_calls(my_backward)
        results["a VJP that fails part-way"] = _fails_part_way(my_backward)
    return results


def show_backward(my_backward) -> None:
    """Print, for each graph the checks use, whether my_backward gives backward()'s gradients."""
    for name, problem in _backward_results(my_backward).items():
        ok = "passes" if name == "a VJP that fails part-way" else "same gradients as backward()"
        print(f"{name:30s} {ok if problem is None else 'DIFFERENT'}")


def check_backward(my_backward) -> None:
    """Raise AssertionError (naming the graph and the slip) unless my_backward does what backward() does."""
    for problem in _backward_results(my_backward).values():
        assert problem is None, problem
