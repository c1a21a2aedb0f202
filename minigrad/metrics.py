"""How well a classifier does: accuracy and the confusion matrix.

Both take either predicted class ids of shape (N,) or scores (logits or
probabilities) of shape (N, C), whose argmax along the last axis is the
prediction. Tensors are read through ``.data``; nothing is recorded.
"""

from __future__ import annotations

import numpy as np

from .tensor import Tensor

__all__ = ["predictions", "accuracy", "confusion_matrix"]


def predictions(scores_or_labels) -> np.ndarray:
    """Class ids: argmax over classes for (N, C) scores, unchanged for (N,) integer labels."""
    a = np.asarray(scores_or_labels.data if isinstance(scores_or_labels, Tensor) else scores_or_labels)
    if a.ndim == 2:
        return a.argmax(axis=1)
    if a.ndim == 1 and a.dtype.kind in "iu":
        return a.astype(np.int64)
    raise ValueError(f"predictions: expected (N, C) scores or (N,) integer class ids, "
                     f"got dtype {a.dtype} and shape {a.shape}")


def _targets(where: str, pred: np.ndarray, y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise ValueError(f"{where}: targets must be a 1-D array of integer class ids, "
                         f"got dtype {y.dtype} and shape {y.shape}")
    if len(y) != len(pred):
        raise ValueError(f"{where}: {len(pred)} predictions but {len(y)} targets")
    return y


def accuracy(scores_or_labels, y) -> float:
    """The fraction of examples whose predicted class equals the target: mean(pred == y)."""
    pred = predictions(scores_or_labels)
    y = _targets("accuracy", pred, y)
    if len(y) == 0:
        raise ValueError("accuracy: no examples")
    return float(np.mean(pred == y))


def confusion_matrix(y_true, scores_or_labels, num_classes: int | None = None) -> np.ndarray:
    """Counts ``M[i, j]`` = number of examples of true class i predicted as class j.

    Rows sum to the class sizes; the diagonal holds the correct predictions, so
    ``trace(M) / M.sum()`` is the accuracy.
    """
    pred = predictions(scores_or_labels)
    y = _targets("confusion_matrix", pred, y_true)
    if num_classes is None:
        num_classes = int(max(y.max(initial=-1), pred.max(initial=-1))) + 1
    bad = (y < 0) | (y >= num_classes) | (pred < 0) | (pred >= num_classes)
    if bad.any():
        raise ValueError(f"confusion_matrix: class ids must lie in [0, {num_classes - 1}]; "
                         f"{int(bad.sum())} examples do not")
    m = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(m, (y, pred), 1)
    return m
