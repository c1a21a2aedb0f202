"""Second derivatives by differentiating the backward pass (reverse over reverse).

For a scalar ``f(x)`` with gradient ``g(x) = df/dx``, the Hessian-vector product is

    H v = d/dx <g(x), v>,

the gradient of one more scalar. With ``minigrad.grad(..., create_graph=True)``
the first backward pass is recorded as a graph of ordinary ops, so the engine
can run backward through it (Pearlmutter, 1994). ``H v`` costs about two
backward passes, never the n x n Hessian; ``hessian`` builds the whole matrix
from n of them and is for small n only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .engine import grad
from .tensor import Tensor

__all__ = ["hvp", "hessian"]


def _leaves(inputs: Tensor | Sequence[Tensor], what: str) -> tuple[bool, tuple[Tensor, ...]]:
    single = isinstance(inputs, Tensor)
    xs = (inputs,) if single else tuple(inputs)
    if not xs:
        raise ValueError(f"{what}: got no inputs")
    out = []
    for i, x in enumerate(xs):
        if not isinstance(x, Tensor):
            raise TypeError(f"{what}: input {i} must be a Tensor, got {type(x).__name__}")
        # A fresh leaf with the same numbers: the caller's tensors and graph stay untouched.
        out.append(Tensor(x.data, requires_grad=True, dtype=x.dtype))
    return single, tuple(out)


def _scalar_output(f: Callable[..., Tensor], xs: tuple[Tensor, ...], what: str) -> Tensor:
    out = f(*xs)
    if not isinstance(out, Tensor) or out.data.size != 1:
        shape = out.shape if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(f"{what}: f must return a Tensor with one element, got {shape}")
    return out


def hvp(f: Callable[..., Tensor], inputs: Tensor | Sequence[Tensor],
        v: Any | Sequence[Any]) -> tuple[Tensor, Any]:
    """``(f(*inputs), H v)`` where H is the Hessian of the scalar ``f`` at ``inputs``.

    ``v`` has one array per input, with the input's shape (a single array when
    ``inputs`` is a single Tensor); ``H v`` comes back in the same form. For
    several inputs H is the block matrix d2f / dx_i dx_j, and the i-th result is
    sum_j (d2f / dx_i dx_j) v_j. Like ``torch.autograd.functional.hvp``.
    """
    single, xs = _leaves(inputs, "hvp")
    vs = (v,) if single else tuple(v)
    if len(vs) != len(xs):
        raise ValueError(f"hvp: got {len(xs)} inputs but {len(vs)} vectors v")
    vs = tuple(np.asarray(vi.data if isinstance(vi, Tensor) else vi, dtype=x.dtype)
               for vi, x in zip(vs, xs))
    for i, (vi, x) in enumerate(zip(vs, xs)):
        if vi.shape != x.shape:
            raise ValueError(f"hvp: v[{i}] has shape {vi.shape} but input {i} has shape {x.shape}")
    out = _scalar_output(f, xs, "hvp")
    gs = grad(out, xs, create_graph=True, allow_unused=True)
    dot = None
    for g, vi in zip(gs, vs):
        if g is not None:
            term = (g * vi).sum()
            dot = term if dot is None else dot + term
    if dot is None or not dot.requires_grad:  # f is linear (or constant) in x: H = 0
        hv = tuple(Tensor(np.zeros_like(x.data)) for x in xs)
    else:
        hv = tuple(Tensor(np.zeros_like(x.data)) if h is None else h
                   for x, h in zip(xs, grad(dot, xs, allow_unused=True)))
    value = Tensor(out.data)
    return value, (hv[0] if single else hv)


def hessian(f: Callable[[Tensor], Tensor], x: Tensor) -> np.ndarray:
    """The full Hessian of a scalar ``f`` at one input ``x``, of shape x.shape + x.shape.

    Column k is ``H e_k``: one Hessian-vector product per element of x.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"hessian: x must be a Tensor, got {type(x).__name__}")
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size, dtype=x.dtype)
        e[k] = 1.0
        cols.append(hvp(f, x, e.reshape(x.shape))[1].data.reshape(-1))
    return np.stack(cols, axis=1).reshape(x.shape + x.shape)
