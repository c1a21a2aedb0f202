"""Exercise 1: MySoftmax."""
from otter.test_files import test_case

OK_FORMAT = False

name = "softmax"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb07"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(MySoftmax):
    _checks().check_softmax(MySoftmax)


@test_case(name="other_arrays", hidden=True)
def other_arrays(MySoftmax):
    _checks().check_softmax(MySoftmax, seed=7171)
