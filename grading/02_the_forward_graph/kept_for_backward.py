"""Exercise 2: kept_for_backward(root), the bytes a graph keeps, counted by a walk."""
from otter.test_files import test_case

OK_FORMAT = False

name = "kept_for_backward"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb02"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(kept_for_backward):
    _checks().check_kept_for_backward(kept_for_backward)


@test_case(name="other_graphs", hidden=True)
def other_graphs(kept_for_backward):
    _checks().check_kept_for_backward(kept_for_backward, seed=22)
