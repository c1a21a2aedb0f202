"""Checks of notebook 00's exercise (one gradient-descent step by hand, with ``two_layer_step``).

``check_one_step(first_loss, second_loss)`` recomputes the step from the toy problem
(``minigrad.reference.toy_problem(seed=0)``) and compares:

* ``first_loss`` must be the loss at the initial weights, the first item that
  ``two_layer_step`` returns;
* ``second_loss`` must be the loss after ``W -= 0.5 * dW`` for both weights.

When they differ, the check works out which slip gives your number (one weight
updated, a step along the gradient, another learning rate, the old weights) and
says so.
"""

from __future__ import annotations

import numpy as np

from ..reference import toy_problem, two_layer_step

__all__ = ["check_one_step"]

LR = 0.5


def _loss_after(w1_scale: float, w2_scale: float) -> float:
    """Loss after w1 -= w1_scale * dW1 and w2 -= w2_scale * dW2 from the initial weights."""
    x, y, w1, w2 = toy_problem(seed=0)
    _, (dw1, dw2) = two_layer_step(x, y, w1, w2)
    return two_layer_step(x, y, w1 - w1_scale * dw1, w2 - w2_scale * dw2)[0]


def _close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-12


def check_one_step(first_loss, second_loss, losses=None) -> None:
    """Raise AssertionError unless first_loss and second_loss are the toy problem's first two losses.

    ``losses``, if given, is the training loop's list of losses; its first two
    entries must then agree with the same numbers (they do when the engine is right).
    """
    x, y, w1, w2 = toy_problem(seed=0)
    want_first = two_layer_step(x, y, w1, w2)[0]
    want_second = _loss_after(LR, LR)
    for name, value in (("first_loss", first_loss), ("second_loss", second_loss)):
        if not isinstance(value, (float, int, np.floating, np.integer)) and np.ndim(np.asarray(value, dtype=object)) != 0:
            raise AssertionError(f"{name} should be one number, the loss; it is a {type(value).__name__}. "
                                 f"two_layer_step returns (loss, (dW1, dW2)): take its first item")
    first_loss, second_loss = float(first_loss), float(second_loss)
    if not _close(first_loss, want_first):
        raise AssertionError(
            f"first_loss is {first_loss:.6f}, but the loss at the initial weights is {want_first:.6f}: "
            f"two_layer_step(x0, y0, w1_0, w2_0) returns (loss, (dW1, dW2)); first_loss is its first item, "
            f"computed at the initial weights w1_0, w2_0")
    if _close(second_loss, first_loss):
        raise AssertionError("second_loss equals first_loss: compute it at the weights after the step, "
                             "not at the initial ones")
    if second_loss > first_loss:
        raise AssertionError(f"the loss went up ({first_loss:.6f} -> {second_loss:.6f}): a step goes against "
                             f"the gradient, W - lr * dW")
    if not _close(second_loss, want_second):
        if _close(second_loss, _loss_after(LR, 0.0)):
            hint = "you updated w1 only: update w2 too"
        elif _close(second_loss, _loss_after(0.0, LR)):
            hint = "you updated w2 only: update w1 too"
        else:
            lr = next((r for r in (0.1, 0.01, 0.05, 0.2, 0.25, 1.0, 2.0) if _close(second_loss, _loss_after(r, r))),
                      None)
            hint = (f"that is the loss after a step with lr = {lr}" if lr is not None else
                    "update both weights from the initial ones")
            hint += "; the loop's learning rate is 0.5"
        raise AssertionError(f"second_loss is {second_loss:.6f}, the loss after one step with lr 0.5 is "
                             f"{want_second:.6f}: {hint}")
    if losses is not None:
        assert _close(want_first, losses[0]) and _close(want_second, losses[1]), \
            "the by-hand step is right, but minigrad's first two losses differ from it: the engine is wrong"
