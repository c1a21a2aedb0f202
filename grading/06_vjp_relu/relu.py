"""Exercise 1: MyReLU."""
from otter.test_files import test_case

OK_FORMAT = False

name = "relu"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb06"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(MyReLU):
    _checks().check_relu(MyReLU)


@test_case(name="other_arrays", hidden=True)
def other_arrays(MyReLU):
    _checks().check_relu(MyReLU, seed=6262)
