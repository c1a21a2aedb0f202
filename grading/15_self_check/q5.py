"""Q5: J_reverse, the Jacobian row by row from backward passes."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q5"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb15"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(J_reverse, reverse_calls, f_vec, xj):
    _checks().check_jacobian(J_reverse, reverse_calls, f_vec, xj)
