"""Exercise: unbroadcast(g, shape), the VJP of broadcasting."""
from otter.test_files import test_case

OK_FORMAT = False

name = "unbroadcast"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb14"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(unbroadcast):
    _checks().check_unbroadcast(unbroadcast)


@test_case(name="other_gradients", hidden=True)
def other_gradients(unbroadcast):
    cases = [((7, 3, 4), (3, 1)), ((2, 5), ()), ((6, 4, 3), (6, 1, 3))]
    _checks().check_unbroadcast(unbroadcast, seed=14)
    _checks().check_unbroadcast(unbroadcast, cases, seed=41)
