"""The check of notebook 14's exercise (minigrad.checks.nb14) rejects plausible wrong unbroadcasts with a
message that names the slip, and accepts correct ones written differently."""

import numpy as np
import pytest

from minigrad.checks import nb14


def reference(g, shape):  # the notebook's solution
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def one_sum_then_reshape(g, shape):  # all axes at once, against a padded shape
    padded = (1,) * (g.ndim - len(shape)) + tuple(shape)
    axes = tuple(i for i, (a, b) in enumerate(zip(padded, g.shape)) if a == 1 and b != 1)
    return g.sum(axis=axes).reshape(shape)


def a_loop(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1:
            g = g.sum(axis=i, keepdims=True)
    return g


@pytest.mark.parametrize("f", [reference, one_sum_then_reshape, a_loop])
def test_correct_solutions_pass(f):
    nb14.check_unbroadcast(f)


def mean_not_sum(g, shape):
    g = g.mean(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1)
    return g.mean(axis=axes, keepdims=True)


def leading_only(g, shape):
    return g.sum(axis=tuple(range(g.ndim - len(shape))))


def no_keepdims(g, shape):
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1)
    return g.sum(axis=axes)


def always_axis0(g, shape):
    return g.sum(axis=0) if g.ndim > len(shape) else g


def trailing_axes(g, shape):
    g = g.sum(axis=tuple(range(len(shape), g.ndim)))
    return g.reshape(shape) if g.size == int(np.prod(shape)) else g


def just_reshape(g, shape):
    return g.reshape(shape)


def in_place(g, shape):
    out = reference(g, shape)
    g *= 0
    return out


@pytest.mark.parametrize(
    "f, phrase",
    [
        (mean_not_sum, "you averaged"),
        (leading_only, r"stretched the input's size-1 axes \[0\]"),
        (no_keepdims, "keepdims=True"),
        (always_axis0, "returned shape"),
        (trailing_axes, r"added 1 leading axis \(sum it away\)"),
        (just_reshape, "reshape only rearranges"),
        (in_place, "changed g in place"),
    ],
    ids=["mean", "leading axes only", "no keepdims", "always axis 0", "trailing axes", "reshape", "in place"],
)
def test_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb14.check_unbroadcast(f)


def test_the_message_counts_leading_axes_in_the_singular_and_the_plural():
    def keep(g, shape):  # returns g as it is
        return g

    with pytest.raises(AssertionError) as one:
        nb14.check_unbroadcast(keep, [((5, 2), (2,))])
    assert str(one.value) == (
        "unbroadcast(g of shape (5, 2), (2,)) returned shape (5, 2). Here broadcasting added 1 leading axis "
        "(sum it away) and stretched the input's size-1 axes [] (sum each of those with keepdims=True)"
    )
    with pytest.raises(AssertionError, match=r"added 2 leading axes \(sum them away\) and"):
        nb14.check_unbroadcast(keep, [((3, 4, 2), (2,))])


def test_a_failed_reshape_ends_its_hint_before_saying_what_the_case_needs():
    from minigrad.checks import _language

    with pytest.raises(AssertionError) as err:
        nb14.check_unbroadcast(just_reshape, [((5, 2), (2,))])
    message = str(err.value)
    assert message.endswith(
        ". reshape only rearranges the entries of g; a gradient of the input needs their sums. Here "
        "broadcasting added 1 leading axis (sum it away) and stretched the input's size-1 axes [] (sum each "
        "of those with keepdims=True)"
    ), message
    zh = _language.translate(message, "zh")
    assert "输入的梯度需要的是它们的和。 这里广播在前面添加了 1 个轴（把它求和消掉），" in zh, zh
