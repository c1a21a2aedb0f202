"""Checks of notebook 00's two exercises: one gradient-descent step by hand, and the update step as a function.

``check_one_step(first_loss, second_loss)`` recomputes the step from the toy problem
(``minigrad.reference.toy_problem(seed=0)``) and compares:

* ``first_loss`` must be the loss at the initial weights, the first item that
  ``two_layer_step`` returns;
* ``second_loss`` must be the loss after ``W -= 0.5 * dW`` for both weights.

When they differ, the check works out which slip gives your number (one weight
updated, a step along the gradient, another learning rate, the old weights) and
says so.

``check_sgd_step(sgd_step)`` trains the toy problem for five steps with a loop
that calls your ``sgd_step(params, lr)`` after each ``backward()`` (and clears
nothing itself), at lr 0.5 and at lr 0.1, and compares every loss with the
hand-written NumPy run (``minigrad.reference.train_two_layer``). It also checks
that the parameters stay leaves that no op recorded, that each gradient is
cleared after the step (``None`` or zeros), and that a parameter whose
``.grad`` is ``None`` (the loss did not use it) is left alone. An error inside
your function is reported with what it means: a leaf changed in place outside
``no_grad()``, or an update of a parameter without a gradient.
"""

from __future__ import annotations

import numpy as np

from ..reference import toy_problem, train_two_layer, two_layer_step
from ..tensor import Tensor

__all__ = ["check_one_step", "check_sgd_step"]

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


def _train(sgd_step, lr: float, steps: int = 5, seed: int = 0) -> tuple[list[float], list[Tensor], Tensor]:
    """The notebook's loop on the toy problem, the update left to sgd_step; also an unused parameter."""
    x, y, w1, w2 = toy_problem(seed=seed)
    W1 = Tensor(w1.copy(), requires_grad=True, name="W1")
    W2 = Tensor(w2.copy(), requires_grad=True, name="W2")
    unused = Tensor(np.ones(3), requires_grad=True, name="unused")     # never in the loss: grad stays None
    xt = Tensor(x)
    losses = []
    for step in range(steps):
        loss = ((xt @ W1).relu() @ W2).softmax(axis=1).cross_entropy(y)
        loss.backward()
        losses.append(loss.item())
        try:
            sgd_step([W1, unused, W2], lr)
        except NotImplementedError:
            raise
        except RuntimeError as err:
            if "in place" in str(err):
                raise AssertionError(f"sgd_step raised RuntimeError: {err}. Do the update inside "
                                     f"`with no_grad():`, where nothing is recorded") from err
            raise AssertionError(f"sgd_step raised RuntimeError: {err}") from err
        except TypeError as err:
            if "NoneType" in str(err):
                raise AssertionError(f"sgd_step raised TypeError: {err}. A parameter the loss did not use has "
                                     f".grad None: skip it, as PyTorch's optimizers do") from err
            raise AssertionError(f"sgd_step raised TypeError: {err}") from err
        if step == 0:
            moved = not np.array_equal(W1.data, w1) or not np.array_equal(W2.data, w2)
            if not moved:
                raise AssertionError("after sgd_step the parameters have not moved: p = p - lr * p.grad makes a "
                                     "new tensor and binds the name p to it; change the parameter itself, in "
                                     "place: p -= lr * p.grad (inside no_grad())")
            for p in (W1, W2):
                if p.grad_fn is not None or not p.is_leaf:
                    raise AssertionError(f"after sgd_step, {p.name} was made by an op ({p.op}): the update was "
                                         f"recorded. Do it inside `with no_grad():`")
                if p.grad is not None and np.any(p.grad != 0):
                    raise AssertionError(f"after sgd_step, {p.name}.grad still holds the gradient: clear it "
                                         f"(p.zero_grad()) once it is used, or the next backward() adds to it")
            if unused.grad is not None or not np.array_equal(unused.data, np.ones(3)):
                raise AssertionError("sgd_step changed a parameter whose .grad is None (the loss did not use it): "
                                     "skip such parameters")
    return losses, [W1, W2], unused


def check_sgd_step(sgd_step, *, seed: int = 0) -> None:
    """Raise AssertionError unless the loop with sgd_step trains exactly as hand-written gradient descent
    (on ``toy_problem(seed)``)."""
    for lr in (0.5, 0.1):
        losses, _, _ = _train(sgd_step, lr, seed=seed)
        want = train_two_layer(steps=5, lr=lr, seed=seed)
        for k, (mine, ref) in enumerate(zip(losses, want)):
            if _close(mine, ref):
                continue
            if k and mine > losses[k - 1]:
                raise AssertionError(f"lr {lr}: the loss went up at step {k} ({losses[k - 1]:.6f} -> {mine:.6f}): "
                                     f"step against the gradient, p -= lr * p.grad")
            raise AssertionError(f"lr {lr}: the loss at step {k} is {mine:.6f}, gradient descent gives "
                                 f"{ref:.6f}: update every parameter by exactly lr * p.grad, with the lr passed in")
