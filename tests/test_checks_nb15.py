"""The checks of notebook 15's exercises Q1-Q8 (minigrad.checks.nb15) reject plausible wrong answers
with a message that names the slip, and accept correct ones written differently."""

import contextlib
from collections import deque

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor
from minigrad.checks import nb15
from minigrad.engine import topological_order as early_topological_order  # bound before any check runs
from minigrad.function import AccumulateGrad

# ---------------------------------------------------------------- Q1


def q1_stack(root):  # the notebook's solution
    ops, stack, seen = set(), [root.grad_fn], {id(root.grad_fn)}
    while stack:
        node = stack.pop()
        if not isinstance(node, AccumulateGrad):
            ops.add(node.name)
        for p in node.parents:
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return sorted(ops)


def q1_queue(root):  # breadth first, names collected in a dict
    names, queue, seen = {}, deque([root.grad_fn]), set()
    while queue:
        node = queue.popleft()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.name != "accumulate_grad":
            names[node.name] = True
        queue.extend(p for p in node.parents if p is not None)
    return sorted(names)


@pytest.mark.parametrize("f", [q1_stack, q1_queue])
def test_q1_correct_answers_pass(f):
    nb15.check_recorded_ops(f)


def q1_recursive(root):
    ops = set()

    def visit(node):
        if not isinstance(node, AccumulateGrad):
            ops.add(node.name)
        for p in node.parents:
            if p is not None:
                visit(p)

    visit(root.grad_fn)
    return sorted(ops)


def q1_with_leaves(root):
    ops, stack = set(), [root.grad_fn]
    while stack:
        node = stack.pop()
        ops.add(node.name)
        stack.extend(p for p in node.parents if p is not None)
    return sorted(ops)


def q1_duplicates(root):
    ops, stack = [], [root.grad_fn]
    while stack:
        node = stack.pop()
        if not isinstance(node, AccumulateGrad):
            ops.append(node.name)
        stack.extend(p for p in node.parents if p is not None)
    return sorted(ops)


def q1_nodes(root):
    out, stack = [], [root.grad_fn]
    while stack:
        node = stack.pop()
        if not isinstance(node, AccumulateGrad):
            out.append(node)
        stack.extend(p for p in node.parents if p is not None)
    return out


@pytest.mark.parametrize(
    "f, phrase",
    [
        (q1_recursive, "walk with a stack"),
        (q1_with_leaves, "AccumulateGrad node stands for a leaf"),
        (q1_duplicates, "list each name once"),
        (q1_nodes, "op names \\(node.name\\), not nodes"),
    ],
    ids=["recursive", "accumulate_grad listed", "duplicates", "nodes not names"],
)
def test_q1_wrong_answers_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb15.check_recorded_ops(f)


# ---------------------------------------------------------------- Q2


def q2_kahn(root):  # the notebook's solution
    start = root.grad_fn
    consumers, stack, seen = {}, [start], {id(start)}
    while stack:
        node = stack.pop()
        for p in node.parents:
            if p is None:
                continue
            consumers[id(p)] = consumers.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    order, ready = [], [start]
    while ready:
        node = ready.pop()
        order.append(node)
        for p in node.parents:
            if p is None:
                continue
            consumers[id(p)] -= 1
            if consumers[id(p)] == 0:
                ready.append(p)
    return order


def q2_kahn_queue(root):  # the same algorithm with a queue and edge lists
    edges, todo, seen = {}, [root.grad_fn], set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for p in node.parents:
            if p is not None:
                edges.setdefault(id(p), []).append(node)
                todo.append(p)
    waiting = {k: len(v) for k, v in edges.items()}
    order, ready = [], deque([root.grad_fn])
    while ready:
        node = ready.popleft()
        order.append(node)
        for p in node.parents:
            if p is not None:
                waiting[id(p)] -= 1
                if waiting[id(p)] == 0:
                    ready.append(p)
    return order


@pytest.mark.parametrize("f", [q2_kahn, q2_kahn_queue])
def test_q2_correct_answers_pass(f):
    nb15.check_reverse_topological(f)


def q2_distinct_consumers(root):
    start = root.grad_fn
    consumers, stack, seen = {}, [start], {id(start)}
    while stack:
        node = stack.pop()
        for p in {id(q): q for q in node.parents if q is not None}.values():  # a * a counted once
            consumers[id(p)] = consumers.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    order, ready = [], [start]
    while ready:
        node = ready.pop()
        order.append(node)
        for p in node.parents:
            if p is not None:
                consumers[id(p)] -= 1
                if consumers[id(p)] == 0:
                    ready.append(p)
    return order


def q2_bfs(root):
    order, queue, seen = [], deque([root.grad_fn]), set()
    while queue:
        node = queue.popleft()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        queue.extend(p for p in node.parents if p is not None)
    return order


def q2_package(root):
    return list(reversed(mg.topological_order(root)))


def q2_engine_module(root):
    return list(reversed(mg.engine.topological_order(root)))


def q2_imported_early(root):  # the name bound before the check starts
    return list(reversed(early_topological_order(root)))


def q2_recursive(root):
    order, seen = [], set()

    def visit(node):
        seen.add(id(node))
        for p in node.parents:
            if p is not None and id(p) not in seen:
                visit(p)
        order.append(node)

    visit(root.grad_fn)
    return order[::-1]


@pytest.mark.parametrize(
    "f, phrase",
    [
        (q2_distinct_consumers, "a \\* a counts twice"),
        (q2_bfs, "comes before the"),
        (q2_package, "Kahn's algorithm"),
        (q2_engine_module, "Kahn's algorithm"),
        (q2_imported_early, "Kahn's algorithm"),
        (q2_recursive, "recursed once per node"),
    ],
    ids=["distinct consumers", "breadth first", "reversed(topological_order)", "engine.topological_order",
         "imported early", "recursive"],
)
def test_q2_wrong_answers_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb15.check_reverse_topological(f)


# ---------------------------------------------------------------- Q3


def test_q3():
    nb15.check_paths([0.7, 0.7, 3.0, np.exp(0.7)])
    nb15.check_paths([np.exp(0.7), 3.0, 0.7, 0.7])  # any order
    with pytest.raises(AssertionError, match="x \\* x has two edges"):
        nb15.check_paths([1.4, 3.0, np.exp(0.7)])
    with pytest.raises(AssertionError, match="one of them is off"):
        nb15.check_paths([1.4, 0.0, 3.0, 0.7])
    with pytest.raises(AssertionError, match="differentiate each use of x on its own"):
        nb15.check_paths([1.4, 0.0, 3.0, np.exp(0.7)])


# ---------------------------------------------------------------- Q4


def vm(A, B, g):
    return g @ B.T, A.T @ g


def vr(x, g):
    return g * (x > 0)


def vs(s, g):
    return s * (g - (g * s).sum(axis=1, keepdims=True))


def vce(p, y, g):
    n = p.shape[0]
    d = np.zeros_like(p)
    d[np.arange(n), y] = -g / (n * p[np.arange(n), y])
    return d


def test_q4_correct_answers_pass():
    nb15.check_vjps(vm, vr, vs, vce)
    nb15.check_vjps(
        lambda A, B, g: (np.einsum("ik,jk->ij", g, B), np.einsum("ki,kj->ij", A, g)),
        lambda x, g: np.where(x > 0, g, 0.0),
        lambda s, g: s * g - s * np.einsum("ij,ij->i", s, g)[:, None],
        lambda p, y, g: -g * np.eye(p.shape[1])[y] / p / len(p),
    )


@pytest.mark.parametrize(
    "fs, phrase",
    [
        ((lambda A, B, g: (g @ B.T, (g.T @ A)), vr, vs, vce), "only g @ B.T and A.T @ g have them"),
        ((vm, lambda x, g: g * (g > 0), vs, vce), "not where g is"),
        ((vm, vr, lambda s, g: s * (g - (g * s).sum()), vce), "along each row"),
        ((vm, vr, lambda s, g: s * g, vce), "returns s \\* g"),
        ((vm, vr, vs, lambda p, y, g: vce(p, y, g) * len(p)), "N times too large"),
        ((vm, vr, vs, lambda p, y, g: vce(p, y, 1.0)), "it ignores g"),
    ],
    ids=[
        "dB = g.T A",
        "mask on g",
        "whole-array inner product",
        "s * g",
        "cross-entropy without /N",
        "cross-entropy ignores g",
    ],
)
def test_q4_wrong_answers_are_named(fs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb15.check_vjps(*fs)


# ---------------------------------------------------------------- Q6


def _base(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def q6_reference(root):  # the notebook's solution
    order = mg.topological_order(root)
    weights = {id(_base(n.variable.data)) for n in order if isinstance(n, AccumulateGrad)}
    buffers = {}
    for node in order:
        for a in node.arrays():
            b = _base(a)
            if id(b) not in weights:
                buffers[id(b)] = b.nbytes
    return sum(buffers.values())


def q6_own_walk(root):  # its own walk, and owners found with np.shares_memory
    if root.grad_fn is None:
        return 0
    nodes, stack, seen = [], [root.grad_fn], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        nodes.append(n)
        stack.extend(p for p in n.parents if p is not None)
    leaves = [n.variable.data for n in nodes if isinstance(n, AccumulateGrad)]
    owners = []
    for n in nodes:
        for a in n.arrays():
            b = _base(a)
            if not any(np.shares_memory(b, w) for w in leaves) and not any(b is o for o in owners):
                owners.append(b)
    return sum(o.nbytes for o in owners)


@pytest.mark.parametrize("f", [q6_reference, q6_own_walk])
def test_q6_correct_answers_pass(f):
    nb15.check_saved_activation_bytes(f)


def q6_no_dedupe(root):
    order = mg.topological_order(root)
    weights = {id(_base(n.variable.data)) for n in order if isinstance(n, AccumulateGrad)}
    return sum(a.nbytes for node in order for a in node.arrays() if id(_base(a)) not in weights)


def q6_no_base(root):
    order = mg.topological_order(root)
    weights = {id(n.variable.data) for n in order if isinstance(n, AccumulateGrad)}
    return sum({id(a): a.nbytes for node in order for a in node.arrays() if id(a) not in weights}.values())


def q6_with_weights(root):
    order = mg.topological_order(root)
    return sum({id(_base(a)): _base(a).nbytes for node in order for a in node.arrays()}.values())


def q6_node_saved(root):
    order = mg.topological_order(root)
    weights = {id(_base(n.variable.data)) for n in order if isinstance(n, AccumulateGrad)}
    return sum(
        {
            id(_base(a)): _base(a).nbytes
            for node in order
            if not isinstance(node, AccumulateGrad)
            for a in node.saved
            if id(_base(a)) not in weights
        }.values()
    )


@pytest.mark.parametrize(
    "f, phrase",
    [
        (q6_no_dedupe, "count each buffer once"),
        (q6_no_base, "follow a.base"),
        (q6_with_weights, "leave out the data of leaves"),
        (q6_node_saved, "use node.arrays\\(\\)"),
    ],
    ids=["a buffer twice", "views not followed", "weights counted", "node.saved"],
)
def test_q6_wrong_answers_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb15.check_saved_activation_bytes(f)


# ---------------------------------------------------------------- Q5


W5 = np.random.default_rng(5).standard_normal((2, 6))
X5 = np.random.default_rng(6).standard_normal(6)


def f_vec(x):
    return (mg.Tensor(W5) @ x.reshape(6, 1)).reshape(2).tanh()


def reverse_rows(cotangents):
    xt = mg.Tensor(X5, requires_grad=True)
    out = f_vec(xt)
    return np.stack([mg.grad(out, xt, grad_output=c, retain_graph=True)[0].data for c in cotangents])


def test_q5():
    nb15.check_jacobian(reverse_rows(np.eye(2)), 2, f_vec, X5)
    nb15.check_jacobian(np.stack([reverse_rows([e])[0] for e in np.eye(2)]), 2, f_vec, X5)   # a graph per row
    with pytest.raises(AssertionError, match="one row per output"):
        nb15.check_jacobian(reverse_rows(np.eye(2)).T, 2, f_vec, X5)
    with pytest.raises(AssertionError, match="grad_output = e_i"):
        nb15.check_jacobian(reverse_rows([np.ones(2), np.ones(2)]), 2, f_vec, X5)
    with pytest.raises(AssertionError, match="one backward pass per output, 2 here"):
        nb15.check_jacobian(reverse_rows(np.eye(2)), 6, f_vec, X5)


# ---------------------------------------------------------------- Q8


def signed(x):
    return x.relu() * 2.0 if x.data.sum() > 0 else x.tanh() * 3.0


def make_compiled(key_of, cache_graphs=True):
    cache, traces = {}, {"n": 0}

    def compiled(x):
        key = key_of(x)
        if key not in cache or not cache_graphs:
            cache[key] = mg.trace(signed, x)
            traces["n"] += 1
        return cache[key](mg.Tensor(x))
    return compiled, cache, traces


@pytest.mark.parametrize("key_of", [lambda x: bool(np.sum(x) > 0),
                                    lambda x: "relu" if x.sum() > 0 else "tanh"])
def test_q8_correct_answers_pass(key_of):
    nb15.check_guard(*make_compiled(key_of), signed)


@pytest.mark.parametrize("key_of, cache_graphs, phrase", [
    (lambda x: bool(x[0] > 0), True, "not a stand-in such as the sign of x\\[0\\]"),
    (lambda x: bool(np.sum(x) >= 0), True, "a sum of 0 takes the tanh branch"),
    (lambda x: x.shape, True, "the key must tell the two branches apart"),
    (lambda x: bool(np.sum(x) > 0), False, "4 traces and 2 cached graphs"),
], ids=["x[0] > 0", "sum >= 0", "shape only", "no cache"])
def test_q8_wrong_answers_are_named(key_of, cache_graphs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb15.check_guard(*make_compiled(key_of, cache_graphs), signed)



# ---------------------------------------------------------------- Q7

calls7, peak7 = {"layer": 0}, {"segment": 0}


def layer7(h, w):  # the notebook's layer: it counts its calls
    calls7["layer"] += 1
    return (h @ w).tanh()


X7 = np.random.default_rng(7).standard_normal((32, 48))
W7 = [np.random.default_rng(70 + k).standard_normal((48, 48)) / 7 for k in range(16)]


def checkpointed(
    first_pass_recorded=False,
    keep_every_activation=False,
    boundary_after_layer_k=False,
    ones_for_every_segment=False,
    peak_after_grad=False,
    input_not_a_leaf=False,
    only_full_segments=False,
    rebuild_all_first=False,
    layer=layer7,
):
    """The notebook's solution (all False), or it with one slip a learner might make."""

    def checkpointed_grads(x, weights, seg):
        ws = [Tensor(w, requires_grad=True) for w in weights]
        bounds, every = [x], []
        with contextlib.nullcontext() if first_pass_recorded else mg.no_grad():
            h = Tensor(x)
            for k, w in enumerate(ws):
                h = layer(h, w)
                if keep_every_activation:
                    every.append(h.data)
                if boundary_after_layer_k:
                    cut = k % seg == 0 and k > 0  # the output of layer k, where layer k - 1's is due
                else:
                    cut = (k + 1) % seg == 0 and k + 1 < len(ws)
                if cut:
                    bounds.append(h.data)
        n_seg = len(ws) // seg if only_full_segments else len(bounds)

        def rebuild(s):
            inp = Tensor(bounds[s], requires_grad=not input_not_a_leaf)
            out = inp
            for w in ws[s * seg : (s + 1) * seg]:
                out = layer(out, w)
            if not peak_after_grad:
                peak7["segment"] = max(peak7["segment"], q6_reference(out))
            return inp, out

        rebuilt = {s: rebuild(s) for s in range(n_seg)} if rebuild_all_first else {}
        grads, g = [None] * len(ws), np.ones_like(h.data)
        for s in reversed(range(n_seg)):
            inp, out = rebuilt.pop(s) if rebuild_all_first else rebuild(s)
            lo, hi = s * seg, min((s + 1) * seg, len(ws))
            res = mg.grad(out, [inp] + ws[lo:hi], grad_output=g)
            if peak_after_grad:
                peak7["segment"] = max(peak7["segment"], q6_reference(out))
            if not ones_for_every_segment:
                g = res[0].data
            grads[lo:hi] = [r.data for r in res[1:]]
        return grads

    return checkpointed_grads


def q7_with_backward(x, weights, seg):  # a dict of boundaries, detach() and backward() instead of mg.grad
    ws = [Tensor(w, requires_grad=True) for w in weights]
    starts = range(0, len(ws), seg)
    boundary = {}
    with mg.no_grad():
        h = Tensor(x)
        for k, w in enumerate(ws):
            if k in starts:
                boundary[k] = h
            h = layer7(h, w)
    upstream = np.ones_like(h.data)
    for lo in reversed(starts):
        inp = boundary.pop(lo).detach().requires_grad_()
        out = inp
        for w in ws[lo : lo + seg]:
            out = layer7(out, w)
        peak7["segment"] = max(peak7["segment"], q6_own_walk(out))
        out.backward(upstream)
        upstream = inp.grad
    return [w.grad for w in ws]


def q7_plain(x, weights, seg):  # plain backprop: nothing recomputed
    ws = [Tensor(w, requires_grad=True) for w in weights]
    h = Tensor(x)
    for w in ws:
        h = layer7(h, w)
    return [g.data for g in mg.grad(h.sum(), ws)]


@pytest.mark.parametrize("f", [checkpointed(), q7_with_backward], ids=["notebook's", "backward() and .grad"])
def test_q7_correct_answers_pass(f):
    nb15.check_checkpointed_grads(f, calls7, peak7, X7, W7, seg=4)


def test_q7_leaves_calls_and_peak_as_they_were():
    calls7["layer"], peak7["segment"] = 32, 49152
    nb15.check_checkpointed_grads(checkpointed(), calls7, peak7, X7, W7, seg=4)
    assert calls7 == {"layer": 32} and peak7 == {"segment": 49152}


def test_q7_also_runs_a_seg_that_leaves_a_shorter_last_segment():
    assert nb15.uneven_seg(16, 4) == 5 and nb15.uneven_seg(12, 2) == 5 and nb15.uneven_seg(16, 16) == 17


@pytest.mark.parametrize(
    "f, phrase",
    [
        (checkpointed(first_pass_recorded=True), "recorded 64 ops in a graph, more than the 33 .*no_grad"),
        (checkpointed(keep_every_activation=True), "up to 17 outputs .*keep only every seg-th activation"),
        (checkpointed(boundary_after_layer_k=True), "the last segment's too, .* Check the boundaries"),
        (checkpointed(ones_for_every_segment=True), "the last segment's gradients are right.*grad_output=g"),
        (checkpointed(peak_after_grad=True), "peak\\['segment'\\] is 0 bytes.*before calling grad"),
        (checkpointed(input_not_a_leaf=True),
         "(?s)not require grad.*hint: rebuild each segment from a fresh leaf"),
        (checkpointed(only_full_segments=True), "seg = 5 .*\\[15\\] got no gradient.*last segment is short"),
        (checkpointed(rebuild_all_first=True), "only one rebuilt segment should be alive at a time"),
        (checkpointed(layer=lambda h, w: (h @ w).tanh()), "calls\\['layer'\\] is 0, but 32 layers ran"),
        (lambda x, weights, seg: checkpointed()(x, weights, seg)[::-1], "some are in the wrong place"),
        (q7_plain, "the layers ran 16 times for 16 layers: each should run twice"),
    ],
    ids=[
        "first pass recorded",
        "every activation kept",
        "boundaries off by one",
        "ones for every segment",
        "peak taken after grad",
        "segment input not a leaf",
        "short last segment dropped",
        "all segments rebuilt at once",
        "layers not counted",
        "gradients reversed",
        "nothing recomputed",
    ],
)
def test_q7_wrong_answers_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb15.check_checkpointed_grads(f, calls7, peak7, X7, W7, seg=4)
