"""The checks of notebook 10's exercises (minigrad.checks.nb10) reject plausible wrong gradient clippings and
hand-made flow records with a message that names the slip, and accept correct ones written differently."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor
from minigrad.checks import nb10


def reference(grads, max_norm):  # the notebook's solution
    total = float(np.sqrt(sum(float(np.sum(g * g)) for g in grads)))
    scale = max_norm / total if total > max_norm else 1.0
    return [g * scale for g in grads], total


def concatenated(grads, max_norm):
    total = float(np.linalg.norm(np.concatenate([g.ravel() for g in grads])))
    return [g * min(1.0, max_norm / total) for g in grads], total


def pytorch_eps(grads, max_norm):  # torch.nn.utils.clip_grad_norm_'s + 1e-6
    total = float(np.sqrt(sum((g**2).sum() for g in grads)))
    coef = max_norm / (total + 1e-6)
    return [g * coef if coef < 1 else g.copy() for g in grads], total


@pytest.mark.parametrize("f", [reference, concatenated, pytorch_eps])
def test_correct_solutions_pass(f):
    nb10.check_clip_by_global_norm(f)


def per_array(grads, max_norm):
    out = [g * min(1.0, max_norm / np.linalg.norm(g)) for g in grads]
    return out, float(np.sqrt(sum((g**2).sum() for g in grads)))


def sum_of_norms(grads, max_norm):
    total = float(sum(np.linalg.norm(g) for g in grads))
    return [g * min(1.0, max_norm / total) for g in grads], total


def in_place(grads, max_norm):
    total = float(np.sqrt(sum((g**2).sum() for g in grads)))
    if total > max_norm:
        for g in grads:
            g *= max_norm / total
    return grads, total


def always_rescale(grads, max_norm):
    total = float(np.sqrt(sum((g**2).sum() for g in grads)))
    return [g * (max_norm / total) for g in grads], total


def per_element(grads, max_norm):
    total = float(np.sqrt(sum((g**2).sum() for g in grads)))
    return [np.clip(g, -max_norm, max_norm) for g in grads], total


def norm_after(grads, max_norm):
    clipped, _ = reference(grads, max_norm)
    return clipped, float(np.sqrt(sum((g**2).sum() for g in clipped)))


def drops_the_last(grads, max_norm):
    clipped, total = reference(grads[:-1], max_norm)
    return clipped, total


@pytest.mark.parametrize(
    "f, phrase",
    [
        (per_array, "one and the same factor"),
        (sum_of_norms, "the square root of the sum of the squares"),
        (in_place, "changed the arrays it was given"),
        (always_rescale, "scale only when the norm exceeds max_norm"),
        (per_element, "one and the same factor"),
        (norm_after, "return the norm before clipping"),
        (drops_the_last, "return one per gradient"),
    ],
    ids=[
        "per array",
        "sum of norms",
        "in place",
        "always rescale",
        "per element",
        "norm after",
        "one array short",
    ],
)
def test_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb10.check_clip_by_global_norm(f)


# ---------------------------------------------------------------- record_flow by hand


def flow_reference(model, x, loss_fn):  # the notebook's solution
    h, outputs = Tensor(x), []
    for block in model.layers:
        h = block(h)
        outputs.append(h)
    weights = [
        (block.layers[0] if isinstance(block, mg.nn.Sequential) else block).weight for block in model.layers
    ]
    grads = mg.grad(loss_fn(h), outputs + weights)
    return (
        [o.data for o in outputs],
        [g.data for g in grads[: len(outputs)]],
        [g.data for g in grads[len(outputs) :]],
    )


def flow_two_calls(model, x, loss_fn):  # outputs and weights asked for in two graphs
    def run():
        h, outs = Tensor(x), []
        for block in model.layers:
            h = block(h)
            outs.append(h)
        return h, outs

    h, outs = run()
    d_outs = mg.grad(loss_fn(h), outs)
    h, _ = run()
    ws = [p for p in model.parameters() if p.ndim == 2]
    d_ws = mg.grad(loss_fn(h), ws)
    return [o.data for o in outs], [g.data for g in d_outs], [g.data for g in d_ws]


@pytest.mark.parametrize("f", [flow_reference, flow_two_calls])
def test_record_flow_correct_solutions_pass(f):
    nb10.check_record_flow(f)


def flow_backward(model, x, loss_fn):
    h, outputs = Tensor(x), []
    for block in model.layers:
        h = block(h)
        outputs.append(h.retain_grad())
    loss_fn(h).backward()
    ws = [p for p in model.parameters() if p.ndim == 2]
    return [o.data for o in outputs], [o.grad for o in outputs], [w.grad for w in ws]


def flow_pre_activation(model, x, loss_fn):
    h, pre, outputs = Tensor(x), [], []
    for block in model.layers:
        if isinstance(block, mg.nn.Sequential):
            z = block.layers[0](h)
            h = block.layers[1](z)
            pre.append(z)
        else:
            h = block(h)
            pre.append(h)
        outputs.append(h)
    ws = [p for p in model.parameters() if p.ndim == 2]
    grads = mg.grad(loss_fn(h), pre + ws)
    return [o.data for o in outputs], [g.data for g in grads[: len(pre)]], [g.data for g in grads[len(pre) :]]


def flow_weights_not_grads(model, x, loss_fn):
    acts, dacts, _ = flow_reference(model, x, loss_fn)
    return acts, dacts, [p.data for p in model.parameters() if p.ndim == 2]


def flow_no_last(model, x, loss_fn):
    acts, dacts, dws = flow_reference(model, x, loss_fn)
    return acts[:-1], dacts[:-1], dws[:-1]


@pytest.mark.parametrize(
    "f, phrase",
    [
        (flow_backward, "changed the parameters' .grad"),
        (flow_pre_activation, "before the tanh"),
        (flow_weights_not_grads, "not the weight itself"),
        (flow_no_last, "including the last"),
    ],
    ids=["backward()", "pre-activation gradient", "weights not gradients", "last block missing"],
)
def test_record_flow_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb10.check_record_flow(f)
