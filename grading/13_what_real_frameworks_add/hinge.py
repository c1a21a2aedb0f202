"""Exercise 2: hinge_ops(x, w), traceable without reads into Python."""
from otter.test_files import test_case

OK_FORMAT = False

name = "hinge"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb13"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(hinge_ops):
    _checks().check_hinge(hinge_ops)
