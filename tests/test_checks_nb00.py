"""minigrad.checks.nb00: the one-step exercise's check rejects the usual slips, each with its own message."""

import pytest

from minigrad.checks import nb00
from minigrad.reference import toy_problem, train_two_layer, two_layer_step

x0, y0, w1_0, w2_0 = toy_problem(seed=0)
first, (dw1, dw2) = two_layer_step(x0, y0, w1_0, w2_0)


def after(s1, s2):
    return two_layer_step(x0, y0, w1_0 - s1 * dw1, w2_0 - s2 * dw2)[0]


def test_the_reference_step_passes_and_agrees_with_the_loop():
    nb00.check_one_step(first, after(0.5, 0.5), train_two_layer(steps=2, lr=0.5))


def test_an_alternative_in_place_step_passes():
    w1, w2 = w1_0.copy(), w2_0.copy()
    loss, (g1, g2) = two_layer_step(x0, y0, w1, w2)
    w1 -= 0.5 * g1
    w2 -= 0.5 * g2
    nb00.check_one_step(loss, two_layer_step(x0, y0, w1, w2)[0])


@pytest.mark.parametrize("first_loss, second_loss, phrase", [
    (first, after(0.5, 0.0), "you updated w1 only: update w2 too"),
    (first, after(0.0, 0.5), "you updated w2 only: update w1 too"),
    (first, after(-0.5, -0.5), "the loss went up"),
    (first, after(0.1, 0.1), "lr = 0.1; the loop's learning rate is 0.5"),
    (first, first, "compute it at the weights after the step"),
    (dw1.sum(), after(0.5, 0.5), r"returns \(loss, \(dW1, dW2\)\); first_loss is its first item"),
    ((first, (dw1, dw2)), after(0.5, 0.5), "should be one number"),
])
def test_wrong_steps_are_named(first_loss, second_loss, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb00.check_one_step(first_loss, second_loss)


# ------------------------------------------------------------------ sgd_step

import numpy as np  # noqa: E402

import minigrad  # noqa: E402
from minigrad import no_grad  # noqa: E402


def sgd(in_no_grad=True, rebind=False, clear=True, skip_none=True, sign=-1, fixed_lr=None):
    def sgd_step(params, lr):
        step = fixed_lr if fixed_lr is not None else lr

        def update():
            for p in params:
                if p.grad is None and skip_none:
                    continue
                if rebind:
                    p = p - step * p.grad                 # the slip under test: rebinds the name only
                elif sign < 0:
                    p -= step * p.grad
                else:
                    p += step * p.grad
        if in_no_grad:
            with no_grad():
                update()
        else:
            update()
        if clear:
            for p in params:
                p.zero_grad()
    return sgd_step


def test_the_reference_sgd_step_passes():
    nb00.check_sgd_step(sgd())


def test_alternative_sgd_steps_pass():
    def on_the_arrays(params, lr):            # the numbers themselves, outside the graph; zeros, not None
        for p in params:
            if p.grad is not None:
                p.data -= lr * p.grad
                p.grad = np.zeros_like(p.grad)
    nb00.check_sgd_step(on_the_arrays)

    def with_the_package(params, lr):
        opt = minigrad.optim.SGD(params, lr=lr)
        opt.step()
        opt.zero_grad()
    nb00.check_sgd_step(with_the_package)


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(in_no_grad=False), "Do the update inside `with no_grad\\(\\):`"),
    (dict(rebind=True), "the parameters have not moved: p = p - lr \\* p.grad makes a new tensor"),
    (dict(clear=False), "still holds the gradient: clear it"),
    (dict(skip_none=False), "has .grad None: skip it"),
    (dict(sign=+1), "the loss went up at step 1"),
    (dict(fixed_lr=0.5), "lr 0.1: .*with the lr passed in"),
])
def test_wrong_sgd_steps_are_named(kwargs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb00.check_sgd_step(sgd(**kwargs))
