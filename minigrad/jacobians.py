"""Full Jacobians: the matrix every VJP avoids building, made visible.

For ``y = f(x)`` with ``x`` of shape X and ``y`` of shape Y, flatten both in C
order (row-major, NumPy's default). The Jacobian is the ``(y.size, x.size)``
matrix

    J[i, j] = d y_flat[i] / d x_flat[j].

For an upstream gradient ``g = dL/dy`` the vector-Jacobian product is

    dL/dx = (g_flat @ J).reshape(X),

which is what every op's ``backward`` returns without ever forming ``J``.
This module builds ``J`` three ways, so that a notebook can set them side by
side on a tiny example:

* :func:`numerical_jacobian` -- central differences, one column per input
  element (2 forward passes each); needs nothing but the forward pass;
* :func:`jacobian` -- from the engine, one row per output element (one
  backward pass with a one-hot ``grad_output`` each);
* :func:`vjp` -- the engine's product ``g @ J`` in a single backward pass.

:func:`jacobian_nbytes` says how large ``J`` would be without building it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .engine import grad as _grad
from .function import no_grad
from .gradcheck import numerical_grad
from .tensor import Tensor

__all__ = ["numerical_jacobian", "jacobian", "vjp", "jacobian_nbytes"]


def _as_float64(name: str, x: Any) -> np.ndarray:
    """A float64 copy of ``x`` (array or Tensor): the caller's data is never touched."""
    data = x.data if isinstance(x, Tensor) else np.asarray(x)
    if data.dtype.kind not in "biuf":
        raise TypeError(f"{name}: x must be numeric, got an array of dtype {data.dtype} "
                        f"and shape {data.shape}")
    return np.array(data, dtype=np.float64)


def _output_array(name: str, y: Any) -> np.ndarray:
    data = y.data if isinstance(y, Tensor) else y
    if not isinstance(data, (np.ndarray, np.generic, float, int)):
        raise TypeError(f"{name}: fn must return a Tensor or an array, got {type(y).__name__}")
    return np.asarray(data, dtype=np.float64)


def numerical_jacobian(fn: Callable[[Any], Any], x: Any, eps: float = 1e-6) -> np.ndarray:
    """The Jacobian of ``fn`` at ``x`` by central differences, shape ``(y.size, x.size)``.

    Column j is ``(fn(x + eps e_j) - fn(x - eps e_j)) / (2 eps)``, whose error is
    of order ``eps**2`` (times the third derivative). ``fn`` receives what ``x``
    is: a NumPy array if ``x`` is one, a Tensor (under ``no_grad``) if ``x`` is a
    Tensor; it may return either. Work is done on a float64 copy of ``x``.
    """
    if not eps > 0:
        raise ValueError(f"numerical_jacobian: eps must be positive, got {eps!r}")
    is_tensor = isinstance(x, Tensor)
    base = _as_float64("numerical_jacobian", x)
    flat = base.reshape(-1)  # a view: changing flat changes base

    def f() -> np.ndarray:
        arg = Tensor(base) if is_tensor else base.copy()
        with no_grad():
            return _output_array("numerical_jacobian", fn(arg)).reshape(-1)

    n_out = f().size
    return numerical_grad(f, flat, eps).reshape(flat.size, n_out).T  # column j: d y / d x_j


def _forward(name: str, fn: Callable[[Tensor], Tensor], x: Any) -> tuple[Tensor, Tensor]:
    leaf = Tensor(_as_float64(name, x), requires_grad=True)
    y = fn(leaf)
    if not isinstance(y, Tensor):
        raise TypeError(f"{name}: fn must return a minigrad Tensor (built from its argument), "
                        f"got {type(y).__name__}")
    return leaf, y


def jacobian(fn: Callable[[Tensor], Tensor], x: Any) -> np.ndarray:
    """The Jacobian of ``fn`` at ``x`` from the engine, shape ``(y.size, x.size)``.

    Row i is the VJP with ``g = e_i`` (a one-hot upstream gradient): one forward
    pass, then ``y.size`` backward passes over the same graph. That cost, one
    backward pass per output element, is why reverse mode is used only with
    ``g`` given, never to build ``J``. ``fn`` receives a float64 Tensor that
    requires grad and must return a Tensor. Entries for outputs that do not
    depend on ``x`` are 0.
    """
    leaf, y = _forward("jacobian", fn, x)
    J = np.zeros((y.size, leaf.size))
    if not y.requires_grad:  # y does not depend on x at all
        return J
    for i in range(y.size):
        e = np.zeros(y.size)
        e[i] = 1.0
        (row,) = _grad(y, leaf, grad_output=e.reshape(y.shape), retain_graph=True,
                       allow_unused=True)
        if row is not None:
            J[i] = row.data.reshape(-1)
    return J


def vjp(fn: Callable[[Tensor], Tensor], x: Any, g: Any) -> np.ndarray:
    """``g @ J`` for ``y = fn(x)``, reshaped like ``x``: one forward and one backward pass.

    ``g`` must have the shape of ``fn(x)``. The Jacobian is never formed.
    """
    leaf, y = _forward("vjp", fn, x)
    g = np.asarray(g.data if isinstance(g, Tensor) else g, dtype=np.float64)
    if g.shape != y.shape:
        raise ValueError(f"vjp: g has shape {g.shape} but fn(x) has shape {y.shape}; "
                         f"g is dL/dy and must match y")
    if not y.requires_grad:
        return np.zeros(leaf.shape)
    (dx,) = _grad(y, leaf, grad_output=g, allow_unused=True)
    return np.zeros(leaf.shape) if dx is None else dx.data


def jacobian_nbytes(out_shape: tuple | int, in_shape: tuple | int, dtype: Any = np.float64) -> int:
    """Bytes a dense Jacobian of ``out_shape`` w.r.t. ``in_shape`` would take, without building it.

    ``out.size * in.size * itemsize``, in Python integers (no overflow for large sizes).
    """
    n_out = int(np.prod(out_shape, dtype=np.int64))
    n_in = int(np.prod(in_shape, dtype=np.int64))
    return n_out * n_in * np.dtype(dtype).itemsize
