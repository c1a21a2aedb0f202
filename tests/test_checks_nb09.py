"""The checks of notebook 09's exercises (minigrad.checks.nb09) reject plausible wrong momentum steps, ops
and backward loops with a message that names the slip, and accept correct ones written differently."""

import numpy as np
import pytest

import minigrad
from minigrad import Function
from minigrad.checks import nb09
from minigrad.function import AccumulateGrad

# ---------------------------------------------------------------- momentum_step


def momentum(w, g, v, lr, momentum):  # the notebook's solution
    v = g.copy() if v is None else momentum * v + g
    return w - lr * v, v


def momentum_zeros(w, g, v, lr, momentum):  # a zero velocity to start from: the same first step
    v = momentum * (np.zeros_like(g) if v is None else v) + g
    return w - lr * v, v


@pytest.mark.parametrize("f", [momentum, momentum_zeros])
def test_momentum_correct_solutions_pass(f):
    nb09.check_momentum_step(f)


def dampening(w, g, v, lr, momentum):
    v = g.copy() if v is None else momentum * v + (1 - momentum) * g
    return w - lr * v, v


def lr_inside(w, g, v, lr, momentum):
    v = lr * g if v is None else momentum * v + lr * g
    return w - v, v


def w_in_place(w, g, v, lr, momentum):
    v = g.copy() if v is None else momentum * v + g
    w -= lr * v
    return w, v


def v_alias_in_place(w, g, v, lr, momentum):
    if v is None:
        v = g
    else:
        v *= momentum
        v += g
    return w - lr * v, v


def no_first_move(w, g, v, lr, momentum):
    if v is None:
        return w.copy(), g.copy()
    v = momentum * v + g
    return w - lr * v, v


@pytest.mark.parametrize(
    "f, phrase",
    [
        (dampening, "no dampening"),
        (lr_inside, "first step: v ="),
        (w_in_place, "changed the arrays it was given"),
        (v_alias_in_place, "changed the arrays it was given"),
        (no_first_move, "on the first step v = g and w = w - lr \\* g"),
    ],
    ids=["dampening", "lr inside v", "w -=", "v *= on an alias of g", "no first move"],
)
def test_momentum_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb09.check_momentum_step(f)


# ---------------------------------------------------------------- the three ops


def op(name, forward, backward):
    return type(
        name,
        (Function,),
        {"name": name.lower(), "forward": staticmethod(forward), "backward": staticmethod(backward)},
    )


def mm_f(ctx, a, b):
    ctx.save_for_backward(a, b)
    return a @ b


def mm_b(ctx, g):
    a, b = ctx.saved
    return g @ b.T, a.T @ g


def relu_f(ctx, a):
    out = np.maximum(a, 0)
    ctx.save_for_backward(out)
    return out


def relu_b(ctx, g):
    (out,) = ctx.saved
    return (g * (out > 0),)


def ce_f(ctx, z, target):
    shifted = z - z.max(axis=1, keepdims=True)
    ctx.save_for_backward(z)
    ctx.target = np.asarray(target)
    return np.asarray((np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(len(z)), ctx.target]).mean())


def ce_b(ctx, g):
    (z,) = ctx.saved
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(z)), ctx.target] -= 1.0
    return (p * (g / len(z)),)


def relu_b_mask_input(ctx, g):  # a correct alternative: saving the input's mask
    (out,) = ctx.saved
    return (np.where(out > 0, g, 0.0),)


def test_ops_correct_solutions_pass():
    nb09.check_ops(op("MyMatMul", mm_f, mm_b), op("MyReLU", relu_f, relu_b), op("MyCrossEntropy", ce_f, ce_b))
    nb09.check_ops(
        op("MyMatMul", mm_f, mm_b), op("MyReLU", relu_f, relu_b_mask_input), op("MyCrossEntropy", ce_f, ce_b)
    )


def relu_b_in_place(ctx, g):
    (out,) = ctx.saved
    g[out <= 0] = 0
    return (g,)


def mm_b_transposed(ctx, g):
    a, b = ctx.saved
    return g @ b.T, (g.T @ a).T * 0 + g.T.T.sum() * 0 + a.T @ g * 2


def ce_b_no_n(ctx, g):
    (dz,) = ce_b(ctx, g)
    return (dz * len(ctx.saved[0]),)


@pytest.mark.parametrize(
    "ops, phrase",
    [
        (
            (mm_f, mm_b, relu_f, relu_b_in_place, ce_f, ce_b),
            "MyReLU's backward changed the g it was given in place",
        ),
        ((mm_f, mm_b_transposed, relu_f, relu_b, ce_f, ce_b), "MyMatMul: the gradient of input 1 differs"),
        ((mm_f, mm_b, relu_f, relu_b, ce_f, ce_b_no_n), "MyCrossEntropy: the gradient of input 0 differs"),
    ],
    ids=["relu zeroes g in place", "matmul dB wrong", "cross-entropy without /N"],
)
def test_ops_wrong_solutions_are_named(ops, phrase):
    mm, relu, ce = op("MyMatMul", *ops[0:2]), op("MyReLU", *ops[2:4]), op("MyCrossEntropy", *ops[4:6])
    with pytest.raises(AssertionError, match=phrase):
        nb09.check_ops(mm, relu, ce)


# ---------------------------------------------------------------- my_backward


def make_backward(leaf_update="copy", add="new", use_engine=False):
    def my_backward(root):
        if use_engine:
            return root.backward()
        order = minigrad.topological_order(root)
        grads = {id(order[-1]): np.ones_like(root.data)}
        done = []
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if isinstance(node, AccumulateGrad):
                done.append((node.variable, g))
                continue
            for parent, pg in zip(node.parents, node.fn.backward(node, g)):
                if parent is None or pg is None:
                    continue
                if id(parent) not in grads:
                    grads[id(parent)] = pg
                elif add == "new":
                    grads[id(parent)] = grads[id(parent)] + pg
                elif add == "assign":
                    grads[id(parent)] = pg
                else:
                    grads[id(parent)] += pg
        for leaf, g in done:
            if leaf.grad is None:
                leaf.grad = np.array(g, dtype=leaf.data.dtype) if leaf_update == "copy" else g
            elif leaf_update == "assign":
                leaf.grad = g
            elif leaf_update == "in place":
                leaf.grad += g
            else:
                leaf.grad = leaf.grad + g

    return my_backward


def backward_lists(root):  # a different walk: shares in lists, summed once
    order = minigrad.topological_order(root)
    shares = {id(order[-1]): [np.ones_like(root.data)]}
    for node in reversed(order):
        parts = shares.pop(id(node), [])
        if not parts:
            continue
        g = sum(parts[1:], parts[0].copy())
        if isinstance(node, AccumulateGrad):
            v = node.variable
            v.grad = g if v.grad is None else v.grad + g
            continue
        for parent, pg in zip(node.parents, node.fn.backward(node, g)):
            if parent is not None and pg is not None:
                shares.setdefault(id(parent), []).append(pg)


@pytest.mark.parametrize("f", [make_backward(), backward_lists])
def test_backward_correct_solutions_pass(f):
    nb09.check_backward(f)


@pytest.mark.parametrize(
    "f, phrase",
    [
        (make_backward(leaf_update="in place"), "which is also f.grad"),
        (make_backward(leaf_update="assign"), "add to a\\s+leaf's .grad where it is already set"),
        (make_backward(add="assign"), "add every share a node receives"),
        (make_backward(add="in place"), "never with \\+= into an array a VJP returned"),
        (make_backward(use_engine=True), "minigrad's engine ran"),
    ],
    ids=["leaf.grad += g", "leaf.grad = g", "= instead of +", "+= into a VJP's array", "root.backward()"],
)
def test_backward_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb09.check_backward(f)


# ---------------------------------------------------------------- the notebook's measurements


def test_first_step_and_training_judgements():
    good_ops = {"add", "my_matmul", "my_relu", "my_cross_entropy"}
    nb09.check_first_step({"layers.0.weight": 1e-17}, good_ops, 0)
    with pytest.raises(AssertionError, match="neither the package's matmul"):
        nb09.check_first_step({"layers.0.weight": 1e-17}, good_ops | {"relu"}, 0)
    with pytest.raises(AssertionError, match="no gradient reached layers.0.bias"):
        nb09.check_first_step({"layers.0.bias": np.inf}, good_ops, 0)
    with pytest.raises(AssertionError, match="differs from the package's by 1.0e-03"):
        nb09.check_first_step({"layers.2.weight": 1e-3}, good_ops, 0)
    steps = np.linspace(2.3, 0.1, 10)
    nb09.check_training(steps, steps, 0.96, 0.96, 0.15, 0.15, 359)
    with pytest.raises(AssertionError, match="the losses drift apart: at step 9"):
        nb09.check_training(steps + np.arange(10) * 1e-6, steps, 0.96, 0.96, 0.15, 0.15, 359)
    with pytest.raises(AssertionError, match="9 steps recorded, 10 expected"):
        nb09.check_training(steps[:9], steps, 0.96, 0.96, 0.15, 0.15, 359)
