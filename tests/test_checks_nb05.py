"""minigrad.checks.nb05: MyMatMul's check rejects the usual slips, each with its own message."""

import numpy as np
import pytest

from minigrad import Function
from minigrad.checks import nb05


def matmul_op(save="needed", copies=False, db="reshape", da="g @ b.T", always_both=False, reshape_g=False):
    class MyMatMul(Function):
        name = "my_matmul"

        @staticmethod
        def forward(ctx, a, b):
            need_a, need_b = ctx.needs_input_grad
            keep_a, keep_b = (a, b) if save == "both" else (a if need_b else None, b if need_a else None)
            if copies:
                keep_a = None if keep_a is None else keep_a.copy()
                keep_b = None if keep_b is None else keep_b.copy()
            ctx.save_for_backward(keep_a, keep_b)
            return a @ b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved
            need_a, need_b = ctx.needs_input_grad
            if always_both:
                need_a = need_b = True
            d_a = None
            if need_a:
                d_a = g @ b.T if da == "g @ b.T" else g @ b
            d_b = None
            if need_b:
                if reshape_g:
                    g.shape = (-1, g.shape[-1])
                    d_b = a.reshape(-1, a.shape[-1]).T @ g
                elif db == "reshape":
                    d_b = a.reshape(-1, a.shape[-1]).T @ g.reshape(-1, g.shape[-1])
                elif db == "transpose":
                    d_b = a.T @ g
                elif db == "mean":
                    rows = a.size // a.shape[-1]
                    d_b = (a.reshape(rows, -1).T @ g.reshape(rows, -1)) / (rows // a.shape[-2])
                elif db == "first":
                    d_b = (a if a.ndim == 2 else a[0]).T @ (g if g.ndim == 2 else g[0])
                elif db == "swapped":
                    d_b = g.reshape(-1, g.shape[-1]).T @ a.reshape(-1, a.shape[-1])
            return d_a, d_b
    return MyMatMul


def test_the_reference_passes():
    nb05.check_matmul(matmul_op())


def test_an_alternative_with_einsum_and_ctx_attributes_passes():
    class MyMatMul(Function):
        name = "my_matmul"

        @staticmethod
        def forward(ctx, a, b):
            ctx.a = a if ctx.needs_input_grad[1] else None
            ctx.b = b if ctx.needs_input_grad[0] else None
            return np.einsum("...nd,dm->...nm", a, b)

        @staticmethod
        def backward(ctx, g):
            da = np.einsum("...nm,dm->...nd", g, ctx.b) if ctx.needs_input_grad[0] else None
            db = (np.tensordot(ctx.a, g, axes=(tuple(range(g.ndim - 1)), tuple(range(g.ndim - 1))))
                  if ctx.needs_input_grad[1] else None)
            return da, db
    nb05.check_matmul(MyMatMul)


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(save="both"), "your node keeps B, which the backward pass never reads here"),
    (dict(copies=True), "does not keep A \\(or keeps a copy of it\\)"),
    (dict(db="transpose"), "for a 3-D A, A.T @ g does not give \\(D, M\\)"),
    (dict(db="mean"), "dB adds up A.T @ g over every row of A"),
    (dict(db="first"), "a mean, or the first sequence only, is not enough"),
    (dict(da="g @ b"), "hint: write the shapes down"),
    (dict(always_both=True), "check ctx.needs_input_grad before using a saved value that may be None"),
    (dict(reshape_g=True), "reshaped the caller's g in place"),
    (dict(db="swapped"), r"(?s)shape \(5, 3\) for its input 1.*dB of B's shape \(D, M\)"),
])
def test_wrong_matmuls_are_named(kwargs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb05.check_matmul(matmul_op(**kwargs))
