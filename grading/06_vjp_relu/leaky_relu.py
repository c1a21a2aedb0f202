"""Exercise 2: MyLeakyReLU, which keeps only its output."""
from otter.test_files import test_case

OK_FORMAT = False

name = "leaky_relu"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb06"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(MyLeakyReLU):
    _checks().check_leaky_relu(MyLeakyReLU)


@test_case(name="other_arrays", hidden=True)
def other_arrays(MyLeakyReLU):
    _checks().check_leaky_relu(MyLeakyReLU, seed=6464)
