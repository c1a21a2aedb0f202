"""Numerical gradients, and a check of the engine against them.

Central differences, ``(f(x + eps) - f(x - eps)) / (2 eps)``, have an error of
order eps**2 and need nothing but the forward pass, so they are the reference
every VJP is tested against. Run them in float64: in float32 the round-off of
``f(x + eps) - f(x - eps)`` swamps the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .engine import grad as _grad
from .function import no_grad
from .tensor import Tensor

__all__ = ["GradcheckError", "numerical_grad", "gradcheck"]


class GradcheckError(AssertionError):
    """The engine's gradient and the numerical one disagree."""


def numerical_grad(f: Callable[[], Any], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """dF/dx by central differences, where ``f()`` reads ``x`` (changed in place and restored).

    ``F`` may be a number or an array; the result has shape ``x.shape + F.shape``.
    """
    parts = []
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        fp = np.asarray(f(), dtype=np.float64)
        x[i] = old - eps
        fm = np.asarray(f(), dtype=np.float64)
        x[i] = old
        parts.append((fp - fm) / (2 * eps))
    if not parts:
        return np.zeros(x.shape, dtype=np.float64)
    return np.array(parts).reshape(x.shape + parts[0].shape)


def gradcheck(fn: Callable[..., Tensor], *inputs: Tensor, eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-3, seed: int = 0,
              raise_exception: bool = True) -> bool:
    """Compare the engine's gradients of ``fn(*inputs)`` with central differences.

    A non-scalar output is reduced to ``sum(out * r)`` with a fixed random ``r``,
    which tests the full VJP (a wrong entry survives a random projection with
    probability zero). Every input that requires grad is checked; ``.grad`` is
    never touched. On failure the error names the input and its worst element.
    """
    tensors = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not tensors:
        raise ValueError("gradcheck: no input has requires_grad=True")
    for i, t in enumerate(tensors):
        if t.dtype != np.float64:
            raise ValueError(f"gradcheck: input {i} is {t.dtype}; use float64, or round-off "
                             f"will hide real errors")

    out = fn(*inputs)
    r = np.random.default_rng(seed).standard_normal(out.shape)

    def scalar() -> float:
        with no_grad():
            return float((fn(*inputs).data * r).sum())

    analytic = _grad((out * r).sum(), tensors, allow_unused=True)
    for i, (t, a) in enumerate(zip(tensors, analytic)):
        a = np.zeros_like(t.data) if a is None else a.data
        n = numerical_grad(scalar, t.data, eps)
        err = np.abs(a - n)
        bad = err > atol + rtol * np.abs(n)
        if bad.any():
            worst = np.unravel_index(np.argmax(err - rtol * np.abs(n)), a.shape) if a.ndim else ()
            msg = (f"gradcheck failed for input {i} (shape {t.shape}): {int(bad.sum())} of "
                   f"{a.size} elements differ; worst at index {tuple(int(k) for k in worst)}: "
                   f"engine {a[worst]:.6g}, numerical {n[worst]:.6g}, |diff| {err[worst]:.3g} "
                   f"> atol {atol:g} + rtol {rtol:g} * |numerical|")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True
