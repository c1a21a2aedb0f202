"""Checks of notebook 14's exercise: ``unbroadcast(g, shape)``, the step that lets a VJP handle broadcasting.

``check_unbroadcast(unbroadcast)`` calls it on six (gradient shape, input shape) pairs: a bias row
``(5, 2) -> (2,)`` and ``(5, 2) -> (1, 2)``, a middle size-1 axis ``(4, 3, 2) -> (3, 1)``, no
broadcasting ``(3,) -> (3,)``, a scalar ``(2, 3) -> ()`` and ``(2, 4, 3) -> (2, 1, 3)``. For each it
requires exactly ``shape`` and the values of summing ``g`` over the leading axes broadcasting added and
over the axes where ``shape`` has a 1. It also requires that ``g`` is left as it was.
"""

from __future__ import annotations

import numpy as np

CASES = [
    ((5, 2), (2,)),
    ((5, 2), (1, 2)),
    ((4, 3, 2), (3, 1)),
    ((3,), (3,)),
    ((2, 3), ()),
    ((2, 4, 3), (2, 1, 3)),
]


def _reference(g, shape):
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    return g.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)


def _what(shape_g, shape) -> str:
    added = len(shape_g) - len(shape)
    ones = [i for i, n in enumerate(shape) if n == 1 and shape_g[added + i] != 1]
    leading = f"{added} leading axis (sum it away)" if added == 1 else f"{added} leading axes (sum them away)"
    return (
        f"broadcasting added {leading} and stretched the input's size-1 axes {ones} (sum each of those with "
        "keepdims=True)"
    )


def call_unbroadcast(unbroadcast, g, shape) -> np.ndarray:
    """``unbroadcast(g, shape)`` as an array; an error (but a missing solution) becomes a failed check that
    says what this case needs (a reshape's error says why a reshape cannot work)."""
    try:
        return np.asarray(unbroadcast(g, shape))
    except NotImplementedError:
        raise
    except Exception as err:
        hint = (
            " reshape only rearranges the entries of g; a gradient of the input needs their sums."
            if "reshape" in str(err)
            else ""
        )
        raise AssertionError(
            f"unbroadcast(g of shape {g.shape}, {shape}) raised {type(err).__name__}: "
            f"{err}.{hint} Here {_what(g.shape, shape)}"
        ) from err


def check_unbroadcast(unbroadcast, cases=CASES, *, seed: int = 0) -> None:
    """Check ``unbroadcast(g, shape)`` on ``cases``, the six above (see the module's docstring)."""
    for shape_g, shape in cases:
        g = np.random.default_rng(seed).standard_normal(shape_g)
        before = g.copy()
        what = _what(shape_g, shape)
        got = call_unbroadcast(unbroadcast, g, shape)
        assert np.array_equal(g, before), (
            f"unbroadcast changed g in place (shape {shape_g} to {shape}): compute sums into new arrays"
        )
        assert got.shape == shape, (
            f"unbroadcast(g of shape {shape_g}, {shape}) returned shape {got.shape}. Here {what}"
        )
        want = _reference(g, shape)
        if not np.allclose(got, want):
            n = g.size // max(want.size, 1)
            hint = " (you averaged: they are sums, not means)" if np.allclose(got * n, want) else ""
            raise AssertionError(
                f"unbroadcast(g of shape {shape_g}, {shape}) has the right shape but the wrong "
                f"values{hint}: sum "
                f"(do not average, reshape or pick) over the leading axes and the size-1 axes"
            )
