"""Exercise 1: MyCrossEntropy."""
from otter.test_files import test_case

OK_FORMAT = False

name = "cross_entropy"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb08"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(MyCrossEntropy):
    _checks().check_cross_entropy(MyCrossEntropy)


@test_case(name="other_arrays", hidden=True)
def other_arrays(MyCrossEntropy):
    _checks().check_cross_entropy(MyCrossEntropy, seed=8181)
