"""Checks of notebook 15's exercises Q1 to Q8.

* ``check_recorded_ops(recorded_ops)`` (Q1): op names (not nodes), sorted, each once, without the leaves'
  ``accumulate_grad``, for both branches of a data-dependent function, a node reached along two paths,
  and a chain of 10,000 tanh under Python's default recursion limit (walk with a stack).
* ``check_reverse_topological(reverse_topological)`` (Q2): every node of the graph once, starting with
  ``root.grad_fn``, each after all of its consumers, on ``a + a * a``, on two graphs where a value has
  one edge into one op and two into another, and on a chain of 10,000 muls without recursion. It is
  Kahn's algorithm that Q2 asks for, so ``minigrad.topological_order`` may not be called.
* ``check_paths(paths)`` (Q3): one number per edge leaving x in ``x * x + x * 3 + exp(x)`` at x = 0.7,
  each the derivative along that edge alone, adding up to dy/dx.
* ``check_vjps(vjp_matmul, vjp_relu, vjp_softmax, vjp_cross_entropy)`` (Q4): shapes and values against the
  engine, with the slip named (g's sign instead of x's, s * g, N times too large, g ignored).
* ``check_jacobian(J_reverse, reverse_calls, f_vec, x)`` (Q5): shape, values against central differences,
  forward mode and ``minigrad.jacobian``, one backward pass per output.
* ``check_saved_activation_bytes(saved_activation_bytes)`` (Q6): nothing under ``no_grad``; the bytes
  ``minigrad.saved_memory`` gives without the weights, for an MLP, for a cross-entropy at the end (its
  row indices and labels are in ``node.arrays()``), and for a view of a saved array (one buffer).
* ``check_checkpointed_grads(checkpointed_grads, calls, peak, x, weights, seg)`` (Q7): gradients equal to
  plain backprop's and to ``minigrad.checkpoint_sequential``'s, for ``seg`` and for a length that leaves a
  shorter last segment; every layer run twice and counted; and, watched while it runs, no more ops recorded
  than one plain forward pass, one rebuilt segment alive at a time, only the boundaries kept from the first
  pass, and ``peak['segment']`` equal to the most the rebuilt segments kept.
* ``check_guard(compiled, cache, traces, signed)`` (Q8): one trace per branch, keyed by the very condition
  ``signed`` tests, and right answers where a stand-in key (the sign of x[0], a sum >= 0) goes wrong.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

import minigrad as mg
from minigrad import Tensor
from minigrad.function import AccumulateGrad

from ._op_checks import Tripwire, attempt


def _branchy(x):
    h = x * 2.0
    h = h.relu() if h.data.sum() > 0 else h.tanh()
    return (h * h).sum()


def _without_recursion(f, *args):
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # Python's default
    try:
        return f(*args)
    except RecursionError:
        return RecursionError
    finally:
        sys.setrecursionlimit(limit)


def check_recorded_ops(recorded_ops) -> None:
    """Q1: the sorted distinct op names behind a root, found with a stack (see the module's docstring)."""
    pos = attempt(
        "recorded_ops(root)",
        "start from root.grad_fn and follow node.parents (skip None)",
        recorded_ops,
        _branchy(Tensor([1.0, 2.0], requires_grad=True)),
    )
    neg = recorded_ops(_branchy(Tensor([-1.0, -2.0], requires_grad=True)))
    assert all(isinstance(n, str) for n in list(pos) + list(neg)), (
        "recorded_ops should return op names (node.name), not nodes"
    )
    assert "accumulate_grad" not in list(pos) + list(neg), (
        "an AccumulateGrad node stands for a leaf, not an op: skip it (isinstance(node, AccumulateGrad))"
    )
    assert list(pos) == ["mul", "relu", "sum"] and list(neg) == ["mul", "sum", "tanh"], (
        f"recorded_ops gives {pos} and {neg}: the graphs hold mul, relu and sum for a positive input and "
        f"mul, tanh and sum for a negative one; list each name once, sorted"
    )
    x = Tensor([0.5, -0.5], requires_grad=True)
    a = x * 2.0
    assert list(recorded_ops((a * a + a).sum())) == ["add", "mul", "sum"], (
        "a node reached along two paths (a feeds a * a and + a) is still one node: list each name once"
    )
    deep = x
    for _ in range(10_000):
        deep = deep.tanh()
    got = _without_recursion(recorded_ops, deep.sum())
    assert got is not RecursionError, (
        "recorded_ops recursed once per node: walk with a stack (a list) instead"
    )
    assert list(got) == ["sum", "tanh"], f"a chain of 10,000 tanh and a sum: got {got}"


def order_problem(order, root) -> str | None:
    """None if ``order`` lists each node of root's graph once, every consumer before its inputs."""
    expected = mg.topological_order(root)
    if len({id(n) for n in order}) != len(order):
        return "a node appears twice: list each node once"
    if {id(n) for n in order} != {id(n) for n in expected}:
        return (
            f"your order has {len(order)} nodes, the graph {len(expected)}: list every node that root "
            "depends "
            f"on, the leaves' AccumulateGrad nodes included, and nothing else"
        )
    if order[0] is not root.grad_fn:
        return "the order must start with root.grad_fn"
    position = {id(n): i for i, n in enumerate(order)}
    for n in order:
        for p in n.parents:
            if p is not None and position[id(p)] < position[id(n)]:
                return (
                    f"the {p.name} node comes before the {n.name} node that consumes it: count every edge "
                    "into a "
                    f"node (a * a counts twice) and release a node only when its count reaches 0"
                )
    return None


def _no_package_order(f, root):
    """f(root), failing if it asked minigrad.topological_order (by any name) for the order."""
    tripwire = Tripwire()
    with tripwire.armed():
        out = f(root)
    assert not tripwire.called, (
        "reverse_topological called minigrad.topological_order: Q2 asks for Kahn's algorithm. Count "
        "the consumers of every node in a first walk, then release a node once all of them are done"
    )
    return out


def check_reverse_topological(reverse_topological) -> None:
    """Q2: a reverse topological order by Kahn's algorithm, without recursion (see the module's docstring)."""
    x = Tensor(1.5, requires_grad=True)
    a = x * 2.0
    c = a + a * a
    order = attempt(
        "reverse_topological(c)",
        "return a list of backward nodes, starting with root.grad_fn",
        _no_package_order,
        reverse_topological,
        c,
    )
    problem = order_problem(order, c)
    assert problem is None, f"c = a + a * a: {problem}"
    t = Tensor(0.3, requires_grad=True)
    y = t * 2.0  # y: one edge into an exp, two into y * y
    for text, root in [
        ("exp(exp(y)) + y * y", y.exp().exp() + y * y),
        ("y * y + exp(exp(y))", y * y + y.exp().exp()),
    ]:
        problem = order_problem(_no_package_order(reverse_topological, root), root)
        assert problem is None, f"{text}: {problem}"
    chain = Tensor(1.0, requires_grad=True)
    for _ in range(10_000):
        chain = chain * 1.0
    got = _without_recursion(reverse_topological, chain)
    assert got is not RecursionError, (
        "reverse_topological recursed once per node: keep the ready nodes in a list"
    )
    problem = order_problem(got, chain)
    assert problem is None, f"a chain of 10,000 muls: {problem}"


def check_paths(paths) -> None:
    """Q3: the four path contributions of y = x * x + x * 3 + exp(x) at x = 0.7."""
    x = Tensor(0.7, requires_grad=True)
    (g,) = mg.grad(x * x + x * 3.0 + x.exp(), x)
    assert len(paths) == 4, (
        f"{len(paths)} numbers: give one per edge that leaves x, four (x * x has two edges "
        f"from x, one per operand, and along each the local derivative is the other operand, 0.7)"
    )
    assert np.isclose(sum(paths), g.item(), rtol=0, atol=1e-12), (
        f"your paths add up to {sum(paths):.6f}, but dy/dx = 2x + 3 + e^x = {g.item():.6f}: one of them is "
        "off"
    )

    def along_one_edge(k):
        xk = Tensor(0.7, requires_grad=True)
        use = [xk if i == k else Tensor(0.7) for i in range(4)]
        return mg.grad(use[0] * use[1] + use[2] * 3.0 + use[3].exp(), xk)[0].item()

    assert np.allclose(sorted(paths), sorted(along_one_edge(k) for k in range(4)), rtol=0, atol=1e-12), (
        "a path contribution is off: differentiate each use of x on its own, the others held fixed"
    )


def check_vjps(vjp_matmul, vjp_relu, vjp_softmax, vjp_cross_entropy, *, seed: int = 15) -> None:
    """Q4: four VJPs against the engine (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    A, B, G = rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal((4, 5))
    At, Bt = Tensor(A, requires_grad=True), Tensor(B, requires_grad=True)
    ref = mg.grad(At @ Bt, [At, Bt], grad_output=G)
    mine = attempt("vjp_matmul(A, B, g)", "return (dA, dB)", vjp_matmul, A, B, G)
    assert np.shape(mine[0]) == A.shape and np.shape(mine[1]) == B.shape, (
        f"vjp_matmul returns shapes {np.shape(mine[0])} and {np.shape(mine[1])}; dA must have A's shape "
        f"{A.shape} "
        f"and dB B's shape {B.shape}: only g @ B.T and A.T @ g have them"
    )
    assert all(np.allclose(m, r.data, atol=1e-12) for m, r in zip(mine, ref)), (
        "vjp_matmul has the right shapes but the wrong values: dA = g @ B.T, dB = A.T @ g"
    )
    z, gz = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    zt = Tensor(z, requires_grad=True)
    ref_relu = mg.grad(zt.relu(), zt, grad_output=gz)[0].data
    got = np.asarray(vjp_relu(z, gz))
    assert np.allclose(got, ref_relu, atol=1e-12), (
        "vjp_relu differs from the engine: the mask is where the input x is positive "
        + ("(not where g is)" if np.allclose(got, gz * (gz > 0)) else "(g * (x > 0))")
    )
    s = zt.softmax(axis=1)
    ref_soft = mg.grad(s, zt, grad_output=gz)[0].data
    got = np.asarray(vjp_softmax(s.data, gz))
    assert not np.allclose(got, s.data * gz), (
        "vjp_softmax returns s * g: subtract from g, row by row, its inner product with s before "
        "multiplying by s"
    )
    assert np.allclose(got, ref_soft, atol=1e-12), (
        "vjp_softmax differs from the engine: s * (g - <g, s>), with the inner product taken along each row "
        "(axis=1)"
    )
    pt = Tensor(s.data, requires_grad=True)
    yc = np.array([0, 3, 1, 1, 2])
    ref_ce = mg.grad(pt.cross_entropy(yc), pt, grad_output=np.array(2.5))[0].data
    got = np.asarray(vjp_cross_entropy(pt.data, yc, 2.5))
    assert np.shape(got) == pt.shape, (
        f"vjp_cross_entropy returns shape {np.shape(got)}, p has shape {pt.shape}"
    )
    hint = (
        "it is N times too large: the loss is a mean over the N rows"
        if np.allclose(got, ref_ce * 5)
        else "it ignores g: multiply by the upstream gradient"
        if np.allclose(got * 2.5, ref_ce)
        else "dp is -g / (N p) at each row's target and 0 elsewhere"
    )
    assert np.allclose(got, ref_ce, atol=1e-12), f"vjp_cross_entropy differs from the engine: {hint}"


NODE_SAVED_HINT = (
    "node.saved holds None where an op kept nothing (a matmul keeps no input it will not need), and "
    "it leaves out what a node keeps besides: use node.arrays(), every array a node keeps"
)


def try_saved_bytes(saved_activation_bytes, root) -> int:
    """``saved_activation_bytes(root)``, with an error turned into a failed check that gives a hint."""
    return attempt("saved_activation_bytes(root)", NODE_SAVED_HINT, saved_activation_bytes, root)


def check_saved_activation_bytes(saved_activation_bytes, *, seed: int = 6) -> None:
    """Q6: the bytes a graph keeps for backward, as the profiler counts them (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    xm = rng.standard_normal((128, 64))
    act = xm.nbytes
    mg.random.manual_seed(0)
    net = mg.nn.MLP([64] * 5 + [10])
    with mg.no_grad():
        infer = try_saved_bytes(saved_activation_bytes, net(Tensor(xm)).sum())
    assert infer == 0, f"under no_grad() nothing is recorded, so nothing is saved: got {infer}"
    r4 = net(Tensor(xm)).sum()
    kinds = mg.saved_memory(r4)
    got = try_saved_bytes(saved_activation_bytes, r4)
    assert got == kinds["total"] - kinds["parameter"] == 5 * act, (
        f"saved_activation_bytes gives {got:,} bytes for a 4-layer MLP, minigrad.saved_memory "
        f"{kinds['total'] - kinds['parameter']:,} without the weights: count each buffer once (a relu's "
        "output is "
        f"also the next matmul's saved input) and leave out the data of leaves that require grad"
    )
    mg.random.manual_seed(0)
    r_ce = mg.nn.MLP([64, 32, 10])(Tensor(xm)).cross_entropy_with_logits(rng.integers(0, 10, 128))
    kinds = mg.saved_memory(r_ce)
    got = try_saved_bytes(saved_activation_bytes, r_ce)
    assert got == kinds["total"] - kinds["parameter"], (
        f"with a cross-entropy at the end: {got:,} bytes, saved_memory without the weights "
        f"{kinds['total'] - kinds['parameter']:,}. node.arrays() lists the arrays a node keeps besides "
        "node.saved "
        f"(cross_entropy_with_logits keeps its row indices and labels): count those too"
    )
    w = Tensor(rng.standard_normal((64, 64)) * 0.1, requires_grad=True)
    v = Tensor(np.ones(128 * 64), requires_grad=True)
    h = (Tensor(xm) @ w).tanh()  # tanh keeps h's array
    r_view = (h.reshape(-1) * v).sum()  # mul keeps a view of that same array
    kinds = mg.saved_memory(r_view)
    got = try_saved_bytes(saved_activation_bytes, r_view)
    assert got == kinds["total"] - kinds["parameter"] == 2 * act, (
        f"tanh keeps h and mul keeps h.reshape(-1), a view of the same memory: {got:,} bytes, but that is "
        "one "
        f"buffer besides the input x, {2 * act:,} bytes in all. Count a view as the array that owns its "
        "memory "
        f"(follow a.base)"
    )


def check_jacobian(J_reverse, reverse_calls, f_vec, x) -> None:
    """Q5: the Jacobian of ``f_vec`` at ``x`` by reverse mode, one backward pass per output: its shape,
    its values against central differences, forward mode and ``minigrad.jacobian``, and the count."""
    J_reverse = np.asarray(J_reverse)
    n_out, n_in = np.size(f_vec(Tensor(x)).data), np.size(x)
    assert J_reverse.shape == (n_out, n_in), (
        f"J_reverse has shape {J_reverse.shape}: one row per output ({n_out}) and one column per input "
        f"({n_in}); "
        f"row i is the gradient of output i, the VJP of the one-hot cotangent e_i")
    J_num = mg.numerical_jacobian(f_vec, Tensor(x))
    assert np.allclose(J_reverse, J_num, atol=1e-8), (
        f"J_reverse differs from central differences by up to {np.abs(J_reverse - J_num).max():.3g}: row i "
        "must "
        f"come from grad_output = e_i, the one-hot vector of output i")
    assert reverse_calls == n_out, (
        f"reverse_calls is {reverse_calls}: reverse mode needs one backward pass per output, {n_out} here")
    assert np.allclose(J_reverse, mg.jacfwd(f_vec, x), rtol=0, atol=1e-12), "forward mode (JVPs) must agree"
    assert np.allclose(J_reverse, mg.jacobian(f_vec, x), rtol=0, atol=1e-12), "minigrad.jacobian must agree"


def check_guard(compiled, cache, traces, signed) -> None:
    """Q8: ``compiled(x)`` traces ``signed`` once per branch, keyed by the very condition ``signed`` tests
    (a positive sum of x), and replays the cached graph otherwise. ``cache`` and ``traces`` are the dict
    of graphs and the trace counter ``compiled`` fills (they may hold the graphs of the same four inputs)."""
    inputs = [np.array([1.0, 2.0]), np.array([-1.0, -0.5]), np.array([3.0, -1.0]), np.array([-2.0, 0.5])]
    hint = "return the replayed graph's output, a Tensor"
    results = [np.asarray(attempt("compiled(x)", hint, compiled, v).data) for v in inputs]
    assert all(np.allclose(r, signed(Tensor(v)).data) for v, r in zip(inputs, results)), \
        "a replayed graph gave a wrong answer: the key must tell the two branches apart"
    assert traces["n"] == len(cache) == 2, (
        f"{traces['n']} traces and {len(cache)} cached graphs: these inputs need exactly one per branch "
        f"(store each graph in cache under its key, and trace only for a key not seen before)")
    # Inputs where a stand-in for the branch condition goes wrong: x[0] > 0 with a negative sum,
    # and a sum of 0.
    more = [np.array([1.0, -5.0]), np.array([1.0, -1.0]), np.array([-0.5, 4.0])]
    wrong = [v.tolist() for v in more if not np.allclose(compiled(v).data, signed(Tensor(v)).data)]
    assert not wrong, (
        f"the replayed graph is wrong for {wrong}: the key must be the very condition signed tests, whether "
        "the sum "
        f"of x is positive (a sum of 0 takes the tanh branch), not a stand-in such as the sign of x[0]")
    assert traces["n"] == len(cache) == 2, \
        f"{traces['n']} traces and {len(cache)} cached graphs after more inputs: still one per branch"


# ---------------------------------------------------------------- Q7


def _owner(a):
    """The array that owns a's memory (a itself, or the base a view was made from)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _tanh_layer(h, w):
    return (h @ w).tanh()


def watch_graphs(fn, *args):
    """``fn(*args)``, watched op by op. After every op: the bytes that all the backward nodes alive keep for
    backward (each buffer once, the leaves' data left out: Q6's accounting), and how many outputs of ops
    recorded in no graph are still alive. Returns ``(result, most bytes kept at once, ops recorded in a
    graph, most unrecorded outputs alive at once, op counts)``."""
    nodes, stats, loose = weakref.WeakSet(), {"peak": 0, "recorded": 0, "loose": 0}, []

    def hook(event, op, inputs, out, attrs):
        if event != "forward":
            return
        if out.grad_fn is not None:
            nodes.add(out.grad_fn)
            stats["recorded"] += 1
        else:
            loose.append(weakref.ref(out.data))
        stats["loose"] = max(stats["loose"], sum(r() is not None for r in loose))
        live = list(nodes)
        leaves = {id(_owner(p.variable.data)) for n in live for p in n.parents if isinstance(p, AccumulateGrad)}
        buffers = {id(_owner(a)): _owner(a).nbytes for n in live for a in n.arrays()}
        stats["peak"] = max(stats["peak"], sum(b for k, b in buffers.items() if k not in leaves))

    with mg.count_ops() as counted, mg.op_hook(hook):
        result = fn(*args)
    return result, stats["peak"], stats["recorded"], stats["loose"], counted


def _plain_reference(x, weights):
    """Plain backprop through the tanh chain, loss = sum(h_L): the gradient of every weight."""
    ws = [Tensor(w, requires_grad=True) for w in weights]
    h = Tensor(x)
    for w in ws:
        h = _tanh_layer(h, w)
    return [g.data for g in mg.grad(h.sum(), ws)]


def _layers_in(segments):
    return ", ".join(f"{lo}-{hi - 1}" if hi - 1 > lo else f"{lo}" for lo, hi in segments)


def checkpointed_grads_problem(checkpointed_grads, calls, peak, x, weights, seg) -> str | None:
    """None if ``checkpointed_grads(x, weights, seg)`` checkpoints the chain correctly, else what is wrong."""
    n_layers = len(weights)
    segments = [(lo, min(lo + seg, n_layers)) for lo in range(0, n_layers, seg)]
    case = f"{n_layers} layers, seg = {seg} (segments of layers {_layers_in(segments)})"
    plain, plain_peak, plain_recorded, _, _ = watch_graphs(_plain_reference, x, weights)
    calls["layer"], peak["segment"] = 0, 0
    hint = ("rebuild each segment from a fresh leaf, Tensor(boundary, requires_grad=True), with recording on, "
            "and return one gradient array per layer")
    result, ckpt_peak, ckpt_recorded, ckpt_loose, counted = attempt(
        f"checkpointed_grads(x, weights, seg={seg})", hint, watch_graphs, checkpointed_grads, x, weights, seg)
    try:
        grads = [None if g is None else np.asarray(getattr(g, "data", g)) for g in result]
    except TypeError:
        return f"{case}: checkpointed_grads returned {type(result).__name__}; return a list of arrays, one per layer"
    if len(grads) != n_layers:
        return f"{case}: {len(grads)} gradients returned for {n_layers} layers: return one per layer, in order"
    right = [g is not None and g.shape == p.shape and np.allclose(g, p, rtol=0, atol=1e-12)
             for g, p in zip(grads, plain)]
    if not all(right):
        missing = [k for k, g in enumerate(grads) if g is None]
        wrong = [k for k, ok in enumerate(right) if not ok]
        lo_last = segments[-1][0]
        if missing:
            return (f"{case}: layers {missing} got no gradient. Every layer belongs to one segment; when seg does "
                    f"not divide the number of layers, the last segment is shorter: start a segment at every "
                    f"multiple of seg (range(0, len(weights), seg)) and end it at min(lo + seg, len(weights))")
        if all(any(g.shape == p.shape and np.allclose(g, p, rtol=0, atol=1e-12) for p in plain) for g in grads):
            return (f"{case}: every gradient is right, but some are in the wrong place: the list must hold "
                    f"layer k's gradient at position k, however the segments are visited")
        if all(right[lo_last:]):
            return (f"{case}: the last segment's gradients are right, those of layers {wrong} are not. Only the "
                    f"last segment starts from ones (the gradient of sum(h_L)); each segment below starts from g, "
                    f"the gradient of its output (grad_output=g), which is res[0] of the segment above: the "
                    f"gradient of that segment's input, a fresh leaf that requires grad")
        return (f"{case}: the gradients of layers {wrong} differ from plain backprop, the last segment's too, so "
                f"a segment starts from the wrong activation. Check the boundaries: the segment of layers lo to "
                f"hi - 1 starts from the output of layer lo - 1 (the input x for lo = 0), the activation the "
                f"first pass kept after every seg-th layer")
    ran = counted.forward["tanh"]
    if calls["layer"] != ran:
        return (f"{case}: calls['layer'] is {calls['layer']}, but {ran} layers ran: evaluate every layer, in the "
                f"first pass and in the rebuilt segments, with the given layer(h, w), which counts")
    if ran != 2 * n_layers:
        return (f"{case}: the layers ran {ran} times for {n_layers} layers: each should run twice, once in the "
                f"first forward pass and once when its segment is rebuilt from the saved boundary (not from x)")
    if ckpt_recorded > plain_recorded:
        return (f"{case}: checkpointed_grads recorded {ckpt_recorded} ops in a graph, more than the "
                f"{plain_recorded} of one ordinary forward pass: run the first forward pass under "
                f"`with minigrad.no_grad():`, so that only the rebuilt segments are recorded")
    if ckpt_peak >= plain_peak / 2:
        return (f"{case}: while checkpointed_grads ran, the graphs alive kept up to {ckpt_peak:,} bytes for "
                f"backward at once, against {plain_peak:,} without checkpointing: the first forward pass (under "
                f"no_grad) should keep nothing, and only one rebuilt segment should be alive at a time (rebuild "
                f"a segment, run its backward, then go on to the one below)")
    boundaries = len(segments) - 1
    # While a layer runs, its input, the matmul's output and its own output are alive; one more to spare.
    if ckpt_loose > boundaries + 4:
        return (f"{case}: up to {ckpt_loose} outputs of the unrecorded forward pass were alive at once, for "
                f"{boundaries} boundaries after the input: keep only every seg-th activation (the boundaries), "
                f"and let the others go")
    if peak["segment"] != ckpt_peak:
        return (f"{case}: peak['segment'] is {peak['segment']:,} bytes, but the largest rebuilt segment kept "
                f"{ckpt_peak:,}: store max(peak['segment'], saved_activation_bytes(out)) after rebuilding each "
                f"segment and before calling grad, which frees what it saved")
    ws_pkg = [Tensor(w, requires_grad=True) for w in weights]
    with mg.count_ops() as pkg_ops:
        layers = [lambda h, w=w: _tanh_layer(h, w) for w in ws_pkg]
        pkg = mg.grad(mg.checkpoint_sequential(layers, len(segments), Tensor(x)).sum(), ws_pkg)
    if not all(np.allclose(g, p.data, rtol=0, atol=1e-12) for g, p in zip(grads, pkg)):
        return f"{case}: your gradients differ from minigrad.checkpoint_sequential's"
    if pkg_ops.forward["tanh"] != ran:
        return (f"{case}: checkpoint_sequential runs each layer {pkg_ops.forward['tanh']} times in all, "
                f"you {ran}")
    return None


def uneven_seg(n_layers: int, seg: int) -> int:
    """The next segment length after ``seg`` that does not divide ``n_layers`` (the last segment is shorter)."""
    s = seg + 1
    while n_layers % s == 0 and s < n_layers:
        s += 1
    return s


def check_checkpointed_grads(checkpointed_grads, calls, peak, x, weights, seg) -> None:
    """Q7: ``checkpointed_grads(x, weights, seg)`` for the chain h_{k+1} = tanh(h_k W_k), loss = sum(h_L).

    It is run for ``seg`` and for a segment length that does not divide the number of layers (a shorter
    last segment), each time with ``calls['layer']`` and ``peak['segment']`` set to 0 first, and watched
    while it runs (``watch_graphs``). Required, in this order: one gradient per layer equal to plain
    backprop's (a wrong place, a missing layer, a segment started from ones instead of the gradient of its
    output, or from the wrong boundary are named); ``calls['layer']`` equal to the layers that ran, twice
    the number of layers; no more ops recorded than one plain forward pass (the first pass under
    ``no_grad``); the graphs alive at any moment keeping less than half of what plain backprop keeps (one
    rebuilt segment at a time); no more unrecorded outputs alive at once than the boundaries and four
    more; ``peak['segment']`` equal to the most the graphs alive kept; and the gradients and layer count
    of ``minigrad.checkpoint_sequential``. ``calls`` and ``peak`` are left as they were.
    """
    kept = dict(calls), dict(peak)
    try:
        for s in (seg, uneven_seg(len(weights), seg)):
            problem = checkpointed_grads_problem(checkpointed_grads, calls, peak, x, weights, s)
            assert problem is None, problem
    finally:
        calls.update(kept[0])
        peak.update(kept[1])
