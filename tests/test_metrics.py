"""minigrad.metrics: accuracy and the confusion matrix."""

import numpy as np
import pytest

from minigrad import Tensor
from minigrad.metrics import accuracy, confusion_matrix, predictions


def test_predictions_from_scores_and_from_labels():
    scores = np.array([[0.1, 2.0, -1.0], [3.0, 0.0, 0.5], [0.0, 0.1, 0.2]])
    assert predictions(scores).tolist() == [1, 0, 2]
    assert predictions(Tensor(scores)).tolist() == [1, 0, 2]
    assert predictions(np.array([2, 0, 1])).tolist() == [2, 0, 1]


def test_accuracy_counts_matches():
    scores = np.array([[0.1, 2.0, -1.0], [3.0, 0.0, 0.5], [0.0, 0.1, 0.2], [1.0, 0.0, 0.0]])
    assert accuracy(scores, np.array([1, 0, 0, 0])) == 0.75
    assert accuracy(np.array([1, 1]), np.array([1, 1])) == 1.0
    assert accuracy(np.array([0, 2]), np.array([1, 1])) == 0.0


def test_confusion_matrix_rows_are_true_classes():
    y = np.array([0, 0, 1, 2, 2, 2])
    pred = np.array([0, 1, 1, 2, 0, 2])
    m = confusion_matrix(y, pred, num_classes=4)
    assert m.tolist() == [[1, 1, 0, 0], [0, 1, 0, 0], [1, 0, 2, 0], [0, 0, 0, 0]]
    assert m.sum(axis=1).tolist() == [2, 1, 3, 0]
    assert np.trace(m) / m.sum() == accuracy(pred, y)
    assert confusion_matrix(y, pred).shape == (3, 3)


@pytest.mark.parametrize("call, msg", [
    (lambda: accuracy(np.array([0.5, 0.2]), np.array([0, 1])), r"\(N, C\) scores or \(N,\) integer"),
    (lambda: accuracy(np.array([0, 1]), np.array([0, 1, 1])), "2 predictions but 3 targets"),
    (lambda: accuracy(np.array([0, 1]), np.array([0.0, 1.0])), "integer class ids"),
    (lambda: accuracy(np.zeros(0, dtype=int), np.zeros(0, dtype=int)), "no examples"),
    (lambda: confusion_matrix(np.array([0, 3]), np.array([0, 1]), num_classes=3),
     r"class ids must lie in \[0, 2\]; 1 examples do not"),
])
def test_errors(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()
