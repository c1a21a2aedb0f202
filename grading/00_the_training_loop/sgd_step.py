"""Exercise 2: sgd_step(params, lr), the update step."""
from otter.test_files import test_case

OK_FORMAT = False

name = "sgd_step"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb00"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(sgd_step):
    _checks().check_sgd_step(sgd_step)


@test_case(name="another_toy_problem", hidden=True)
def another_toy_problem(sgd_step):
    _checks().check_sgd_step(sgd_step, seed=7)
