"""Exercise 3: predicted_ops(n_tokens, positive), the nodes of rnn_score's graph."""
from otter.test_files import test_case

OK_FORMAT = False

name = "predicted_ops"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb01"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(predicted_ops, rnn_score, sentence):
    _checks().check_predicted_ops(predicted_ops, rnn_score, sentence)


@test_case(name="longer_sentences_both_signs", hidden=True)
def longer_sentences_both_signs(predicted_ops, rnn_score, sentence):
    _checks().check_predicted_ops(predicted_ops, rnn_score, sentence, max_tokens=12, seed=123)
