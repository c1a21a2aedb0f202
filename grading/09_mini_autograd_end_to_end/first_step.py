"""The first training step with the mini autograd, beside the package's."""
from otter.test_files import test_case

OK_FORMAT = False

name = "first_step"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb09"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(first_step_gap, ops_used, package_engine_ran):
    _checks().check_first_step(first_step_gap, ops_used, package_engine_ran)
