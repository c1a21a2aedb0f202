"""Optimizers: SGD with momentum, and Adam. Their state is plain NumPy arrays.

``optimizer.state`` maps each parameter's index to its buffers, so that the
memory notebooks can count them (``state_nbytes()``): none for plain SGD, one
buffer per parameter for momentum, two for Adam.

``step()`` first checks every parameter that has a gradient (the gradient's
shape, that it is real, that the parameter can be written), then updates them
all: a bad gradient raises before any parameter, buffer or the step count has
changed. A NaN or inf in a gradient is applied, as PyTorch's optimizers do
(``minigrad.detect_anomaly()`` finds where it came from); pass
``check_finite=True`` to refuse it instead, at the cost of one pass over every
gradient per step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from . import capture as _capture
from .tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam"]


def _check_hyper(where: str, name: str, value, low: float, high: float = math.inf,
                 high_open: bool = True) -> float:
    """``value`` must be a real number in [low, high) (or [low, high] if not high_open)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where}: {name} must be a number, got {type(value).__name__} {value!r}")
    v = float(value)
    ok = low <= v < high if high_open else low <= v <= high
    if not ok or math.isnan(v):
        bracket = ")" if high_open else "]"
        raise ValueError(f"{where}: {name} must be in [{low:g}, {high:g}{bracket}, got {value!r}")
    return v


class Optimizer:
    """Holds a list of parameters; ``step()`` updates those that have a ``.grad``."""

    def __init__(self, params: Iterable[Tensor], lr: float, check_finite: bool = False):
        name = type(self).__name__
        self.check_finite = bool(check_finite)
        self.params = list(params)
        if not self.params:
            raise ValueError(f"{name}: got no parameters to optimise")
        seen: dict[int, int] = {}
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor) or not p.requires_grad:
                raise ValueError(f"{name}: parameter {i} is not a Tensor with requires_grad=True "
                                 f"(got {type(p).__name__})")
            if id(p) in seen:
                raise ValueError(f"{name}: parameter {i} is the same Tensor as parameter "
                                 f"{seen[id(p)]}; it would be updated twice per step")
            if p.grad_fn is not None:
                raise ValueError(f"{name}: can't optimize a non-leaf Tensor: parameter {i} (shape "
                                 f"{p.shape}) was computed by '{p.op}'; optimize the leaves it "
                                 f"was computed from")
            seen[id(p)] = i
        for i, p in enumerate(self.params):  # views of one buffer would be updated twice
            for j in range(i):
                q = self.params[j]
                if np.may_share_memory(p.data, q.data) and np.shares_memory(p.data, q.data):
                    raise ValueError(f"{name}: parameters {j} (shape {q.shape}) and {i} (shape "
                                     f"{p.shape}) share memory; an update of one would change "
                                     f"the other")
        self.lr = _check_hyper(name, "lr", lr, 0.0)
        if self.lr == 0.0:
            raise ValueError(f"{name}: lr must be positive, got {lr!r}")
        self.steps = 0  # completed calls to step()
        self.state: dict[int, dict[str, np.ndarray]] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient (parameters without one are skipped)."""
        name, check_finite = type(self).__name__, self.check_finite
        live = []
        for i, p in enumerate(self.params):  # check everything before changing anything
            if p.grad is not None:
                _check_param(name, i, p, check_finite)
                live.append((i, p))
        if _capture.observers:  # a recording trace or compile sees the update (or refuses it)
            _capture.notify("step", self, live)
        self._apply(live)

    def _apply(self, live: list) -> None:
        """The update itself, once the checks passed: ``live`` is ``[(index, parameter), ...]``.

        A compiled step (``minigrad.compile``) calls this directly: its program
        already knows which parameters have a gradient of the right shape.
        """
        self.steps += 1
        for i, p in live:
            self._update(i, p)
            p._vc[0] += 1  # an in-place change: values saved from p are now stale

    def _update(self, i: int, p: Tensor) -> None:
        raise NotImplementedError

    def state_nbytes(self) -> int:
        """Bytes held by the optimizer's buffers."""
        return sum(a.nbytes for s in self.state.values() for a in s.values()
                   if isinstance(a, np.ndarray))


def _check_param(name: str, i: int, p: Tensor, check_finite: bool) -> None:
    """Raise if ``p``'s gradient could not be applied (or, if asked, would make ``p`` NaN or inf)."""
    g, data = p.grad, p.data
    if type(g) is not np.ndarray and not isinstance(g, np.ndarray):
        raise TypeError(f"{name}.step: parameter {i} (shape {p.shape}) has a grad of type "
                        f"{type(g).__name__}; expected a NumPy array")
    if g.shape != data.shape:
        raise ValueError(f"{name}.step: parameter {i} has shape {p.shape} "
                         f"but its grad has shape {g.shape}")
    if g.dtype.kind not in "biuf":
        raise ValueError(f"{name}.step: parameter {i} (shape {p.shape}) has a grad of dtype "
                         f"{g.dtype}; a gradient must be real")
    # one sum is cheaper than an elementwise test; a sum that overflows is checked in full
    if check_finite and g.dtype.kind == "f" and not math.isfinite(g.sum()) and not np.isfinite(g).all():
        n_nan, n_inf = int(np.isnan(g).sum()), int(np.isinf(g).sum())
        raise ValueError(f"{name}.step: parameter {i} (shape {p.shape}) has a grad with "
                         f"{n_nan} NaN and {n_inf} inf; nothing was updated")
    if not data.flags.writeable:
        raise ValueError(f"{name}.step: parameter {i} (shape {p.shape}) has read-only data; "
                         f"it cannot be updated in place")


class SGD(Optimizer):
    """p -= lr * v, with v = momentum * v + (grad + weight_decay * p) (PyTorch's form).

    On a parameter's first step v = grad (no dampening). With momentum 0 no
    buffer is kept. The defaults are PyTorch's (lr 1e-3, no momentum, no decay).
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, weight_decay: float = 0.0,
                 check_finite: bool = False):
        super().__init__(params, lr, check_finite)
        self.momentum = _check_hyper("SGD", "momentum", momentum, 0.0, 1.0)
        self.weight_decay = _check_hyper("SGD", "weight_decay", weight_decay, 0.0)

    def _update(self, i: int, p: Tensor) -> None:
        g = p.grad if not self.weight_decay else p.grad + self.weight_decay * p.data
        if self.momentum:
            s = self.state.get(i)
            if s is None:
                s = self.state[i] = {"momentum": np.array(g, dtype=p.dtype)}
            else:
                s["momentum"] *= self.momentum
                s["momentum"] += g
            g = s["momentum"]
        p.data -= self.lr * g


class Adam(Optimizer):
    """Kingma & Ba (2015). m, v: running means of g and g^2, bias-corrected by step t.

    m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2,
    p -= lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - b1^t),  v_hat = v / (1 - b2^t).

    t counts the steps in which *this* parameter had a gradient (as in PyTorch),
    so a parameter that joins late gets the right bias correction.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, check_finite: bool = False):
        super().__init__(params, lr, check_finite)
        try:
            b1, b2 = betas
        except (TypeError, ValueError):
            raise ValueError(f"Adam: betas must be a pair (b1, b2), got {betas!r}") from None
        self.b1 = _check_hyper("Adam", "betas[0]", b1, 0.0, 1.0)
        self.b2 = _check_hyper("Adam", "betas[1]", b2, 0.0, 1.0)
        self.eps = _check_hyper("Adam", "eps", eps, 0.0)
        self.weight_decay = _check_hyper("Adam", "weight_decay", weight_decay, 0.0)

    @property
    def t(self) -> int:
        """Calls to step() so far."""
        return self.steps

    def _update(self, i: int, p: Tensor) -> None:
        g = p.grad if not self.weight_decay else p.grad + self.weight_decay * p.data
        s = self.state.get(i)
        if s is None:
            s = self.state[i] = {"m": np.zeros_like(p.data), "v": np.zeros_like(p.data), "step": 0}
        s["step"] += 1
        t = s["step"]
        m, v = s["m"], s["v"]
        m *= self.b1
        m += (1 - self.b1) * g
        v *= self.b2
        v += (1 - self.b2) * g * g
        m_hat = m / (1 - self.b1 ** t)
        v_hat = v / (1 - self.b2 ** t)
        p.data -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
