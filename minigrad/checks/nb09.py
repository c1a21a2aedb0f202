"""Checks of notebook 09's exercises: one step of SGD with momentum, and the digits model on your own ops
and your own backward loop.

``check_momentum_step(momentum_step)`` requires PyTorch's convention, ``v = g`` on the first step and
``v = momentum * v + g`` afterwards, then ``w = w - lr * v`` (no dampening, lr outside v); that the arrays
given are left unchanged and a returned velocity is not changed by a later step; and that three steps on a
small MLP give ``optim.SGD(momentum=...)``'s weights to 1e-12.

``check_ops(MyMatMul, MyReLU, MyCrossEntropy)`` runs each op's forward and backward on small arrays against
the package's ops (matmul, relu, cross-entropy) and requires the same values, and that no backward changes
the ``g`` it is given (a ReLU that zeroes ``g`` in place corrupts whatever else holds that array).

``check_backward(my_backward)`` runs your loop and ``backward()`` on small graphs where gradients must add
up: a leaf used twice (``a + a``), a leaf reached in two calls, an add that hands one array to two inputs,
and an add that hands one array to two *leaves* followed by a second call (an in-place ``leaf.grad += g``
there changes the other leaf's gradient). It also requires that minigrad's own engine runs no node.

``check_first_step(gaps, ops_used, engine_ran)`` and ``check_training(...)`` judge the notebook's
measurements: the op names in the graph of your loss, the gradient of every parameter on the first batch,
and the 720 steps of training against the package's run.
"""

from __future__ import annotations

import numpy as np

import minigrad
from minigrad import Tensor, nn, optim

from ._op_checks import attempt


def _package_backward(loss):
    loss.backward()


def engine_events(fn, *args) -> int:
    """Run ``fn(*args)``; return how many nodes minigrad's own engine ran meanwhile."""
    ran = []
    with minigrad.op_hook(
        lambda event, *rest: ran.append(event) if event in ("backward", "accumulate") else None
    ):
        fn(*args)
    return len(ran)


def check_momentum_step(momentum_step, *, seed: int = 9) -> None:
    """Check ``momentum_step(w, g, v, lr, momentum) -> (w, v)`` (see the module's docstring)."""
    w0, g0 = np.array([1.0, -2.0]), np.array([0.5, 0.5])
    w1, v1 = attempt(
        "momentum_step(w, g, None, lr=0.1, momentum=0.9)",
        "return the new weights and velocity",
        momentum_step,
        w0,
        g0,
        None,
        lr=0.1,
        momentum=0.9,
    )
    w2, v2 = momentum_step(w1, g0, v1, lr=0.1, momentum=0.9)
    assert w0.tolist() == [1.0, -2.0] and g0.tolist() == [0.5, 0.5], (
        "momentum_step changed the arrays it was given (w -= ..., v *= ...); return new ones"
    )
    assert np.allclose(v1, [0.5, 0.5]) and np.allclose(w1, [0.95, -2.05]), (
        f"first step: v = {v1}, w = {w1}; on the first step v = g and w = w - lr * g"
    )
    assert np.asarray(v1).tolist() == [0.5, 0.5], (
        "the velocity of the first step must stay as returned (no in-place change later, and not g itself)"
    )
    assert np.allclose(v2, [0.95, 0.95]) and np.allclose(w2, [0.855, -2.145]), (
        f"second step: v = {v2}, w = {w2}; v = momentum * v + g (no dampening, lr outside v), then w = w - "
        "lr * v"
    )
    rng = np.random.default_rng(seed)
    x, y = Tensor(rng.normal(size=(16, 5))), rng.integers(0, 3, size=16)
    minigrad.random.manual_seed(seed)
    reference = nn.MLP([5, 6, 3])
    minigrad.random.manual_seed(seed)
    by_hand = nn.MLP([5, 6, 3])
    opt = optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    velocity = [None] * len(by_hand.parameters())
    for _ in range(3):
        opt.zero_grad()
        reference(x).cross_entropy_with_logits(y).backward()
        opt.step()
        by_hand.zero_grad()
        by_hand(x).cross_entropy_with_logits(y).backward()
        for k, p in enumerate(by_hand.parameters()):
            p.data, velocity[k] = momentum_step(p.data, p.grad, velocity[k], lr=0.1, momentum=0.9)
    gap = max(
        float(np.abs(a.data - b.data).max()) for a, b in zip(reference.parameters(), by_hand.parameters())
    )
    assert gap < 1e-12, f"after 3 steps your weights differ from optim.SGD's by {gap:.1e}"


def check_ops(matmul_op, relu_op, cross_entropy_op, *, seed: int = 90) -> None:
    """Check the three ops against the package's on small arrays, and that no backward changes g."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 5))
    z, y = rng.normal(size=(4, 5)), np.array([0, 4, 2, 2])
    cases = [
        ("MyMatMul", lambda *t: matmul_op.apply(*t), lambda *t: t[0] @ t[1], (a, b), rng.normal(size=(4, 5))),
        ("MyReLU", lambda t: relu_op.apply(t), lambda t: t.relu(), (z,), rng.normal(size=(4, 5))),
        (
            "MyCrossEntropy",
            lambda t: cross_entropy_op.apply(t, target=y),
            lambda t: t.cross_entropy_with_logits(y),
            (z,),
            np.array(0.37),
        ),
    ]
    for name, mine, theirs, arrays, g in cases:
        ts, tp = (
            [Tensor(v.copy(), requires_grad=True) for v in arrays],
            [Tensor(v, requires_grad=True) for v in arrays],
        )
        out = attempt(
            f"{name}.apply", f"copy your {name} from its notebook, with forward and backward", mine, *ts
        )
        ref = theirs(*tp)
        assert np.allclose(out.data, ref.data), f"{name}'s forward differs from the package's op"
        g_given = g.copy()
        cls = {"MyMatMul": matmul_op, "MyReLU": relu_op, "MyCrossEntropy": cross_entropy_op}[name]
        attempt(
            f"{name}.backward, called directly",
            "backward(ctx, g) reads ctx.saved",
            cls.backward,
            out.grad_fn,
            g_given,
        )
        assert np.array_equal(g_given, g), (
            f"{name}'s backward changed the g it was given in place (g[mask] = 0, g *= ...?): compute a new "
            f"array, as g * mask; g may be an array that another node or leaf still holds"
        )
        grads = attempt(
            f"minigrad.grad through {name}",
            "backward returns one gradient per input, as a tuple",
            minigrad.grad,
            out,
            ts,
            grad_output=g.copy(),
        )
        for k, (u, v) in enumerate(zip(grads, minigrad.grad(ref, tp, grad_output=g))):
            assert np.allclose(u.data, v.data), (
                f"{name}: the gradient of input {k} differs from the package's op"
            )


def small_graphs(backward) -> dict:
    """Gradients of small graphs where shares must add up, computed with ``backward(root)``."""
    a = Tensor([1.5, -0.5], requires_grad=True)
    b = a + a  # two edges to one leaf
    backward((b * b).sum())  # two edges to one op; a.grad = 8a
    u, v = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0], requires_grad=True)
    backward((u * v).sum())  # u.grad = v, v.grad = u
    backward((u * 2.0).sum())  # u.grad += 2, v.grad unchanged
    c, d = Tensor([1.0, 2.0], requires_grad=True), Tensor([0.5, -1.0], requires_grad=True)
    backward(((c * 3.0) * 1.0 + (c + d) * 2.0).sum())  # c + d hands one array to c and d: c.grad 5, d.grad 2
    e, f = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0], requires_grad=True)
    backward(((e + f) * 1.0).sum())  # one array to two leaves: e.grad = f.grad = 1
    backward((e * 2.0).sum())  # then e.grad += 2; f.grad must stay 1
    return {
        "a + a": a.grad,
        "u, two calls": u.grad,
        "v, two calls": v.grad,
        "c, shared": c.grad,
        "d, shared": d.grad,
        "e, shared leaf, two calls": e.grad,
        "f, shared leaf, two calls": f.grad,
    }


def check_backward(my_backward) -> None:
    """Check ``my_backward(root)`` against ``backward()`` on the small graphs above."""
    ran = attempt(
        "my_backward on small graphs",
        "run the exercise checks of notebook 03 on the function you copied",
        engine_events,
        small_graphs,
        my_backward,
    )
    assert ran == 0, (
        f"minigrad's engine ran {ran} nodes during my_backward: walk the nodes yourself, without "
        f"backward() or minigrad.grad()"
    )
    mine, theirs = small_graphs(my_backward), small_graphs(_package_backward)
    for name, want in theirs.items():
        got = mine[name]
        assert got is not None, (
            f"{name}: .grad is None: write each leaf's gradient (node.variable of its AccumulateGrad node) "
            "into .grad"
        )
        if name.startswith("f, shared leaf") and not np.allclose(got, want):
            raise AssertionError(
                f"{name}: my_backward gives {got}, backward() {want}. The add handed one array to both "
                "leaves, and "
                "the second call added into e.grad in place (leaf.grad += g), which is also f.grad: store "
                "a copy "
                f"in .grad, or add into a new array (leaf.grad = leaf.grad + g)"
            )
        assert np.shape(got) == want.shape and np.allclose(got, want, rtol=1e-12, atol=1e-12), (
            f"{name}: my_backward gives {got}, backward() {want}: add every share a node receives (never "
            "assign, "
            "and never with += into an array a VJP returned: add hands one array to both inputs), and add "
            "to a "
            f"leaf's .grad where it is already set"
        )


def check_first_step(first_step_gap: dict, ops_used: set, engine_ran: int) -> None:
    """Judge one step through your ops and loop: the ops in the graph, and every parameter's gradient."""
    assert engine_ran == 0, (
        f"minigrad's engine ran {engine_ran} nodes during my_backward: walk the nodes yourself, without "
        f"backward() or minigrad.grad()"
    )
    assert {"my_matmul", "my_relu", "my_cross_entropy"} <= ops_used and not {
        "matmul",
        "relu",
        "cross_entropy_with_logits",
    } & ops_used, (
        f"the graph of your loss holds the ops {sorted(ops_used)}: my_forward must use MyMatMul and MyReLU, "
        f"my_loss MyCrossEntropy, and neither the package's matmul, relu nor cross_entropy_with_logits"
    )
    for name, gap in first_step_gap.items():
        assert np.isfinite(gap), (
            f"no gradient reached {name}: my_forward must use every weight and bias of the "
            "model, and my_backward must write each leaf's gradient (node.variable of its AccumulateGrad "
            "node) into .grad"
        )
        assert gap < 1e-12, (
            f"on the first batch the gradient of {name} differs from the package's by {gap:.1e}: check the "
            "ops it "
            "flows through (layers.2 only meets MyCrossEntropy and the last MyMatMul; layers.0 meets all "
            "three), "
            f"and my_backward"
        )


def check_training(mine_steps, pkg_steps, mine_test_acc, test_acc, mine_test_loss, test_loss, n_test) -> None:
    """Judge the whole run: the loss of every step, and the test accuracy and loss, against the package's
    run."""
    mine_steps, pkg_steps = np.asarray(mine_steps), np.asarray(pkg_steps)
    assert mine_steps.shape == pkg_steps.shape, f"{len(mine_steps)} steps recorded, {len(pkg_steps)} expected"
    worst = int(np.argmax(np.abs(mine_steps - pkg_steps)))
    assert float(np.max(np.abs(mine_steps - pkg_steps))) < 1e-9, (
        f"the losses drift apart: at step {worst} yours is {mine_steps[worst]:.12f}, the package's "
        f"{pkg_steps[worst]:.12f}; the first batch agrees, so look for a difference that only shows after "
        "an update "
        f"(an op that changes its inputs, g or a saved array in place)"
    )
    assert abs(mine_test_acc - test_acc) <= 1 / n_test, (
        f"test accuracy {mine_test_acc:.2%} against the package's {test_acc:.2%}: more than one digit apart"
    )
    assert mine_test_acc >= 0.95 and abs(mine_test_loss - test_loss) < 1e-6, (
        f"your model: test accuracy {mine_test_acc:.2%}, test loss {mine_test_loss:.6f}; the package's "
        f"{test_loss:.6f}"
    )
