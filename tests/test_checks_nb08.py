"""The checks of notebook 08's exercises (minigrad.checks.nb08) reject plausible wrong solutions with a
message that names the slip, and accept correct ones written differently."""

import numpy as np
import pytest

from minigrad import Function
from minigrad.checks import nb08


def op(forward, backward, name="my_op"):
    return type(
        "MyOp",
        (Function,),
        {"name": name, "forward": staticmethod(forward), "backward": staticmethod(backward)},
    )


# ---------------------------------------------------------------- MyCrossEntropy


def ce_forward(ctx, z, target):  # the notebook's reference solution
    idx = np.arange(z.shape[0])
    shifted = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=1))
    ctx.save_for_backward(z)
    ctx.target = np.asarray(target)
    return np.asarray((lse - shifted[idx, ctx.target]).mean())


def ce_backward(ctx, g):
    (logits,) = ctx.saved
    n = logits.shape[0]
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    probs[np.arange(n), ctx.target] -= 1.0
    return (probs * (g / n),)


def ce_forward_lse(ctx, z, target):  # saves log-probabilities instead of the logits
    m = z.max(axis=1, keepdims=True)
    log_p = (z - m) - np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    ctx.save_for_backward(log_p)
    ctx.target = np.asarray(target)
    return np.asarray(-log_p[np.arange(len(z)), ctx.target].sum() / len(z))


def ce_backward_lse(ctx, g):
    (log_p,) = ctx.saved
    onehot = np.zeros_like(log_p)
    onehot[np.arange(len(log_p)), ctx.target] = 1.0
    return (g * (np.exp(log_p) - onehot) / len(log_p),)


def test_cross_entropy_reference_and_alternative_pass():
    nb08.check_cross_entropy(op(ce_forward, ce_backward))
    nb08.check_cross_entropy(op(ce_forward_lse, ce_backward_lse))


def _no_n(ctx, g):
    (dz,) = ce_backward(ctx, g)
    return (dz * ctx.saved[0].shape[0],)


def _no_g(ctx, g):
    (dz,) = ce_backward(ctx, g)
    return (dz / g,)


def _global_max(ctx, z, target):
    shifted = z - z.max()
    ctx.save_for_backward(z)
    ctx.target = np.asarray(target)
    lse = np.log(np.exp(shifted).sum(axis=1))
    return np.asarray((lse - shifted[np.arange(len(z)), ctx.target]).mean())


def _no_shift(ctx, z, target):
    ctx.save_for_backward(z)
    ctx.target = np.asarray(target)
    return np.asarray((np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(z)), ctx.target]).mean())


def _log_of_softmax(ctx, z, target):
    s = np.exp(z - z.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    ctx.save_for_backward(z)
    ctx.target = np.asarray(target)
    return np.asarray(-np.log(s[np.arange(len(z)), ctx.target]).mean())


def _in_place_shift(ctx, z, target):
    z -= z.max(axis=1, keepdims=True)
    return ce_forward(ctx, z, target)


def _keeps_onehot(ctx, z, target):
    out = ce_forward(ctx, z, target)
    ctx.save_for_backward(z, np.eye(z.shape[1])[target])
    return out


def _sum_not_mean(ctx, z, target):
    return ce_forward(ctx, z, target) * z.shape[0]


def _array_not_tuple(ctx, g):
    return ce_backward(ctx, g)[0]


def _g_in_place(ctx, g):
    (dz,) = ce_backward(ctx, 1.0)
    g *= 2
    return (dz,)


@pytest.mark.parametrize(
    "forward, backward, phrase",
    [
        (ce_forward, _no_n, "N times too large"),
        (ce_forward, _no_g, "multiply by the upstream g"),
        (_global_max, ce_backward, "shift each row by its own max"),
        (_no_shift, ce_backward, "exp\\(1000\\) overflows"),
        (_log_of_softmax, ce_backward, "never take the log of a probability"),
        (_in_place_shift, ce_backward, "changed the logits z in place"),
        (_keeps_onehot, ce_backward, "a one-hot matrix"),
        (_sum_not_mean, ce_backward, "divide by N"),
        (ce_forward, _array_not_tuple, "with the comma"),
        (ce_forward, _g_in_place, "changed g in place"),
    ],
    ids=[
        "no /N",
        "no g",
        "batch-wide max",
        "no max-shift",
        "log(softmax)",
        "z -= max",
        "keeps one-hot",
        "sum not mean",
        "array not tuple",
        "g *= 2",
    ],
)
def test_cross_entropy_wrong_solutions_are_named(forward, backward, phrase):
    with np.errstate(all="ignore"), pytest.raises(AssertionError, match=phrase):
        nb08.check_cross_entropy(op(forward, backward))


def test_a_missing_solution_is_not_hidden():
    def blank(ctx, z, target):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        nb08.check_cross_entropy(op(blank, ce_backward))


# ---------------------------------------------------------------- MySoftCrossEntropy


def soft_forward(ctx, z, q):  # the notebook's reference solution
    shifted = z - z.max(axis=1, keepdims=True)
    log_s = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    ctx.save_for_backward(log_s)
    ctx.q = q
    return np.asarray(-(q * log_s).sum() / z.shape[0])


def soft_backward(ctx, g):
    (log_s,) = ctx.saved
    return ((np.exp(log_s) - ctx.q) * (g / log_s.shape[0]),)


def soft_forward_lse(ctx, z, q):  # the hint's form: -q.z + logsumexp(z), saving z
    m = z.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(axis=1, keepdims=True)))[:, 0]
    ctx.save_for_backward(z)
    ctx.q = q
    return np.asarray(np.mean(lse - (q * z).sum(axis=1)))


def soft_backward_lse(ctx, g):
    (z,) = ctx.saved
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (g * (e / e.sum(axis=1, keepdims=True) - ctx.q) / len(z),)


def test_soft_reference_and_alternative_pass():
    nb08.check_soft_cross_entropy(op(soft_forward, soft_backward))
    nb08.check_soft_cross_entropy(op(soft_forward_lse, soft_backward_lse))


def _argmax_onehot(ctx, g):
    (log_s,) = ctx.saved
    hard = np.eye(log_s.shape[1])[ctx.q.argmax(axis=1)]
    return ((np.exp(log_s) - hard) * (g / log_s.shape[0]),)


def _mean_nc(ctx, z, q):
    ctx.save_for_backward(z)
    ctx.q = q
    shifted = z - z.max(axis=1, keepdims=True)
    return np.asarray(-(q * (shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))).mean())


def _mean_nc_backward(ctx, g):
    (z,) = ctx.saved
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (g * (e / e.sum(axis=1, keepdims=True) - ctx.q) / z.size,)


def _soft_no_g(ctx, g):
    return soft_backward(ctx, 1.0)


def _soft_global_max(ctx, z, q):
    shifted = z - z.max()
    log_s = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    ctx.save_for_backward(log_s)
    ctx.q = q
    return np.asarray(-(q * log_s).sum() / z.shape[0])


def _soft_log_softmax(ctx, z, q):
    s = np.exp(z - z.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    ctx.save_for_backward(np.log(s))
    ctx.q = q
    return np.asarray(-(q * np.log(s)).sum() / z.shape[0])


@pytest.mark.parametrize(
    "forward, backward, phrase",
    [
        (soft_forward, _argmax_onehot, "one-hot of q's largest entry"),
        (_mean_nc, _mean_nc_backward, "divide by N"),
        (soft_forward, _soft_no_g, "multiply the gradient by the upstream g"),
        (_soft_global_max, soft_backward, "shift each row by its own max"),
        (_soft_log_softmax, soft_backward, "never log\\(softmax\\(z\\)\\)"),
    ],
    ids=["argmax one-hot", "mean over N*C", "no g", "batch-wide max", "log(softmax)"],
)
def test_soft_wrong_solutions_are_named(forward, backward, phrase):
    with np.errstate(all="ignore"), pytest.raises(AssertionError, match=phrase):
        nb08.check_soft_cross_entropy(op(forward, backward))
