"""minigrad.checks.nb06: MyReLU's and MyLeakyReLU's checks reject the usual slips, each named."""

import numpy as np
import pytest

from minigrad import Function
from minigrad.checks import nb06


def relu_op(mask=">", save="out", in_place_g=False, bare=False, in_place_forward=False):
    class MyReLU(Function):
        name = "my_relu"

        @staticmethod
        def forward(ctx, a):
            out = np.maximum(a, 0, out=a) if in_place_forward else np.maximum(a, 0)
            ctx.save_for_backward({"out": out, "in": a, "mask": a > 0, "copy": out.copy()}[save])
            return out

        @staticmethod
        def backward(ctx, g):
            (kept,) = ctx.saved
            m = kept if save == "mask" else (kept > 0 if mask == ">" else kept >= 0)
            if in_place_g:
                g[~m] = 0
                dx = g
            else:
                dx = g * m
            return dx if bare else (dx,)
    return MyReLU


def test_the_reference_relu_passes():
    nb06.check_relu(relu_op())


def test_an_alternative_relu_with_where_passes():
    class MyReLU(Function):
        name = "my_relu"

        @staticmethod
        def forward(ctx, a):
            y = a * (a > 0)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return (np.where(ctx.saved[0] > 0, g, 0.0),)
    nb06.check_relu(MyReLU)


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(mask=">="), "the mask lets everything through.*the mask is y > 0"),
    (dict(save="in"), "save the output y itself"),
    (dict(save="in", mask=">="), "the mask is x > 0, not x >= 0"),
    (dict(save="mask"), "save the output y itself"),
    (dict(save="copy"), "save the output y itself"),
    (dict(in_place_g=True), "your backward changed g in place"),
    (dict(bare=True), r"\(dx,\), with the comma"),
    (dict(in_place_forward=True), "your forward changed its input in place"),
])
def test_wrong_relus_are_named(kwargs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb06.check_relu(relu_op(**kwargs))


def leaky_op(fixed_slope=None, swapped=False, save="out", in_place_g=False, in_place_forward=False,
             plain=False):
    class MyLeakyReLU(Function):
        name = "my_leaky_relu"

        @staticmethod
        def forward(ctx, a, alpha=0.01):
            if in_place_forward:
                a[a < 0] *= alpha
                out = a
            else:
                out = np.where(a > 0, a, alpha * a)
            ctx.save_for_backward(a if save == "in" else out)
            ctx.alpha = alpha
            return out

        @staticmethod
        def backward(ctx, g):
            (kept,) = ctx.saved
            slope = ctx.alpha if fixed_slope is None else fixed_slope
            if plain:
                return (g * (kept > 0),)
            s = np.where(kept > 0, slope, 1.0) if swapped else np.where(kept > 0, 1.0, slope)
            if in_place_g:
                g *= s
                return (g,)
            return (g * s,)
    return MyLeakyReLU


def test_the_reference_leaky_relu_passes():
    nb06.check_leaky_relu(leaky_op())


def test_an_alternative_leaky_relu_passes():
    class MyLeakyReLU(Function):
        name = "my_leaky_relu"

        @staticmethod
        def forward(ctx, a, alpha=0.01):
            y = np.maximum(a, alpha * a)                 # alpha < 1
            ctx.save_for_backward(y)
            ctx.alpha = alpha
            return y

        @staticmethod
        def backward(ctx, g):
            slope = np.ones_like(g)
            slope[ctx.saved[0] <= 0] = ctx.alpha
            return (slope * g,)
    nb06.check_leaky_relu(MyLeakyReLU)


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(fixed_slope=0.01), "read the slope from ctx.alpha"),
    (dict(swapped=True), "it is 1 where x > 0 and alpha elsewhere"),
    (dict(save="in"), "save the output itself"),
    (dict(in_place_g=True), "changed g in place"),
    (dict(in_place_forward=True), "your forward changed its input in place"),
    (dict(plain=True), "it is 1 where x > 0 and alpha elsewhere"),
])
def test_wrong_leaky_relus_are_named(kwargs, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb06.check_leaky_relu(leaky_op(**kwargs))
