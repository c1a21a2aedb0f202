"""The check of notebook 10's exercise (minigrad.checks.nb10) rejects plausible wrong gradient clippings with
a message that names the slip, and accepts correct ones written differently."""

import numpy as np
import pytest

from minigrad.checks import nb10


def reference(grads, max_norm):                        # the notebook's solution
    total = float(np.sqrt(sum(float(np.sum(g * g)) for g in grads)))
    scale = max_norm / total if total > max_norm else 1.0
    return [g * scale for g in grads], total


def concatenated(grads, max_norm):
    total = float(np.linalg.norm(np.concatenate([g.ravel() for g in grads])))
    return [g * min(1.0, max_norm / total) for g in grads], total


def pytorch_eps(grads, max_norm):                      # torch.nn.utils.clip_grad_norm_'s + 1e-6
    total = float(np.sqrt(sum((g ** 2).sum() for g in grads)))
    coef = max_norm / (total + 1e-6)
    return [g * coef if coef < 1 else g.copy() for g in grads], total


@pytest.mark.parametrize("f", [reference, concatenated, pytorch_eps])
def test_correct_solutions_pass(f):
    nb10.check_clip_by_global_norm(f)


def per_array(grads, max_norm):
    out = [g * min(1.0, max_norm / np.linalg.norm(g)) for g in grads]
    return out, float(np.sqrt(sum((g ** 2).sum() for g in grads)))


def sum_of_norms(grads, max_norm):
    total = float(sum(np.linalg.norm(g) for g in grads))
    return [g * min(1.0, max_norm / total) for g in grads], total


def in_place(grads, max_norm):
    total = float(np.sqrt(sum((g ** 2).sum() for g in grads)))
    if total > max_norm:
        for g in grads:
            g *= max_norm / total
    return grads, total


def always_rescale(grads, max_norm):
    total = float(np.sqrt(sum((g ** 2).sum() for g in grads)))
    return [g * (max_norm / total) for g in grads], total


def per_element(grads, max_norm):
    total = float(np.sqrt(sum((g ** 2).sum() for g in grads)))
    return [np.clip(g, -max_norm, max_norm) for g in grads], total


def norm_after(grads, max_norm):
    clipped, _ = reference(grads, max_norm)
    return clipped, float(np.sqrt(sum((g ** 2).sum() for g in clipped)))


def drops_the_last(grads, max_norm):
    clipped, total = reference(grads[:-1], max_norm)
    return clipped, total


@pytest.mark.parametrize("f, phrase", [
    (per_array, "one and the same factor"),
    (sum_of_norms, "the square root of the sum of the squares"),
    (in_place, "changed the arrays it was given"),
    (always_rescale, "scale only when the norm exceeds max_norm"),
    (per_element, "one and the same factor"),
    (norm_after, "return the norm before clipping"),
    (drops_the_last, "return one per gradient"),
], ids=["per array", "sum of norms", "in place", "always rescale", "per element", "norm after", "one array short"])
def test_wrong_solutions_are_named(f, phrase):
    with pytest.raises(AssertionError, match=phrase):
        nb10.check_clip_by_global_norm(f)
