"""minigrad.checks.nb07: MySoftmax's and MyLogSoftmax's checks reject the usual slips, each named.

Among them the two the first version of the checks let through or misnamed: a
softmax backward that builds the C x C Jacobian (now measured by the memory it
allocates), and wrong log-softmax VJPs, which are now told the formula, not the axis.
"""

import numpy as np
import pytest

from minigrad import Function
from minigrad.checks import nb07


def softmax_op(shift="row", keepdims=True, batch_sum=False, formula="ok", dense=False, in_place=False,
               save_input=False, backward_axis=True, forward_axis=True):
    class MySoftmax(Function):
        name = "my_softmax"

        @staticmethod
        def forward(ctx, a, axis=-1):
            ax = axis if forward_axis else -1
            if in_place:
                a -= a.max(axis=ax, keepdims=True)
                b = a
            elif shift == "row":
                b = a - a.max(axis=ax, keepdims=True)
            elif shift == "global":
                b = a - a.max()
            else:
                b = a
            e = np.exp(b)
            s = e / e.sum(axis=ax, keepdims=True)
            ctx.save_for_backward(*((a, s) if save_input else (s,)))
            ctx.axis = axis
            return s

        @staticmethod
        def backward(ctx, g):
            s = ctx.saved[-1]
            ax = ctx.axis if backward_axis else -1
            if dense:
                moved_s, moved_g = np.moveaxis(s, ax, -1), np.moveaxis(g, ax, -1)
                eye = np.eye(s.shape[ax])
                J = np.einsum("...i,ij->...ij", moved_s, eye) - moved_s[..., :, None] * moved_s[..., None, :]
                return (np.moveaxis(np.einsum("...i,...ij->...j", moved_g, J), -1, ax),)
            if batch_sum:
                return (s * (g - (g * s).sum()),)
            if formula == "g.sum":
                inner = g.sum(axis=ax, keepdims=True)
            else:
                inner = (g * s).sum(axis=ax, keepdims=keepdims)
            return (s * (g - inner),)
    return MySoftmax


def test_the_reference_softmax_passes():
    nb07.check_softmax(softmax_op())


def test_an_alternative_softmax_via_logsumexp_passes():
    class MySoftmax(Function):
        name = "my_softmax"

        @staticmethod
        def forward(ctx, a, axis=-1):
            m = a.max(axis=axis, keepdims=True)
            s = np.exp(a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True)))
            ctx.save_for_backward(s)
            ctx.axis = axis
            return s

        @staticmethod
        def backward(ctx, g):
            (s,) = ctx.saved
            gs = g * s
            return (gs - s * gs.sum(axis=ctx.axis, keepdims=True),)
    nb07.check_softmax(MySoftmax)


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(shift="none"), "shift each row by its own max"),
    (dict(shift="global"), "with one max for the whole batch"),
    (dict(keepdims=False), "keepdims=True"),
    (dict(batch_sum=True), "one sum per row, not one for the whole batch"),
    (dict(formula="g.sum"), r"dz = s \* \(g - sum\(g \* s\)\)"),
    (dict(dense=True), "it builds a C x C matrix"),
    (dict(in_place=True), "your forward changed its input in place"),
    (dict(save_input=True), "s alone is enough"),
    (dict(backward_axis=False), "axis=0: dz differs"),
    (dict(forward_axis=False), "axis=0: your softmax differs"),
])
def test_wrong_softmaxes_are_named(kwargs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb07.check_softmax(softmax_op(**kwargs))


def log_softmax_op(forward="stable", vjp="ok", save="y", backward_axis=True, forward_axis=True, dense=False):
    class MyLogSoftmax(Function):
        name = "my_log_softmax"

        @staticmethod
        def forward(ctx, a, axis=-1):
            ax = axis if forward_axis else -1
            with np.errstate(all="ignore"):
                if forward == "stable":
                    sh = a - a.max(axis=ax, keepdims=True)
                    y = sh - np.log(np.exp(sh).sum(axis=ax, keepdims=True))
                elif forward == "log-softmax":
                    e = np.exp(a - a.max(axis=ax, keepdims=True))
                    y = np.log(e / e.sum(axis=ax, keepdims=True))
                elif forward == "global":
                    sh = a - a.max()
                    y = sh - np.log(np.exp(sh).sum(axis=ax, keepdims=True))
                else:
                    y = a - np.log(np.exp(a).sum(axis=ax, keepdims=True))
            ctx.save_for_backward(*{"y": (y,), "input": (a,), "y+s": (y, np.exp(y))}[save])
            ctx.axis = axis
            return y

        @staticmethod
        def backward(ctx, g):
            kept = ctx.saved[0]
            if save == "input":                 # rebuild y from the kept input
                m = kept.max(ctx.axis, keepdims=True)
                kept = kept - m - np.log(np.exp(kept - m).sum(ctx.axis, keepdims=True))
            y = kept
            s = np.exp(y)
            ax = ctx.axis if backward_axis else -1
            if dense:
                moved_s, moved_g = np.moveaxis(s, ax, -1), np.moveaxis(g, ax, -1)
                C = moved_s.shape[-1]
                J = np.eye(C) - np.ones((C, 1)) * moved_s[..., None, :]
                return (np.moveaxis(np.einsum("...i,...ij->...j", moved_g, J), -1, ax),)
            return ({"ok": g - s * g.sum(axis=ax, keepdims=True), "g-s*g": g - s * g, "g-s": g - s,
                     "g-gs": g - (g * s).sum(axis=ax, keepdims=True)}[vjp],)
    return MyLogSoftmax


def test_the_reference_log_softmax_passes():
    nb07.check_log_softmax(log_softmax_op())


def test_an_alternative_log_softmax_with_logaddexp_passes():
    class MyLogSoftmax(Function):
        name = "my_log_softmax"

        @staticmethod
        def forward(ctx, a, axis=-1):
            y = a - np.logaddexp.reduce(a, axis=axis, keepdims=True)
            ctx.save_for_backward(y)
            ctx.axis = axis
            return y

        @staticmethod
        def backward(ctx, g):
            total = np.sum(g, axis=ctx.axis, keepdims=True)
            return (g - total * np.exp(ctx.saved[0]),)
    nb07.check_log_softmax(MyLogSoftmax)


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(forward="log-softmax"), r"log\(softmax\(z\)\) takes the log of a probability"),
    (dict(vjp="g-s*g"), r"your VJP differs from g @ J: .*g - s \* sum\(g\)"),
    (dict(vjp="g-s"), r"your VJP differs from g @ J"),
    (dict(vjp="g-gs"), r"your VJP differs from g @ J"),
    (dict(save="input"), "keep the output y itself"),
    (dict(forward="global"), "one max for the whole batch"),
    (dict(forward="none"), "subtract the row's max m"),
    (dict(save="y+s"), r"the output alone \(64 bytes\) is enough"),
    (dict(backward_axis=False), "with axis=0 your VJP differs .* along ctx.axis"),
    (dict(forward_axis=False), "with axis=0 your forward differs"),
    (dict(dense=True), "it builds a C x C matrix"),
])
def test_wrong_log_softmaxes_are_named(kwargs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb07.check_log_softmax(log_softmax_op(**kwargs))
