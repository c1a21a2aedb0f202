"""Exercise 4: leaves_reached(root), the leaves a walk of the edges reaches."""
from otter.test_files import test_case

OK_FORMAT = False

name = "leaves_reached"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb01"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(leaves_reached, rnn_score, sentence):
    _checks().check_leaves_reached(leaves_reached, rnn_score, sentence)


@test_case(name="other_sentences", hidden=True)
def other_sentences(leaves_reached, rnn_score, sentence):
    _checks().check_leaves_reached(leaves_reached, rnn_score, sentence, seed=31)
