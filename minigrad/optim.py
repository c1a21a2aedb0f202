"""Optimizers: SGD with momentum, and Adam. Their state is plain NumPy arrays.

``optimizer.state`` maps each parameter's index to its buffers, so that the
memory notebooks can count them (``state_nbytes()``): none for plain SGD, one
buffer per parameter for momentum, two for Adam.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer:
    def __init__(self, params: Iterable[Tensor], lr: float):
        self.params = list(params)
        if not self.params:
            raise ValueError(f"{type(self).__name__}: got no parameters to optimise")
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor) or not p.requires_grad:
                raise ValueError(f"{type(self).__name__}: parameter {i} is not a Tensor "
                                 f"with requires_grad=True")
        if lr <= 0:
            raise ValueError(f"{type(self).__name__}: lr must be positive, got {lr}")
        self.lr = lr
        self.state: dict[int, dict[str, np.ndarray]] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            if p.grad.shape != p.shape:
                raise ValueError(f"{type(self).__name__}.step: parameter {i} has shape {p.shape} "
                                 f"but its grad has shape {p.grad.shape}")
            self._update(i, p)
            p._vc[0] += 1  # an in-place change: values saved from p are now stale

    def _update(self, i: int, p: Tensor) -> None:
        raise NotImplementedError

    def state_nbytes(self) -> int:
        """Bytes held by the optimizer's buffers."""
        return sum(a.nbytes for s in self.state.values() for a in s.values()
                   if isinstance(a, np.ndarray))


class SGD(Optimizer):
    """p -= lr * v, with v = momentum * v + (grad + weight_decay * p) (PyTorch's form)."""

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.0, weight_decay: float = 0.0):
        super().__init__(params, lr)
        self.momentum, self.weight_decay = momentum, weight_decay

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

    p -= lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - b1^t),  v_hat = v / (1 - b2^t).
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(params, lr)
        self.b1, self.b2 = betas
        self.eps, self.weight_decay = eps, weight_decay
        self.t = 0

    def step(self) -> None:
        self.t += 1
        super().step()

    def _update(self, i: int, p: Tensor) -> None:
        g = p.grad if not self.weight_decay else p.grad + self.weight_decay * p.data
        s = self.state.get(i)
        if s is None:
            s = self.state[i] = {"m": np.zeros_like(p.data), "v": np.zeros_like(p.data)}
        m, v = s["m"], s["v"]
        m *= self.b1
        m += (1 - self.b1) * g
        v *= self.b2
        v += (1 - self.b2) * g * g
        m_hat = m / (1 - self.b1 ** self.t)
        v_hat = v / (1 - self.b2 ** self.t)
        p.data -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
